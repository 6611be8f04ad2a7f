/**
 * @file dwt_cpu.cpp
 * @brief CPU reference of ISO/IEC 15444-1 Annex F: 2D_SD / 2D_SR built from
 * 1-D lifting runs (F.3.8.2 / F.4.8.2) on gathered rows and columns. The
 * lifting steps with mirrored +-1 neighbours are the standard's periodic
 * symmetric extension (a mirror keeps the parity of the neighbour).
 */
#include <algorithm>
#include <vector>

#include "dwt/dwt.h"
#include "dwt/dwt_lifting.h"

namespace j2kc {
namespace {

/*
 * The 1-D filters work on `lanes` interleaved runs at once: sample k of lane
 * j is x[k * lanes + j]. Rows use one lane; columns are gathered in batches
 * of kLanes so the inner loops run over contiguous memory. Every sample sees
 * the same operations in the same order whatever the lane count.
 */
struct Filter53 {
    using T = int32_t;
    template <uint32_t lanes, class Op>
    static void step(T *x, uint32_t n, uint32_t first, Op op)
    {
        for (uint32_t k = first; k < n; k += 2) {
            T *c = x + size_t{k} * lanes;
            const T *l = x + size_t{dwt_left(k)} * lanes, *r = x + size_t{dwt_right(k, n)} * lanes;
            for (uint32_t j = 0; j < lanes; ++j) c[j] = op(c[j], l[j], r[j]);
        }
    }
    template <uint32_t lanes>
    static void forward(T *x, const DwtRun &r)
    {
        if (r.n == 1) {
            for (uint32_t j = 0; j < lanes; ++j) x[j] = dwt53_single_fwd(r, x[j]);
            return;
        }
        step<lanes>(x, r.n, 1 - r.parity, lift53_predict_fwd);
        step<lanes>(x, r.n, r.parity, lift53_update_fwd);
    }
    template <uint32_t lanes>
    static void inverse(T *x, const DwtRun &r)
    {
        if (r.n == 1) {
            for (uint32_t j = 0; j < lanes; ++j) x[j] = dwt53_single_inv(r, x[j]);
            return;
        }
        step<lanes>(x, r.n, r.parity, lift53_update_inv);
        step<lanes>(x, r.n, 1 - r.parity, lift53_predict_inv);
    }
};

struct Filter97 {
    using T = float;
    template <uint32_t lanes>
    static void step(T *x, uint32_t n, uint32_t first, float c, bool fwd)
    {
        for (uint32_t k = first; k < n; k += 2) {
            T *m = x + size_t{k} * lanes;
            const T *l = x + size_t{dwt_left(k)} * lanes, *r = x + size_t{dwt_right(k, n)} * lanes;
            if (fwd)
                for (uint32_t j = 0; j < lanes; ++j) m[j] = lift97_fwd(m[j], l[j], r[j], c);
            else
                for (uint32_t j = 0; j < lanes; ++j) m[j] = lift97_inv(m[j], l[j], r[j], c);
        }
    }
    template <uint32_t lanes>
    static void scale(T *x, const DwtRun &r, bool fwd)
    {
        for (uint32_t k = 0; k < r.n; ++k) {
            const bool high = dwt_is_high(r, k);
            const float s = fwd ? dwt97_scale_fwd(r, high) : dwt97_scale_inv(r, high);
            T *m = x + size_t{k} * lanes;
            for (uint32_t j = 0; j < lanes; ++j) m[j] = dwt_fmul(m[j], s);
        }
    }
    template <uint32_t lanes>
    static void forward(T *x, const DwtRun &r)
    {
        const uint32_t n = r.n, odd = 1 - r.parity, even = r.parity;
        if (n > 1) {
            step<lanes>(x, n, odd, kDwtAlpha, true);
            step<lanes>(x, n, even, kDwtBeta, true);
            step<lanes>(x, n, odd, kDwtGamma, true);
            step<lanes>(x, n, even, kDwtDelta, true);
        }
        scale<lanes>(x, r, true);
    }
    template <uint32_t lanes>
    static void inverse(T *x, const DwtRun &r)
    {
        const uint32_t n = r.n, odd = 1 - r.parity, even = r.parity;
        scale<lanes>(x, r, false);
        if (n > 1) {
            step<lanes>(x, n, even, kDwtDelta, false);
            step<lanes>(x, n, odd, kDwtGamma, false);
            step<lanes>(x, n, even, kDwtBeta, false);
            step<lanes>(x, n, odd, kDwtAlpha, false);
        }
    }
};

constexpr uint32_t kLanes = 16;

/** Forward 1-D over `lanes` adjacent columns (lanes = 1: one row): gather, lift, scatter split. */
template <class F, uint32_t lanes>
void run_forward(typename F::T *base, size_t step, uint32_t i0, uint32_t n, std::vector<typename F::T> &a)
{
    const DwtRun r = dwt_run(i0, n);
    for (uint32_t k = 0; k < n; ++k) std::copy_n(base + k * step, lanes, a.data() + size_t{k} * lanes);
    F::template forward<lanes>(a.data(), r);
    for (uint32_t k = 0; k < n; ++k)
        std::copy_n(a.data() + size_t{k} * lanes, lanes, base + dwt_split_pos(r, k) * step);
}

template <class F, uint32_t lanes>
void run_inverse(typename F::T *base, size_t step, uint32_t i0, uint32_t n, std::vector<typename F::T> &a)
{
    const DwtRun r = dwt_run(i0, n);
    for (uint32_t p = 0; p < n; ++p)
        std::copy_n(base + p * step, lanes, a.data() + size_t{dwt_merge_offset(r, p)} * lanes);
    F::template inverse<lanes>(a.data(), r);
    for (uint32_t k = 0; k < n; ++k) std::copy_n(a.data() + size_t{k} * lanes, lanes, base + k * step);
}

void check_args(const void *data, size_t stride, const Rect &rect, int levels, int skip)
{
    J2KC_CHECK_ARG(levels >= 0 && levels <= kMaxLevels, "DWT: %d levels (0..32)", levels);
    J2KC_CHECK_ARG(skip >= 0 && skip <= levels, "DWT: cannot skip %d of %d levels", skip, levels);
    J2KC_CHECK_ARG(rect.x1 >= rect.x0 && rect.y1 >= rect.y0, "DWT: inverted rect");
    // A reduced inverse touches only the kept resolution, so the plane may be that narrow.
    const Rect kept = dwt_resolution_rect(rect, levels, levels - skip);
    J2KC_CHECK_ARG(rect.area() == 0 || (data && stride >= kept.width()), "DWT: bad plane");
}

template <class F>
void forward_2d(typename F::T *data, size_t stride, const Rect &rect, int levels)
{
    check_args(data, stride, rect, levels, 0);
    if (rect.area() == 0) return;
    std::vector<typename F::T> a(std::max<size_t>(rect.width(), size_t{rect.height()} * kLanes));
    for (int lev = 1; lev <= levels; ++lev) {
        const Rect rr = dwt_resolution_rect(rect, levels, levels - lev + 1);
        const uint32_t w = rr.width(), h = rr.height();
        if (w == 0 || h == 0) break;
        uint32_t x = 0;
        for (; x + kLanes <= w; x += kLanes) run_forward<F, kLanes>(data + x, stride, rr.y0, h, a);
        for (; x < w; ++x) run_forward<F, 1>(data + x, stride, rr.y0, h, a);
        for (uint32_t y = 0; y < h; ++y) run_forward<F, 1>(data + y * stride, 1, rr.x0, w, a);
    }
}

template <class F>
void inverse_2d(typename F::T *data, size_t stride, const Rect &rect, int levels, int skip)
{
    check_args(data, stride, rect, levels, skip);
    if (rect.area() == 0) return;
    std::vector<typename F::T> a(std::max<size_t>(rect.width(), size_t{rect.height()} * kLanes));
    for (int lev = levels; lev > skip; --lev) {
        const Rect rr = dwt_resolution_rect(rect, levels, levels - lev + 1);
        const uint32_t w = rr.width(), h = rr.height();
        if (w == 0 || h == 0) continue;
        for (uint32_t y = 0; y < h; ++y) run_inverse<F, 1>(data + y * stride, 1, rr.x0, w, a);
        uint32_t x = 0;
        for (; x + kLanes <= w; x += kLanes) run_inverse<F, kLanes>(data + x, stride, rr.y0, h, a);
        for (; x < w; ++x) run_inverse<F, 1>(data + x, stride, rr.y0, h, a);
    }
}

}  // namespace

void dwt53_forward(int32_t *data, size_t stride, const Rect &rect, int levels)
{
    forward_2d<Filter53>(data, stride, rect, levels);
}
void dwt53_inverse(int32_t *data, size_t stride, const Rect &rect, int levels, int levels_to_skip)
{
    inverse_2d<Filter53>(data, stride, rect, levels, levels_to_skip);
}
void dwt97_forward(float *data, size_t stride, const Rect &rect, int levels)
{
    forward_2d<Filter97>(data, stride, rect, levels);
}
void dwt97_inverse(float *data, size_t stride, const Rect &rect, int levels, int levels_to_skip)
{
    inverse_2d<Filter97>(data, stride, rect, levels, levels_to_skip);
}

}  // namespace j2kc
