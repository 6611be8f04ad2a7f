/**
 * @file reconstruct.cu
 * @brief The CUDA decoder's sample stages of one tile-component:
 * dequantisation (Annex E, with Annex H's ROI de-scaling) fused into the
 * loads of the inverse DWT (Annex F). Each level of dwt_inverse.cuh reads
 * its three high-pass sub-bands, and the first level its LL band too,
 * straight from the Tier-1 plane and dequantises each sample with
 * quant_ops.h's rule as it loads it; the CPU (reconstruct_cpu.cpp)
 * dequantises the plane first and transforms it after, which applies the
 * same operations to each sample in the same order, so the samples are the
 * same. The plane is read once, where a dequantisation pass of its own would
 * read and write it once more, and the top level writes where the caller
 * says, so that nothing is copied back into the plane.
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <type_traits>

#include "common/status.h"
#include "dwt/dwt_inverse.cuh"
#include "dwt/dwt_layout.h"
#include "pipeline/reconstruct.h"
#include "quant/quant.h"

namespace j2kc {
namespace {

/**
 * A level's sub-bands for dwt_inverse.cuh: the LL band from where the level
 * below wrote it (`ll`), or at the first level from the plane like the other
 * bands, which are dequantised as they are read.
 */
template <class T>
struct DequantizingSource {
    const int32_t *plane;
    size_t stride;
    const T *ll;  ///< nullptr at the first level
    size_t ll_stride;
    float half_step[4];  ///< the level's LL (band 0: first level only), HL, LH, HH (9/7)
    uint32_t roi_shift;

    /** Selected rather than indexed, so that the steps stay in registers (an index would put them on the stack). */
    __device__ float band_step(bool high_x, bool high_y) const
    {
        return high_y ? (high_x ? half_step[3] : half_step[2]) : (high_x ? half_step[1] : half_step[0]);
    }

    /**
     * One load whichever band the sample is in (the address is selected,
     * not the load), so that a thread's loads of a tile can all be in flight
     * at once; the dequantisation follows.
     */
    __device__ T load(uint32_t px, uint32_t py, bool high_x, bool high_y) const
    {
        const bool reconstructed = ll && !high_x && !high_y;
        const int32_t *at = reconstructed ? reinterpret_cast<const int32_t *>(ll) + size_t{py} * ll_stride + px
                                          : plane + size_t{py} * stride + px;
        const int32_t v = *at;
        if constexpr (std::is_same_v<T, int32_t>)
            return reconstructed ? v : dequantize_53(v, roi_shift);
        else
            return reconstructed ? __int_as_float(v) : dequantize_97(v, band_step(high_x, high_y), roi_shift);
    }
};

/** Samples of resolution r of p's tile-component (none below 0). */
uint64_t resolution_area(const ComponentPlane &p, int r)
{
    return r < 0 ? 0 : dwt_resolution_rect(p.tc_rect, p.levels, r).area();
}

/** The resolution the inverse DWT stops at. */
int top_resolution(const ComponentPlane &p) { return p.levels - p.levels_to_skip; }

void check_plane(const ComponentPlane &p, const void *plane)
{
    J2KC_CHECK_ARG(p.levels <= kMaxLevels && p.levels_to_skip <= p.levels, "reconstruct: %d of %d levels",
                   int{p.levels_to_skip}, int{p.levels});
    J2KC_CHECK_ARG(p.tc_rect.x1 >= p.tc_rect.x0 && p.tc_rect.y1 >= p.tc_rect.y0, "reconstruct: inverted rect");
    J2KC_CHECK_ARG(p.out_rect.area() == 0 || (plane && p.stride >= p.out_rect.width()), "reconstruct: bad plane");
}

/**
 * Where each level of one tile-component writes: the top level to `out`,
 * the one below it to `upper`, and the lower ones alternately to the two
 * areas of `lower` (the level under the upper one, and every second one
 * below, to the first), so that no level writes where its LL band lies.
 */
template <class T>
class LevelChain {
public:
    LevelChain(const ComponentPlane &p, int32_t *plane, void *out, void *upper, void *lower)
        : p_(p), plane_(plane), top_(top_resolution(p)), out_(static_cast<T *>(out)), upper_(static_cast<T *>(upper)),
          lower_(static_cast<T *>(lower))
    {}

    /** Queues the levels that make resolutions first..last on `st`. */
    void run(int first, int last, cudaStream_t st) const
    {
        if (first > last) return;
        DequantizingSource<T> src{plane_, p_.stride, nullptr, 0, {p_.dequant.half_step[0]}, p_.dequant.roi_shift};
        if (first > 1) {
            const dwt_inverse::LevelOutput<T> ll = output(first - 1);
            src.ll = ll.data;
            src.ll_stride = ll.stride;
        }
        for (int r = first; r <= last; ++r) {
            const Rect rr = dwt_resolution_rect(p_.tc_rect, p_.levels, r);
            for (int o = 1; o < 4; ++o) src.half_step[o] = p_.dequant.half_step[3 * (r - 1) + o];
            const dwt_inverse::LevelOutput<T> dst = output(r);
            dwt_inverse::inverse_level<T>(src, dst, rr, st);
            src.ll = dst.data;
            src.ll_stride = dst.stride;
        }
    }

private:
    dwt_inverse::LevelOutput<T> output(int r) const
    {
        const size_t w = dwt_resolution_rect(p_.tc_rect, p_.levels, r).width();
        if (r == top_) return {out_, w};
        if (r == top_ - 1) return {upper_, w};
        return {lower_ + (((top_ - 2 - r) & 1) ? resolution_area(p_, top_ - 2) : 0), w};
    }

    const ComponentPlane &p_;
    int32_t *plane_;
    int top_;
    T *out_, *upper_, *lower_;
};

/** Runs resolutions first..last of p's chain with the sample type of its filter. */
void run_levels(const ComponentPlane &p, int32_t *plane, void *out, void *upper, void *lower, int first, int last,
                cudaStream_t st)
{
    if (p.wavelet == Wavelet::kReversible53)
        LevelChain<int32_t>(p, plane, out, upper, lower).run(first, last, st);
    else
        LevelChain<float>(p, plane, out, upper, lower).run(first, last, st);
}

}  // namespace

size_t reconstruct_gpu_upper_bytes(const ComponentPlane &p)
{
    return static_cast<size_t>(resolution_area(p, top_resolution(p) - 1) * 4);
}

size_t reconstruct_gpu_lower_bytes(const ComponentPlane &p)
{
    const int top = top_resolution(p);
    return static_cast<size_t>((resolution_area(p, top - 2) + resolution_area(p, top - 3)) * 4);
}

bool reconstruct_has_lower_levels(const ComponentPlane &p) { return !p.out_rect.empty() && top_resolution(p) > 2; }

void reconstruct_lower_gpu(const ComponentPlane &p, int32_t *plane, void *lower, void *stream)
{
    check_plane(p, plane);
    if (!reconstruct_has_lower_levels(p)) return;
    J2KC_CHECK_ARG(lower, "reconstruct: no scratch");
    run_levels(p, plane, nullptr, nullptr, lower, 1, top_resolution(p) - 2, static_cast<cudaStream_t>(stream));
}

void reconstruct_upper_gpu(const ComponentPlane &p, int32_t *plane, void *out, void *upper, void *lower, void *stream)
{
    check_plane(p, plane);
    if (p.out_rect.empty()) return;
    const auto st = static_cast<cudaStream_t>(stream);
    if (reconstructs_in_place(p)) {
        if (p.wavelet == Wavelet::kReversible53)
            dequantize_gpu(plane, p.stride, plane, p.stride, p.dequant, st);
        else
            dequantize_gpu(plane, p.stride, reinterpret_cast<float *>(plane), p.stride, p.dequant, st);
        return;
    }
    const int top = top_resolution(p);
    J2KC_CHECK_ARG(out && (top < 2 || upper) && (top < 3 || lower), "reconstruct: no output or scratch");
    run_levels(p, plane, out, upper, lower, std::max(1, top - 1), top, st);
}

size_t reconstruct_gpu_scratch_bytes(const ComponentPlane &p)
{
    return reconstruct_gpu_upper_bytes(p) + reconstruct_gpu_lower_bytes(p);
}

void reconstruct_component_gpu(const ComponentPlane &p, int32_t *plane, void *out, void *scratch, void *stream)
{
    auto *lower = static_cast<unsigned char *>(scratch) + reconstruct_gpu_upper_bytes(p);
    reconstruct_lower_gpu(p, plane, lower, stream);
    reconstruct_upper_gpu(p, plane, out, scratch, lower, stream);
}

}  // namespace j2kc
