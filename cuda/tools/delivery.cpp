/**
 * @file delivery.cpp
 * @brief From decoded components to the image they code (see delivery.h).
 *
 * Where the standard leaves the arithmetic open (rounding of the YCbCr
 * matrices, how chroma is upsampled, how a profile is applied), the steps
 * follow what OpenJPEG's opj_decompress does, so that j2kc and the reference
 * decoder of the interoperability tests write the same samples; the places
 * where j2kc deliberately differs say so.
 */
#include "tools/delivery.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#if defined(J2KC_HAVE_LCMS2)
#include <lcms2.h>
#endif

namespace j2kc {
namespace tools {
namespace {

using Warnings = std::vector<std::string>;

int32_t clamp(int64_t v, int64_t hi) { return static_cast<int32_t>(v < 0 ? 0 : v > hi ? hi : v); }

/**
 * The chroma layouts the YCbCr conversions take: 4:4:4, 4:2:2 and 4:2:0,
 * luma not subsampled, both chroma components alike (those opj_decompress
 * converts; it leaves any other as coded, and so does j2kc).
 */
bool ycc_layout(const Image &image)
{
    if (image.planes.size() < 3) return false;
    const Plane &y = image.planes[0], &cb = image.planes[1], &cr = image.planes[2];
    if (y.dx != 1 || y.dy != 1 || cb.dx != cr.dx || cb.dy != cr.dy) return false;
    return (cb.dx == 1 && cb.dy == 1) || (cb.dx == 2 && cb.dy == 1) || (cb.dx == 2 && cb.dy == 2);
}

/**
 * Chroma sample for luma sample i along one axis: the one whose position on
 * the reference grid is the nearest at or before the luma's (replication,
 * as opj_decompress upsamples). `origin` is the image's origin; chroma
 * starts at ceil(origin / d). At an odd origin the first luma sample has no
 * chroma sample at or before it and takes the first one (opj_decompress
 * uses a zero Cb/Cr there, which turns that row or column red or green).
 */
uint32_t chroma_index(uint32_t i, uint32_t origin, uint32_t d, uint32_t size)
{
    const int64_t k =
        static_cast<int64_t>((uint64_t{origin} + i) / d) - static_cast<int64_t>((uint64_t{origin} + d - 1) / d);
    return static_cast<uint32_t>(std::clamp<int64_t>(k, 0, int64_t{size} - 1));
}

/** Whether the first n components hold as many samples each (what the per-pixel steps read). */
bool same_size(const Image &image, size_t n)
{
    if (image.planes.size() < n) return false;
    for (size_t c = 1; c < n; ++c)
        if (image.planes[c].samples.size() != image.planes[0].samples.size()) return false;
    return true;
}

/** The planes in `order` (StreamColour::channel_order); false, untouched, when it is no permutation of them. */
bool order_channels(Image &image, const std::vector<uint16_t> &order)
{
    if (order.size() != image.planes.size()) return false;
    std::vector<bool> taken(order.size(), false);
    for (uint16_t c : order) {
        if (c >= order.size() || taken[c]) return false;
        taken[c] = true;
    }
    std::vector<Plane> planes;
    planes.reserve(order.size());
    for (uint16_t c : order) planes.push_back(std::move(image.planes[c]));
    image.planes = std::move(planes);
    return true;
}

/** Components 1 and 2 upsampled to component 0's size by replication. */
void upsample_chroma(Image &image, uint32_t x0, uint32_t y0)
{
    const Plane &luma = image.planes[0];
    for (size_t c = 1; c <= 2; ++c) {
        Plane &p = image.planes[c];
        if (p.dx == 1 && p.dy == 1) continue;
        std::vector<int32_t> full(size_t{luma.width} * luma.height);
        std::vector<uint32_t> column(luma.width);
        for (uint32_t x = 0; x < luma.width; ++x) column[x] = chroma_index(x, x0, p.dx, p.width);
        for (uint32_t y = 0; y < luma.height; ++y) {
            const int32_t *row = p.samples.data() + size_t{chroma_index(y, y0, p.dy, p.height)} * p.width;
            for (uint32_t x = 0; x < luma.width; ++x) full[size_t{y} * luma.width + x] = row[column[x]];
        }
        p.samples = std::move(full);
        p.width = luma.width;
        p.height = luma.height;
        p.dx = luma.dx;
        p.dy = luma.dy;
    }
}

/**
 * sYCC (IEC 61966-2-1 Amd 1, full-range BT.601) to sRGB on the first three
 * components, at the luma's precision. The inverse matrix is the rounded one
 * opj_decompress uses (1.402, 0.344, 0.714, 1.772), products truncated
 * toward zero as there, so both decoders give the same samples.
 */
void sycc_to_rgb(Image &image)
{
    Plane &y = image.planes[0], &cb = image.planes[1], &cr = image.planes[2];
    const int prec = y.precision;
    const int32_t offset = int32_t{1} << (prec - 1);
    const int64_t top = (int64_t{1} << prec) - 1;
    for (size_t i = 0; i < y.samples.size(); ++i) {
        const int32_t l = y.samples[i], u = cb.samples[i] - offset, v = cr.samples[i] - offset;
        const int32_t r = l + static_cast<int32_t>(1.402 * v);
        const int32_t g = l - static_cast<int32_t>(0.344 * u + 0.714 * v);
        const int32_t b = l + static_cast<int32_t>(1.772 * u);
        y.samples[i] = clamp(r, top);
        cb.samples[i] = clamp(g, top);
        cr.samples[i] = clamp(b, top);
    }
    for (Plane *p : {&y, &cb, &cr}) {
        p->precision = prec;
        p->is_signed = false;
    }
}

/**
 * e-sYCC (JPX, IEC 61966-2-1 Amd 1 extended range) to RGB. Chroma is
 * centred unless its component is signed. Single-precision arithmetic with
 * the coefficients and rounding opj_decompress uses (taken there from
 * Ghostscript), evaluated in the same order for the same results.
 */
void esycc_to_rgb(Image &image)
{
    Plane &y = image.planes[0], &cb = image.planes[1], &cr = image.planes[2];
    const int prec = y.precision;
    const int32_t flip = int32_t{1} << (prec - 1);
    const int64_t top = (int64_t{1} << prec) - 1;
    // The constants are double literals narrowed to float, as there (a float
    // literal can round differently).
    const float k[9] = {static_cast<float>(0.0000368), static_cast<float>(1.40199),   static_cast<float>(1.0003),
                        static_cast<float>(0.344125),  static_cast<float>(0.7141128), static_cast<float>(0.999823),
                        static_cast<float>(1.77204),   static_cast<float>(0.000008),  static_cast<float>(0.5)};
    for (size_t i = 0; i < y.samples.size(); ++i) {
        const float l = static_cast<float>(y.samples[i]);
        const float u = static_cast<float>(cb.is_signed ? cb.samples[i] : cb.samples[i] - flip);
        const float v = static_cast<float>(cr.is_signed ? cr.samples[i] : cr.samples[i] - flip);
        float r = l - k[0] * u;
        r = r + k[1] * v;
        r = r + k[8];
        float g = k[2] * l - k[3] * u;
        g = g - k[4] * v;
        g = g + k[8];
        float b = k[5] * l + k[6] * u;
        b = b - k[7] * v;
        b = b + k[8];
        y.samples[i] = clamp(static_cast<int32_t>(r), top);
        cb.samples[i] = clamp(static_cast<int32_t>(g), top);
        cr.samples[i] = clamp(static_cast<int32_t>(b), top);
    }
    for (Plane *p : {&y, &cb, &cr}) {
        p->precision = prec;
        p->is_signed = false;
    }
}

/**
 * CMYK (JPX EnumCS 12) to 8-bit RGB by R = 255 (1 - C)(1 - K) and alike,
 * in single precision as opj_decompress computes it; K's component goes,
 * any after it move up.
 */
bool cmyk_to_rgb(Image &image)
{
    if (!same_size(image, 4)) return false;
    for (size_t c = 1; c < 4; ++c)
        if (image.planes[c].dx != image.planes[0].dx || image.planes[c].dy != image.planes[0].dy) return false;
    float scale[4];
    for (size_t c = 0; c < 4; ++c) scale[c] = 1.0f / static_cast<float>((int64_t{1} << image.planes[c].precision) - 1);
    const size_t n = image.planes[0].samples.size();
    for (size_t i = 0; i < n; ++i) {
        float ink[4];
        for (size_t c = 0; c < 4; ++c) ink[c] = 1.0f - static_cast<float>(image.planes[c].samples[i]) * scale[c];
        for (size_t c = 0; c < 3; ++c) {
            float v = 255.0f * ink[c];
            v = v * ink[3];
            image.planes[c].samples[i] = static_cast<int32_t>(v);
        }
    }
    image.planes.erase(image.planes.begin() + 3);
    for (size_t c = 0; c < 3; ++c) {
        image.planes[c].precision = 8;
        image.planes[c].is_signed = false;
    }
    return true;
}

#if defined(J2KC_HAVE_LCMS2)

struct Profile {
    cmsHPROFILE handle;
    ~Profile()
    {
        if (handle) cmsCloseProfile(handle);
    }
};

struct Transform {
    cmsHTRANSFORM handle;
    ~Transform()
    {
        if (handle) cmsDeleteTransform(handle);
    }
};

/** A sample of `prec` bits as one of `bits` bits (8 or 16), rounded: the identity at 8 and 16 bits. */
uint32_t to_code(int32_t v, int prec, int bits)
{
    const uint64_t from = (uint64_t{1} << prec) - 1, to = (uint64_t{1} << bits) - 1;
    const uint64_t u = static_cast<uint64_t>(clamp(v, static_cast<int64_t>(from)));
    return static_cast<uint32_t>((u * to + from / 2) / from);
}

int32_t from_code(uint32_t v, int prec, int bits)
{
    const uint64_t to = (uint64_t{1} << prec) - 1, from = (uint64_t{1} << bits) - 1;
    return static_cast<int32_t>((uint64_t{v} * to + from / 2) / from);
}

/** Runs `transform` over n pixels of `channels_in` samples each, 8- or 16-bit codes. */
std::vector<uint32_t> run(cmsHTRANSFORM transform, const std::vector<uint32_t> &in, size_t pixels, int bits)
{
    std::vector<uint32_t> out(pixels * 3);
    if (bits == 8) {
        std::vector<uint8_t> a(in.begin(), in.end()), b(pixels * 3);
        cmsDoTransform(transform, a.data(), b.data(), static_cast<cmsUInt32Number>(pixels));
        std::copy(b.begin(), b.end(), out.begin());
    } else {
        std::vector<uint16_t> a(in.begin(), in.end()), b(pixels * 3);
        cmsDoTransform(transform, a.data(), b.data(), static_cast<cmsUInt32Number>(pixels));
        std::copy(b.begin(), b.end(), out.begin());
    }
    return out;
}

std::string signature(cmsColorSpaceSignature s)
{
    std::string t;
    for (int i = 3; i >= 0; --i) t += static_cast<char>((static_cast<uint32_t>(s) >> (8 * i)) & 0x7F);
    return t;
}

/**
 * The file's ICC profile applied to its components, to sRGB, with the
 * profile's own rendering intent, as opj_decompress does: an RGB (or YCbCr)
 * profile on the first three components, which must share size, precision
 * and sign (and the fourth too, when there is one); a greyscale profile on a
 * one- or two-component image, which becomes RGB (opacity after it). Samples
 * go through lcms2 as 8-bit codes up to 8 bits, else as 16-bit codes:
 * exactly the samples at 8 and 16 bits (so both tools agree there), scaled
 * at other depths, where opj_decompress passes the samples unscaled and
 * leaves 16-bit results in, say, a 12-bit component.
 */
void apply_icc(Image &image, const uint8_t *icc, size_t size, Warnings &warnings)
{
    Profile in{cmsOpenProfileFromMem(icc, static_cast<cmsUInt32Number>(size))};
    if (!in.handle) {
        warnings.push_back("the ICC profile cannot be read: the samples are delivered without it");
        return;
    }
    const cmsColorSpaceSignature space = cmsGetColorSpace(in.handle);
    const cmsUInt32Number intent = cmsGetHeaderRenderingIntent(in.handle);
    const bool grey = space == cmsSigGrayData;
    const bool colour = space == cmsSigRgbData || space == cmsSigYCbCrData;
    if (!grey && !colour) {
        warnings.push_back("an ICC profile of '" + signature(space) + "' data is not applied");
        return;
    }
    const size_t n = image.planes.size();
    const size_t used = grey ? 1 : std::min<size_t>(n, 4);
    bool fits = (grey ? n <= 2 : n >= 3) && same_size(image, used);
    for (size_t c = 0; c < used && fits; ++c) {
        const Plane &p = image.planes[c], &q = image.planes[0];
        fits = p.dx == q.dx && p.dy == q.dy && p.precision == q.precision && p.is_signed == q.is_signed &&
               !p.is_signed && p.precision <= 16;
    }
    if (!fits) {
        warnings.push_back(std::string("the ICC profile is not applied: it needs ") +
                           (grey ? "one or two" : "three or four") +
                           " unsigned components of one size and precision (at most 16 bits)");
        return;
    }
    const int prec = image.planes[0].precision;
    const int bits = prec <= 8 ? 8 : 16;
    const cmsUInt32Number in_type = grey                       ? (bits == 8 ? TYPE_GRAY_8 : TYPE_GRAY_16)
                                    : space == cmsSigYCbCrData ? (bits == 8 ? TYPE_YCbCr_8 : TYPE_YCbCr_16)
                                                               : (bits == 8 ? TYPE_RGB_8 : TYPE_RGB_16);
    Profile srgb{cmsCreate_sRGBProfile()};
    Transform t{cmsCreateTransform(in.handle, in_type, srgb.handle, bits == 8 ? TYPE_RGB_8 : TYPE_RGB_16, intent, 0)};
    if (!t.handle) {
        warnings.push_back("lcms2 makes no transform of the ICC profile to sRGB: not applied");
        return;
    }
    const size_t pixels = image.planes[0].samples.size();
    const size_t channels = grey ? 1 : 3;
    std::vector<uint32_t> codes(pixels * channels);
    for (size_t i = 0; i < pixels; ++i)
        for (size_t c = 0; c < channels; ++c) codes[i * channels + c] = to_code(image.planes[c].samples[i], prec, bits);
    const std::vector<uint32_t> rgb = run(t.handle, codes, pixels, bits);
    if (grey) image.planes.insert(image.planes.begin() + 1, 2, image.planes[0]);
    for (size_t c = 0; c < 3; ++c)
        for (size_t i = 0; i < pixels; ++i) image.planes[c].samples[i] = from_code(rgb[i * 3 + c], prec, bits);
}

/**
 * CIELab (JPX EnumCS 14, M.11.7.4) to 16-bit sRGB through lcms2's D50 Lab
 * profile, perceptual intent, with the range and offset parameters of the
 * colour box or their defaults (RL 100, RA 170, RB 200; OL 0, OA 2^(Pa-1),
 * OB 2^(Pb-2) + 2^(Pb-3)), as opj_decompress converts it.
 */
void cielab_to_rgb(Image &image, const std::optional<std::array<uint32_t, 7>> &parameters, Warnings &warnings)
{
    if (image.planes.size() != 3 || !same_size(image, 3) || image.planes[1].dx != image.planes[0].dx ||
        image.planes[2].dx != image.planes[0].dx || image.planes[1].dy != image.planes[0].dy ||
        image.planes[2].dy != image.planes[0].dy) {
        warnings.push_back("CIELab is converted for three components of one size only: delivered as coded");
        return;
    }
    Profile lab{cmsCreateLab4Profile(nullptr)}, srgb{cmsCreate_sRGBProfile()};
    Transform t{cmsCreateTransform(lab.handle, TYPE_Lab_DBL, srgb.handle, TYPE_RGB_16, INTENT_PERCEPTUAL, 0)};
    if (!t.handle) {
        warnings.push_back("lcms2 makes no CIELab to sRGB transform: delivered as coded");
        return;
    }
    double range[3], offset[3], top[3];
    for (size_t c = 0; c < 3; ++c) top[c] = std::pow(2.0, image.planes[c].precision) - 1;
    if (parameters) {
        const std::array<uint32_t, 7> &p = *parameters;
        for (size_t c = 0; c < 3; ++c) {
            range[c] = p[2 * c];
            offset[c] = p[2 * c + 1];
        }
    } else {
        range[0] = 100;
        range[1] = 170;
        range[2] = 200;
        offset[0] = 0;
        offset[1] = std::pow(2.0, image.planes[1].precision - 1);
        offset[2] = std::pow(2.0, image.planes[2].precision - 2) + std::pow(2.0, image.planes[2].precision - 3);
    }
    double low[3], high[3];
    for (size_t c = 0; c < 3; ++c) {
        low[c] = -(range[c] * offset[c]) / top[c];
        high[c] = low[c] + range[c];
    }
    const size_t pixels = image.planes[0].samples.size();
    std::vector<cmsCIELab> in(pixels);
    for (size_t i = 0; i < pixels; ++i) {
        double v[3];
        for (size_t c = 0; c < 3; ++c) v[c] = low[c] + double(image.planes[c].samples[i]) * (high[c] - low[c]) / top[c];
        in[i] = {v[0], v[1], v[2]};
    }
    std::vector<uint16_t> out(pixels * 3);
    cmsDoTransform(t.handle, in.data(), out.data(), static_cast<cmsUInt32Number>(pixels));
    for (size_t c = 0; c < 3; ++c) {
        Plane &p = image.planes[c];
        for (size_t i = 0; i < pixels; ++i) p.samples[i] = out[i * 3 + c];
        p.precision = 16;
        p.is_signed = false;
    }
}

#else

void apply_icc(Image &, const uint8_t *, size_t, Warnings &warnings)
{
    warnings.push_back("this j2kc is built without lcms2: the ICC profile is not applied");
}

void cielab_to_rgb(Image &, const std::optional<std::array<uint32_t, 7>> &, Warnings &warnings)
{
    warnings.push_back("this j2kc is built without lcms2: CIELab is delivered as coded");
}

#endif

}  // namespace

std::vector<std::string> deliver_image(Image &image, const StreamColour &colour)
{
    Warnings warnings;
    if (!colour.channels_ignored.empty())
        warnings.push_back("the channel definitions are not applied (" + colour.channels_ignored +
                           "): channels delivered in their coded order");
    else if (!colour.channel_order.empty() && !order_channels(image, colour.channel_order))
        warnings.push_back("the channel definitions do not fit the " + std::to_string(image.planes.size()) +
                           " decoded components: channels delivered in their coded order");
    j2kc_color_space space = colour.space;
    // Three components with subsampled chroma are YCbCr (RGB is never
    // subsampled), whatever the stream says or does not say (a raw
    // codestream has no colour): the guess opj_decompress and grk_decompress
    // make too.
    if (space != J2KC_COLOR_SYCC && space != J2KC_COLOR_ESYCC && image.planes.size() == 3 &&
        image.planes[0].dx == image.planes[0].dy && image.planes[1].dx != 1)
        space = J2KC_COLOR_SYCC;
    if (space == J2KC_COLOR_SYCC || space == J2KC_COLOR_ESYCC) {
        if (ycc_layout(image)) upsample_chroma(image, colour.x0, colour.y0);
        if (ycc_layout(image) && same_size(image, 3)) {
            if (space == J2KC_COLOR_SYCC)
                sycc_to_rgb(image);
            else
                esycc_to_rgb(image);
        } else {
            warnings.push_back("YCbCr is converted to RGB from 4:4:4, 4:2:2 and 4:2:0 only: delivered as coded");
        }
    } else if (space == J2KC_COLOR_CMYK) {
        if (!cmyk_to_rgb(image)) warnings.push_back("CMYK needs four components of one size: delivered as coded");
    }
    if (colour.icc && colour.icc_size)
        apply_icc(image, colour.icc, colour.icc_size, warnings);
    else if (space == J2KC_COLOR_CIELAB)
        cielab_to_rgb(image, colour.lab_parameters, warnings);
    return warnings;
}

std::string colour_management()
{
#if defined(J2KC_HAVE_LCMS2)
    const int v = cmsGetEncodedCMMversion();
    return "lcms2 " + std::to_string(v / 1000) + "." + std::to_string(v / 10 % 100);
#else
    return "";
#endif
}

}  // namespace tools
}  // namespace j2kc
