/*
 * rd_psnr: PSNR of a decoded image against its source, both binary PNM
 * (P5/P6, 8 or 16-bit samples, the same maxval), or both raw planar files of
 * 16-bit big-endian samples (rd_psnr --raw16 PEAK SRC DEC).
 *
 *   rd_psnr SRC.ppm DEC.ppm   ->  "<psnr dB> <mse> <samples>"
 *
 * The peak is the maxval (or PEAK): 4095 for 12-bit, 65535 for 16-bit.
 * Identical images print "inf". Exit status 1 when the files do not match in
 * shape or cannot be read.
 *
 *   rd_psnr --xyz12 W H IN.raw OUT.ppm
 *
 * turns FFmpeg's xyz12le (interleaved 16-bit little-endian words holding the
 * 12 bits at the top) into a 12-bit PPM (maxval 4095), which j2kc, OpenJPEG
 * and Grok all read as 12-bit X'Y'Z' samples.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct image {
    long width, height, channels, maxval;
    unsigned char *data;
    size_t samples;
};

static int read_token(FILE *f, long *out)
{
    int c;
    do {
        c = fgetc(f);
        if (c == '#')
            while (c != '\n' && c != EOF) c = fgetc(f);
    } while (c == ' ' || c == '\t' || c == '\r' || c == '\n');
    if (c < '0' || c > '9') return 0;
    long v = 0;
    while (c >= '0' && c <= '9') {
        v = v * 10 + (c - '0');
        if (v > 1L << 30) return 0;
        c = fgetc(f);
    }
    *out = v;
    return 1;
}

static int read_pnm(const char *path, struct image *img)
{
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    int ok = 0;
    if (fgetc(f) == 'P') {
        const int kind = fgetc(f);
        img->channels = kind == '5' ? 1 : kind == '6' ? 3 : 0;
        if (img->channels && read_token(f, &img->width) && read_token(f, &img->height) &&
            read_token(f, &img->maxval) && img->maxval >= 1 && img->maxval <= 65535) {
            img->samples = (size_t)img->width * img->height * img->channels;
            const size_t bytes = img->samples * (img->maxval > 255 ? 2 : 1);
            img->data = malloc(bytes ? bytes : 1);
            ok = img->data && fread(img->data, 1, bytes, f) == bytes;
        }
    }
    fclose(f);
    return ok;
}

static int read_raw16(const char *path, struct image *img)
{
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    fseek(f, 0, SEEK_END);
    const long bytes = ftell(f);
    fseek(f, 0, SEEK_SET);
    img->samples = bytes > 0 ? (size_t)bytes / 2 : 0;
    img->data = malloc(bytes > 0 ? (size_t)bytes : 1);
    const int ok = img->data && bytes > 0 && fread(img->data, 1, (size_t)bytes, f) == (size_t)bytes;
    fclose(f);
    return ok;
}

static long sample(const struct image *img, size_t i)
{
    if (img->maxval <= 255) return img->data[i];
    const unsigned char *p = img->data + 2 * i;
    return p[0] << 8 | p[1];
}

static int xyz12_to_ppm(long width, long height, const char *in, const char *out)
{
    struct image raw = {0};
    const size_t samples = (size_t)width * height * 3;
    if (width < 1 || height < 1 || !read_raw16(in, &raw) || raw.samples != samples) return 0;
    FILE *f = fopen(out, "wb");
    if (!f) return 0;
    fprintf(f, "P6\n%ld %ld\n4095\n", width, height);
    for (size_t i = 0; i < samples; ++i) {
        const unsigned v = (unsigned)(raw.data[2 * i] | raw.data[2 * i + 1] << 8) >> 4;
        fputc((int)(v >> 8), f);
        fputc((int)(v & 255), f);
    }
    return fclose(f) == 0;
}

int main(int argc, char **argv)
{
    struct image a = {0}, b = {0};
    if (argc == 6 && strcmp(argv[1], "--xyz12") == 0) {
        if (xyz12_to_ppm(atol(argv[2]), atol(argv[3]), argv[4], argv[5])) return 0;
        fprintf(stderr, "rd_psnr: cannot convert %s\n", argv[4]);
        return 1;
    }
    int raw = argc == 5 && strcmp(argv[1], "--raw16") == 0;
    if (!raw && argc != 3) {
        fprintf(stderr, "usage: rd_psnr SRC.pnm DEC.pnm | rd_psnr --raw16 PEAK SRC DEC\n");
        return 2;
    }
    if (raw) {
        a.maxval = b.maxval = atol(argv[2]);
        if (a.maxval < 256 || !read_raw16(argv[3], &a) || !read_raw16(argv[4], &b)) {
            fprintf(stderr, "rd_psnr: cannot read the raw files\n");
            return 1;
        }
    } else if (!read_pnm(argv[1], &a) || !read_pnm(argv[2], &b)) {
        fprintf(stderr, "rd_psnr: cannot read %s or %s\n", argv[1], argv[2]);
        return 1;
    }
    if (a.samples != b.samples || a.maxval != b.maxval || a.width != b.width) {
        fprintf(stderr, "rd_psnr: the images differ in shape or depth\n");
        return 1;
    }
    double sse = 0;
    for (size_t i = 0; i < a.samples; ++i) {
        const double d = (double)(sample(&a, i) - sample(&b, i));
        sse += d * d;
    }
    const double mse = sse / (double)a.samples;
    if (mse == 0) printf("inf 0 %zu\n", a.samples);
    else printf("%.3f %.6g %zu\n", 10 * log10((double)a.maxval * a.maxval / mse), mse, a.samples);
    return 0;
}
