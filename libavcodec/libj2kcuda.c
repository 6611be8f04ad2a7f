/*
 * JPEG 2000 on NVIDIA GPUs via libj2kcuda: shared helpers
 *
 * This file is part of FFmpeg.
 *
 * FFmpeg is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 *
 * FFmpeg is distributed in the hope that it will be useful,
 * but WITHOUT ANY WARRANTY; without even the implied warranty of
 * MERCHANTABILITY or FITNESS FOR A PARTICULAR PURPOSE.  See the GNU
 * Lesser General Public License for more details.
 *
 * You should have received a copy of the GNU Lesser General Public
 * License along with FFmpeg; if not, write to the Free Software
 * Foundation, Inc., 51 Franklin Street, Fifth Floor, Boston, MA 02110-1301 USA
 */

/**
 * @file
 * Shared helpers of the libj2kcuda encoder and decoder wrappers.
 */

#include <string.h>

#include "config.h"

#include "libavutil/avstring.h"
#include "libavutil/common.h"
#include "libavutil/error.h"
#include "libavutil/hwcontext.h"
#include "libavutil/log.h"
#include "libavutil/pixdesc.h"
#if CONFIG_CUDA
#include "libavutil/hwcontext_cuda_internal.h"
#endif

#include "libj2kcuda.h"

void ff_libj2kcuda_log_callback(void *opaque, int level, const char *message)
{
    FFLibJ2KCudaLog *log = opaque;
    size_t len = strlen(message);

    while (len && (message[len - 1] == '\n' || message[len - 1] == '\r'))
        len--;
    if (level <= J2KC_LOG_ERROR) {
        /* Kept for the one line ff_libj2kcuda_error() prints for the call. */
        av_strlcpy(log->last_error, message,
                   FFMIN(len + 1, sizeof(log->last_error)));
        return;
    }
    av_log(log->log_ctx, level, "%.*s\n", (int)FFMIN(len, INT_MAX), message);
}

int ff_libj2kcuda_averror(int status)
{
    switch (status) {
    case J2KC_OK:               return 0;
    case J2KC_ERR_NOMEM:        return AVERROR(ENOMEM);
    case J2KC_ERR_INVALID_ARG:  return AVERROR(EINVAL);
    case J2KC_ERR_INVALID_DATA: return AVERROR_INVALIDDATA;
    case J2KC_ERR_UNSUPPORTED:  return AVERROR_PATCHWELCOME;
    case J2KC_ERR_CUDA:         return AVERROR_EXTERNAL;
    case J2KC_ERR_NO_DEVICE:    return AVERROR(ENODEV);
    case J2KC_ERR_LIMIT:        return AVERROR(ERANGE);
    case J2KC_ERR_AGAIN:        return AVERROR(EAGAIN);
    case J2KC_ERR_EOF:          return AVERROR_EOF;
    case J2KC_ERR_INTERNAL:     return AVERROR_BUG;
    default:                    return AVERROR_UNKNOWN;
    }
}

int ff_libj2kcuda_error(FFLibJ2KCudaLog *log, int status, const char *what)
{
    const char *hint = "";

    if (status == J2KC_ERR_NO_DEVICE)
        hint = " (no usable NVIDIA GPU or driver; -backend cpu runs the reference path)";
    if (log->last_error[0])
        av_log(log->log_ctx, AV_LOG_ERROR, "%s: %s [%s]%s\n", what,
               log->last_error, j2kc_status_string(status), hint);
    else
        av_log(log->log_ctx, AV_LOG_ERROR, "%s: %s%s\n", what,
               j2kc_status_string(status), hint);
    log->last_error[0] = 0;
    return ff_libj2kcuda_averror(status);
}

void ff_libj2kcuda_note_backend(void *log_ctx, int requested, j2kc_backend actual)
{
    if (requested == J2KC_BACKEND_AUTO && actual == J2KC_BACKEND_CPU)
        av_log(log_ctx, AV_LOG_WARNING, "No usable NVIDIA GPU: running on the CPU reference backend "
               "(the same output, slower; -backend cuda makes this an error)\n");
}

/* Every software format here is native-endian and unsigned, and keeps each
 * sample LSB-aligned in 1 or 2 bytes, so that a j2kc_component can point
 * straight into the plane. Big-endian variants are left to swscale. The
 * opacity of the alpha formats is the last component, as a JP2 cdef box
 * says. AV_PIX_FMT_CUDA carries any of them in device memory. */
const enum AVPixelFormat ff_libj2kcuda_pix_fmts[] = {
    AV_PIX_FMT_GRAY8,     AV_PIX_FMT_GRAY10,    AV_PIX_FMT_GRAY12,    AV_PIX_FMT_GRAY16,
    AV_PIX_FMT_YA8,       AV_PIX_FMT_YA16,
    AV_PIX_FMT_RGB24,     AV_PIX_FMT_RGB48,     AV_PIX_FMT_RGBA,      AV_PIX_FMT_RGBA64,
    AV_PIX_FMT_GBRP,      AV_PIX_FMT_GBRP10,    AV_PIX_FMT_GBRP12,    AV_PIX_FMT_GBRP16,
    AV_PIX_FMT_GBRAP10,   AV_PIX_FMT_GBRAP12,
    AV_PIX_FMT_YUV420P,   AV_PIX_FMT_YUV420P10, AV_PIX_FMT_YUV420P12, AV_PIX_FMT_YUV420P16,
    AV_PIX_FMT_YUV422P,   AV_PIX_FMT_YUV422P10, AV_PIX_FMT_YUV422P12, AV_PIX_FMT_YUV422P16,
    AV_PIX_FMT_YUV444P,   AV_PIX_FMT_YUV444P10, AV_PIX_FMT_YUV444P12, AV_PIX_FMT_YUV444P16,
    AV_PIX_FMT_XYZ12,
    AV_PIX_FMT_CUDA,
    AV_PIX_FMT_NONE,
};

int ff_libj2kcuda_format_supported(enum AVPixelFormat sw_format)
{
    if (sw_format == AV_PIX_FMT_CUDA)
        return 0;
    for (int i = 0; ff_libj2kcuda_pix_fmts[i] != AV_PIX_FMT_NONE; i++)
        if (ff_libj2kcuda_pix_fmts[i] == sw_format)
            return 1;
    return 0;
}

int ff_libj2kcuda_describe(j2kc_image *image, j2kc_component *comps,
                           enum AVPixelFormat sw_format, int width, int height,
                           uint8_t *const data[], const int linesize[],
                           j2kc_memory memory)
{
    const AVPixFmtDescriptor *desc = av_pix_fmt_desc_get(sw_format);
    int chroma_planes;

    if (!desc || !ff_libj2kcuda_format_supported(sw_format))
        return AVERROR(ENOSYS);
    /* Only YCbCr formats subsample; RGB and XYZ keep every component full size. */
    chroma_planes = desc->nb_components >= 3 &&
                    !(desc->flags & (AV_PIX_FMT_FLAG_RGB | AV_PIX_FMT_FLAG_XYZ));

    memset(image, 0, sizeof(*image));
    image->struct_size    = sizeof(*image);
    image->memory         = memory;
    image->width          = width;
    image->height         = height;
    image->num_components = desc->nb_components;
    image->components     = comps;

    for (int i = 0; i < desc->nb_components; i++) {
        const AVComponentDescriptor *c = &desc->comp[i];
        int sub   = chroma_planes && (i == 1 || i == 2);
        int log2w = sub ? desc->log2_chroma_w : 0;
        int log2h = sub ? desc->log2_chroma_h : 0;
        j2kc_component *out = &comps[i];

        memset(out, 0, sizeof(*out));
        out->data             = data ? (uint64_t)(uintptr_t)(data[c->plane] + c->offset) : 0;
        out->row_stride       = linesize ? linesize[c->plane] : 0;
        out->sample_stride    = c->step;
        out->bytes_per_sample = c->depth > 8 ? 2 : 1;
        out->shift            = c->shift;
        out->precision        = c->depth;
        out->is_signed        = 0;
        out->dx               = 1 << log2w;
        out->dy               = 1 << log2h;
        out->width            = AV_CEIL_RSHIFT(width,  log2w);
        out->height           = AV_CEIL_RSHIFT(height, log2h);
    }
    return 0;
}

/* Formats by depth class: up to 8, 10, 12 and 16 bits. */
static enum AVPixelFormat by_depth(int precision, const enum AVPixelFormat fmts[4])
{
    if (precision <= 8)
        return fmts[0];
    if (precision <= 10)
        return fmts[1];
    if (precision <= 12)
        return fmts[2];
    return fmts[3];
}

enum AVPixelFormat ff_libj2kcuda_output_format(const j2kc_stream_info *info,
                                               enum AVColorSpace colorspace,
                                               enum AVColorTransferCharacteristic color_trc)
{
    static const enum AVPixelFormat gray[4] = {
        AV_PIX_FMT_GRAY8, AV_PIX_FMT_GRAY10, AV_PIX_FMT_GRAY12, AV_PIX_FMT_GRAY16 };
    static const enum AVPixelFormat rgb[4] = {
        AV_PIX_FMT_RGB24, AV_PIX_FMT_GBRP10, AV_PIX_FMT_GBRP12, AV_PIX_FMT_RGB48 };
    static const enum AVPixelFormat gray_alpha[4] = {
        AV_PIX_FMT_YA8, AV_PIX_FMT_YA16, AV_PIX_FMT_YA16, AV_PIX_FMT_YA16 };
    static const enum AVPixelFormat rgb_alpha[4] = {
        AV_PIX_FMT_RGBA, AV_PIX_FMT_GBRAP10, AV_PIX_FMT_GBRAP12, AV_PIX_FMT_RGBA64 };
    static const enum AVPixelFormat yuv420[4] = {
        AV_PIX_FMT_YUV420P, AV_PIX_FMT_YUV420P10, AV_PIX_FMT_YUV420P12, AV_PIX_FMT_YUV420P16 };
    static const enum AVPixelFormat yuv422[4] = {
        AV_PIX_FMT_YUV422P, AV_PIX_FMT_YUV422P10, AV_PIX_FMT_YUV422P12, AV_PIX_FMT_YUV422P16 };
    static const enum AVPixelFormat yuv444[4] = {
        AV_PIX_FMT_YUV444P, AV_PIX_FMT_YUV444P10, AV_PIX_FMT_YUV444P12, AV_PIX_FMT_YUV444P16 };
    const j2kc_component_info *c = info->components;
    int n = info->num_components, precision = 0, ycc, guessed, alpha;

    /* A second component of grey, or a fourth of colour, is its opacity
     * (what a JP2 cdef box says, and what a raw codestream is taken to mean),
     * but CMYK's fourth is black. */
    alpha = n == 2 || (n == 4 && info->color_space != J2KC_COLOR_CMYK);
    if (!c || n < 1 || info->components_capacity < FFMIN(n, 4))
        return AV_PIX_FMT_NONE;
    /* FFmpeg has no signed pixel formats: signed components come out in
     * offset binary (the sample plus 2^(precision-1)), as FFmpeg's native
     * decoder gives them; ff_libj2kcuda_describe asks for unsigned output. */
    for (int i = 0; i < FFMIN(n, alpha ? 4 : 3); i++) {
        if (c[i].precision > 16)
            return AV_PIX_FMT_NONE;
        precision = FFMAX(precision, c[i].precision);
    }

    if (n == 2)
        return c[1].dx == c[0].dx && c[1].dy == c[0].dy ? by_depth(precision, gray_alpha) : by_depth(precision, gray);
    if (n < 3 || info->color_space == J2KC_COLOR_GRAY)
        return by_depth(precision, gray);
    if (c[0].dx != 1 || c[0].dy != 1 || c[1].dx != c[2].dx || c[1].dy != c[2].dy)
        return AV_PIX_FMT_NONE;
    /* A raw codestream says X'Y'Z' only through Rsiz, and YCbCr only through
     * subsampling; what the library reports beyond that is a guess, which the
     * container's colour description overrides. */
    guessed = !info->is_jp2 && info->color_space != J2KC_COLOR_XYZ;
    if (info->color_space == J2KC_COLOR_XYZ ||
        (guessed && color_trc == AVCOL_TRC_SMPTE428 && c[1].dx == 1 && c[1].dy == 1))
        return precision <= 12 ? AV_PIX_FMT_XYZ12 : AV_PIX_FMT_NONE;

    ycc = c[1].dx != 1 || c[1].dy != 1 || info->color_space == J2KC_COLOR_SYCC ||
          info->color_space == J2KC_COLOR_ESYCC || info->color_space == J2KC_COLOR_YPBPR_1125_60 ||
          info->color_space == J2KC_COLOR_YPBPR_1250_50 ||
          (guessed && !info->mct &&
           colorspace != AVCOL_SPC_UNSPECIFIED && colorspace != AVCOL_SPC_RGB);
    if (!ycc)
        return alpha && c[3].dx == 1 && c[3].dy == 1 ? by_depth(precision, rgb_alpha) : by_depth(precision, rgb);
    if (c[1].dx == 2 && c[1].dy == 2)
        return by_depth(precision, yuv420);
    if (c[1].dx == 2 && c[1].dy == 1)
        return by_depth(precision, yuv422);
    if (c[1].dx == 1 && c[1].dy == 1)
        return by_depth(precision, yuv444);
    return AV_PIX_FMT_NONE;
}

const char *ff_libj2kcuda_space_color(j2kc_color_space space, FFLibJ2KCudaColor *color)
{
    *color = (FFLibJ2KCudaColor) {
        AVCOL_PRI_UNSPECIFIED, AVCOL_TRC_UNSPECIFIED, AVCOL_SPC_UNSPECIFIED, AVCOL_RANGE_UNSPECIFIED
    };
    switch (space) {
    case J2KC_COLOR_SRGB:
        *color = (FFLibJ2KCudaColor) { AVCOL_PRI_BT709, AVCOL_TRC_IEC61966_2_1, AVCOL_SPC_RGB, AVCOL_RANGE_JPEG };
        return NULL;
    case J2KC_COLOR_GRAY:
        /* The greyscale space is sRGB's luminance: its transfer, no primaries. */
        color->trc   = AVCOL_TRC_IEC61966_2_1;
        color->range = AVCOL_RANGE_JPEG;
        return NULL;
    case J2KC_COLOR_SYCC:
        /* IEC 61966-2-1 Amd 1: full-range BT.601 YCbCr of sRGB. */
        *color = (FFLibJ2KCudaColor) { AVCOL_PRI_BT709, AVCOL_TRC_IEC61966_2_1, AVCOL_SPC_BT470BG, AVCOL_RANGE_JPEG };
        return NULL;
    case J2KC_COLOR_XYZ:
        /* SMPTE ST 428-1: X'Y'Z' with the 1/2.6 transfer, full code range; the
         * matrix is the container's to say. */
        *color = (FFLibJ2KCudaColor) { AVCOL_PRI_SMPTE428, AVCOL_TRC_SMPTE428, AVCOL_SPC_UNSPECIFIED, AVCOL_RANGE_JPEG };
        return NULL;
    case J2KC_COLOR_YPBPR_1125_60:
        *color = (FFLibJ2KCudaColor) { AVCOL_PRI_BT709, AVCOL_TRC_BT709, AVCOL_SPC_BT709, AVCOL_RANGE_MPEG };
        return NULL;
    case J2KC_COLOR_YPBPR_1250_50:
        *color = (FFLibJ2KCudaColor) { AVCOL_PRI_BT470BG, AVCOL_TRC_BT709, AVCOL_SPC_BT470BG, AVCOL_RANGE_MPEG };
        return NULL;
    case J2KC_COLOR_ESRGB:
        /* sRGB primaries, but an extended range FFmpeg has no transfer for. */
        color->primaries = AVCOL_PRI_BT709;
        color->space     = AVCOL_SPC_RGB;
        return "e-sRGB";
    case J2KC_COLOR_ESYCC:
        color->primaries = AVCOL_PRI_BT709;
        color->space     = AVCOL_SPC_BT470BG;
        return "e-sYCC";
    case J2KC_COLOR_ROMM:
        return "ROMM-RGB";
    case J2KC_COLOR_CIELAB:
        return "CIE L*a*b*";
    case J2KC_COLOR_CMYK:
        return "CMYK";
    case J2KC_COLOR_UNKNOWN:
        return NULL;
    default:
        return "an enumerated colour space unknown to FFmpeg";
    }
}

int ff_libj2kcuda_stream_color(const j2kc_stream_info *info, FFLibJ2KCudaColor *color,
                               const char **unexpressed)
{
    *unexpressed = NULL;
    if (info->color_space == J2KC_COLOR_XYZ) {
        ff_libj2kcuda_space_color(J2KC_COLOR_XYZ, color);
        return FF_LIBJ2KCUDA_COLOR_SOME;
    }
    /* A raw codestream says nothing else about colour: what the library
     * infers from it (RGB from a component transform) is a guess. A JP2
     * file describes its colour whole, also when it says nothing usable (no
     * usable colr box, or an ICC profile, which goes as side data). */
    if (!info->is_jp2 || !info->enumerated_cs) {
        ff_libj2kcuda_space_color(J2KC_COLOR_UNKNOWN, color);
        return info->is_jp2 ? FF_LIBJ2KCUDA_COLOR_ALL : FF_LIBJ2KCUDA_COLOR_NONE;
    }
    *unexpressed = ff_libj2kcuda_space_color(info->color_space, color);
    /* An EnumCS the library does not know: unknown, with a warning. */
    if (info->color_space == J2KC_COLOR_UNKNOWN)
        *unexpressed = "an enumerated colour space unknown to FFmpeg";
    return FF_LIBJ2KCUDA_COLOR_ALL;
}

j2kc_color_space ff_libj2kcuda_jp2_color(enum AVPixelFormat sw_format, const FFLibJ2KCudaColor *color)
{
    const AVPixFmtDescriptor *desc = av_pix_fmt_desc_get(sw_format);
    int srgb_trc = color->trc == AVCOL_TRC_IEC61966_2_1 || color->trc == AVCOL_TRC_UNSPECIFIED;
    int srgb_pri = color->primaries == AVCOL_PRI_BT709 || color->primaries == AVCOL_PRI_UNSPECIFIED;

    if (!desc || (desc->flags & AV_PIX_FMT_FLAG_XYZ))
        return J2KC_COLOR_UNKNOWN;
    if (desc->nb_components <= 2)
        return srgb_trc && color->range != AVCOL_RANGE_MPEG ? J2KC_COLOR_GRAY : J2KC_COLOR_UNKNOWN;
    if (!srgb_trc || !srgb_pri)
        return J2KC_COLOR_UNKNOWN;
    if (desc->flags & AV_PIX_FMT_FLAG_RGB)
        return J2KC_COLOR_SRGB;
    /* sYCC is full-range BT.601 YCbCr: nothing else can be called so. */
    if (color->range == AVCOL_RANGE_JPEG &&
        (color->space == AVCOL_SPC_BT470BG || color->space == AVCOL_SPC_SMPTE170M))
        return J2KC_COLOR_SYCC;
    return J2KC_COLOR_UNKNOWN;
}

int ff_libj2kcuda_device_handles(AVBufferRef *hw_device_ref,
                                 void **cuda_context, void **cuda_stream)
{
    *cuda_context = NULL;
    *cuda_stream  = NULL;
    if (!hw_device_ref)
        return 0;
#if CONFIG_CUDA
    {
        AVHWDeviceContext *device = (AVHWDeviceContext *)hw_device_ref->data;
        AVCUDADeviceContext *hwctx;

        if (device->type != AV_HWDEVICE_TYPE_CUDA)
            return AVERROR(EINVAL);
        hwctx = device->hwctx;
        *cuda_context = hwctx->cuda_ctx;
        *cuda_stream  = hwctx->stream;
        return 0;
    }
#else
    return AVERROR(ENOSYS);
#endif
}
