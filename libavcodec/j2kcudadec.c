/*
 * JPEG 2000 decoding on NVIDIA GPUs via libj2kcuda
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
 * JPEG 2000 decoder using libj2kcuda. Raw codestreams and JP2 files are
 * decoded straight into the planes of frames from ff_get_buffer(): system
 * memory, or AV_PIX_FMT_CUDA frames when get_format picks them (with a
 * hw_device_ctx or hw_frames_ctx, as cuviddec does).
 */

#include "config.h"

#include "libavutil/buffer.h"
#include "libavutil/common.h"
#include "libavutil/hwcontext.h"
#include "libavutil/opt.h"
#include "libavutil/pixdesc.h"

#include "avcodec.h"
#include "codec_internal.h"
#include "decode.h"
#include "hwconfig.h"
#include "j2kcuda.h"

typedef struct J2KCudaDecContext {
    const AVClass *class;
    FFJ2KCudaLog   log;
    j2kc_decoder  *decoder;
    void          *cuda_context;  ///< context the decoder was created with
    j2kc_component_info comp_info[J2KCUDA_MAX_COMPONENTS];
    enum AVPixelFormat sw_format; ///< format of the current sequence
    int            width, height;

    /* options */
    int            layers;
    int            gpu;
    int            backend;
} J2KCudaDecContext;

static int create_decoder(AVCodecContext *avctx, AVBufferRef *device_ref)
{
    J2KCudaDecContext *ctx = avctx->priv_data;
    j2kc_decoder_config config;
    int ret;

    j2kc_decoder_free(&ctx->decoder);
    j2kc_decoder_config_default(&config);
    config.backend    = ctx->backend;
    config.device     = ctx->gpu;
    config.log        = ff_j2kcuda_log_callback;
    config.log_opaque = &ctx->log;
    config.threads    = avctx->thread_count;
    config.reduce     = avctx->lowres;
    config.layers     = ctx->layers;
    ret = ff_j2kcuda_device_handles(device_ref, &config.cuda_context, &config.cuda_stream);
    if (ret < 0) {
        av_log(avctx, AV_LOG_ERROR, "The hardware device is not a CUDA device\n");
        return ret;
    }
    ctx->cuda_context = config.cuda_context;

    ret = j2kc_decoder_create(&ctx->decoder, &config);
    if (ret < 0)
        return ff_j2kcuda_error(&ctx->log, ret, "Cannot open the j2k_cuda decoder");
    av_log(avctx, AV_LOG_VERBOSE, "Decoding on the %s backend\n",
           j2kc_decoder_backend(ctx->decoder) == J2KC_BACKEND_CUDA ? "CUDA" : "CPU");
    return 0;
}

static av_cold int j2kcuda_decode_init(AVCodecContext *avctx)
{
    J2KCudaDecContext *ctx = avctx->priv_data;

    ctx->log.log_ctx = avctx;
    ctx->sw_format   = AV_PIX_FMT_NONE;
    return create_decoder(avctx, avctx->hw_device_ctx);
}

/* Negotiate the output format for a new sequence shape: CUDA frames when
 * the caller's get_format picks them, else the software format. */
static int configure_output(AVCodecContext *avctx, enum AVPixelFormat sw_format,
                            int width, int height)
{
    J2KCudaDecContext *ctx = avctx->priv_data;
    enum AVPixelFormat pix_fmts[3] = { AV_PIX_FMT_NONE, AV_PIX_FMT_NONE, AV_PIX_FMT_NONE };
    int ret, i = 0;

    if ((ret = ff_set_dimensions(avctx, width, height)) < 0)
        return ret;
#if CONFIG_CUDA
    pix_fmts[i++] = AV_PIX_FMT_CUDA;
#endif
    pix_fmts[i++] = sw_format;

    /* A frames context sized for the previous sequence cannot serve this one. */
    if (avctx->hw_frames_ctx && ctx->sw_format != AV_PIX_FMT_NONE)
        av_buffer_unref(&avctx->hw_frames_ctx);

    avctx->sw_pix_fmt = sw_format;
    ret = ff_get_format(avctx, pix_fmts);
    if (ret < 0) {
        av_log(avctx, AV_LOG_ERROR, "No usable output format for %s\n",
               av_get_pix_fmt_name(sw_format));
        return ret;
    }
    avctx->pix_fmt = ret;

    if (avctx->pix_fmt == AV_PIX_FMT_CUDA) {
        AVHWFramesContext *frames;

        if (!avctx->hw_frames_ctx) {
            if (!avctx->hw_device_ctx) {
                av_log(avctx, AV_LOG_ERROR, "CUDA output needs a hw_device_ctx or hw_frames_ctx\n");
                return AVERROR(EINVAL);
            }
            avctx->hw_frames_ctx = av_hwframe_ctx_alloc(avctx->hw_device_ctx);
            if (!avctx->hw_frames_ctx)
                return AVERROR(ENOMEM);
            frames            = (AVHWFramesContext *)avctx->hw_frames_ctx->data;
            frames->format    = AV_PIX_FMT_CUDA;
            frames->sw_format = sw_format;
            frames->width     = width;
            frames->height    = height;
            if ((ret = av_hwframe_ctx_init(avctx->hw_frames_ctx)) < 0) {
                av_log(avctx, AV_LOG_ERROR, "Cannot initialise the CUDA frames context\n");
                return ret;
            }
        }
        frames = (AVHWFramesContext *)avctx->hw_frames_ctx->data;
        if (frames->format != AV_PIX_FMT_CUDA || frames->sw_format != sw_format ||
            frames->width < width || frames->height < height) {
            av_log(avctx, AV_LOG_ERROR, "The CUDA frames context does not fit %s %dx%d\n",
                   av_get_pix_fmt_name(sw_format), width, height);
            return AVERROR(EINVAL);
        }
        /* Decode on the frames' own device, in its context. */
        {
            void *cuda_context, *cuda_stream;

            ret = ff_j2kcuda_device_handles(frames->device_ref, &cuda_context, &cuda_stream);
            if (ret < 0)
                return ret;
            if (cuda_context != ctx->cuda_context &&
                (ret = create_decoder(avctx, frames->device_ref)) < 0)
                return ret;
        }
    }

    ctx->sw_format = sw_format;
    ctx->width     = width;
    ctx->height    = height;
    return 0;
}

static int j2kcuda_decode_frame(AVCodecContext *avctx, AVFrame *frame,
                                int *got_frame, AVPacket *avpkt)
{
    J2KCudaDecContext *ctx = avctx->priv_data;
    j2kc_component comps[J2KCUDA_MAX_COMPONENTS];
    j2kc_stream_info info = {
        .struct_size         = sizeof(info),
        .components          = ctx->comp_info,
        .components_capacity = J2KCUDA_MAX_COMPONENTS,
    };
    enum AVPixelFormat sw_format;
    j2kc_image output;
    int ret;

    ret = j2kc_decoder_parse(ctx->decoder, avpkt->data, avpkt->size, &info);
    if (ret < 0)
        return ff_j2kcuda_error(&ctx->log, ret, "Cannot parse the codestream");

    sw_format = ff_j2kcuda_output_format(&info, avctx->colorspace, avctx->color_trc);
    if (sw_format == AV_PIX_FMT_NONE) {
        av_log(avctx, AV_LOG_ERROR, "Unsupported image: %u components, first of %d bits%s\n",
               info.num_components, ctx->comp_info[0].precision,
               ctx->comp_info[0].is_signed ? " signed" : "");
        return AVERROR_PATCHWELCOME;
    }
    if (sw_format != ctx->sw_format || info.width != ctx->width || info.height != ctx->height) {
        if ((ret = configure_output(avctx, sw_format, info.width, info.height)) < 0)
            return ret;
    }
    if (info.rsiz == 3)
        avctx->profile = AV_PROFILE_JPEG2000_DCINEMA_2K;
    else if (info.rsiz == 4)
        avctx->profile = AV_PROFILE_JPEG2000_DCINEMA_4K;
    avctx->bits_per_raw_sample = ctx->comp_info[0].precision;

    if ((ret = ff_get_buffer(avctx, frame, 0)) < 0)
        return ret;
    ret = ff_j2kcuda_describe(&output, comps, sw_format, info.width, info.height,
                              frame->data, frame->linesize,
                              frame->format == AV_PIX_FMT_CUDA ? J2KC_MEMORY_CUDA : J2KC_MEMORY_HOST);
    if (ret < 0)
        return ret;
    ret = j2kc_decode(ctx->decoder, avpkt->data, avpkt->size, &output);
    if (ret < 0)
        return ff_j2kcuda_error(&ctx->log, ret, "Cannot decode the codestream");

    frame->pict_type = AV_PICTURE_TYPE_I;
    frame->flags    |= AV_FRAME_FLAG_KEY;
    *got_frame = 1;
    return avpkt->size;
}

static av_cold int j2kcuda_decode_close(AVCodecContext *avctx)
{
    J2KCudaDecContext *ctx = avctx->priv_data;

    j2kc_decoder_free(&ctx->decoder);
    return 0;
}

#define OFFSET(x) offsetof(J2KCudaDecContext, x)
#define VD AV_OPT_FLAG_VIDEO_PARAM | AV_OPT_FLAG_DECODING_PARAM
static const AVOption options[] = {
    { "layers",  "Decode the first N quality layers (0: all)", OFFSET(layers), AV_OPT_TYPE_INT, { .i64 = 0 }, 0, 65535, VD },
    { "gpu",     "CUDA device index when no device is given", OFFSET(gpu), AV_OPT_TYPE_INT, { .i64 = 0 }, 0, INT_MAX, VD },
    { "backend", "Where to decode", OFFSET(backend), AV_OPT_TYPE_INT, { .i64 = J2KC_BACKEND_CUDA }, J2KC_BACKEND_AUTO, J2KC_BACKEND_CPU, VD, .unit = "backend" },
        { "auto", "CUDA when a GPU is usable, else CPU",  0, AV_OPT_TYPE_CONST, { .i64 = J2KC_BACKEND_AUTO }, 0, 0, VD, .unit = "backend" },
        { "cuda", "CUDA GPU",                             0, AV_OPT_TYPE_CONST, { .i64 = J2KC_BACKEND_CUDA }, 0, 0, VD, .unit = "backend" },
        { "cpu",  "CPU reference path (same pixels)",     0, AV_OPT_TYPE_CONST, { .i64 = J2KC_BACKEND_CPU },  0, 0, VD, .unit = "backend" },
    { NULL },
};

static const AVClass j2kcuda_decoder_class = {
    .class_name = "j2k_cuda decoder",
    .item_name  = av_default_item_name,
    .option     = options,
    .version    = LIBAVUTIL_VERSION_INT,
};

static const AVCodecHWConfigInternal *const j2kcuda_hw_configs[] = {
#if CONFIG_CUDA
    &(const AVCodecHWConfigInternal) {
        .public = {
            .pix_fmt     = AV_PIX_FMT_CUDA,
            .methods     = AV_CODEC_HW_CONFIG_METHOD_HW_DEVICE_CTX |
                           AV_CODEC_HW_CONFIG_METHOD_HW_FRAMES_CTX |
                           AV_CODEC_HW_CONFIG_METHOD_INTERNAL,
            .device_type = AV_HWDEVICE_TYPE_CUDA,
        },
        .hwaccel = NULL,
    },
#endif
    NULL,
};

const FFCodec ff_j2k_cuda_decoder = {
    .p.name         = "j2k_cuda",
    CODEC_LONG_NAME("JPEG 2000 on NVIDIA GPUs (libj2kcuda)"),
    .p.type         = AVMEDIA_TYPE_VIDEO,
    .p.id           = AV_CODEC_ID_JPEG2000,
    .p.capabilities = AV_CODEC_CAP_DR1 | AV_CODEC_CAP_HARDWARE |
                      AV_CODEC_CAP_OTHER_THREADS,
    .caps_internal  = FF_CODEC_CAP_NOT_INIT_THREADSAFE | FF_CODEC_CAP_INIT_CLEANUP,
    .p.max_lowres   = 32,
    .priv_data_size = sizeof(J2KCudaDecContext),
    .init           = j2kcuda_decode_init,
    FF_CODEC_DECODE_CB(j2kcuda_decode_frame),
    .close          = j2kcuda_decode_close,
    .p.priv_class   = &j2kcuda_decoder_class,
    .hw_configs     = j2kcuda_hw_configs,
    .p.wrapper_name = "libj2kcuda",
};
