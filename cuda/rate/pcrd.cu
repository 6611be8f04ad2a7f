/**
 * @file pcrd.cu
 * @brief PCRD-opt on the GPU (Bruns et al., "Evaluation of GPU/CPU
 * Co-Processing Models for JPEG 2000 Packetization", section VI; ISO/IEC
 * 15444-1 Annex J.14): a hull kernel (one thread per code-block), a probe
 * kernel (one warp per code-block at a time, each lane one of the 32
 * thresholds; per-block partial sums in shared memory = level 1), an update
 * kernel (sums the partials = level 2, compares with the budgets, narrows the
 * window) and a commit kernel per layer. A search round is a fixed sequence
 * of launches with the windows kept in device memory, so the host only reads
 * the final sums back; iterations after convergence return at once.
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "common/cuda_util.cuh"
#include "common/status.h"
#include "rate/pcrd.h"
#include "rate/pcrd_core.h"
#include "rate/pcrd_rounds.h"

namespace j2kc {

namespace {

using detail::kPcrdNoLimit;

// Error bits of the hull kernel (read back with the sums).
constexpr uint32_t kErrOffsets = 1, kErrTooManyPasses = 2, kErrLengths = 4, kErrComponent = 8;

/** Search state living on the device between launches. */
struct DeviceState {
    PcrdWindow win[kPcrdMaxGroups + 1];            ///< groups, then the frame window
    unsigned long long base_bits[kPcrdMaxGroups];  ///< header bits of committed layers
    unsigned long long body[kPcrdMaxGroups];       ///< bytes after the last layer
    unsigned int group_blocks[kPcrdMaxGroups];     ///< code-blocks of each group
    unsigned int not_all;                          ///< blocks missing passes after the last layer
    unsigned int error;
};

struct Budgets {
    unsigned long long group[kPcrdMaxGroups];
    unsigned long long frame;
};

struct Args {
    const uint32_t *pass_offset;
    const uint32_t *pass_end;
    const uint64_t *pass_distortion;
    const double *weight;
    const uint16_t *component;
    uint32_t num_blocks, num_passes, num_components, groups, num_layers;
    uint16_t *hull_pass;
    uint32_t *hull_key;
    uint32_t *hull_count;
    uint64_t *hull_dist;
    uint16_t *passes;
    DeviceState *state;
    unsigned long long *partial_body;  ///< [row][group][probe]
    unsigned long long *partial_bits;
    uint32_t *thresholds;  ///< [layer][groups + 1]
    PcrdHeaderModel model;
};

constexpr int kProbeThreads = 256;
constexpr int kCommitThreads = 256;
constexpr int kHullThreads = 128;
/** The update kernel's threads: as many copies of its G warps as fit. */
constexpr uint32_t kUpdateThreads = 1024;

__device__ uint32_t block_group(const Args &a, uint32_t b)
{
    const uint32_t c = a.component ? a.component[b] : 0u;
    return a.groups == 1 ? 0u : c;
}

__global__ void rate_hull_kernel(Args a)
{
    const uint32_t b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= a.num_blocks) return;
    const uint32_t first = a.pass_offset[b], last = a.pass_offset[b + 1];
    uint32_t error = 0;
    if ((b == 0 && first != 0) || first > last || last > a.num_passes ||
        (b + 1 == a.num_blocks && last != a.num_passes))
        error |= kErrOffsets;
    else if (last - first > 65535)
        error |= kErrTooManyPasses;
    else
        for (uint32_t p = first + 1; p < last; ++p)
            if (a.pass_end[p] < a.pass_end[p - 1]) error |= kErrLengths;
    if (a.component && a.component[b] >= a.num_components) error |= kErrComponent;
    if (error) {
        atomicOr(&a.state->error, error);
        a.hull_count[b] = 0;
        return;
    }
    atomicAdd(&a.state->group_blocks[block_group(a, b)], 1u);
    a.hull_count[b] = pcrd_build_hull(a.pass_end + first, a.pass_distortion + first, last - first, a.weight[b],
                                      a.hull_pass + first, a.hull_key + first, a.hull_dist + first);
}

/** Windows for a layer: capped groups and (if limited) the frame start open. */
__global__ void rate_layer_start_kernel(Args a, Budgets budgets, uint32_t layer)
{
    DeviceState *s = a.state;
    const uint32_t g = threadIdx.x;
    if (g < a.groups) {
        s->win[g] = pcrd_window_start(budgets.group[g] != kPcrdNoLimit);
        s->body[g] = 0;
        if (layer == 0) s->base_bits[g] = 0;
    }
    if (g == 0) {
        s->win[a.groups] = pcrd_window_start(budgets.frame != kPcrdNoLimit);
        s->not_all = 0;
    }
}

/** Threshold of group g, probe i: its own window (phase 1) or the frame's floored by it. */
__device__ uint32_t probe_threshold(const DeviceState *s, uint32_t groups, int phase, uint32_t g, uint32_t i)
{
    if (phase == 1) return pcrd_window_probe(s->win[g], i);
    return max(pcrd_window_probe(s->win[groups], i), s->win[g].hi);
}

/** Level 1: per thread block, sums per (group, probe) of bytes and header bits. */
__global__ void __launch_bounds__(kProbeThreads) rate_probe_kernel(Args a, int phase, uint32_t layer)
{
    __shared__ uint32_t sh_t[kPcrdMaxGroups][kPcrdProbes];
    __shared__ unsigned long long sh_body[kPcrdMaxGroups][kPcrdProbes];
    __shared__ unsigned long long sh_bits[kPcrdMaxGroups][kPcrdProbes];
    const DeviceState *s = a.state;
    const uint32_t G = a.groups;
    if (s->error) return;
    bool open = false;
    if (phase == 1)
        for (uint32_t g = 0; g < G; ++g) open |= !pcrd_window_converged(s->win[g]);
    else
        open = !pcrd_window_converged(s->win[G]);
    if (!open) return;  // the update kernel skips the same way

    for (uint32_t idx = threadIdx.x; idx < G * kPcrdProbes; idx += blockDim.x) {
        const uint32_t g = idx / kPcrdProbes, i = idx % kPcrdProbes;
        sh_t[g][i] = probe_threshold(s, G, phase, g, i);
        sh_body[g][i] = 0;
        sh_bits[g][i] = 0;
    }
    __syncthreads();

    const uint32_t lane = threadIdx.x % 32;
    const uint32_t warps = gridDim.x * (blockDim.x / 32);
    uint32_t cur = ~0u;
    unsigned long long acc_body = 0, acc_bits = 0;
    for (uint32_t b = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; b < a.num_blocks; b += warps) {
        const uint32_t g = block_group(a, b);  // uniform over the warp
        if (g != cur) {
            if (cur != ~0u) {
                atomicAdd(&sh_body[cur][lane], acc_body);
                atomicAdd(&sh_bits[cur][lane], acc_bits);
            }
            cur = g;
            acc_body = acc_bits = 0;
        }
        const uint32_t off = a.pass_offset[b];
        const uint32_t prev = layer ? a.passes[size_t{b} * a.num_layers + layer - 1] : 0u;
        const PcrdPick k = pcrd_pick(a.pass_end + off, a.hull_pass + off, a.hull_key + off, a.hull_count[b],
                                     a.pass_offset[b + 1] - off, prev, sh_t[g][lane], a.model);
        acc_body += k.bytes;
        acc_bits += k.bits;
    }
    if (cur != ~0u) {
        atomicAdd(&sh_body[cur][lane], acc_body);
        atomicAdd(&sh_bits[cur][lane], acc_bits);
    }
    __syncthreads();
    for (uint32_t idx = threadIdx.x; idx < G * kPcrdProbes; idx += blockDim.x) {
        const uint32_t g = idx / kPcrdProbes, i = idx % kPcrdProbes;
        const size_t at = (size_t{blockIdx.x} * G + g) * kPcrdProbes + i;
        a.partial_body[at] = sh_body[g][i];
        a.partial_bits[at] = sh_bits[g][i];
    }
}

/**
 * Level 2: one warp per group, lane = probe, sums the rows of partials,
 * compares with the budget(s) and narrows the window. Copies of those warps
 * (as many as kUpdateThreads hold) first sum every n-th row each: one
 * thread's walk over all the rows (264 on an H200) took about 50 us a
 * launch, seven launches a search round (docs/measurements.md).
 */
__global__ void __launch_bounds__(kUpdateThreads)
    rate_update_kernel(Args a, int phase, Budgets budgets, uint32_t rows, uint32_t layer)
{
    __shared__ unsigned long long sh_body[kUpdateThreads], sh_bits[kUpdateThreads];
    __shared__ unsigned long long sh_size[kPcrdMaxGroups][kPcrdProbes];
    DeviceState *s = a.state;
    const uint32_t G = a.groups, lanes = G * kPcrdProbes, slices = blockDim.x / lanes;
    const uint32_t slice = threadIdx.x / lanes, g = threadIdx.x % lanes / 32, i = threadIdx.x % 32;
    if (s->error) return;
    // Uniform per warp (phase 1) or per block (phase 2).
    const bool open = !pcrd_window_converged(phase == 1 ? s->win[g] : s->win[G]);
    if (phase == 2 && !open) return;
    unsigned long long body = 0, bits = 0;
    for (uint32_t r = slice; open && r < rows; r += slices) {
        const size_t at = (size_t{r} * G + g) * kPcrdProbes + i;
        body += a.partial_body[at];
        bits += a.partial_bits[at];
    }
    sh_body[threadIdx.x] = body;
    sh_bits[threadIdx.x] = bits;
    __syncthreads();
    unsigned long long size = 0;
    if (slice == 0 && open) {
        for (uint32_t k = 1; k < slices; ++k) {
            body += sh_body[k * lanes + threadIdx.x];
            bits += sh_bits[k * lanes + threadIdx.x];
        }
        const unsigned long long base =
            s->base_bits[g] + pcrd_reserve_bits(a.model, s->group_blocks[g], a.num_layers - 1 - layer);
        size = pcrd_group_size(body, bits + base);
    }
    if (phase == 1) {
        if (slice != 0 || !open) return;
        const uint32_t mask = __ballot_sync(0xffffffffu, size <= budgets.group[g]);
        if (i == 0) pcrd_window_update(s->win[g], mask);
        return;
    }
    if (slice == 0) sh_size[g][i] = size;
    __syncthreads();
    if (threadIdx.x >= 32) return;
    unsigned long long total = 0;
    for (uint32_t h = 0; h < G; ++h) total += sh_size[h][i];
    const uint32_t mask = __ballot_sync(0xffffffffu, total <= budgets.frame);
    if (i == 0) pcrd_window_update(s->win[G], mask);
}

/** Writes the layer's passes at the found thresholds and adds its header bits. */
__global__ void __launch_bounds__(kCommitThreads) rate_commit_kernel(Args a, uint32_t layer)
{
    __shared__ unsigned long long sh_bits[kPcrdMaxGroups];
    __shared__ unsigned long long sh_body[kPcrdMaxGroups];
    __shared__ unsigned int sh_not_all;
    DeviceState *s = a.state;
    const uint32_t G = a.groups;
    const bool last = layer + 1 == a.num_layers;
    if (threadIdx.x < G) sh_bits[threadIdx.x] = sh_body[threadIdx.x] = 0;
    if (threadIdx.x == 0) sh_not_all = 0;
    __syncthreads();
    const bool ok = s->error == 0;
    const uint32_t b = blockIdx.x * blockDim.x + threadIdx.x;
    if (ok && b < a.num_blocks) {
        const uint32_t g = block_group(a, b);
        const uint32_t t = max(s->win[G].hi, s->win[g].hi);
        const uint32_t off = a.pass_offset[b];
        const uint32_t n = a.pass_offset[b + 1] - off;
        const size_t row = size_t{b} * a.num_layers;
        const uint32_t prev = layer ? a.passes[row + layer - 1] : 0u;
        const PcrdPick k =
            pcrd_pick(a.pass_end + off, a.hull_pass + off, a.hull_key + off, a.hull_count[b], n, prev, t, a.model);
        a.passes[row + layer] = static_cast<uint16_t>(k.passes);
        atomicAdd(&sh_bits[g], static_cast<unsigned long long>(k.bits));
        if (last) {
            atomicAdd(&sh_body[g], static_cast<unsigned long long>(k.bytes));
            if (k.passes != n) atomicAdd(&sh_not_all, 1u);
        }
    }
    __syncthreads();
    if (!ok) return;
    if (threadIdx.x < G) {
        atomicAdd(&s->base_bits[threadIdx.x], sh_bits[threadIdx.x]);
        if (last) atomicAdd(&s->body[threadIdx.x], sh_body[threadIdx.x]);
    }
    if (threadIdx.x == 0 && last) atomicAdd(&s->not_all, sh_not_all);
    if (blockIdx.x == 0 && threadIdx.x <= G) {
        const uint32_t g = threadIdx.x;
        a.thresholds[size_t{layer} * (G + 1) + g] = g == G ? s->win[G].hi : max(s->win[G].hi, s->win[g].hi);
    }
}

struct FillLimits {
    unsigned long long group[kPcrdMaxGroups];
};

/** Slack filling: each block's next hull segment within its group's limit, appended. */
__global__ void rate_candidates_kernel(Args a, FillLimits limits, PcrdCandidate *out, uint32_t *count)
{
    const uint32_t b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= a.num_blocks) return;
    const uint32_t off = a.pass_offset[b];
    const uint32_t L = a.num_layers;
    const size_t row = size_t{b} * L;
    const uint32_t g = block_group(a, b);
    PcrdCandidate c;
    if (pcrd_next_segment(a.pass_end + off, a.hull_pass + off, a.hull_key + off, a.hull_count[b], a.passes[row + L - 1],
                          L > 1 ? a.passes[row + L - 2] : 0u, a.model, b, g, c) &&
        c.bytes <= limits.group[g])
        out[atomicAdd(count, 1u)] = c;  // the host orders them
}

/** Sets the last layer's passes of the listed blocks. */
__global__ void rate_apply_kernel(Args a, const PcrdCandidate *list, uint32_t n, bool undo)
{
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const PcrdCandidate c = list[i];
    a.passes[size_t{c.block} * a.num_layers + a.num_layers - 1] = undo ? c.from : c.to;
}

uint32_t ceil_div(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

}  // namespace

bool pcrd_cuda_available()
{
    int count = 0;
    return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

struct PcrdCuda::Impl {
    DeviceArray<uint16_t> hull_pass;
    DeviceArray<uint32_t> hull_key;
    DeviceArray<uint64_t> hull_dist;
    DeviceArray<uint32_t> hull_count;
    DeviceArray<uint16_t> passes;
    DeviceArray<DeviceState> state;
    DeviceArray<unsigned long long> partial_body, partial_bits;
    DeviceArray<uint32_t> thresholds;
    DeviceArray<PcrdCandidate> candidates;  ///< slack filling: found, then applied lists
    DeviceArray<uint32_t> candidate_count;
    uint32_t max_rows = 0;
    const uint16_t *last_passes = nullptr;

    void reserve(uint32_t blocks, uint32_t passes_n, uint32_t layers)
    {
        if (max_rows == 0) max_rows = multiprocessor_count() * 2;
        hull_pass.reserve(passes_n);
        hull_key.reserve(passes_n);
        hull_dist.reserve(passes_n);
        hull_count.reserve(blocks);
        passes.reserve(size_t{blocks} * layers);
        state.reserve(1);
        partial_body.reserve(size_t{max_rows} * kPcrdMaxGroups * kPcrdProbes);
        partial_bits.reserve(size_t{max_rows} * kPcrdMaxGroups * kPcrdProbes);
        thresholds.reserve(size_t{layers} * (kPcrdMaxGroups + 1));
        candidates.reserve(blocks);
        candidate_count.reserve(1);
    }

    std::vector<PcrdCandidate> find_candidates(const Args &a, const std::vector<uint64_t> &limit, cudaStream_t stream)
    {
        FillLimits fl{};
        for (size_t g = 0; g < limit.size() && g < kPcrdMaxGroups; ++g) fl.group[g] = limit[g];
        check_cuda(cudaMemsetAsync(candidate_count.get(), 0, sizeof(uint32_t), stream), "cudaMemsetAsync");
        if (a.num_blocks)
            rate_candidates_kernel<<<ceil_div(a.num_blocks, kCommitThreads), kCommitThreads, 0, stream>>>(
                a, fl, candidates.get(), candidate_count.get());
        check_cuda(cudaGetLastError(), "rate_candidates_kernel");
        uint32_t n = 0;
        check_cuda(cudaMemcpyAsync(&n, candidate_count.get(), sizeof(n), cudaMemcpyDeviceToHost, stream),
                   "cudaMemcpyAsync");
        check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        std::vector<PcrdCandidate> out(std::min(n, a.num_blocks));
        if (!out.empty()) {
            check_cuda(cudaMemcpyAsync(out.data(), candidates.get(), out.size() * sizeof(PcrdCandidate),
                                       cudaMemcpyDeviceToHost, stream),
                       "cudaMemcpyAsync");
            check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        }
        return out;
    }

    void apply(const Args &a, const std::vector<PcrdCandidate> &list, bool undo, cudaStream_t stream)
    {
        if (list.empty()) return;
        // The candidates buffer is free once its list has been read back.
        check_cuda(cudaMemcpyAsync(candidates.get(), list.data(), list.size() * sizeof(PcrdCandidate),
                                   cudaMemcpyHostToDevice, stream),
                   "cudaMemcpyAsync");
        const uint32_t n = static_cast<uint32_t>(list.size());
        rate_apply_kernel<<<ceil_div(n, kCommitThreads), kCommitThreads, 0, stream>>>(a, candidates.get(), n, undo);
        check_cuda(cudaGetLastError(), "rate_apply_kernel");
        // The host list may go away after the return.
        check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    }

    Args args(const PcrdBlocks &blocks, const PcrdParams &params, uint32_t groups) const
    {
        Args a{};
        a.pass_offset = blocks.pass_offset;
        a.pass_end = blocks.pass_end;
        a.pass_distortion = blocks.pass_distortion;
        a.weight = blocks.weight;
        a.component = blocks.component;
        a.num_blocks = blocks.num_blocks;
        a.num_passes = blocks.num_passes;
        a.num_components = params.num_components;
        a.groups = groups;
        a.num_layers = params.num_layers;
        a.hull_pass = hull_pass.get();
        a.hull_key = hull_key.get();
        a.hull_count = hull_count.get();
        a.hull_dist = hull_dist.get();
        a.passes = passes.get();
        a.state = state.get();
        a.partial_body = partial_body.get();
        a.partial_bits = partial_bits.get();
        a.thresholds = thresholds.get();
        a.model = params.header;
        return a;
    }

    /** Clears the state and builds the hulls; errors surface at the next read-back. */
    void start(const Args &a, cudaStream_t stream)
    {
        check_cuda(cudaMemsetAsync(a.state, 0, sizeof(DeviceState), stream), "cudaMemsetAsync");
        if (a.num_blocks) rate_hull_kernel<<<ceil_div(a.num_blocks, kHullThreads), kHullThreads, 0, stream>>>(a);
        check_cuda(cudaGetLastError(), "rate_hull_kernel");
    }

    static void throw_error(uint32_t error)
    {
        J2KC_CHECK_ARG(!(error & kErrOffsets), "pcrd: pass offsets do not span the passes");
        J2KC_CHECK_ARG(!(error & kErrTooManyPasses), "pcrd: a block has more than 65535 passes");
        J2KC_CHECK_ARG(!(error & kErrLengths), "pcrd: a block's pass lengths decrease");
        J2KC_CHECK_ARG(!(error & kErrComponent), "pcrd: a block's component is out of range");
    }

    detail::PcrdRoundOutcome search(const Args &a, const detail::PcrdRoundBudgets &budgets, cudaStream_t stream)
    {
        const uint32_t G = a.groups, L = a.num_layers;
        const uint32_t rows = std::max(1u, std::min(max_rows, ceil_div(a.num_blocks, kProbeThreads / 32)));
        Budgets kb{};
        bool any_group = false;
        for (uint32_t g = 0; g < G; ++g) {
            kb.group[g] = budgets.group[g];
            any_group |= budgets.group[g] != kPcrdNoLimit;
        }
        for (uint32_t l = 0; l < L; ++l) {
            kb.frame = budgets.layer[l];
            rate_layer_start_kernel<<<1, 32, 0, stream>>>(a, kb, l);
            // Windows that start closed stay closed: their launches may be left out.
            for (int phase = 1; phase <= 2; ++phase) {
                if (phase == 1 ? !any_group : kb.frame == kPcrdNoLimit) continue;
                for (int it = 0; it < kPcrdMaxIterations; ++it) {
                    rate_probe_kernel<<<rows, kProbeThreads, 0, stream>>>(a, phase, l);
                    rate_update_kernel<<<1, kUpdateThreads / (G * 32) * (G * 32), 0, stream>>>(a, phase, kb, rows, l);
                }
            }
            rate_commit_kernel<<<std::max(1u, ceil_div(a.num_blocks, kCommitThreads)), kCommitThreads, 0, stream>>>(a,
                                                                                                                    l);
        }
        check_cuda(cudaGetLastError(), "pcrd kernels");
        DeviceState host{};
        std::vector<uint32_t> thr(size_t{L} * (G + 1));
        check_cuda(cudaMemcpyAsync(&host, a.state, sizeof(host), cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
        check_cuda(
            cudaMemcpyAsync(thr.data(), a.thresholds, thr.size() * sizeof(uint32_t), cudaMemcpyDeviceToHost, stream),
            "cudaMemcpyAsync");
        check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        throw_error(host.error);
        detail::PcrdRoundOutcome out;
        out.layer_thresholds.resize(L);
        out.group_thresholds.resize(size_t{L} * G);
        for (uint32_t l = 0; l < L; ++l) {
            out.layer_thresholds[l] = thr[size_t{l} * (G + 1) + G];
            for (uint32_t g = 0; g < G; ++g) out.group_thresholds[size_t{l} * G + g] = thr[size_t{l} * (G + 1) + g];
        }
        out.group_body.assign(host.body, host.body + G);
        out.group_bits.assign(host.base_bits, host.base_bits + G);
        out.all_included = host.not_all == 0;
        return out;
    }
};

PcrdCuda::PcrdCuda() : impl_(new Impl) {}
PcrdCuda::~PcrdCuda() = default;

void PcrdCuda::reserve(uint32_t max_blocks, uint32_t max_passes, uint32_t max_layers)
{
    impl_->reserve(max_blocks, max_passes, max_layers);
}

const uint16_t *PcrdCuda::device_passes() const { return impl_->last_passes; }

static void check_device_blocks(const PcrdBlocks &blocks)
{
    J2KC_CHECK_ARG(blocks.pass_offset != nullptr && (blocks.num_blocks == 0 || blocks.weight != nullptr),
                   "pcrd: missing block arrays");
    J2KC_CHECK_ARG(blocks.num_passes == 0 || (blocks.pass_end != nullptr && blocks.pass_distortion != nullptr),
                   "pcrd: missing pass arrays");
}

PcrdResult PcrdCuda::select(const PcrdBlocks &blocks, const PcrdParams &params, const PcrdExactSizeFn &exact_size_fn,
                            void *stream_ptr, bool copy_passes)
{
    check_device_blocks(blocks);
    const detail::PcrdPlan plan = detail::pcrd_plan(params, blocks.num_blocks, blocks.num_passes);
    cudaStream_t stream = static_cast<cudaStream_t>(stream_ptr);
    impl_->reserve(blocks.num_blocks, blocks.num_passes, params.num_layers);
    impl_->last_passes = impl_->passes.get();
    const Args a = impl_->args(blocks, params, plan.groups);
    impl_->start(a, stream);
    PcrdResult result = detail::pcrd_run_rounds(
        params, plan, blocks.num_blocks, [&](const detail::PcrdRoundBudgets &b) { return impl_->search(a, b, stream); },
        [&]() -> const uint16_t * { return impl_->passes.get(); }, exact_size_fn,
        detail::PcrdFillFns{
            [&](const std::vector<uint64_t> &limit) { return impl_->find_candidates(a, limit, stream); },
            [&](const std::vector<PcrdCandidate> &list, bool undo) { impl_->apply(a, list, undo, stream); }});
    if (copy_passes) {
        result.passes.resize(size_t{blocks.num_blocks} * params.num_layers);
        check_cuda(cudaMemcpyAsync(result.passes.data(), impl_->passes.get(), result.passes.size() * sizeof(uint16_t),
                                   cudaMemcpyDeviceToHost, stream),
                   "cudaMemcpyAsync");
        check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    }
    return result;
}

void PcrdCuda::hull(const PcrdBlocks &blocks, std::vector<uint16_t> &hull_pass, std::vector<uint32_t> &hull_key,
                    std::vector<uint32_t> &hull_count, void *stream_ptr)
{
    check_device_blocks(blocks);
    cudaStream_t stream = static_cast<cudaStream_t>(stream_ptr);
    PcrdParams params;
    params.num_components = 65535;  // the hull ignores components
    impl_->reserve(blocks.num_blocks, blocks.num_passes, 1);
    const Args a = impl_->args(blocks, params, 1);
    // The arrays come back whole, and a block writes only its hull points:
    // zeros past them (initcheck flagged the copy of unwritten memory).
    check_cuda(cudaMemsetAsync(a.hull_pass, 0, size_t{blocks.num_passes} * 2, stream), "cudaMemsetAsync");
    check_cuda(cudaMemsetAsync(a.hull_key, 0, size_t{blocks.num_passes} * 4, stream), "cudaMemsetAsync");
    impl_->start(a, stream);
    DeviceState host{};
    hull_pass.resize(blocks.num_passes);
    hull_key.resize(blocks.num_passes);
    hull_count.resize(blocks.num_blocks);
    check_cuda(cudaMemcpyAsync(&host, a.state, sizeof(host), cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
    check_cuda(cudaMemcpyAsync(hull_pass.data(), a.hull_pass, hull_pass.size() * 2, cudaMemcpyDeviceToHost, stream),
               "cudaMemcpyAsync");
    check_cuda(cudaMemcpyAsync(hull_key.data(), a.hull_key, hull_key.size() * 4, cudaMemcpyDeviceToHost, stream),
               "cudaMemcpyAsync");
    check_cuda(cudaMemcpyAsync(hull_count.data(), a.hull_count, hull_count.size() * 4, cudaMemcpyDeviceToHost, stream),
               "cudaMemcpyAsync");
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    Impl::throw_error(host.error);
}

}  // namespace j2kc
