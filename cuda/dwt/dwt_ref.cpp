/**
 * @file dwt_ref.cpp
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

struct Filter53 {
    using T = int32_t;
    static void forward(T *x, const DwtRun &r)
    {
        const uint32_t n = r.n;
        if (n == 1) {
            x[0] = dwt53_single_fwd(r, x[0]);
            return;
        }
        for (uint32_t k = 1 - r.parity; k < n; k += 2)
            x[k] = lift53_predict_fwd(x[k], x[dwt_left(k)], x[dwt_right(k, n)]);
        for (uint32_t k = r.parity; k < n; k += 2)
            x[k] = lift53_update_fwd(x[k], x[dwt_left(k)], x[dwt_right(k, n)]);
    }
    static void inverse(T *x, const DwtRun &r)
    {
        const uint32_t n = r.n;
        if (n == 1) {
            x[0] = dwt53_single_inv(r, x[0]);
            return;
        }
        for (uint32_t k = r.parity; k < n; k += 2)
            x[k] = lift53_update_inv(x[k], x[dwt_left(k)], x[dwt_right(k, n)]);
        for (uint32_t k = 1 - r.parity; k < n; k += 2)
            x[k] = lift53_predict_inv(x[k], x[dwt_left(k)], x[dwt_right(k, n)]);
    }
};

struct Filter97 {
    using T = float;
    static void step_fwd(T *x, uint32_t n, uint32_t first, float c)
    {
        for (uint32_t k = first; k < n; k += 2)
            x[k] = lift97_fwd(x[k], x[dwt_left(k)], x[dwt_right(k, n)], c);
    }
    static void step_inv(T *x, uint32_t n, uint32_t first, float c)
    {
        for (uint32_t k = first; k < n; k += 2)
            x[k] = lift97_inv(x[k], x[dwt_left(k)], x[dwt_right(k, n)], c);
    }
    static void forward(T *x, const DwtRun &r)
    {
        const uint32_t n = r.n, odd = 1 - r.parity, even = r.parity;
        if (n > 1) {
            step_fwd(x, n, odd, kDwtAlpha);
            step_fwd(x, n, even, kDwtBeta);
            step_fwd(x, n, odd, kDwtGamma);
            step_fwd(x, n, even, kDwtDelta);
        }
        for (uint32_t k = 0; k < n; ++k) x[k] = dwt_fmul(x[k], dwt97_scale_fwd(r, dwt_is_high(r, k)));
    }
    static void inverse(T *x, const DwtRun &r)
    {
        const uint32_t n = r.n, odd = 1 - r.parity, even = r.parity;
        for (uint32_t k = 0; k < n; ++k) x[k] = dwt_fmul(x[k], dwt97_scale_inv(r, dwt_is_high(r, k)));
        if (n > 1) {
            step_inv(x, n, even, kDwtDelta);
            step_inv(x, n, odd, kDwtGamma);
            step_inv(x, n, even, kDwtBeta);
            step_inv(x, n, odd, kDwtAlpha);
        }
    }
};

/** Forward 1-D on a strided run: gather, lift, scatter de-interleaved. */
template <class F>
void run_forward(typename F::T *base, size_t step, uint32_t i0, uint32_t n,
                 std::vector<typename F::T> &a, std::vector<typename F::T> &b)
{
    const DwtRun r = dwt_run(i0, n);
    for (uint32_t k = 0; k < n; ++k) a[k] = base[k * step];
    F::forward(a.data(), r);
    for (uint32_t k = 0; k < n; ++k) b[dwt_split_pos(r, k)] = a[k];
    for (uint32_t k = 0; k < n; ++k) base[k * step] = b[k];
}

template <class F>
void run_inverse(typename F::T *base, size_t step, uint32_t i0, uint32_t n,
                 std::vector<typename F::T> &a)
{
    const DwtRun r = dwt_run(i0, n);
    for (uint32_t p = 0; p < n; ++p) a[dwt_merge_offset(r, p)] = base[p * step];
    F::inverse(a.data(), r);
    for (uint32_t k = 0; k < n; ++k) base[k * step] = a[k];
}

void check_args(const void *data, size_t stride, const Rect &rect, int levels, int skip)
{
    J2KC_CHECK_ARG(levels >= 0 && levels <= kMaxLevels, "DWT: %d levels (0..32)", levels);
    J2KC_CHECK_ARG(skip >= 0 && skip <= levels, "DWT: cannot skip %d of %d levels", skip, levels);
    J2KC_CHECK_ARG(rect.x1 >= rect.x0 && rect.y1 >= rect.y0, "DWT: inverted rect");
    J2KC_CHECK_ARG(rect.area() == 0 || (data && stride >= rect.width()), "DWT: bad plane");
}

template <class F>
void forward_2d(typename F::T *data, size_t stride, const Rect &rect, int levels)
{
    check_args(data, stride, rect, levels, 0);
    if (rect.area() == 0) return;
    std::vector<typename F::T> a(std::max(rect.width(), rect.height())), b(a.size());
    for (int lev = 1; lev <= levels; ++lev) {
        const Rect rr = dwt_resolution_rect(rect, levels, levels - lev + 1);
        const uint32_t w = rr.width(), h = rr.height();
        if (w == 0 || h == 0) break;
        for (uint32_t x = 0; x < w; ++x) run_forward<F>(data + x, stride, rr.y0, h, a, b);
        for (uint32_t y = 0; y < h; ++y) run_forward<F>(data + y * stride, 1, rr.x0, w, a, b);
    }
}

template <class F>
void inverse_2d(typename F::T *data, size_t stride, const Rect &rect, int levels, int skip)
{
    check_args(data, stride, rect, levels, skip);
    if (rect.area() == 0) return;
    std::vector<typename F::T> a(std::max(rect.width(), rect.height()));
    for (int lev = levels; lev > skip; --lev) {
        const Rect rr = dwt_resolution_rect(rect, levels, levels - lev + 1);
        const uint32_t w = rr.width(), h = rr.height();
        if (w == 0 || h == 0) continue;
        for (uint32_t y = 0; y < h; ++y) run_inverse<F>(data + y * stride, 1, rr.x0, w, a);
        for (uint32_t x = 0; x < w; ++x) run_inverse<F>(data + x, stride, rr.y0, h, a);
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
