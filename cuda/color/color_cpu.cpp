/**
 * @file color_cpu.cpp
 * @brief CPU reference of ISO/IEC 15444-1 Annex G (DC level shift, RCT,
 * ICT) and of sample unpacking/packing, built on color_ops.h.
 */
#include "color/color.h"

#include "common/status.h"

namespace j2kc {

void check_component_layout(const j2kc_component &c)
{
    J2KC_CHECK_ARG(c.bytes_per_sample == 1 || c.bytes_per_sample == 2 || c.bytes_per_sample == 4,
                   "component: %u bytes per sample (1, 2 or 4)", c.bytes_per_sample);
    J2KC_CHECK_ARG(c.precision >= 1 && c.precision <= 32, "component: precision %u (1..32)", c.precision);
    J2KC_CHECK_ARG(uint32_t{c.precision} + c.shift <= 8u * c.bytes_per_sample,
                   "component: %u bits at shift %u do not fit %u bytes", c.precision, c.shift, c.bytes_per_sample);
    J2KC_CHECK_ARG(c.width <= 1 || c.sample_stride >= c.bytes_per_sample, "component: sample stride %u < %u bytes",
                   c.sample_stride, c.bytes_per_sample);
    J2KC_CHECK_ARG(uint64_t{c.width} * c.height == 0 || c.data != 0, "component: no data");
}

void check_mct(const j2kc_component *c, uint32_t count)
{
    J2KC_CHECK_ARG(count >= 3, "MCT needs 3 components, have %u", count);
    J2KC_CHECK_ARG(c[1].width == c[0].width && c[2].width == c[0].width && c[1].height == c[0].height &&
                       c[2].height == c[0].height,
                   "MCT needs components 0..2 of equal size");
}

namespace {

void check_format(SampleFormat f)
{
    J2KC_CHECK_ARG(f.precision >= 1 && f.precision <= 32, "plane precision %u (1..32)", f.precision);
}

template <class T>
T to_plane(int32_t v);
template <>
int32_t to_plane<int32_t>(int32_t v)
{
    return v;
}
template <>
float to_plane<float>(int32_t v)
{
    return static_cast<float>(v);
}

int32_t to_int(int32_t v) { return v; }
int32_t to_int(float v) { return float_to_sample(v); }

void mct_forward(int32_t &a, int32_t &b, int32_t &c) { rct_forward_sample(a, b, c, a, b, c); }
void mct_forward(float &a, float &b, float &c) { ict_forward_sample(a, b, c, a, b, c); }
void mct_inverse(int32_t &a, int32_t &b, int32_t &c) { rct_inverse_sample(a, b, c, a, b, c); }
void mct_inverse(float &a, float &b, float &c) { ict_inverse_sample(a, b, c, a, b, c); }

template <class T>
void unpack(const j2kc_component &c, T *plane, size_t stride)
{
    check_component_layout(c);
    for (uint32_t y = 0; y < c.height; ++y)
        for (uint32_t x = 0; x < c.width; ++x) plane[y * stride + x] = to_plane<T>(unpack_sample(c, x, y));
}

template <class T>
void pack(const T *plane, size_t stride, SampleFormat source, const j2kc_component &out)
{
    check_component_layout(out);
    check_format(source);
    for (uint32_t y = 0; y < out.height; ++y)
        for (uint32_t x = 0; x < out.width; ++x) pack_sample(to_int(plane[y * stride + x]), source, out, x, y);
}

template <class T>
void mct_planes(T *const planes[3], size_t stride, uint32_t w, uint32_t h, bool fwd)
{
    for (uint32_t y = 0; y < h; ++y)
        for (uint32_t x = 0; x < w; ++x) {
            const size_t i = y * stride + x;
            if (fwd)
                mct_forward(planes[0][i], planes[1][i], planes[2][i]);
            else
                mct_inverse(planes[0][i], planes[1][i], planes[2][i]);
        }
}

template <class T>
void forward(const j2kc_component *comps, uint32_t count, bool mct, T *const *planes, const size_t *strides)
{
    for (uint32_t i = 0; i < count; ++i) check_component_layout(comps[i]);
    uint32_t first = 0;
    if (mct) {
        check_mct(comps, count);
        for (uint32_t y = 0; y < comps[0].height; ++y)
            for (uint32_t x = 0; x < comps[0].width; ++x) {
                T v[3];
                for (int c = 0; c < 3; ++c) v[c] = to_plane<T>(unpack_sample(comps[c], x, y));
                mct_forward(v[0], v[1], v[2]);
                for (int c = 0; c < 3; ++c) planes[c][y * strides[c] + x] = v[c];
            }
        first = 3;
    }
    for (uint32_t i = first; i < count; ++i) unpack(comps[i], planes[i], strides[i]);
}

template <class T>
void inverse(const T *const *planes, const size_t *strides, const SampleFormat *source, uint32_t count, bool mct,
             const j2kc_component *out)
{
    for (uint32_t i = 0; i < count; ++i) {
        check_component_layout(out[i]);
        check_format(source[i]);
    }
    uint32_t first = 0;
    if (mct) {
        check_mct(out, count);
        for (uint32_t y = 0; y < out[0].height; ++y)
            for (uint32_t x = 0; x < out[0].width; ++x) {
                T v[3];
                for (int c = 0; c < 3; ++c) v[c] = planes[c][y * strides[c] + x];
                mct_inverse(v[0], v[1], v[2]);
                for (int c = 0; c < 3; ++c) pack_sample(to_int(v[c]), source[c], out[c], x, y);
            }
        first = 3;
    }
    for (uint32_t i = first; i < count; ++i) pack(planes[i], strides[i], source[i], out[i]);
}

}  // namespace

void unpack_component(const j2kc_component &c, int32_t *plane, size_t stride) { unpack(c, plane, stride); }
void unpack_component(const j2kc_component &c, float *plane, size_t stride) { unpack(c, plane, stride); }
void pack_component(const int32_t *plane, size_t stride, SampleFormat source, const j2kc_component &out)
{
    pack(plane, stride, source, out);
}
void pack_component(const float *plane, size_t stride, SampleFormat source, const j2kc_component &out)
{
    pack(plane, stride, source, out);
}

void rct_forward(int32_t *const planes[3], size_t stride, uint32_t w, uint32_t h)
{
    mct_planes(planes, stride, w, h, true);
}
void rct_inverse(int32_t *const planes[3], size_t stride, uint32_t w, uint32_t h)
{
    mct_planes(planes, stride, w, h, false);
}
void ict_forward(float *const planes[3], size_t stride, uint32_t w, uint32_t h)
{
    mct_planes(planes, stride, w, h, true);
}
void ict_inverse(float *const planes[3], size_t stride, uint32_t w, uint32_t h)
{
    mct_planes(planes, stride, w, h, false);
}

void color_forward_ref(const j2kc_component *c, uint32_t count, bool mct, int32_t *const *planes, const size_t *strides)
{
    forward(c, count, mct, planes, strides);
}
void color_forward_ref(const j2kc_component *c, uint32_t count, bool mct, float *const *planes, const size_t *strides)
{
    forward(c, count, mct, planes, strides);
}
void color_inverse_ref(const int32_t *const *planes, const size_t *strides, const SampleFormat *source, uint32_t count,
                       bool mct, const j2kc_component *out)
{
    inverse(planes, strides, source, count, mct, out);
}
void color_inverse_ref(const float *const *planes, const size_t *strides, const SampleFormat *source, uint32_t count,
                       bool mct, const j2kc_component *out)
{
    inverse(planes, strides, source, count, mct, out);
}

}  // namespace j2kc
