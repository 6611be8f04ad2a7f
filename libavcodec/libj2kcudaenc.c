/*
 * JPEG 2000 encoding on NVIDIA GPUs via libj2kcuda
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
 * JPEG 2000 encoder using libj2kcuda (ISO/IEC 15444-1 on CUDA, with a CPU
 * reference backend). Frames in system memory or AV_PIX_FMT_CUDA frames are
 * handed to the library without a copy; several frames are kept in flight
 * through the receive_packet API.
 */

#include <string.h>

#include "config.h"
#include "config_components.h"

#include "libavutil/buffer.h"
#include "libavutil/common.h"
#include "libavutil/fifo.h"
#include "libavutil/frame.h"
#include "libavutil/hwcontext.h"
#include "libavutil/mem.h"
#include "libavutil/opt.h"
#include "libavutil/pixdesc.h"

#include "avcodec.h"
#include "codec_internal.h"
#include "encode.h"
#include "hwconfig.h"
#include "libj2kcuda.h"

typedef struct LibJ2KCudaEncContext {
    const AVClass *class;
    FFLibJ2KCudaLog log;
    j2kc_encoder  *encoder;
    enum AVPixelFormat sw_format;
    j2kc_memory    memory;
    AVFrame       *frame;      ///< taken from the queue, not yet accepted by the core
    /**
     * AVFrame * of every submitted frame, in order; its pts, duration and
     * opaque go to the packet. The core copies system-memory frames before
     * submit returns and reads CUDA frames in stream order, but each frame
     * stays referenced until its codestream is out all the same (a lent
     * stream lets the core read a CUDA frame after submit returns).
     */
    AVFifo        *in_flight;
    int64_t        next_tag;
    int            eof;

    /* options */
    int     profile;
    int     lossless;
    int     ht;
    int64_t max_frame_bytes;
    int64_t component_bytes;
    int     levels;
    int     cblk_width;
    int     cblk_height;
    int     precinct_width;
    int     precinct_height;
    int     precinct_width_r0;
    int     precinct_height_r0;
    int     prog_order;
    int     layers;
    int     tile_width;
    int     tile_height;
    int     tile_parts;
    int     tlm;
    int     plt;
    int     sop;
    int     eph;
    int     mct;
    int     guard_bits;
    double  quality;
    int     step_phases;
    int     imf_main_level;
    int     imf_sub_level;
    int     broadcast_level;
    int     gpu;
    int     backend;
    int     frames_in_flight;
    int     format;
} LibJ2KCudaEncContext;

static int log2_size(AVCodecContext *avctx, const char *name, int size,
                     int min, int max, int *out)
{
    if (size < min || size > max || (size & (size - 1))) {
        av_log(avctx, AV_LOG_ERROR, "%s must be a power of two in %d..%d, not %d\n",
               name, min, max, size);
        return AVERROR(EINVAL);
    }
    *out = av_log2(size);
    return 0;
}

/* The ICC profile the frames come with, as ffmpeg passes it on at open. */
static const AVFrameSideData *input_icc_profile(const AVCodecContext *avctx)
{
    return av_frame_side_data_get(avctx->decoded_side_data, avctx->nb_decoded_side_data,
                                  AV_FRAME_DATA_ICC_PROFILE);
}

/* The JP2 colour space the frames' colour properties name, if any. */
static j2kc_color_space frames_jp2_color(const AVCodecContext *avctx)
{
    const LibJ2KCudaEncContext *ctx = avctx->priv_data;
    FFLibJ2KCudaColor color = {
        avctx->color_primaries, avctx->color_trc, avctx->colorspace, avctx->color_range
    };

    return ff_libj2kcuda_jp2_color(ctx->sw_format, &color);
}

/* JP2 output: a colr box that says what the frames' colour properties say,
 * or their ICC profile; never a guess. */
static int fill_jp2_color(AVCodecContext *avctx, j2kc_encoder_config *config, const AVFrameSideData *icc)
{
    LibJ2KCudaEncContext *ctx = avctx->priv_data;

    config->container   = J2KC_CONTAINER_JP2;
    config->color_space = frames_jp2_color(avctx);
    if (icc) {
        config->icc_profile      = icc->data;
        config->icc_profile_size = icc->size;
    } else if (config->color_space == J2KC_COLOR_UNKNOWN) {
        av_log(avctx, AV_LOG_ERROR, "JP2 cannot describe %s in %s/%s/%s/%s without an ICC profile: "
               "convert to RGB or full-range BT.601 YCbCr, or use -format j2k\n",
               av_get_pix_fmt_name(ctx->sw_format), av_color_space_name(avctx->colorspace),
               av_color_primaries_name(avctx->color_primaries), av_color_transfer_name(avctx->color_trc),
               av_color_range_name(avctx->color_range));
        return AVERROR(EINVAL);
    }
    return 0;
}

static int fill_config(AVCodecContext *avctx, j2kc_encoder_config *config, const AVFrameSideData *icc)
{
    LibJ2KCudaEncContext *ctx = avctx->priv_data;
    AVRational rate = avctx->framerate;
    uint64_t budget;
    int ret;

    if (rate.num <= 0 || rate.den <= 0)
        rate = av_inv_q(avctx->time_base);

    j2kc_encoder_config_default(config);
    config->backend    = ctx->backend;
    config->device     = ctx->gpu;
    config->log        = ff_libj2kcuda_log_callback;
    config->log_opaque = &ctx->log;
    config->threads    = avctx->thread_count;
    config->frames_in_flight = ctx->frames_in_flight;
    config->step_phases = ctx->step_phases;
    config->profile    = ctx->profile;
    config->lossless   = ctx->lossless;
    config->block_coder = ctx->ht ? J2KC_BLOCK_CODER_HT : J2KC_BLOCK_CODER_PART1;
    if (rate.num > 0 && rate.den > 0) {
        config->frame_rate_num = rate.num;
        config->frame_rate_den = rate.den;
    }

    /* Options left at -1 keep the library's default, which follows the profile. */
    if (ctx->levels >= 0)
        config->levels = ctx->levels;
    if (ctx->cblk_width > 0 &&
        (ret = log2_size(avctx, "cblk_width", ctx->cblk_width, 4, 1024, &config->cblk_width_log2)) < 0)
        return ret;
    if (ctx->cblk_height > 0 &&
        (ret = log2_size(avctx, "cblk_height", ctx->cblk_height, 4, 1024, &config->cblk_height_log2)) < 0)
        return ret;
    if (ctx->precinct_width > 0 &&
        (ret = log2_size(avctx, "precinct_width", ctx->precinct_width, 2, 32768, &config->precinct_width_log2)) < 0)
        return ret;
    if (ctx->precinct_height > 0 &&
        (ret = log2_size(avctx, "precinct_height", ctx->precinct_height, 2, 32768, &config->precinct_height_log2)) < 0)
        return ret;
    if (ctx->precinct_width_r0 > 0 &&
        (ret = log2_size(avctx, "precinct_width_r0", ctx->precinct_width_r0, 2, 32768, &config->precinct_r0_width_log2)) < 0)
        return ret;
    if (ctx->precinct_height_r0 > 0 &&
        (ret = log2_size(avctx, "precinct_height_r0", ctx->precinct_height_r0, 2, 32768, &config->precinct_r0_height_log2)) < 0)
        return ret;
    if (ctx->prog_order >= 0)
        config->progression = ctx->prog_order;
    if (ctx->layers > 0)
        config->layers = ctx->layers;
    if (ctx->tile_width > 0)
        config->tile_width = ctx->tile_width;
    if (ctx->tile_height > 0)
        config->tile_height = ctx->tile_height;
    if (ctx->tile_parts >= 0)
        config->tile_parts = ctx->tile_parts;
    if (ctx->tlm >= 0)
        config->tlm = ctx->tlm;
    if (ctx->plt >= 0)
        config->plt = ctx->plt;
    config->sop = ctx->sop;
    config->eph = ctx->eph;
    config->mct = ctx->mct;
    /* A component transform across Y, Cb and Cr would only hurt. */
    if (ctx->mct < 0 && !(av_pix_fmt_desc_get(ctx->sw_format)->flags &
                          (AV_PIX_FMT_FLAG_RGB | AV_PIX_FMT_FLAG_XYZ)))
        config->mct = 0;
    if (ctx->guard_bits >= 0)
        config->guard_bits = ctx->guard_bits;
    if (ctx->quality > 0)
        config->quality = ctx->quality;
    config->imf_main_level  = ctx->imf_main_level;
    config->imf_sub_level   = ctx->imf_sub_level;
    config->broadcast_level = ctx->broadcast_level;

    /* The bit rate becomes a byte budget for every frame. */
    config->frame_bytes = ctx->max_frame_bytes;
    if (avctx->bit_rate > 0) {
        if (rate.num <= 0 || rate.den <= 0) {
            av_log(avctx, AV_LOG_ERROR, "A bit rate needs a frame rate\n");
            return AVERROR(EINVAL);
        }
        budget = av_rescale(avctx->bit_rate, rate.den, 8 * (int64_t)rate.num);
        if (budget < 64) {
            av_log(avctx, AV_LOG_ERROR, "Bit rate %"PRId64" leaves %"PRIu64" bytes a frame\n",
                   avctx->bit_rate, budget);
            return AVERROR(EINVAL);
        }
        if (!config->frame_bytes || budget < config->frame_bytes)
            config->frame_bytes = budget;
    }
    config->component_bytes = ctx->component_bytes;
    return ctx->format == J2KC_CONTAINER_JP2 ? fill_jp2_color(avctx, config, icc) : 0;
}

/* What the encoder writes, said to the muxer: the colour properties a JP2
 * colr box or a cinema profile fixes, and the ICC profile of the frames. */
static int export_color(AVCodecContext *avctx, j2kc_color_space written)
{
    LibJ2KCudaEncContext *ctx = avctx->priv_data;
    const AVFrameSideData *icc = input_icc_profile(avctx);
    AVPacketSideData *sd;
    FFLibJ2KCudaColor color;

    /* The space the colr box names fills what the frames left unspecified. */
    ff_libj2kcuda_space_color(written, &color);
    if (avctx->color_primaries == AVCOL_PRI_UNSPECIFIED)
        avctx->color_primaries = color.primaries;
    if (avctx->color_trc == AVCOL_TRC_UNSPECIFIED)
        avctx->color_trc = color.trc;
    if (avctx->colorspace == AVCOL_SPC_UNSPECIFIED)
        avctx->colorspace = color.space;
    if (avctx->color_range == AVCOL_RANGE_UNSPECIFIED)
        avctx->color_range = color.range;
    /* A raw codestream cannot say X'Y'Z'; let the container say it. */
    if (ctx->sw_format == AV_PIX_FMT_XYZ12) {
        if (avctx->color_trc == AVCOL_TRC_UNSPECIFIED)
            avctx->color_trc = AVCOL_TRC_SMPTE428;
        if (avctx->color_primaries == AVCOL_PRI_UNSPECIFIED)
            avctx->color_primaries = AVCOL_PRI_SMPTE428;
    }
    if (icc) {
        sd = av_packet_side_data_new(&avctx->coded_side_data, &avctx->nb_coded_side_data,
                                     AV_PKT_DATA_ICC_PROFILE, icc->size, 0);
        if (!sd)
            return AVERROR(ENOMEM);
        memcpy(sd->data, icc->data, icc->size);
    }
    return 0;
}

/* The library's encoder, from the options and the frames' ICC profile (JP2). */
static int open_encoder(AVCodecContext *avctx, const AVFrameSideData *icc)
{
    LibJ2KCudaEncContext *ctx = avctx->priv_data;
    AVBufferRef *device_ref = avctx->hw_device_ctx;
    j2kc_component comps[LIBJ2KCUDA_MAX_COMPONENTS];
    j2kc_encoder_config config;
    j2kc_image shape;
    int ret;

    if (ctx->memory == J2KC_MEMORY_CUDA)
        device_ref = ((AVHWFramesContext *)avctx->hw_frames_ctx->data)->device_ref;
    if ((ret = fill_config(avctx, &config, icc)) < 0)
        return ret;
    ret = ff_libj2kcuda_device_handles(device_ref, &config.cuda_context, &config.cuda_stream);
    if (ret < 0) {
        av_log(avctx, AV_LOG_ERROR, "The hardware device is not a CUDA device\n");
        return ret;
    }

    ret = ff_libj2kcuda_describe(&shape, comps, ctx->sw_format, avctx->width, avctx->height,
                                 NULL, NULL, ctx->memory);
    if (ret < 0)
        return ret;
    ret = j2kc_encoder_create(&ctx->encoder, &config, &shape);
    if (ret < 0)
        return ff_libj2kcuda_error(&ctx->log, ret, "Cannot open the libj2kcuda encoder");

    ff_libj2kcuda_note_backend(avctx, ctx->backend, j2kc_encoder_backend(ctx->encoder));
    av_log(avctx, AV_LOG_VERBOSE, "Encoding %s %dx%d on the %s backend, %d CPU threads (0: one per core)\n",
           av_get_pix_fmt_name(ctx->sw_format), avctx->width, avctx->height,
           j2kc_encoder_backend(ctx->encoder) == J2KC_BACKEND_CUDA ? "CUDA" : "CPU", avctx->thread_count);
    return 0;
}

static av_cold int libj2kcuda_encode_init(AVCodecContext *avctx)
{
    LibJ2KCudaEncContext *ctx = avctx->priv_data;
    j2kc_color_space written = J2KC_COLOR_UNKNOWN;
    int ret;

    ctx->log.log_ctx = avctx;
    ctx->sw_format   = avctx->pix_fmt;
    ctx->memory      = J2KC_MEMORY_HOST;

    if (avctx->pix_fmt == AV_PIX_FMT_CUDA) {
        if (!avctx->hw_frames_ctx) {
            av_log(avctx, AV_LOG_ERROR, "CUDA frames need a hw_frames_ctx\n");
            return AVERROR(EINVAL);
        }
        ctx->sw_format = ((AVHWFramesContext *)avctx->hw_frames_ctx->data)->sw_format;
        ctx->memory    = J2KC_MEMORY_CUDA;
    }
    if (!ff_libj2kcuda_format_supported(ctx->sw_format)) {
        av_log(avctx, AV_LOG_ERROR, "Pixel format %s is not supported\n",
               av_get_pix_fmt_name(ctx->sw_format));
        return AVERROR(ENOSYS);
    }

    /* A JP2 file carries the ICC profile the frames come with, which only
     * the first frame may tell: its encoder opens then. */
    if (ctx->format == J2KC_CONTAINER_JP2)
        written = frames_jp2_color(avctx);
    else if ((ret = open_encoder(avctx, NULL)) < 0)
        return ret;

    if (ctx->profile == J2KC_PROFILE_DCI_2K)
        avctx->profile = AV_PROFILE_JPEG2000_DCINEMA_2K;
    else if (ctx->profile == J2KC_PROFILE_DCI_4K)
        avctx->profile = AV_PROFILE_JPEG2000_DCINEMA_4K;
    avctx->bits_per_raw_sample = av_pix_fmt_desc_get(ctx->sw_format)->comp[0].depth;
    if ((ret = export_color(avctx, written)) < 0)
        return ret;

    ctx->frame     = av_frame_alloc();
    ctx->in_flight = av_fifo_alloc2(4, sizeof(AVFrame *), AV_FIFO_FLAG_AUTO_GROW);
    if (!ctx->frame || !ctx->in_flight)
        return AVERROR(ENOMEM);
    return 0;
}

/* Hands ctx->frame to the core; on success the frame moves to the in-flight queue. */
static int submit_frame(AVCodecContext *avctx)
{
    LibJ2KCudaEncContext *ctx = avctx->priv_data;
    AVFrame *frame = ctx->frame, *held;
    j2kc_component comps[LIBJ2KCUDA_MAX_COMPONENTS];
    j2kc_image image;
    int ret;

    if (frame->width != avctx->width || frame->height != avctx->height) {
        av_log(avctx, AV_LOG_ERROR, "Frame size changed from %dx%d to %dx%d\n",
               avctx->width, avctx->height, frame->width, frame->height);
        return AVERROR(EINVAL);
    }
    if (!ctx->encoder) {
        const AVFrameSideData *icc = av_frame_get_side_data(frame, AV_FRAME_DATA_ICC_PROFILE);

        if ((ret = open_encoder(avctx, icc ? icc : input_icc_profile(avctx))) < 0)
            return ret;
    }
    ret = ff_libj2kcuda_describe(&image, comps, ctx->sw_format, frame->width, frame->height,
                                 frame->data, frame->linesize, ctx->memory);
    if (ret < 0)
        return ret;

    /* Make room first, so that a frame the core accepted is never dropped. */
    if (!(held = av_frame_alloc()))
        return AVERROR(ENOMEM);
    ret = j2kc_encoder_submit(ctx->encoder, &image, ctx->next_tag);
    if (ret < 0) {
        av_frame_free(&held);
        if (ret == J2KC_ERR_AGAIN)
            return AVERROR(EAGAIN);
        return ff_libj2kcuda_error(&ctx->log, ret, "Cannot encode the frame");
    }
    ctx->next_tag++;
    av_frame_move_ref(held, frame);
    /* The FIFO grows on demand; the core bounds how many frames are in flight. */
    if ((ret = av_fifo_write(ctx->in_flight, &held, 1)) < 0) {
        av_frame_free(&held);
        return ret;
    }
    return 0;
}

static int output_packet(AVCodecContext *avctx, AVPacket *pkt, const j2kc_packet *jp)
{
    LibJ2KCudaEncContext *ctx = avctx->priv_data;
    AVFrame *frame;
    int ret;

    if (av_fifo_read(ctx->in_flight, &frame, 1) < 0) {
        av_log(avctx, AV_LOG_ERROR, "The library returned a packet for no frame\n");
        return AVERROR_BUG;
    }
    ret = ff_get_encode_buffer(avctx, pkt, jp->size, 0);
    if (ret >= 0) {
        memcpy(pkt->data, jp->data, jp->size);
        pkt->pts      = frame->pts;
        pkt->dts      = frame->pts;
        pkt->duration = frame->duration;
        pkt->flags   |= AV_PKT_FLAG_KEY;
        if (avctx->flags & AV_CODEC_FLAG_COPY_OPAQUE) {
            pkt->opaque     = frame->opaque;
            pkt->opaque_ref = frame->opaque_ref;
            frame->opaque_ref = NULL;
        }
    }
    av_frame_free(&frame);
    return ret;
}

static int libj2kcuda_receive_packet(AVCodecContext *avctx, AVPacket *pkt)
{
    LibJ2KCudaEncContext *ctx = avctx->priv_data;
    j2kc_packet jp;
    int ret;

    for (;;) {
        int queue_full = 0;

        if (!ctx->eof && !ctx->frame->buf[0]) {
            ret = ff_encode_get_frame(avctx, ctx->frame);
            if (ret == AVERROR_EOF)
                ctx->eof = 1;
            else if (ret < 0 && ret != AVERROR(EAGAIN))
                return ret;
        }
        if (ctx->frame->buf[0]) {
            ret = submit_frame(avctx);
            if (ret >= 0)
                continue;      /* take more input while the GPU works */
            if (ret != AVERROR(EAGAIN))
                return ret;
            queue_full = 1;
        }

        if (!ctx->encoder)  /* no frame came */
            return ctx->eof ? AVERROR_EOF : AVERROR(EAGAIN);
        /* Wait for a codestream when nothing more can be queued or at the
         * end; otherwise take one only if it is already finished. */
        ret = j2kc_encoder_receive(ctx->encoder, &jp, queue_full || ctx->eof);
        if (ret == J2KC_OK)
            return output_packet(avctx, pkt, &jp);
        if (ret == J2KC_ERR_EOF)
            return AVERROR_EOF;
        if (ret == J2KC_ERR_AGAIN) {
            if (queue_full || ctx->eof) {
                av_log(avctx, AV_LOG_ERROR, "The library neither takes nor returns frames\n");
                return AVERROR_BUG;
            }
            return AVERROR(EAGAIN);
        }
        return ff_libj2kcuda_error(&ctx->log, ret, "Cannot encode the frame");
    }
}

static av_cold int libj2kcuda_encode_close(AVCodecContext *avctx)
{
    LibJ2KCudaEncContext *ctx = avctx->priv_data;
    AVFrame *frame;

    /* The core first, so that nothing reads the held frames any more. */
    j2kc_encoder_free(&ctx->encoder);
    av_frame_free(&ctx->frame);
    if (ctx->in_flight) {
        while (av_fifo_read(ctx->in_flight, &frame, 1) >= 0)
            av_frame_free(&frame);
        av_fifo_freep2(&ctx->in_flight);
    }
    return 0;
}

#define OFFSET(x) offsetof(LibJ2KCudaEncContext, x)
#define VE AV_OPT_FLAG_VIDEO_PARAM | AV_OPT_FLAG_ENCODING_PARAM
static const AVOption options[] = {
    { "profile",         "Codestream profile (sets Rsiz and its constraints)", OFFSET(profile), AV_OPT_TYPE_INT, { .i64 = J2KC_PROFILE_NONE }, J2KC_PROFILE_NONE, J2KC_PROFILE_BROADCAST, VE, .unit = "profile" },
        { "none",        "Part 1 without profile constraints", 0, AV_OPT_TYPE_CONST, { .i64 = J2KC_PROFILE_NONE },      0, 0, VE, .unit = "profile" },
        { "dci_2k",      "Digital cinema 2K (Rsiz 3)",         0, AV_OPT_TYPE_CONST, { .i64 = J2KC_PROFILE_DCI_2K },    0, 0, VE, .unit = "profile" },
        { "dci_4k",      "Digital cinema 4K (Rsiz 4)",         0, AV_OPT_TYPE_CONST, { .i64 = J2KC_PROFILE_DCI_4K },    0, 0, VE, .unit = "profile" },
        { "imf",         "IMF 2K/4K/8K, lossy or reversible",  0, AV_OPT_TYPE_CONST, { .i64 = J2KC_PROFILE_IMF },       0, 0, VE, .unit = "profile" },
        { "broadcast",   "Broadcast contribution",             0, AV_OPT_TYPE_CONST, { .i64 = J2KC_PROFILE_BROADCAST }, 0, 0, VE, .unit = "profile" },
    { "lossless",        "Reversible 5/3 wavelet and RCT, every pass kept", OFFSET(lossless), AV_OPT_TYPE_BOOL, { .i64 = 0 }, 0, 1, VE },
    { "ht",              "HTJ2K block coder (ISO/IEC 15444-15); with profile imf: SMPTE ST 2067-21 APP2.HT", OFFSET(ht), AV_OPT_TYPE_BOOL, { .i64 = 0 }, 0, 1, VE },
    { "max_frame_bytes", "Byte cap for each codestream (0: none; b sets one from the frame rate)", OFFSET(max_frame_bytes), AV_OPT_TYPE_INT64, { .i64 = 0 }, 0, INT64_MAX, VE },
    { "component_bytes", "Byte cap for each component of a codestream (0: none)", OFFSET(component_bytes), AV_OPT_TYPE_INT64, { .i64 = 0 }, 0, INT64_MAX, VE },
    { "levels",          "Wavelet decomposition levels (-1: profile default)", OFFSET(levels), AV_OPT_TYPE_INT, { .i64 = -1 }, -1, 32, VE },
    { "cblk_width",      "Code-block width, a power of two (0: default)",  OFFSET(cblk_width),  AV_OPT_TYPE_INT, { .i64 = 0 }, 0, 1024, VE },
    { "cblk_height",     "Code-block height, a power of two (0: default)", OFFSET(cblk_height), AV_OPT_TYPE_INT, { .i64 = 0 }, 0, 1024, VE },
    { "precinct_width",  "Precinct width, a power of two (0: 256, 128 at the lowest resolution; 32768: maximal)",  OFFSET(precinct_width),  AV_OPT_TYPE_INT, { .i64 = 0 }, 0, 32768, VE },
    { "precinct_height", "Precinct height, a power of two (0: 256, 128 at the lowest resolution; 32768: maximal)", OFFSET(precinct_height), AV_OPT_TYPE_INT, { .i64 = 0 }, 0, 32768, VE },
    { "precinct_width_r0",  "Precinct width of the lowest resolution (0: as the others)",  OFFSET(precinct_width_r0),  AV_OPT_TYPE_INT, { .i64 = 0 }, 0, 32768, VE },
    { "precinct_height_r0", "Precinct height of the lowest resolution (0: as the others)", OFFSET(precinct_height_r0), AV_OPT_TYPE_INT, { .i64 = 0 }, 0, 32768, VE },
    { "prog_order",      "Progression order (-1: profile default)", OFFSET(prog_order), AV_OPT_TYPE_INT, { .i64 = -1 }, -1, J2KC_PROG_CPRL, VE, .unit = "prog_order" },
        { "lrcp",        NULL, 0, AV_OPT_TYPE_CONST, { .i64 = J2KC_PROG_LRCP }, 0, 0, VE, .unit = "prog_order" },
        { "rlcp",        NULL, 0, AV_OPT_TYPE_CONST, { .i64 = J2KC_PROG_RLCP }, 0, 0, VE, .unit = "prog_order" },
        { "rpcl",        NULL, 0, AV_OPT_TYPE_CONST, { .i64 = J2KC_PROG_RPCL }, 0, 0, VE, .unit = "prog_order" },
        { "pcrl",        NULL, 0, AV_OPT_TYPE_CONST, { .i64 = J2KC_PROG_PCRL }, 0, 0, VE, .unit = "prog_order" },
        { "cprl",        NULL, 0, AV_OPT_TYPE_CONST, { .i64 = J2KC_PROG_CPRL }, 0, 0, VE, .unit = "prog_order" },
    { "layers",          "Quality layers (0: default)", OFFSET(layers), AV_OPT_TYPE_INT, { .i64 = 0 }, 0, J2KC_MAX_LAYERS, VE },
    { "tile_width",      "Tile width (0: one tile)",  OFFSET(tile_width),  AV_OPT_TYPE_INT, { .i64 = 0 }, 0, INT_MAX, VE },
    { "tile_height",     "Tile height (0: one tile)", OFFSET(tile_height), AV_OPT_TYPE_INT, { .i64 = 0 }, 0, INT_MAX, VE },
    { "tile_parts",      "Tile-part divisions (-1: profile default)", OFFSET(tile_parts), AV_OPT_TYPE_INT, { .i64 = -1 }, -1, J2KC_TILE_PARTS_DCI_4K, VE, .unit = "tile_parts" },
        { "none",        "One tile-part per tile",            0, AV_OPT_TYPE_CONST, { .i64 = J2KC_TILE_PARTS_NONE },       0, 0, VE, .unit = "tile_parts" },
        { "resolution",  "A new tile-part at each resolution", 0, AV_OPT_TYPE_CONST, { .i64 = J2KC_TILE_PARTS_RESOLUTION }, 0, 0, VE, .unit = "tile_parts" },
        { "component",   "A new tile-part at each component",  0, AV_OPT_TYPE_CONST, { .i64 = J2KC_TILE_PARTS_COMPONENT },  0, 0, VE, .unit = "tile_parts" },
        { "dci_4k",      "Component by 2K/4K resolution split", 0, AV_OPT_TYPE_CONST, { .i64 = J2KC_TILE_PARTS_DCI_4K },    0, 0, VE, .unit = "tile_parts" },
    { "tlm",             "Write TLM marker segments (-1: profile default)", OFFSET(tlm), AV_OPT_TYPE_BOOL, { .i64 = -1 }, -1, 1, VE },
    { "plt",             "Write PLT marker segments (-1: profile default)", OFFSET(plt), AV_OPT_TYPE_BOOL, { .i64 = -1 }, -1, 1, VE },
    { "sop",             "Start-of-packet markers", OFFSET(sop), AV_OPT_TYPE_BOOL, { .i64 = 0 }, 0, 1, VE },
    { "eph",             "End-of-packet-header markers", OFFSET(eph), AV_OPT_TYPE_BOOL, { .i64 = 0 }, 0, 1, VE },
    { "mct",             "Multi-component transform (-1: for RGB and XYZ)", OFFSET(mct), AV_OPT_TYPE_BOOL, { .i64 = -1 }, -1, 1, VE },
    { "guard_bits",      "Guard bits (-1: profile default)", OFFSET(guard_bits), AV_OPT_TYPE_INT, { .i64 = -1 }, -1, 7, VE },
    { "quality",         "Step scale without a byte budget (1: visually lossless; 0: default)", OFFSET(quality), AV_OPT_TYPE_DOUBLE, { .dbl = 0 }, 0, 1000, VE },
    { "step_phases",     "Step phases searched under a byte budget: each frame (generic) or the first (DCI, IMF), each phase an encode and a decode, 6 more around the best (0: 4 on the first frame, kept for the sequence; 1: none)", OFFSET(step_phases), AV_OPT_TYPE_INT, { .i64 = 0 }, 0, 8, VE },
    { "imf_level",       "IMF main level (0: from size and frame rate)", OFFSET(imf_main_level), AV_OPT_TYPE_INT, { .i64 = 0 }, 0, 11, VE },
    { "imf_sublevel",    "IMF sub-level (0: derived)",                  OFFSET(imf_sub_level),  AV_OPT_TYPE_INT, { .i64 = 0 }, 0, 9, VE },
    { "broadcast_level", "Broadcast level (0: derived)",                OFFSET(broadcast_level), AV_OPT_TYPE_INT, { .i64 = 0 }, 0, 7, VE },
    { "gpu",             "CUDA device index when no device is given", OFFSET(gpu), AV_OPT_TYPE_INT, { .i64 = 0 }, 0, INT_MAX, VE },
    { "frames_in_flight", "Frames encoded at once on the GPU (0: library default)", OFFSET(frames_in_flight), AV_OPT_TYPE_INT, { .i64 = 0 }, 0, 16, VE },
    { "backend",         "Where to encode", OFFSET(backend), AV_OPT_TYPE_INT, { .i64 = J2KC_BACKEND_AUTO }, J2KC_BACKEND_AUTO, J2KC_BACKEND_CPU, VE, .unit = "backend" },
        { "auto",        "CUDA when a GPU is usable, else CPU",     0, AV_OPT_TYPE_CONST, { .i64 = J2KC_BACKEND_AUTO }, 0, 0, VE, .unit = "backend" },
        { "cuda",        "CUDA GPU",                                0, AV_OPT_TYPE_CONST, { .i64 = J2KC_BACKEND_CUDA }, 0, 0, VE, .unit = "backend" },
        { "cpu",         "CPU reference path (same codestreams)",  0, AV_OPT_TYPE_CONST, { .i64 = J2KC_BACKEND_CPU },  0, 0, VE, .unit = "backend" },
    { "format",          "Output format", OFFSET(format), AV_OPT_TYPE_INT, { .i64 = J2KC_CONTAINER_CODESTREAM }, J2KC_CONTAINER_CODESTREAM, J2KC_CONTAINER_JP2, VE, .unit = "format" },
        { "j2k",         "Raw codestream, for MXF, MOV, MKV and .j2c files",       0, AV_OPT_TYPE_CONST, { .i64 = J2KC_CONTAINER_CODESTREAM }, 0, 0, VE, .unit = "format" },
        { "jp2",         "JP2 file with its colour description, for .jp2 files",   0, AV_OPT_TYPE_CONST, { .i64 = J2KC_CONTAINER_JP2 },        0, 0, VE, .unit = "format" },
    { NULL },
};

static const FFCodecDefault libj2kcuda_encode_defaults[] = {
    { "b", "0" },
    { NULL },
};

static const AVClass libj2kcuda_encoder_class = {
    .class_name = "libj2kcuda encoder",
    .item_name  = av_default_item_name,
    .option     = options,
    .version    = LIBAVUTIL_VERSION_INT,
};

static const AVCodecHWConfigInternal *const libj2kcuda_hw_configs[] = {
#if CONFIG_CUDA
    HW_CONFIG_ENCODER_FRAMES(CUDA, CUDA),
    HW_CONFIG_ENCODER_DEVICE(NONE, CUDA),
#endif
    NULL,
};

#define LIBJ2KCUDA_ENCODER(codec_name)                                                     \
const FFCodec ff_ ## codec_name ## _encoder = {                                            \
    .p.name         = #codec_name,                                                         \
    CODEC_LONG_NAME("JPEG 2000 on NVIDIA GPUs (libj2kcuda)"),                              \
    .p.type         = AVMEDIA_TYPE_VIDEO,                                                  \
    .p.id           = AV_CODEC_ID_JPEG2000,                                                \
    .p.capabilities = AV_CODEC_CAP_DELAY | AV_CODEC_CAP_HARDWARE |                         \
                      AV_CODEC_CAP_OTHER_THREADS |                                         \
                      AV_CODEC_CAP_ENCODER_REORDERED_OPAQUE,                               \
    .caps_internal  = FF_CODEC_CAP_NOT_INIT_THREADSAFE | FF_CODEC_CAP_INIT_CLEANUP |       \
                      FF_CODEC_CAP_AUTO_THREADS,                                           \
    .priv_data_size = sizeof(LibJ2KCudaEncContext),                                        \
    .init           = libj2kcuda_encode_init,                                              \
    FF_CODEC_RECEIVE_PACKET_CB(libj2kcuda_receive_packet),                                 \
    .close          = libj2kcuda_encode_close,                                             \
    CODEC_PIXFMTS_ARRAY(ff_libj2kcuda_pix_fmts),                                           \
    .p.priv_class   = &libj2kcuda_encoder_class,                                           \
    .defaults       = libj2kcuda_encode_defaults,                                          \
    .hw_configs     = libj2kcuda_hw_configs,                                               \
    .p.wrapper_name = "libj2kcuda",                                                        \
}

LIBJ2KCUDA_ENCODER(libj2kcuda);
#if CONFIG_J2K_CUDA_ENCODER
/* The name of the first releases, so that existing command lines keep working. */
LIBJ2KCUDA_ENCODER(j2k_cuda);
#endif
