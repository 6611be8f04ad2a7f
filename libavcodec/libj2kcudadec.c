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
 *
 * Host frames of the CUDA backend come from a pool of the library's
 * page-locked memory (j2kc_decoder_host_alloc()), which the GPU's copies
 * reach without a staging copy, unless the application allocates frames
 * itself (get_buffer2), or the pinned option says otherwise.
 *
 * Several packets are in flight (receive_frame API): each packet is parsed
 * and handed to j2kc_decoder_submit() as soon as the core has room, so the
 * core decodes the next frames on its CPU workers while the GPU finishes the
 * oldest; frames come back in packet order and take their timestamps and
 * side data from their own packet.
 */

#include <string.h>

#include "config.h"
#include "config_components.h"

#include "libavutil/buffer.h"
#include "libavutil/common.h"
#include "libavutil/fifo.h"
#include "libavutil/hwcontext.h"
#include "libavutil/imgutils.h"
#include "libavutil/opt.h"
#include "libavutil/pixdesc.h"

#include "avcodec.h"
#include "codec_internal.h"
#include "decode.h"
#include "hwconfig.h"
#include "internal.h"
#include "libj2kcuda.h"

/** A packet handed to the core, waiting for its frame. */
typedef struct LibJ2KCudaDecEntry {
    AVPacket          *pkt;       ///< the packet: its data (for a resubmit) and its frame properties
    int64_t            tag;
    enum AVPixelFormat sw_format;
    int                width, height;
    int                profile;
    int                bits;
    int                has_color;  ///< FF_LIBJ2KCUDA_COLOR_*: how much of color overrides the container's
    FFLibJ2KCudaColor  color;
    const uint8_t     *icc;        ///< ICC profile inside pkt's data, or NULL
    size_t             icc_size;
} LibJ2KCudaDecEntry;

typedef struct LibJ2KCudaDecContext {
    const AVClass *class;
    FFLibJ2KCudaLog log;
    j2kc_decoder  *decoder;
    void          *cuda_context;  ///< context the decoder was created with
    j2kc_component_info comp_info[LIBJ2KCUDA_MAX_COMPONENTS];
    enum AVPixelFormat sw_format; ///< format of the current sequence
    int            width, height;

    AVFifo        *in_flight;     ///< LibJ2KCudaDecEntry, in submit order
    LibJ2KCudaDecEntry pending;   ///< parsed, but the core's queue was full
    AVPacket      *pkt;
    int64_t        next_tag;
    int            eof;           ///< ff_decode_get_packet() said EOF: drain
    const char    *warned_color;  ///< the colour space last warned about, to warn once

    AVBufferPool  *host_pool;       ///< host frames in the library's memory, a buffer a frame
    size_t         host_offset[4];  ///< where each plane of a host_pool frame starts
    int            host_linesize[4];
    int            host_pool_failed; ///< no more memory for it: FFmpeg's buffers from then on

    /* options */
    int            layers;
    int            gpu;
    int            backend;
    int            frames_in_flight;
    int            tier1;
    int            pinned;
} LibJ2KCudaDecContext;

static int create_decoder(AVCodecContext *avctx, AVBufferRef *device_ref)
{
    LibJ2KCudaDecContext *ctx = avctx->priv_data;
    j2kc_decoder_config config;
    int ret;

    j2kc_decoder_free(&ctx->decoder);
    j2kc_decoder_config_default(&config);
    config.backend    = ctx->backend;
    config.device     = ctx->gpu;
    config.log        = ff_libj2kcuda_log_callback;
    config.log_opaque = &ctx->log;
    config.threads    = avctx->thread_count;
    config.reduce     = avctx->lowres;
    config.layers     = ctx->layers;
    config.frames_in_flight = ctx->frames_in_flight;
    config.tier1_on_gpu = ctx->tier1;
    config.strict     = !!(avctx->err_recognition & AV_EF_EXPLODE);
    ret = ff_libj2kcuda_device_handles(device_ref, &config.cuda_context, &config.cuda_stream);
    if (ret < 0) {
        av_log(avctx, AV_LOG_ERROR, "The hardware device is not a CUDA device\n");
        return ret;
    }
    ctx->cuda_context = config.cuda_context;

    ret = j2kc_decoder_create(&ctx->decoder, &config);
    if (ret < 0)
        return ff_libj2kcuda_error(&ctx->log, ret, "Cannot open the libj2kcuda decoder");
    ff_libj2kcuda_note_backend(avctx, ctx->backend, j2kc_decoder_backend(ctx->decoder));
    av_log(avctx, AV_LOG_VERBOSE, "Decoding on the %s backend, %d CPU threads (0: one per core)%s\n",
           j2kc_decoder_backend(ctx->decoder) == J2KC_BACKEND_CUDA ? "CUDA" : "CPU", avctx->thread_count,
           j2kc_decoder_backend(ctx->decoder) == J2KC_BACKEND_CUDA && ctx->tier1 != 0 ? ", Tier-1 on the GPU" : "");
    return 0;
}

static av_cold int libj2kcuda_decode_init(AVCodecContext *avctx)
{
    LibJ2KCudaDecContext *ctx = avctx->priv_data;

    ctx->log.log_ctx = avctx;
    ctx->sw_format   = AV_PIX_FMT_NONE;
    ctx->in_flight   = av_fifo_alloc2(4, sizeof(LibJ2KCudaDecEntry), AV_FIFO_FLAG_AUTO_GROW);
    ctx->pkt         = av_packet_alloc();
    if (!ctx->in_flight || !ctx->pkt)
        return AVERROR(ENOMEM);
    return create_decoder(avctx, avctx->hw_device_ctx);
}

/* A decoder made anew (another CUDA context) gets the packets in flight again. */
static int resubmit_in_flight(AVCodecContext *avctx)
{
    LibJ2KCudaDecContext *ctx = avctx->priv_data;
    LibJ2KCudaDecEntry entry;
    int ret;

    for (size_t i = 0; av_fifo_peek(ctx->in_flight, &entry, 1, i) >= 0; i++) {
        ret = j2kc_decoder_submit(ctx->decoder, entry.pkt->data, entry.pkt->size, entry.tag);
        if (ret < 0)
            return ff_libj2kcuda_error(&ctx->log, ret, "Cannot queue the codestream again");
    }
    return 0;
}

/* Whether CUDA frames of the device can hold sw_format: FFmpeg's CUDA
 * frames take a fixed list of formats, which X'Y'Z', GBR planar above 8 bits
 * and grey are not part of. */
static int cuda_frames_hold(AVBufferRef *device_ref, enum AVPixelFormat sw_format)
{
    AVHWFramesConstraints *constraints;
    int found = 0;

    if (!device_ref || !(constraints = av_hwdevice_get_hwframe_constraints(device_ref, NULL)))
        return 0;
    for (int i = 0; constraints->valid_sw_formats &&
                    constraints->valid_sw_formats[i] != AV_PIX_FMT_NONE; i++)
        found |= constraints->valid_sw_formats[i] == sw_format;
    av_hwframe_constraints_free(&constraints);
    return found;
}

static void host_buffer_free(void *opaque, uint8_t *data)
{
    j2kc_host_free(data);
}

/* The pool's allocator; called only from the decoder's own calls, so the
 * codec context is alive, while the buffers may outlive it. */
static AVBufferRef *host_buffer_alloc(void *opaque, size_t size)
{
    AVCodecContext *avctx = opaque;
    LibJ2KCudaDecContext *ctx = avctx->priv_data;
    AVBufferRef *buf;
    void *data;
    int ret;

    ret = j2kc_decoder_host_alloc(ctx->decoder, size, &data);
    if (ret < 0) {
        ff_libj2kcuda_error(&ctx->log, ret, "Cannot allocate a host frame");
        return NULL;
    }
    buf = av_buffer_create(data, size, host_buffer_free, NULL, 0);
    if (!buf)
        j2kc_host_free(data);
    return buf;
}

/* Lay host frames out as avcodec_default_get_buffer2() does (the same
 * linesizes, and the same padding after each plane), the planes of a frame
 * in one buffer of host_pool. */
static int init_host_pool(AVCodecContext *avctx)
{
    LibJ2KCudaDecContext *ctx = avctx->priv_data;
    int w = avctx->width, h = avctx->height, linesize_align[AV_NUM_DATA_POINTERS];
    int unaligned, ret;
    ptrdiff_t linesizes[4];
    size_t sizes[4], total = 0;

    avcodec_align_dimensions2(avctx, &w, &h, linesize_align);
    do {
        ret = av_image_fill_linesizes(ctx->host_linesize, avctx->pix_fmt, w);
        if (ret < 0)
            return ret;
        w += w & ~(w - 1);
        unaligned = 0;
        for (int i = 0; i < 4; i++)
            unaligned |= ctx->host_linesize[i] % linesize_align[i];
    } while (unaligned);
    for (int i = 0; i < 4; i++)
        linesizes[i] = ctx->host_linesize[i];
    ret = av_image_fill_plane_sizes(sizes, avctx->pix_fmt, h, linesizes);
    if (ret < 0)
        return ret;
    for (int i = 0; i < 4; i++) {
        ctx->host_offset[i] = total;
        if (sizes[i])
            total = FFALIGN(total + sizes[i] + 16 + STRIDE_ALIGN - 1, STRIDE_ALIGN);
    }
    ctx->host_pool = av_buffer_pool_init2(total, avctx, host_buffer_alloc, NULL);
    if (!ctx->host_pool)
        return AVERROR(ENOMEM);
    av_log(avctx, AV_LOG_VERBOSE, "Host frames in libj2kcuda's %s memory, %zu bytes each\n",
           j2kc_decoder_backend(ctx->decoder) == J2KC_BACKEND_CUDA ? "page-locked" : "plain", total);
    return 0;
}

/* Host frames from host_pool: page-locked memory gains only on the CUDA
 * backend, and an application's own get_buffer2() is honoured unless it
 * asks for the pool (-pinned 1). */
static int use_host_pool(AVCodecContext *avctx)
{
    LibJ2KCudaDecContext *ctx = avctx->priv_data;

    if (avctx->pix_fmt == AV_PIX_FMT_CUDA || ctx->host_pool_failed || !ctx->pinned)
        return 0;
    return ctx->pinned > 0 || (avctx->get_buffer2 == avcodec_default_get_buffer2 &&
                               j2kc_decoder_backend(ctx->decoder) == J2KC_BACKEND_CUDA);
}

/* What ff_get_buffer() does, with the buffer from host_pool. */
static int get_host_buffer(AVCodecContext *avctx, AVFrame *frame)
{
    LibJ2KCudaDecContext *ctx = avctx->priv_data;
    int ret;

    if (!ctx->host_pool && (ret = init_host_pool(avctx)) < 0)
        return ret;
    frame->width  = avctx->width;
    frame->height = avctx->height;
    frame->format = avctx->pix_fmt;
    ret = ff_decode_frame_props(avctx, frame);
    if (ret < 0)
        return ret;
    frame->buf[0] = av_buffer_pool_get(ctx->host_pool);
    if (!frame->buf[0]) {
        av_log(avctx, AV_LOG_WARNING, "Host frames come from FFmpeg's buffers from now on\n");
        ctx->host_pool_failed = 1;
        av_frame_unref(frame);
        return ff_get_buffer(avctx, frame, 0);
    }
    for (int i = 0; i < 4 && ctx->host_linesize[i]; i++) {
        frame->data[i]     = frame->buf[0]->data + ctx->host_offset[i];
        frame->linesize[i] = ctx->host_linesize[i];
    }
    return ff_attach_decode_data(frame);
}

/* Negotiate the output format for a new sequence shape: CUDA frames when
 * the caller's get_format picks them and they can hold the samples, else
 * the software format. */
static int configure_output(AVCodecContext *avctx, enum AVPixelFormat sw_format,
                            int width, int height)
{
    LibJ2KCudaDecContext *ctx = avctx->priv_data;
    enum AVPixelFormat pix_fmts[3] = { AV_PIX_FMT_NONE, AV_PIX_FMT_NONE, AV_PIX_FMT_NONE };
    int ret, i = 0;

    /* width x height is the reduced size already; ff_set_dimensions() takes
     * the full one and reduces it by lowres itself (as jpeg2000dec does). */
    if (((int64_t)width << avctx->lowres) > INT_MAX || ((int64_t)height << avctx->lowres) > INT_MAX) {
        av_log(avctx, AV_LOG_ERROR, "lowres %d is too large for %dx%d\n", avctx->lowres, width, height);
        return AVERROR(EINVAL);
    }
    if ((ret = ff_set_dimensions(avctx, width << avctx->lowres, height << avctx->lowres)) < 0)
        return ret;
#if CONFIG_CUDA
    if (avctx->hw_frames_ctx || cuda_frames_hold(avctx->hw_device_ctx, sw_format))
        pix_fmts[i++] = AV_PIX_FMT_CUDA;
    else if (avctx->hw_device_ctx)
        av_log(avctx, AV_LOG_WARNING, "CUDA frames cannot hold %s: decoding to system memory\n",
               av_get_pix_fmt_name(sw_format));
#endif
    pix_fmts[i++] = sw_format;

    /* A frames context sized for the previous sequence cannot serve this one. */
    if (avctx->hw_frames_ctx && ctx->sw_format != AV_PIX_FMT_NONE)
        av_buffer_unref(&avctx->hw_frames_ctx);

    /* Frames still out keep their buffers; the pool goes with the last one. */
    av_buffer_pool_uninit(&ctx->host_pool);

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

            ret = ff_libj2kcuda_device_handles(frames->device_ref, &cuda_context, &cuda_stream);
            if (ret < 0)
                return ret;
            if (cuda_context != ctx->cuda_context &&
                ((ret = create_decoder(avctx, frames->device_ref)) < 0 ||
                 (ret = resubmit_in_flight(avctx)) < 0))
                return ret;
        }
    }

    ctx->sw_format = sw_format;
    ctx->width     = width;
    ctx->height    = height;
    return 0;
}

/* Parse a packet: the shape and format of its frame, before the core gets it. */
static int parse_packet(AVCodecContext *avctx, AVPacket *pkt, LibJ2KCudaDecEntry *entry)
{
    LibJ2KCudaDecContext *ctx = avctx->priv_data;
    j2kc_stream_info info = {
        .struct_size         = sizeof(info),
        .components          = ctx->comp_info,
        .components_capacity = LIBJ2KCUDA_MAX_COMPONENTS,
    };
    const char *unexpressed;
    int ret;

    ret = j2kc_decoder_parse(ctx->decoder, pkt->data, pkt->size, &info);
    if (ret < 0)
        return ff_libj2kcuda_error(&ctx->log, ret, "Cannot parse the codestream");

    entry->sw_format = ff_libj2kcuda_output_format(&info, avctx->colorspace, avctx->color_trc);
    if (entry->sw_format == AV_PIX_FMT_NONE) {
        av_log(avctx, AV_LOG_ERROR, "Unsupported image: %u components, first of %d bits%s\n",
               info.num_components, ctx->comp_info[0].precision,
               ctx->comp_info[0].is_signed ? " signed" : "");
        return AVERROR_PATCHWELCOME;
    }
    entry->width   = info.width;
    entry->height  = info.height;
    entry->profile = info.rsiz == 3 ? AV_PROFILE_JPEG2000_DCINEMA_2K :
                     info.rsiz == 4 ? AV_PROFILE_JPEG2000_DCINEMA_4K : AV_PROFILE_UNKNOWN;
    entry->bits    = ctx->comp_info[0].precision;
    entry->has_color = ff_libj2kcuda_stream_color(&info, &entry->color, &unexpressed);
    if (unexpressed && unexpressed != ctx->warned_color) {
        av_log(avctx, AV_LOG_WARNING, "The image is in %s, which FFmpeg's colour properties cannot "
               "describe: its samples are output as coded\n", unexpressed);
        ctx->warned_color = unexpressed;
    }
    /* The profile lies inside the packet, which the entry keeps until its frame is out. */
    entry->icc      = info.icc_profile;
    entry->icc_size = info.icc_profile_size;
    entry->tag     = ctx->next_tag++;
    entry->pkt     = av_packet_alloc();
    if (!entry->pkt)
        return AVERROR(ENOMEM);
    av_packet_move_ref(entry->pkt, pkt);
    return 0;
}

static void entry_free(LibJ2KCudaDecEntry *entry)
{
    av_packet_free(&entry->pkt);
}

/* Hand packets to the core while it has room and FFmpeg has packets. */
static int feed(AVCodecContext *avctx)
{
    LibJ2KCudaDecContext *ctx = avctx->priv_data;
    int ret;

    for (;;) {
        if (!ctx->pending.pkt) {
            if (ctx->eof)
                return 0;
            ret = ff_decode_get_packet(avctx, ctx->pkt);
            if (ret == AVERROR_EOF) {
                ctx->eof = 1;
                return 0;
            }
            if (ret == AVERROR(EAGAIN))
                return 0;
            if (ret < 0)
                return ret;
            ret = parse_packet(avctx, ctx->pkt, &ctx->pending);
            av_packet_unref(ctx->pkt);
            if (ret < 0)
                return ret;  /* this packet's error; the next call goes on */
        }
        ret = j2kc_decoder_submit(ctx->decoder, ctx->pending.pkt->data, ctx->pending.pkt->size,
                                  ctx->pending.tag);
        if (ret == J2KC_ERR_AGAIN)
            return 0;  /* full: the oldest frame must come out first */
        if (ret < 0) {
            entry_free(&ctx->pending);
            return ff_libj2kcuda_error(&ctx->log, ret, "Cannot queue the codestream");
        }
        ret = av_fifo_write(ctx->in_flight, &ctx->pending, 1);
        if (ret < 0) {
            entry_free(&ctx->pending);
            return ret;
        }
        ctx->pending.pkt = NULL;
    }
}

static int libj2kcuda_receive_frame(AVCodecContext *avctx, AVFrame *frame)
{
    LibJ2KCudaDecContext *ctx = avctx->priv_data;
    j2kc_component comps[LIBJ2KCUDA_MAX_COMPONENTS];
    LibJ2KCudaDecEntry entry;
    j2kc_image output;
    int64_t tag;
    int ret;

    ret = feed(avctx);
    if (ret < 0)
        return ret;
    if (av_fifo_peek(ctx->in_flight, &entry, 1, 0) < 0)
        return ctx->eof ? AVERROR_EOF : AVERROR(EAGAIN);

    if (entry.sw_format != ctx->sw_format || entry.width != ctx->width || entry.height != ctx->height) {
        if ((ret = configure_output(avctx, entry.sw_format, entry.width, entry.height)) < 0)
            goto drop;
    }
    /* The stream's own description wins over the container's; the frame
     * takes it from here, and so does the stream for ffprobe. */
    if (entry.has_color == FF_LIBJ2KCUDA_COLOR_ALL) {
        avctx->color_primaries = entry.color.primaries;
        avctx->color_trc       = entry.color.trc;
        avctx->colorspace      = entry.color.space;
        avctx->color_range     = entry.color.range;
    } else if (entry.has_color == FF_LIBJ2KCUDA_COLOR_SOME) {
        if (entry.color.primaries != AVCOL_PRI_UNSPECIFIED)
            avctx->color_primaries = entry.color.primaries;
        if (entry.color.trc != AVCOL_TRC_UNSPECIFIED)
            avctx->color_trc = entry.color.trc;
        if (entry.color.range != AVCOL_RANGE_UNSPECIFIED)
            avctx->color_range = entry.color.range;
    }

    ret = use_host_pool(avctx) ? get_host_buffer(avctx, frame) : ff_get_buffer(avctx, frame, 0);
    if (ret < 0)
        goto drop;
    ret = ff_libj2kcuda_describe(&output, comps, entry.sw_format, entry.width, entry.height,
                                 frame->data, frame->linesize,
                                 frame->format == AV_PIX_FMT_CUDA ? J2KC_MEMORY_CUDA : J2KC_MEMORY_HOST);
    if (ret < 0)
        goto drop;

    /* Without more input to give (draining), wait for the oldest frame; the
     * core also waits by itself when its queue is full. */
    ret = j2kc_decoder_receive(ctx->decoder, &output, &tag, ctx->eof);
    if (ret == J2KC_ERR_AGAIN) {
        av_frame_unref(frame);
        return AVERROR(EAGAIN);
    }
    av_fifo_drain2(ctx->in_flight, 1);
    if (ret == J2KC_ERR_EOF || (ret == J2KC_OK && tag != entry.tag)) {
        av_log(avctx, AV_LOG_ERROR, "The core returned frame %"PRId64" for packet %"PRId64"\n",
               ret == J2KC_OK ? tag : -1, entry.tag);
        ret = AVERROR_BUG;
        goto fail;
    }
    if (ret < 0) {
        ret = ff_libj2kcuda_error(&ctx->log, ret, "Cannot decode the codestream");
        goto fail;
    }

    ret = ff_decode_frame_props_from_pkt(avctx, frame, entry.pkt);
    if (ret < 0)
        goto fail;
    if (entry.icc_size) {
        AVFrameSideData *sd;

        ret = ff_frame_new_side_data(avctx, frame, AV_FRAME_DATA_ICC_PROFILE, entry.icc_size, &sd);
        if (ret < 0)
            goto fail;
        if (sd)
            memcpy(sd->data, entry.icc, entry.icc_size);
    }
    frame->pkt_dts   = entry.pkt->dts;
    frame->pict_type = AV_PICTURE_TYPE_I;
    frame->flags    |= AV_FRAME_FLAG_KEY;
    if (entry.profile != AV_PROFILE_UNKNOWN)
        avctx->profile = entry.profile;
    avctx->bits_per_raw_sample = entry.bits;
    entry_free(&entry);
    return 0;

drop:
    /* No buffer for this frame: the core drops it too, so the next ones keep their order. */
    j2kc_decoder_receive(ctx->decoder, NULL, &tag, 1);
    av_fifo_drain2(ctx->in_flight, 1);
fail:
    entry_free(&entry);
    av_frame_unref(frame);
    return ret;
}

static void libj2kcuda_decode_flush(AVCodecContext *avctx)
{
    LibJ2KCudaDecContext *ctx = avctx->priv_data;
    LibJ2KCudaDecEntry entry;

    if (ctx->decoder)
        j2kc_decoder_reset(ctx->decoder);
    while (ctx->in_flight && av_fifo_read(ctx->in_flight, &entry, 1) >= 0)
        entry_free(&entry);
    entry_free(&ctx->pending);
    av_packet_unref(ctx->pkt);
    ctx->eof = 0;
}

static av_cold int libj2kcuda_decode_close(AVCodecContext *avctx)
{
    LibJ2KCudaDecContext *ctx = avctx->priv_data;

    libj2kcuda_decode_flush(avctx);
    j2kc_decoder_free(&ctx->decoder);
    av_buffer_pool_uninit(&ctx->host_pool);
    av_fifo_freep2(&ctx->in_flight);
    av_packet_free(&ctx->pkt);
    return 0;
}

#define OFFSET(x) offsetof(LibJ2KCudaDecContext, x)
#define VD AV_OPT_FLAG_VIDEO_PARAM | AV_OPT_FLAG_DECODING_PARAM
static const AVOption options[] = {
    { "layers",  "Decode the first N quality layers (0: all)", OFFSET(layers), AV_OPT_TYPE_INT, { .i64 = 0 }, 0, 65535, VD },
    { "gpu",     "CUDA device index when no device is given", OFFSET(gpu), AV_OPT_TYPE_INT, { .i64 = 0 }, 0, INT_MAX, VD },
    { "frames_in_flight", "Frames decoded at once (0: the library's default)", OFFSET(frames_in_flight), AV_OPT_TYPE_INT, { .i64 = 0 }, 0, 64, VD },
    { "backend", "Where to decode", OFFSET(backend), AV_OPT_TYPE_INT, { .i64 = J2KC_BACKEND_AUTO }, J2KC_BACKEND_AUTO, J2KC_BACKEND_CPU, VD, .unit = "backend" },
        { "auto", "CUDA when a GPU is usable, else CPU",  0, AV_OPT_TYPE_CONST, { .i64 = J2KC_BACKEND_AUTO }, 0, 0, VD, .unit = "backend" },
        { "cuda", "CUDA GPU",                             0, AV_OPT_TYPE_CONST, { .i64 = J2KC_BACKEND_CUDA }, 0, 0, VD, .unit = "backend" },
        { "cpu",  "CPU reference path (same pixels)",     0, AV_OPT_TYPE_CONST, { .i64 = J2KC_BACKEND_CPU },  0, 0, VD, .unit = "backend" },
    { "tier1",   "Where the CUDA backend decodes code-blocks (Tier-1)", OFFSET(tier1), AV_OPT_TYPE_INT, { .i64 = -1 }, -1, 1, VD, .unit = "tier1" },
        { "auto", "The GPU",                              0, AV_OPT_TYPE_CONST, { .i64 = -1 }, 0, 0, VD, .unit = "tier1" },
        { "cpu",  "The CPU threads (same pixels)",        0, AV_OPT_TYPE_CONST, { .i64 = 0 },  0, 0, VD, .unit = "tier1" },
        { "gpu",  "The GPU (same pixels)",                0, AV_OPT_TYPE_CONST, { .i64 = 1 },  0, 0, VD, .unit = "tier1" },
    { "pinned",  "Host frames in page-locked memory (auto: on the CUDA backend, with FFmpeg's frame allocator)",
                 OFFSET(pinned), AV_OPT_TYPE_BOOL, { .i64 = -1 }, -1, 1, VD },
    { NULL },
};

static const AVClass libj2kcuda_decoder_class = {
    .class_name = "libj2kcuda decoder",
    .item_name  = av_default_item_name,
    .option     = options,
    .version    = LIBAVUTIL_VERSION_INT,
};

static const AVCodecHWConfigInternal *const libj2kcuda_hw_configs[] = {
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

#define LIBJ2KCUDA_DECODER(codec_name)                                                     \
const FFCodec ff_ ## codec_name ## _decoder = {                                            \
    .p.name         = #codec_name,                                                         \
    CODEC_LONG_NAME("JPEG 2000 on NVIDIA GPUs (libj2kcuda)"),                              \
    .p.type         = AVMEDIA_TYPE_VIDEO,                                                  \
    .p.id           = AV_CODEC_ID_JPEG2000,                                                \
    .p.capabilities = AV_CODEC_CAP_DR1 | AV_CODEC_CAP_DELAY | AV_CODEC_CAP_HARDWARE |      \
                      AV_CODEC_CAP_OTHER_THREADS,                                          \
    .caps_internal  = FF_CODEC_CAP_NOT_INIT_THREADSAFE | FF_CODEC_CAP_INIT_CLEANUP |       \
                      FF_CODEC_CAP_SETS_FRAME_PROPS | FF_CODEC_CAP_AUTO_THREADS |          \
                      FF_CODEC_CAP_ICC_PROFILES,                                           \
    .p.max_lowres   = 32,                                                                  \
    .priv_data_size = sizeof(LibJ2KCudaDecContext),                                        \
    .init           = libj2kcuda_decode_init,                                              \
    FF_CODEC_RECEIVE_FRAME_CB(libj2kcuda_receive_frame),                                   \
    .flush          = libj2kcuda_decode_flush,                                             \
    .close          = libj2kcuda_decode_close,                                             \
    .p.priv_class   = &libj2kcuda_decoder_class,                                           \
    .hw_configs     = libj2kcuda_hw_configs,                                               \
    .p.wrapper_name = "libj2kcuda",                                                        \
}

LIBJ2KCUDA_DECODER(libj2kcuda);
#if CONFIG_J2K_CUDA_DECODER
/* The name of the first releases, so that existing command lines keep working. */
LIBJ2KCUDA_DECODER(j2k_cuda);
#endif
