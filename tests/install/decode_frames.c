/*
 * decode_frames: a libavformat/libavcodec program of the kind users write
 * against an installed tree. Opens a file, decodes its first video stream
 * with the libj2kcuda decoder (found by name), and prints one line per frame
 * with the md5 of its pixels packed as FFmpeg's rawvideo packs them (so the
 * list matches the last column of `ffmpeg -c:v libj2kcuda -i FILE -c:v rawvideo
 * -f framemd5 -`), then "frames N".
 *
 *   decode_frames FILE [BACKEND]     BACKEND: cpu, cuda or auto (default auto)
 *
 * Exit status 0 when every packet decoded, 1 otherwise, with one line on stderr.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/md5.h>
#include <libavutil/mem.h>

static int fail(const char *what, int err)
{
    char msg[AV_ERROR_MAX_STRING_SIZE] = "";
    if (err < 0)
        av_strerror(err, msg, sizeof(msg));
    fprintf(stderr, "decode_frames: %s%s%s\n", what, err < 0 ? ": " : "", msg);
    return 1;
}

/* Prints the md5 of each frame the decoder has ready; counts them. */
static int drain(AVCodecContext *dec, AVFrame *frame, int64_t *count)
{
    for (;;) {
        int ret = avcodec_receive_frame(dec, frame);
        if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF)
            return 0;
        if (ret < 0)
            return ret;
        int size = av_image_get_buffer_size(frame->format, frame->width, frame->height, 1);
        if (size < 0)
            return size;
        uint8_t *buf = av_malloc(size);
        if (!buf)
            return AVERROR(ENOMEM);
        ret = av_image_copy_to_buffer(buf, size, (const uint8_t *const *)frame->data, frame->linesize,
                                      frame->format, frame->width, frame->height, 1);
        if (ret >= 0) {
            uint8_t md5[16];
            av_md5_sum(md5, buf, size);
            for (int i = 0; i < 16; i++)
                printf("%02x", md5[i]);
            printf("\n");
            (*count)++;
        }
        av_free(buf);
        av_frame_unref(frame);
        if (ret < 0)
            return ret;
    }
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s FILE [cpu|cuda|auto]\n", argv[0]);
        return 2;
    }
    const char *backend = argc > 2 ? argv[2] : "auto";
    AVFormatContext *fmt = NULL;
    int ret = avformat_open_input(&fmt, argv[1], NULL, NULL);
    if (ret < 0)
        return fail(argv[1], ret);
    if ((ret = avformat_find_stream_info(fmt, NULL)) < 0)
        return fail("stream info", ret);
    int stream = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    if (stream < 0)
        return fail("no video stream", stream);

    const AVCodec *codec = avcodec_find_decoder_by_name("libj2kcuda");
    if (!codec)
        return fail("this libavcodec has no libj2kcuda decoder", 0);
    AVCodecContext *dec = avcodec_alloc_context3(codec);
    if (!dec)
        return fail("out of memory", AVERROR(ENOMEM));
    if ((ret = avcodec_parameters_to_context(dec, fmt->streams[stream]->codecpar)) < 0)
        return fail("codec parameters", ret);
    AVDictionary *opts = NULL;
    av_dict_set(&opts, "backend", backend, 0);
    ret = avcodec_open2(dec, codec, &opts);
    if (ret < 0)
        return fail("opening libj2kcuda", ret);
    if (av_dict_count(opts))
        return fail("libj2kcuda has no option 'backend'", 0);
    av_dict_free(&opts);

    AVPacket *pkt = av_packet_alloc();
    AVFrame *frame = av_frame_alloc();
    if (!pkt || !frame)
        return fail("out of memory", AVERROR(ENOMEM));
    int64_t count = 0;
    while ((ret = av_read_frame(fmt, pkt)) >= 0) {
        if (pkt->stream_index == stream) {
            ret = avcodec_send_packet(dec, pkt);
            if (ret >= 0)
                ret = drain(dec, frame, &count);
        }
        av_packet_unref(pkt);
        if (ret < 0)
            return fail("decoding", ret);
    }
    if (ret != AVERROR_EOF)
        return fail("reading", ret);
    if ((ret = avcodec_send_packet(dec, NULL)) < 0 || (ret = drain(dec, frame, &count)) < 0)
        return fail("flushing", ret);
    printf("frames %" PRId64 "\n", count);

    av_frame_free(&frame);
    av_packet_free(&pkt);
    avcodec_free_context(&dec);
    avformat_close_input(&fmt);
    return count > 0 ? 0 : fail("no frame decoded", 0);
}
