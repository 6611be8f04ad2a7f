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
 * Shared helpers of the libj2kcuda encoder and decoder wrappers: status to
 * AVERROR mapping, the log bridge, pixel format to component tables and the
 * CUDA device plumbing. No codec logic lives here.
 */

#ifndef AVCODEC_LIBJ2KCUDA_H
#define AVCODEC_LIBJ2KCUDA_H

#include <stdint.h>

#include <j2kc.h>

#include "libavutil/buffer.h"
#include "libavutil/frame.h"
#include "libavutil/pixfmt.h"

#include "avcodec.h"

/* Largest component count the wrapper maps onto an AVFrame. */
#define LIBJ2KCUDA_MAX_COMPONENTS 4

/**
 * Log bridge state: the core's messages go to av_log() on log_ctx, except
 * errors, which are kept so that the failing call reports them in one line.
 */
typedef struct FFLibJ2KCudaLog {
    void *log_ctx;
    char  last_error[512];
} FFLibJ2KCudaLog;

/** j2kc_log_fn that forwards to av_log(); opaque is an FFLibJ2KCudaLog. */
void ff_libj2kcuda_log_callback(void *opaque, int level, const char *message);

/** Map a j2kc_status to an AVERROR code. */
int ff_libj2kcuda_averror(int status);

/**
 * Log one error line naming what failed, the core's own message and the
 * status, then return the matching AVERROR.
 */
int ff_libj2kcuda_error(FFLibJ2KCudaLog *log, int status, const char *what);

/**
 * Say when the default backend choice fell back to the CPU, so that a slow
 * run on a machine without a usable GPU is never a surprise.
 */
void ff_libj2kcuda_note_backend(void *log_ctx, int requested, j2kc_backend actual);

/**
 * The pixel formats of the encoder's input and the decoder's output: the
 * software formats the wrapper maps onto j2kc components, then
 * AV_PIX_FMT_CUDA; AV_PIX_FMT_NONE-terminated.
 */
extern const enum AVPixelFormat ff_libj2kcuda_pix_fmts[];

/** Whether the wrapper can map the software format sw_format onto j2kc
 *  components (one of ff_libj2kcuda_pix_fmts other than AV_PIX_FMT_CUDA). */
int ff_libj2kcuda_format_supported(enum AVPixelFormat sw_format);

/**
 * Describe width x height samples of sw_format lying in data/linesize as a
 * j2kc_image, without copying: each component points into its plane.
 * data may be NULL to describe the shape only.
 *
 * @param comps at least LIBJ2KCUDA_MAX_COMPONENTS entries
 * @return 0 or AVERROR(ENOSYS) for a format the wrapper cannot map
 */
int ff_libj2kcuda_describe(j2kc_image *image, j2kc_component *comps,
                           enum AVPixelFormat sw_format, int width, int height,
                           uint8_t *const data[], const int linesize[],
                           j2kc_memory memory);

/**
 * Pick the software pixel format a codestream decodes to from its component
 * count, precision, subsampling and colour space. For three full-size
 * components that the codestream does not label, the container's colorspace
 * (a YCbCr matrix) and color_trc (SMPTE ST 428-1: X'Y'Z') tell YCbCr and XYZ
 * from RGB.
 *
 * @return the format, or AV_PIX_FMT_NONE when no supported format fits
 */
enum AVPixelFormat ff_libj2kcuda_output_format(const j2kc_stream_info *info,
                                               enum AVColorSpace colorspace,
                                               enum AVColorTransferCharacteristic color_trc);

/** A stream's colour description in FFmpeg's terms. */
typedef struct FFLibJ2KCudaColor {
    enum AVColorPrimaries              primaries;
    enum AVColorTransferCharacteristic trc;
    enum AVColorSpace                  space;
    enum AVColorRange                  range;
} FFLibJ2KCudaColor;

/**
 * FFmpeg's colour properties of a j2kc colour space, UNSPECIFIED where the
 * space leaves them open.
 *
 * @return NULL, or the name of a space that FFmpeg's colour properties cannot
 *         say exactly (then *color holds what they can say)
 */
const char *ff_libj2kcuda_space_color(j2kc_color_space space, FFLibJ2KCudaColor *color);

/** How much of a stream's colour description ff_libj2kcuda_stream_color() gives. */
enum {
    FF_LIBJ2KCUDA_COLOR_NONE = 0, ///< nothing: the container's description stands
    FF_LIBJ2KCUDA_COLOR_SOME = 1, ///< the fields it sets; UNSPECIFIED ones are the container's to say
    FF_LIBJ2KCUDA_COLOR_ALL = 2, ///< the whole description, UNSPECIFIED where the file leaves it open
};

/**
 * The colour description a codestream or JP2 file declares: a JP2/JPX colr
 * box (all of it, also when it is unusable or an ICC profile, which travels
 * as side data), or X'Y'Z' for a digital cinema codestream.
 *
 * @param unexpressed set to the name of a declared space that FFmpeg's
 *                    colour properties cannot say exactly, else NULL
 * @return one of FF_LIBJ2KCUDA_COLOR_*
 */
int ff_libj2kcuda_stream_color(const j2kc_stream_info *info, FFLibJ2KCudaColor *color,
                               const char **unexpressed);

/**
 * The JP2 colour space that describes frames of sw_format with the given
 * properties, for the colr box of JP2 output.
 *
 * @return the space, or J2KC_COLOR_UNKNOWN when no enumerated JP2 space
 *         matches (an ICC profile must then describe the samples)
 */
j2kc_color_space ff_libj2kcuda_jp2_color(enum AVPixelFormat sw_format, const FFLibJ2KCudaColor *color);

/**
 * Find the CUDA context and stream of a CUDA device reference, as
 * void pointers for j2kc_*_config. Both are left NULL when hw_device_ref is
 * NULL or FFmpeg was built without CUDA.
 */
int ff_libj2kcuda_device_handles(AVBufferRef *hw_device_ref,
                                 void **cuda_context, void **cuda_stream);

#endif /* AVCODEC_LIBJ2KCUDA_H */
