/**
 * @file encoder_cuda.cu
 * @brief The CUDA encoder: everything between upload and the finished
 * codestream stays on the GPU. Frames go up once (or are read in place from
 * CUDA memory); colour transform, DWT and quantisation (Annex G, F, E), Tier-1
 * over all code-blocks in one launch (Annex D), PCRD-opt with parallel slope
 * probes (paper 000) sized exactly by the GPU Tier-2, which then writes the
 * codestream (paper 000's cell table and prefix sum). Each stage's kernels are
 * bit-identical to its CPU reference, so the bytes equal the CPU backend's.
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "color/color.h"
#include "common/cuda_util.cuh"
#include "common/scan.h"
#include "common/status.h"
#include "dwt/dwt.h"
#include "pipeline/codestream_assembly.h"
#include "pipeline/reconstruct.h"
#include "pipeline/staged_encoder.h"
#include "quant/quant.h"
#include "rate/pcrd.h"
#include "tier1/tier1_gpu.h"
#include "tier2/tier2_gpu.h"

namespace j2kc {
namespace {

/** Per block: what Tier-2 and PCRD read, pulled out of Tier-1's results; worst status kept. */
__global__ void encoder_gather_results_kernel(const GpuCodeBlockJob *jobs, const GpuCodeBlockResult *results,
                                              uint32_t n, uint32_t *num_passes, uint8_t *zero_bitplanes,
                                              uint64_t *byte_offset, uint32_t *worst_status)
{
    const uint32_t b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b > n) return;
    if (b == n) {  // the scan's extra element, so that its output ends with the total
        num_passes[n] = 0;
        return;
    }
    const GpuCodeBlockResult r = results[b];
    num_passes[b] = r.status == kGpuTier1Ok ? r.num_passes : 0;
    zero_bitplanes[b] = r.zero_bitplanes;
    byte_offset[b] = jobs[b].out_offset + 1;  // past the MQ coder's dummy byte
    if (r.status != kGpuTier1Ok) atomicMax(worst_status, (uint32_t(r.status) << 24) | b);
}

/** Packs each block's passes from its reserved slots into the contiguous table PCRD-opt reads. */
__global__ void encoder_compact_passes_kernel(const GpuCodeBlockJob *jobs, const uint32_t *pass_offset,
                                              uint32_t n, const uint32_t *end_in, const uint64_t *dist_in,
                                              const uint8_t *term_in, uint32_t *end_out, uint64_t *dist_out,
                                              uint8_t *term_out)
{
    const uint32_t b = blockIdx.x;
    if (b >= n) return;
    const uint32_t from = jobs[b].pass_offset, to = pass_offset[b], count = pass_offset[b + 1] - to;
    for (uint32_t i = threadIdx.x; i < count; i += blockDim.x) {
        end_out[to + i] = end_in[from + i];
        dist_out[to + i] = dist_in[from + i];
        term_out[to + i] = term_in[from + i];
    }
}

class CudaEncoder final : public StagedEncoder {
public:
    CudaEncoder(const j2kc_encoder_config &config, const j2kc_image &shape, const Logger &log)
        : StagedEncoder(config, shape, log), context_(config.cuda_context), device_(config.device)
    {
        ContextScope scope(context_, device_);
        gpu_ = std::make_unique<GpuState>(config);
        plan_memory();
    }

    ~CudaEncoder() override
    {
        ContextScope scope(context_, device_);
        gpu_.reset();
    }

    j2kc_backend backend() const override { return J2KC_BACKEND_CUDA; }

private:
    /** Everything that lives in the GPU's context. */
    struct GpuState {
        explicit GpuState(const j2kc_encoder_config &c) : stream(c.cuda_stream, c.cuda_context, c.device) {}
        StreamHolder stream;
        DeviceBuffer frame, planes, indices, dwt_scratch;
        std::vector<DeviceBuffer> planes_up;
        DeviceBuffer jobs, results, arena, t1_scratch, sparse_end, sparse_dist, sparse_term;
        DeviceBuffer num_passes, zero_bitplanes, byte_offset, pass_offset, pass_end, pass_dist, pass_term;
        DeviceBuffer weight, component, status, scan_temp, out;
        PinnedBuffer host_small, host_out;
        PcrdCuda pcrd;
        Tier2Gpu tier2;
    };

    /** Sizes every buffer once for this geometry and uploads the tables that never change. */
    void plan_memory()
    {
        const uint32_t ncomp = static_cast<uint32_t>(plan_.siz.components.size());
        plane_offset_.assign(work_.size(), std::vector<size_t>(ncomp));
        size_t samples = 0, dwt_scratch = 4;
        for (size_t t = 0; t < work_.size(); ++t)
            for (uint32_t c = 0; c < ncomp; ++c) {
                const Rect &r = work_[t].layout.components[c].rect;
                plane_offset_[t][c] = samples;
                samples += r.area();
                dwt_scratch = std::max(dwt_scratch, dwt_gpu_scratch_bytes(r));
            }
        auto *indices = static_cast<int32_t *>(gpu_->indices.reserve(std::max<size_t>(samples, 1) * 4));
        if (!plan_.reversible()) gpu_->planes.reserve(std::max<size_t>(samples, 1) * 4);
        gpu_->dwt_scratch.reserve(dwt_scratch);

        // Tier-1 jobs: each code-block's indices, its share of the byte arena,
        // pass slots and scratch, all fixed by the geometry.
        std::vector<GpuCodeBlockJob> jobs;
        std::vector<double> weight;
        std::vector<uint16_t> component;
        uint64_t arena = 0, scratch = 0;
        uint32_t slots = 0;
        std::vector<const TileLayout *> layouts;
        for (size_t t = 0; t < work_.size(); ++t) {
            const TileLayout &l = work_[t].layout;
            layouts.push_back(&l);
            for (const CodeBlock &cb : l.code_blocks) {
                const BlockPlacement p = place_block(plan_, l, cb);
                const uint32_t stride = l.components[cb.component].rect.width();
                GpuCodeBlockJob j{};
                j.coeffs = reinterpret_cast<uint64_t>(indices + plane_offset_[t][cb.component] +
                                                      size_t{p.y} * stride + p.x);
                j.stride = stride;
                j.width = static_cast<uint16_t>(cb.rect.width());
                j.height = static_cast<uint16_t>(cb.rect.height());
                j.orientation = p.params.orientation;
                j.style = p.params.style;
                j.num_bitplanes = p.params.num_bitplanes;
                j.out_offset = arena;
                j.out_capacity = static_cast<uint32_t>(tier1_gpu_capacity_bound(j.width, j.height, j.num_bitplanes));
                j.pass_offset = slots;
                j.scratch = scratch;  // relative for now
                arena += j.out_capacity;
                slots += tier1_gpu_max_passes(j.num_bitplanes);
                scratch += tier1_gpu_scratch_bound(j.width, j.height);
                jobs.push_back(j);
                weight.push_back(block_weight(plan_, l, cb));
                component.push_back(cb.component);
            }
        }
        blocks_ = static_cast<uint32_t>(jobs.size());
        arena_bytes_ = arena;
        auto *t1_scratch = static_cast<uint8_t *>(gpu_->t1_scratch.reserve(std::max<uint64_t>(scratch, 16)));
        for (GpuCodeBlockJob &j : jobs) j.scratch += reinterpret_cast<uint64_t>(t1_scratch);
        const size_t n = std::max<size_t>(blocks_, 1), s = std::max<size_t>(slots, 1);
        upload(gpu_->jobs, jobs.data(), jobs.size() * sizeof(GpuCodeBlockJob));
        upload(gpu_->weight, weight.data(), weight.size() * sizeof(double));
        upload(gpu_->component, component.data(), component.size() * sizeof(uint16_t));
        gpu_->results.reserve(n * sizeof(GpuCodeBlockResult));
        gpu_->arena.reserve(std::max<uint64_t>(arena, 1));
        gpu_->sparse_end.reserve(s * 4);
        gpu_->sparse_dist.reserve(s * 8);
        gpu_->sparse_term.reserve(s);
        gpu_->pass_end.reserve(s * 4);
        gpu_->pass_dist.reserve(s * 8);
        gpu_->pass_term.reserve(s);
        gpu_->num_passes.reserve((n + 1) * 4);
        gpu_->pass_offset.reserve((n + 1) * 4);
        gpu_->zero_bitplanes.reserve(n);
        gpu_->byte_offset.reserve(n * 8);
        gpu_->status.reserve(4);
        gpu_->scan_temp.reserve(std::max<size_t>(scan_exclusive_sum_temp_bytes<uint32_t>(blocks_ + 1), 16));
        gpu_->host_small.reserve(16);

        rate_ = make_rate_setup(plan_, layouts);
        Tier2GpuConfig t2;
        t2.packets = rate_.packet_params;
        t2.plt = plan_.plt;
        t2.main_header = main_header_bytes(plan_, rate_.tile_parts);
        t2.tile_part_packets = rate_.tile_part_packets;
        t2.component_sizes = !rate_.params.component_budgets.empty();
        gpu_->tier2.prepare(t2, layouts, gpu_->stream.get());
        gpu_->pcrd.reserve(blocks_, slots, plan_.cod.layers);

        // Code-block bytes, every packet header at a generous bound, and the markers.
        uint64_t packets = 0;
        for (const auto &tile : rate_.tile_part_packets)
            for (uint32_t k : tile) packets += k;
        out_capacity_ = rate_.fixed_bytes + arena + 16ull * blocks_ + 24ull * packets + 64;
        if (plan_.frame_bytes) out_capacity_ = std::min<uint64_t>(out_capacity_, plan_.frame_bytes + 64);
        gpu_->out.reserve(out_capacity_);
        gpu_->host_out.reserve(out_capacity_);
    }

    void upload(DeviceBuffer &buffer, const void *data, size_t bytes)
    {
        void *dev = buffer.reserve(std::max<size_t>(bytes, 1));
        if (bytes) check_cuda(cudaMemcpy(dev, data, bytes, cudaMemcpyHostToDevice), "table upload");
    }

    std::vector<uint8_t> encode_frame(const j2kc_image &image) override
    {
        ContextScope scope(context_, device_);
        cudaStream_t s = gpu_->stream.get();
        auto t0 = Clock::now();
        const j2kc_component *components = upload_frame(image);
        for (size_t t = 0; t < work_.size(); ++t) transform_tile(components, image.num_components, t);
        if (timing()) { gpu_->stream.sync(); times_.dwt = ms_since(t0); t0 = Clock::now(); }

        tier1_encode_gpu(gpu_->jobs.as<GpuCodeBlockJob>(), blocks_, gpu_->arena.as<uint8_t>(),
                         gpu_->results.as<GpuCodeBlockResult>(), gpu_->sparse_end.as<uint32_t>(),
                         gpu_->sparse_dist.as<uint64_t>(), gpu_->sparse_term.as<uint8_t>(), s);
        const uint32_t total_passes = gather_passes(s);
        if (timing()) { times_.tier1 = ms_since(t0); t0 = Clock::now(); }

        PcrdBlocks blocks;
        blocks.num_blocks = blocks_;
        blocks.num_passes = total_passes;
        blocks.pass_offset = gpu_->pass_offset.as<uint32_t>();
        blocks.pass_end = gpu_->pass_end.as<uint32_t>();
        blocks.pass_distortion = gpu_->pass_dist.as<uint64_t>();
        blocks.weight = gpu_->weight.as<double>();
        blocks.component = gpu_->component.as<uint16_t>();
        GpuBlocks t2;
        t2.bytes = gpu_->arena.as<uint8_t>();
        t2.byte_offset = gpu_->byte_offset.as<uint64_t>();
        t2.pass_offset = gpu_->pass_offset.as<uint32_t>();
        t2.pass_end = gpu_->pass_end.as<uint32_t>();
        t2.pass_terminated = gpu_->pass_term.as<uint8_t>();
        t2.num_passes = gpu_->num_passes.as<uint32_t>();
        t2.zero_bitplanes = gpu_->zero_bitplanes.as<uint8_t>();
        t2.num_blocks = blocks_;
        gpu_->pcrd.select(
            blocks, rate_.params,
            [&](const uint16_t *d_passes) { return gpu_->tier2.measure(d_passes, t2, s); }, s,
            /*copy_passes=*/false);
        if (timing()) { times_.rate = ms_since(t0); t0 = Clock::now(); }

        const size_t size = gpu_->tier2.write(gpu_->pcrd.device_passes(), t2, gpu_->out.as<uint8_t>(), out_capacity_,
                                              gpu_->host_out.as<uint8_t>(), out_capacity_, s);
        if (timing()) times_.tier2 = ms_since(t0);
        const uint8_t *host = gpu_->host_out.as<uint8_t>();
        return std::vector<uint8_t>(host, host + size);
    }

    /** Device view of the frame: host planes go up as whole byte spans. */
    const j2kc_component *upload_frame(const j2kc_image &image)
    {
        device_components_.assign(image.components, image.components + image.num_components);
        if (image.memory == J2KC_MEMORY_CUDA) return device_components_.data();
        cudaStream_t s = gpu_->stream.get();
        uint64_t begin = UINT64_MAX, end = 0, separate = 0;
        for (uint32_t c = 0; c < image.num_components; ++c) {
            begin = std::min(begin, image.components[c].data);
            end = std::max(end, image.components[c].data + component_span(image.components[c]));
            separate += component_span(image.components[c]);
        }
        // One span when the planes sit together (FFmpeg's buffers), else one per component.
        if (end - begin <= 2 * separate) {
            auto *dev = static_cast<uint8_t *>(gpu_->frame.reserve(end - begin));
            check_cuda(cudaMemcpyAsync(dev, reinterpret_cast<const void *>(begin), end - begin,
                                       cudaMemcpyHostToDevice, s),
                       "frame upload");
            for (uint32_t c = 0; c < image.num_components; ++c)
                device_components_[c].data = reinterpret_cast<uint64_t>(dev) + (image.components[c].data - begin);
        } else {
            if (gpu_->planes_up.size() < image.num_components) gpu_->planes_up.resize(image.num_components);
            for (uint32_t c = 0; c < image.num_components; ++c) {
                const uint64_t bytes = component_span(image.components[c]);
                void *dev = gpu_->planes_up[c].reserve(std::max<uint64_t>(bytes, 1));
                check_cuda(cudaMemcpyAsync(dev, reinterpret_cast<const void *>(image.components[c].data), bytes,
                                           cudaMemcpyHostToDevice, s),
                           "frame upload");
                device_components_[c].data = reinterpret_cast<uint64_t>(dev);
            }
        }
        // The caller may reuse its frame once submit returns.
        gpu_->stream.sync();
        return device_components_.data();
    }

    void transform_tile(const j2kc_component *components, uint32_t n, size_t t)
    {
        const TileLayout &layout = work_[t].layout;
        std::vector<j2kc_component> views(n);
        std::vector<size_t> strides(n);
        for (uint32_t c = 0; c < n; ++c) {
            views[c] = tile_view(components[c], layout.components[c].rect, 0, 0);
            strides[c] = layout.components[c].rect.width();
        }
        int32_t *indices = gpu_->indices.as<int32_t>();
        void *scratch = gpu_->dwt_scratch.as<void>();
        cudaStream_t s = gpu_->stream.get();
        const bool mct = plan_.cod.mct != 0;
        if (plan_.reversible()) {
            std::vector<int32_t *> p(n);
            for (uint32_t c = 0; c < n; ++c) p[c] = indices + plane_offset_[t][c];
            color_forward_gpu(views.data(), n, mct, p.data(), strides.data(), s);
            for (uint32_t c = 0; c < n; ++c)
                dwt53_forward_gpu(p[c], strides[c], layout.components[c].rect, plan_.levels(), scratch, s);
            return;
        }
        float *planes = gpu_->planes.as<float>();
        std::vector<float *> p(n);
        for (uint32_t c = 0; c < n; ++c) p[c] = planes + plane_offset_[t][c];
        color_forward_gpu(views.data(), n, mct, p.data(), strides.data(), s);
        for (uint32_t c = 0; c < n; ++c) {
            const Rect &rect = layout.components[c].rect;
            dwt97_forward_gpu(p[c], strides[c], rect, plan_.levels(), scratch, s);
            const QuantizeParams q = make_quantize_params(plan_.quant[c], Wavelet::kIrreversible97,
                                                          plan_.siz.components[c].precision, rect, plan_.levels());
            quantize_gpu(p[c], strides[c], indices + plane_offset_[t][c], strides[c], q, s);
        }
    }

    /** Tier-1 results to the tables PCRD-opt and Tier-2 read; returns the number of passes. */
    uint32_t gather_passes(cudaStream_t s)
    {
        auto *status = gpu_->status.as<uint32_t>();
        check_cuda(cudaMemsetAsync(status, 0, 4, s), "status reset");
        const uint32_t threads = 256, grid = (blocks_ + 1 + threads - 1) / threads;
        encoder_gather_results_kernel<<<grid, threads, 0, s>>>(
            gpu_->jobs.as<GpuCodeBlockJob>(), gpu_->results.as<GpuCodeBlockResult>(), blocks_,
            gpu_->num_passes.as<uint32_t>(), gpu_->zero_bitplanes.as<uint8_t>(), gpu_->byte_offset.as<uint64_t>(),
            status);
        check_cuda(cudaGetLastError(), "gather kernel");
        scan_exclusive_sum(gpu_->num_passes.as<uint32_t>(), gpu_->pass_offset.as<uint32_t>(), blocks_ + 1,
                           gpu_->scan_temp.as<void>(), gpu_->scan_temp.size(), s);
        auto *small = gpu_->host_small.as<uint32_t>();
        check_cuda(cudaMemcpyAsync(small, gpu_->pass_offset.as<uint32_t>() + blocks_, 4, cudaMemcpyDeviceToHost, s),
                   "pass count download");
        check_cuda(cudaMemcpyAsync(small + 1, status, 4, cudaMemcpyDeviceToHost, s), "status download");
        if (blocks_) {
            encoder_compact_passes_kernel<<<blocks_, 32, 0, s>>>(
                gpu_->jobs.as<GpuCodeBlockJob>(), gpu_->pass_offset.as<uint32_t>(), blocks_,
                gpu_->sparse_end.as<uint32_t>(), gpu_->sparse_dist.as<uint64_t>(), gpu_->sparse_term.as<uint8_t>(),
                gpu_->pass_end.as<uint32_t>(), gpu_->pass_dist.as<uint64_t>(), gpu_->pass_term.as<uint8_t>());
            check_cuda(cudaGetLastError(), "compact kernel");
        }
        gpu_->stream.sync();
        if (small[1] != 0)
            fail(J2KC_ERR_INTERNAL, "GPU Tier-1 rejected code-block %u (status %u)", small[1] & 0xFFFFFF,
                 small[1] >> 24);
        return small[0];
    }

    void *context_;
    int device_;
    std::unique_ptr<GpuState> gpu_;
    std::vector<std::vector<size_t>> plane_offset_;  ///< [tile][component] into the index planes
    std::vector<j2kc_component> device_components_;
    RateSetup rate_;
    uint32_t blocks_ = 0;
    uint64_t arena_bytes_ = 0;
    uint64_t out_capacity_ = 0;
};

}  // namespace

std::unique_ptr<Encoder> create_cuda_encoder(const j2kc_encoder_config &config, const j2kc_image &shape,
                                             const Logger &log)
{
    return std::make_unique<CudaEncoder>(config, shape, log);
}

}  // namespace j2kc
