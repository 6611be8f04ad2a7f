/**
 * @file encoder_cuda.cu
 * @brief The CUDA encoder: everything between upload and the finished
 * codestream stays on the GPU. Frames go up once (or are read in place from
 * CUDA memory); colour transform, DWT and quantisation (Annex G, F, E),
 * Tier-1 over all code-blocks in one launch (Annex D), PCRD-opt with parallel
 * slope probes sized exactly by the GPU Tier-2, which then writes the
 * codestream (cell table and prefix sum), both after Bruns et al.,
 * "Evaluation of GPU/CPU Co-Processing Models for JPEG 2000 Packetization".
 * Each stage's kernels are bit-identical to its CPU reference, so the bytes
 * equal the CPU backend's.
 *
 * Several frames are in flight. Each slot owns every buffer one frame needs
 * (all sized at creation, so steady-state frames allocate nothing) and two
 * streams. The bulk stream (lowest priority) carries DWT, quantisation and
 * Tier-1, the kernels that fill the GPU. The urgent stream (highest priority)
 * carries what is short and waited for: the upload and colour transform (the
 * only reads of the caller's frame) and the host-driven back half (PCRD-opt
 * rounds and Tier-2, which read small sums back between launches), so that
 * their blocks are scheduled as soon as another frame's Tier-1 blocks retire
 * rather than after its whole grid. submit() copies a host frame into the
 * slot's pinned staging (on the thread pool), queues the kernels up to
 * Tier-1 and returns; a worker thread takes the slots in submit order and
 * runs the back half, so the rate control of frame N overlaps the transforms
 * and Tier-1 of frame N+1 on the GPU and the staging copy of frame N+2 on the
 * host. receive() hands out the slots' codestreams in submit order.
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "color/color.h"
#include "common/cuda_util.cuh"
#include "common/scan.h"
#include "common/status.h"
#include "dwt/dwt.h"
#include "pipeline/analysis.h"
#include "pipeline/codestream_assembly.h"
#include "pipeline/frame_queue.h"
#include "pipeline/reconstruct.h"
#include "pipeline/staged_encoder.h"
#include "quant/quant.h"
#include "quant/step_fit_core.h"
#include "rate/pcrd.h"
#include "tier1/ht_block_encoder.h"
#include "tier1/tier1_cuda.h"
#include "tier2/tier2_cuda.h"

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

/** Threads a code-block in the step fit's sums. */
constexpr uint32_t kStepFitThreads = 128;

/**
 * A CTA per code-block: its step-fit sums (quant/step_fit_core.h) at the
 * truncation PCRD-opt selected, added to its band's. Integer sums, so the
 * order of the atomics changes nothing and the sums equal the CPU's.
 */
__global__ void encoder_step_fit_kernel(const GpuCodeBlockJob *jobs, const uint16_t *passes, uint32_t layers,
                                        const uint8_t *zero_bitplanes, const uint32_t *band_slot, int count_log2,
                                        unsigned long long *sums)
{
    const uint32_t b = blockIdx.x;
    const GpuCodeBlockJob j = jobs[b];
    const int cut = step_fit_cut_plane(j.num_bitplanes, zero_bitplanes[b], passes[size_t{b} * layers + layers - 1]);
    if (cut < 0) return;  // the same for every thread of the CTA
    const int shift = step_fit_shift(j.num_bitplanes, count_log2);
    const auto *coeffs = reinterpret_cast<const int32_t *>(static_cast<uintptr_t>(j.coeffs));
    uint64_t xy = 0, yy = 0;
    const uint32_t n = uint32_t{j.width} * j.height;
    for (uint32_t i = threadIdx.x; i < n; i += kStepFitThreads) {
        const uint32_t y = i / j.width, x = i - y * j.width;
        step_fit_add(coeffs[size_t{y} * j.stride + x], cut, shift, xy, yy);
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        xy += __shfl_down_sync(0xFFFFFFFFu, xy, offset);
        yy += __shfl_down_sync(0xFFFFFFFFu, yy, offset);
    }
    if (threadIdx.x % 32 == 0 && yy) {
        atomicAdd(&sums[2 * band_slot[b]], static_cast<unsigned long long>(xy));
        atomicAdd(&sums[2 * band_slot[b] + 1], static_cast<unsigned long long>(yy));
    }
}

/** Warps per CTA of the compaction (a warp per code-block: up to 3 * 30 - 2 passes each). */
constexpr uint32_t kCompactWarps = 8;

/** Packs each block's passes from its reserved slots into the contiguous table PCRD-opt reads. */
__global__ void encoder_compact_passes_kernel(const GpuCodeBlockJob *jobs, const uint32_t *pass_offset, uint32_t n,
                                              const uint32_t *end_in, const uint64_t *dist_in, const uint8_t *term_in,
                                              uint32_t *end_out, uint64_t *dist_out, uint8_t *term_out)
{
    const uint32_t b = blockIdx.x * kCompactWarps + threadIdx.x / 32;
    if (b >= n) return;
    const uint32_t from = jobs[b].pass_offset, to = pass_offset[b], count = pass_offset[b + 1] - to;
    for (uint32_t i = threadIdx.x % 32; i < count; i += 32) {
        end_out[to + i] = end_in[from + i];
        dist_out[to + i] = dist_in[from + i];
        term_out[to + i] = term_in[from + i];
    }
}

/**
 * Default number of frames in flight: one uploading and transforming,
 * several in Tier-1, one or two in rate control, whose rounds are latency
 * more than work. Tier-1's modelling phase fills the SMs while its coding
 * phase and the back half wait on latency, so frames in flight keep both
 * busy: at 4K ten, since the finer steps of a byte budget lengthened Tier-1
 * (six did while it was shorter). A 2K frame's stages are as long but fill
 * less of the GPU, so more of them overlap, once enough back halves run at
 * once (docs/measurements.md).
 */
constexpr unsigned kDefaultSlots = 10;
/** ... and for frames of at most kSmallFrameSamples samples (DCI 2K: 6.6 M). */
constexpr unsigned kDefaultSlotsSmallFrames = 16;
constexpr size_t kSmallFrameSamples = size_t{2048} * 1080 * 3;
/** Worker threads for the host-driven back half (PCRD-opt rounds, Tier-2),
 *  which wait on their frames' rounds most of the time (see above), spinning:
 *  more of them pay only while the GPU has room for more frames (4 help with
 *  the slots above at DCI 4K and 2K; docs/measurements.md). */
constexpr size_t kBackHalfWorkers = 4;
/** ... and for HT coding sets, whose back half (a search and several exact
 *  Tier-2 measures a frame, each read back) is a train of host round trips:
 *  more back halves at once keep the GPU busy; with six, the sets' Tier-1
 *  kernel bounds the throughput, not the workers (docs/measurements.md). */
constexpr size_t kBackHalfWorkersHtSets = 6;
constexpr unsigned kMaxSlots = 16;
/** Pieces of the host staging copy handed to the thread pool. */
constexpr size_t kCopyChunk = size_t{4} << 20;

/** Stage boundaries on a slot's streams, for J2KC_TIMING (events, so timing adds no synchronisation). */
enum StageMark { kMarkStart, kMarkUploaded, kMarkDwt, kMarkTier1, kNumMarks };

class CudaEncoder final : public StagedEncoder {
public:
    CudaEncoder(const j2kc_encoder_config &config, const j2kc_image &shape, const Logger &log, double step_phase)
        : StagedEncoder(config, shape, log, step_phase), context_(config.cuda_context), device_(config.device),
          lent_stream_(static_cast<cudaStream_t>(config.cuda_stream))
    {
        J2KC_CHECK_ARG(config.frames_in_flight >= 0 && config.frames_in_flight <= int(kMaxSlots),
                       "frames_in_flight %d is outside 0..%u", config.frames_in_flight, kMaxSlots);
        ContextScope scope(context_, device_);
        try {
            gpu_ = std::make_unique<GpuState>();
            plan_tables(shape);
            const unsigned fallback = small_frames() ? kDefaultSlotsSmallFrames : kDefaultSlots;
            make_slots(config.frames_in_flight > 0 ? unsigned(config.frames_in_flight) : fallback);
            queue_.emplace(slots().size());
        } catch (...) {
            gpu_.reset();  // inside the scope: the buffers belong to this context
            throw;
        }
        // Rate control is host round trips more than GPU work: several frames'
        // back halves may run at once (each slot has its own objects and streams).
        const size_t want = plan_.ht_coding_sets() ? kBackHalfWorkersHtSets : kBackHalfWorkers;
        const size_t workers = std::min<size_t>(want, slots().size());
        for (size_t w = 0; w < workers; ++w) workers_.emplace_back([this] { worker_loop(); });
    }

    ~CudaEncoder() override
    {
        queue_->stop();
        for (std::thread &w : workers_) w.join();  // they finish the frames already queued
        try {
            ContextScope scope(context_, device_);
            gpu_.reset();
        } catch (...) {
            gpu_.reset();  // the context is gone: free what can be freed, never throw from here
        }
    }

    j2kc_backend backend() const override { return J2KC_BACKEND_CUDA; }

    bool submit(const j2kc_image &image, int64_t tag) override
    {
        check_frame(plan_, image);
        const auto start = Clock::now();
        const std::optional<size_t> entry = queue_->reserve();
        if (!entry) return false;
        Slot *slot = slots()[*entry].get();
        // The slot is free: neither the worker nor receive() touches it until it is queued below.
        ContextScope scope(context_, device_);
        try {
            enqueue_front(*slot, image);
        } catch (...) {
            // Whatever was queued must be over before the slot's buffers are filled again.
            cudaStreamSynchronize(slot->urgent.get());
            cudaStreamSynchronize(slot->bulk.get());
            throw;
        }
        slot->tag = tag;
        slot->submitted = start;
        slot->status = J2KC_OK;
        queue_->publish(*entry);
        return true;
    }

    bool receive(std::vector<uint8_t> &codestream, int64_t &tag, bool flush) override
    {
        const std::optional<size_t> entry = queue_->oldest(/*wait=*/flush);
        if (!entry) return false;
        Slot *slot = slots()[*entry].get();
        // Done: the worker has left the slot; copy out before it can be reused.
        const j2kc_status status = slot->status;
        const std::string message = status == J2KC_OK ? std::string() : slot->message;
        if (status == J2KC_OK) {
            const uint8_t *host = slot->host_out.as<uint8_t>();
            codestream.assign(host, host + slot->size);  // the caller's vector keeps its capacity
            tag = slot->tag;
            times_ = slot->times;
        }
        queue_->release();
        if (status != J2KC_OK) throw Error(status, message.c_str());
        if (timing()) log_stage_times(log_, times_);
        return true;
    }

private:
    /** Everything one frame in flight needs, on the device and in pinned host memory. */
    struct Slot {
        // Streams and events are destroyed in the context that made them: see ~CudaEncoder.
        CudaStream urgent, bulk;    ///< high priority: upload, colour, rate control, Tier-2; low: DWT to Tier-1
        CudaEvent ready, consumed;  ///< frame produced (caller's stream); frame read (urgent stream)
        CudaEvent marks[kNumMarks];
        DeviceBuffer frame, planes, indices, dwt_scratch;
        DeviceBuffer jobs, results, arena, t1_scratch, sparse_end, sparse_dist, sparse_term;
        DeviceBuffer num_passes, zero_bitplanes, byte_offset, pass_offset, pass_end, pass_dist, pass_term;
        DeviceBuffer status_word, scan_temp, out;
        /** The frame's plane cost model under a budget (HT sets' planes, Part 1's lowest plane). */
        DeviceBuffer plane_model;
        /** HT coding sets (EncoderPlan::ht_coding_sets): each block's sets, and the tables Tier-2
         *  reads of the chosen ones (ht_choose_sets_gpu). */
        DeviceBuffer ht_top_plane, ht_sets, set_passes, set_byte_offset, set_pass_offset, set_pass_end, set_pass_term,
            set_num_passes, set_zero_bitplanes;
        HtChosenSetTables chosen{};
        PinnedBuffer staging, host_small, host_out;
        /** The step fit's sums (EncoderPlan::fitted_steps), and their copy on the host. */
        DeviceBuffer step_fit_sums;
        PinnedBuffer host_step_fit_sums;
        PcrdCuda pcrd;
        Tier2Gpu tier2;
        PcrdBlocks pcrd_blocks;  ///< device pointers fixed at creation; num_passes set per frame
        GpuBlocks t2_blocks;
        // Host scratch reused by every frame (sized at creation).
        std::vector<j2kc_component> device_components, views;
        std::vector<void *> tile_planes;  ///< [tile * components + c]: colour output, float or int32
        struct Copy {
            const uint8_t *src;
            uint8_t *dst;
            size_t bytes;
        };
        std::vector<Copy> copies;
        std::vector<std::pair<uint64_t, uint64_t>> spans;  ///< the frame's byte ranges, merged
        // The frame in the slot: written by submit (reserved), then by a worker (running).
        int64_t tag = 0;
        Clock::time_point submitted;
        double staging_ms = 0;
        size_t size = 0;
        j2kc_status status = J2KC_OK;
        std::string message;
        j2kc_stage_times times{};
    };

    /** GPU-side state (destroyed inside a context scope). */
    struct GpuState {
        DeviceBuffer weight, component;  ///< read-only tables shared by the slots
        DeviceBuffer band_slot;          ///< per block: its step_fit_slot (fitted steps)
        std::vector<std::unique_ptr<Slot>> slots;
    };

    /** Per tile: what its transform launches need, computed once. */
    struct TilePlan {
        std::vector<Rect> rects;
        std::vector<size_t> strides;
        std::vector<size_t> offsets;        ///< into the slot's planes / indices
        std::vector<QuantizeParams> quant;  ///< irreversible only
    };

    std::vector<std::unique_ptr<Slot>> &slots() { return gpu_->slots; }

    /** Host-side tables fixed by the geometry: tile plans, Tier-1 job template, rate setup. */
    void plan_tables(const j2kc_image &shape)
    {
        const uint32_t ncomp = static_cast<uint32_t>(plan_.siz.components.size());
        size_t samples = 0;
        dwt_scratch_bytes_ = 4;
        tiles_.resize(work_.size());
        for (size_t t = 0; t < work_.size(); ++t) {
            TilePlan &tp = tiles_[t];
            for (uint32_t c = 0; c < ncomp; ++c) {
                const Rect &r = work_[t].layout.components[c].rect;
                tp.rects.push_back(r);
                tp.strides.push_back(r.width());
                tp.offsets.push_back(samples);
                samples += r.area();
                dwt_scratch_bytes_ = std::max(
                    dwt_scratch_bytes_, plan_.reversible() ? dwt_gpu_scratch_bytes(r) : analysis_gpu_scratch_bytes(r));
                if (!plan_.reversible())
                    tp.quant.push_back(make_quantize_params(plan_.quant[c], Wavelet::kIrreversible97,
                                                            plan_.siz.components[c].precision, r, plan_.levels()));
            }
        }
        samples_ = std::max<size_t>(samples, 1);

        // Tier-1 jobs with offsets relative to a slot's index planes and scratch.
        std::vector<double> weight;
        std::vector<uint16_t> component;
        std::vector<uint32_t> band_slot;
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
                j.coeffs = (tiles_[t].offsets[cb.component] + size_t{p.y} * stride + p.x) * sizeof(int32_t);
                j.stride = stride;
                j.width = static_cast<uint16_t>(cb.rect.width());
                j.height = static_cast<uint16_t>(cb.rect.height());
                j.orientation = p.params.orientation;
                j.style = p.params.style;
                j.num_bitplanes = p.params.num_bitplanes;
                j.out_offset = arena;
                j.out_capacity = static_cast<uint32_t>(
                    plan_.ht ? ht_gpu_capacity_bound(j.width, j.height, j.num_bitplanes, plan_.ht_coding_sets())
                             : tier1_gpu_capacity_bound(j.width, j.height, j.num_bitplanes));
                j.pass_offset = slots;
                j.scratch = scratch;
                arena += j.out_capacity;
                slots += plan_.ht ? ht_gpu_max_passes(plan_.ht_coding_sets()) : tier1_gpu_max_passes(j.num_bitplanes);
                scratch += plan_.ht ? ht_gpu_scratch_bound(j.width, j.height)
                                    : tier1_gpu_scratch_bound(j.width, j.height, j.num_bitplanes);
                jobs_.push_back(j);
                weight.push_back(block_weight(plan_, l, cb));
                component.push_back(cb.component);
                band_slot.push_back(
                    step_fit_slot(plan_, cb.component,
                                  l.components[cb.component].resolutions[cb.resolution].bands[cb.band].quant_index));
            }
        }
        blocks_ = static_cast<uint32_t>(jobs_.size());
        arena_bytes_ = std::max<uint64_t>(arena, 1);
        t1_scratch_bytes_ = std::max<uint64_t>(scratch, 16);
        pass_slots_ = std::max<uint32_t>(slots, 1);
        upload(gpu_->weight, weight.data(), weight.size() * sizeof(double));
        upload(gpu_->component, component.data(), component.size() * sizeof(uint16_t));
        if (plan_.fitted_steps()) upload(gpu_->band_slot, band_slot.data(), band_slot.size() * sizeof(uint32_t));

        rate_ = make_rate_setup(plan_, layouts);
        t2_config_.packets = rate_.packet_params;
        t2_config_.plt = plan_.plt;
        t2_config_.main_header = main_header_bytes(plan_, rate_.tile_parts);
        t2_config_.tile_part_packets = rate_.tile_part_packets;
        t2_config_.component_sizes = !rate_.params.component_budgets.empty();
        layouts_ = layouts;

        // Code-block bytes, every packet header at a generous bound, and the markers.
        uint64_t packets = 0;
        for (const auto &tile : rate_.tile_part_packets)
            for (uint32_t k : tile) packets += k;
        out_capacity_ = rate_.fixed_bytes + arena + 16ull * blocks_ + 24ull * packets + 64;
        if (plan_.frame_bytes) out_capacity_ = std::min<uint64_t>(out_capacity_, plan_.frame_bytes + 64);

        // Host frames are staged through pinned memory: reserve what a frame of
        // this shape with padded rows (FFmpeg aligns linesizes) needs, so that
        // the first frame allocates nothing either.
        if (shape.memory == J2KC_MEMORY_HOST)
            for (uint32_t c = 0; c < shape.num_components; ++c) {
                const j2kc_component &k = shape.components[c];
                staging_hint_ += uint64_t(k.height) * (uint64_t(k.width) * k.bytes_per_sample + 64) + 256;
            }
    }

    void upload(DeviceBuffer &buffer, const void *data, size_t bytes)
    {
        void *dev = buffer.reserve(std::max<size_t>(bytes, 1));
        if (bytes) check_cuda(cudaMemcpy(dev, data, bytes, cudaMemcpyHostToDevice), "table upload");
    }

    /** Builds `want` slots, fewer when device memory would run short (at least one). */
    void make_slots(unsigned want)
    {
        size_t free_before = 0, free_after = 0, total = 0;
        check_cuda(cudaMemGetInfo(&free_before, &total), "cudaMemGetInfo");
        slots().push_back(make_slot());
        check_cuda(cudaMemGetInfo(&free_after, &total), "cudaMemGetInfo");
        const size_t per_slot = free_before > free_after ? free_before - free_after : 0;
        const size_t headroom = std::max<size_t>(total / 32, size_t{256} << 20);
        while (slots().size() < want) {
            check_cuda(cudaMemGetInfo(&free_after, &total), "cudaMemGetInfo");
            if (free_after < per_slot + per_slot / 8 + headroom) break;
            slots().push_back(make_slot());
        }
        if (slots().size() < want)
            log_.log(J2KC_LOG_VERBOSE, "device memory holds %zu of %u frames in flight (%zu MiB each)", slots().size(),
                     want, per_slot >> 20);
    }

    std::unique_ptr<Slot> make_slot()
    {
        auto s = std::make_unique<Slot>();
        int least = 0, greatest = 0;
        check_cuda(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
        s->urgent.create(cudaStreamNonBlocking, greatest);
        s->bulk.create(cudaStreamNonBlocking, least);
        s->ready.create(cudaEventDisableTiming);
        s->consumed.create(timing() ? cudaEventDefault : cudaEventDisableTiming);
        if (timing())
            for (CudaEvent &e : s->marks) e.create(cudaEventDefault);

        auto *indices = static_cast<int32_t *>(s->indices.reserve(samples_ * 4));
        if (!plan_.reversible()) s->planes.reserve(samples_ * 4);
        s->dwt_scratch.reserve(dwt_scratch_bytes_);
        auto *t1_scratch = static_cast<uint8_t *>(s->t1_scratch.reserve(t1_scratch_bytes_));
        std::vector<GpuCodeBlockJob> jobs = jobs_;
        for (GpuCodeBlockJob &j : jobs) {
            j.coeffs += reinterpret_cast<uint64_t>(indices);
            j.scratch += reinterpret_cast<uint64_t>(t1_scratch);
        }
        upload(s->jobs, jobs.data(), jobs.size() * sizeof(GpuCodeBlockJob));
        const size_t n = std::max<size_t>(blocks_, 1), p = pass_slots_;
        s->results.reserve(n * sizeof(GpuCodeBlockResult));
        s->arena.reserve(arena_bytes_);
        s->sparse_end.reserve(p * 4);
        s->sparse_dist.reserve(p * 8);
        s->sparse_term.reserve(p);
        s->pass_end.reserve(p * 4);
        s->pass_dist.reserve(p * 8);
        s->pass_term.reserve(p);
        s->num_passes.reserve((n + 1) * 4);
        s->pass_offset.reserve((n + 1) * 4);
        s->zero_bitplanes.reserve(n);
        s->byte_offset.reserve(n * 8);
        s->status_word.reserve(4);
        s->scan_temp.reserve(std::max<size_t>(scan_exclusive_sum_temp_bytes<uint32_t>(blocks_ + 1), 16));
        s->host_small.reserve(16);
        s->out.reserve(out_capacity_);
        s->host_out.reserve(out_capacity_);
        if (staging_hint_) {
            s->staging.reserve(staging_hint_);
            s->frame.reserve(staging_hint_);
        }
        s->tier2.prepare(t2_config_, layouts_, s->bulk.get());
        s->pcrd.reserve(blocks_, pass_slots_, plan_.cod.layers);

        s->pcrd_blocks.num_blocks = blocks_;
        s->pcrd_blocks.pass_offset = s->pass_offset.as<uint32_t>();
        s->pcrd_blocks.pass_end = s->pass_end.as<uint32_t>();
        s->pcrd_blocks.pass_distortion = s->pass_dist.as<uint64_t>();
        s->pcrd_blocks.weight = gpu_->weight.as<double>();
        s->pcrd_blocks.component = gpu_->component.as<uint16_t>();
        s->t2_blocks.bytes = s->arena.as<uint8_t>();
        s->t2_blocks.byte_offset = s->byte_offset.as<uint64_t>();
        s->t2_blocks.pass_offset = s->pass_offset.as<uint32_t>();
        s->t2_blocks.pass_end = s->pass_end.as<uint32_t>();
        s->t2_blocks.pass_terminated = s->pass_term.as<uint8_t>();
        s->t2_blocks.num_passes = s->num_passes.as<uint32_t>();
        s->t2_blocks.zero_bitplanes = s->zero_bitplanes.as<uint8_t>();
        s->t2_blocks.num_blocks = blocks_;
        if (plan_.ht_coding_sets()) reserve_ht_sets(*s, n);
        if (plan_.lowest_plane_from_budget()) s->plane_model.reserve(htenc::kHtPlaneBins * sizeof(uint64_t));
        if (plan_.fitted_steps()) {
            s->step_fit_sums.reserve(step_fit_sums_bytes());
            s->host_step_fit_sums.reserve(step_fit_sums_bytes());
        }

        const uint32_t ncomp = static_cast<uint32_t>(plan_.siz.components.size());
        s->device_components.resize(ncomp);
        s->views.resize(ncomp);
        s->tile_planes.resize(tiles_.size() * ncomp);
        for (size_t t = 0; t < tiles_.size(); ++t)
            for (uint32_t c = 0; c < ncomp; ++c)
                s->tile_planes[t * ncomp + c] = plan_.reversible()
                                                    ? static_cast<void *>(indices + tiles_[t].offsets[c])
                                                    : static_cast<void *>(s->planes.as<float>() + tiles_[t].offsets[c]);
        s->copies.reserve(64);
        s->spans.reserve(ncomp);
        return s;
    }

    void mark(const Slot &s, StageMark m, cudaStream_t stream) const
    {
        if (timing()) s.marks[m].record(stream);
    }

    /**
     * Caller's thread: the frame into the slot and every launch up to Tier-1
     * and the pass tables queued. Returns once the caller may reuse the frame.
     */
    void enqueue_front(Slot &s, const j2kc_image &image)
    {
        const uint32_t n = image.num_components;
        cudaStream_t in = s.urgent.get(), mn = s.bulk.get();
        const bool device_frame = image.memory == J2KC_MEMORY_CUDA;
        s.staging_ms = 0;
        if (device_frame) {
            // Read after whatever the caller queued to produce the frame.
            s.ready.record(lent_stream_ ? lent_stream_ : cudaStreamLegacy);
            check_cuda(cudaStreamWaitEvent(in, s.ready.get(), 0), "cudaStreamWaitEvent");
            mark(s, kMarkStart, in);
            std::copy(image.components, image.components + n, s.device_components.begin());
        } else {
            stage_host_frame(s, image);  // records kMarkStart before its upload
        }
        mark(s, kMarkUploaded, in);

        // Colour transform, the last read of the caller's frame, on the urgent stream.
        const bool mct = plan_.cod.mct != 0;
        for (size_t t = 0; t < tiles_.size(); ++t) {
            const TilePlan &tp = tiles_[t];
            for (uint32_t c = 0; c < n; ++c) s.views[c] = tile_view(s.device_components[c], tp.rects[c], 0, 0);
            void *const *planes = s.tile_planes.data() + t * n;
            if (plan_.reversible())
                color_forward_gpu(s.views.data(), n, mct, reinterpret_cast<int32_t *const *>(planes), tp.strides.data(),
                                  in);
            else
                color_forward_gpu(s.views.data(), n, mct, reinterpret_cast<float *const *>(planes), tp.strides.data(),
                                  in);
        }
        s.consumed.record(in);
        check_cuda(cudaStreamWaitEvent(mn, s.consumed.get(), 0), "cudaStreamWaitEvent");

        // DWT of every tile-component, the 9/7's quantised in its stores
        // (so the quantisation's time is the DWT's).
        int32_t *indices = s.indices.as<int32_t>();
        void *scratch = s.dwt_scratch.as<void>();
        for (size_t t = 0; t < tiles_.size(); ++t) {
            const TilePlan &tp = tiles_[t];
            for (uint32_t c = 0; c < n; ++c) {
                if (plan_.reversible())
                    dwt53_forward_gpu(indices + tp.offsets[c], tp.strides[c], tp.rects[c], plan_.levels(), scratch, mn);
                else
                    analyse_component_gpu(s.planes.as<float>() + tp.offsets[c], tp.strides[c], indices + tp.offsets[c],
                                          tp.strides[c], tp.rects[c], plan_.levels(), tp.quant[c], scratch, mn);
            }
        }
        mark(s, kMarkDwt, mn);

        if (plan_.lowest_plane_from_budget())
            tier1_plan_planes_gpu(s.jobs.as<GpuCodeBlockJob>(), blocks_, plan_.budget_bytes(),
                                  s.plane_model.as<uint64_t>(), mn);
        if (plan_.ht_coding_sets())
            ht_plan_sets_gpu(s.jobs.as<GpuCodeBlockJob>(), blocks_, plan_.budget_bytes(), s.plane_model.as<uint64_t>(),
                             s.ht_top_plane.as<uint32_t>(), mn);
        if (plan_.ht)
            ht_encode_gpu(s.jobs.as<GpuCodeBlockJob>(), blocks_,
                          plan_.ht_coding_sets() ? s.ht_sets.as<htenc::HtCodingSets>() : nullptr,
                          s.ht_top_plane.as<uint32_t>(), s.arena.as<uint8_t>(), s.results.as<GpuCodeBlockResult>(),
                          s.sparse_end.as<uint32_t>(), s.sparse_dist.as<uint64_t>(), s.sparse_term.as<uint8_t>(), mn);
        else
            tier1_encode_gpu(s.jobs.as<GpuCodeBlockJob>(), blocks_, s.arena.as<uint8_t>(),
                             s.results.as<GpuCodeBlockResult>(), s.sparse_end.as<uint32_t>(),
                             s.sparse_dist.as<uint64_t>(), s.sparse_term.as<uint8_t>(), mn);
        queue_gather(s);
        mark(s, kMarkTier1, mn);

        if (device_frame) {
            // The caller may reuse the frame: in stream order on its stream, else once it is read.
            if (lent_stream_)
                check_cuda(cudaStreamWaitEvent(lent_stream_, s.consumed.get(), 0), "cudaStreamWaitEvent");
            else
                check_cuda(cudaEventSynchronize(s.consumed.get()), "cudaEventSynchronize");
        }
    }

    /**
     * Host frame into the slot's pinned staging (pieces on the thread pool),
     * then one asynchronous upload on the urgent stream: the caller's memory is
     * free once this returns, and the upload overlaps other frames' kernels.
     */
    void stage_host_frame(Slot &s, const j2kc_image &image)
    {
        const auto t0 = Clock::now();
        const uint32_t n = image.num_components;
        uint64_t begin = UINT64_MAX, end = 0, separate = 0;
        for (uint32_t c = 0; c < n; ++c) {
            const uint64_t span = component_span(image.components[c]);
            begin = std::min(begin, image.components[c].data);
            end = std::max(end, image.components[c].data + span);
            separate += (span + 255) & ~uint64_t{255};
        }
        // One span when the planes sit together (FFmpeg's buffers), else one piece per component.
        const bool together = end - begin <= 2 * separate;
        const uint64_t bytes = std::max<uint64_t>(together ? end - begin : separate, 1);
        auto *host = static_cast<uint8_t *>(s.staging.reserve(bytes));
        auto *dev = static_cast<uint8_t *>(s.frame.reserve(bytes));
        s.copies.clear();
        auto add = [&](const uint8_t *src, uint64_t offset, uint64_t size) {
            for (uint64_t at = 0; at < size; at += kCopyChunk)
                s.copies.push_back({src + at, host + offset + at, size_t(std::min<uint64_t>(kCopyChunk, size - at))});
        };
        if (together) {
            // Only the bytes the components span are read (a gap between two
            // planes need not be mapped); interleaved components share one range.
            s.spans.clear();
            for (uint32_t c = 0; c < n; ++c)
                s.spans.push_back(
                    {image.components[c].data, image.components[c].data + component_span(image.components[c])});
            std::sort(s.spans.begin(), s.spans.end());
            uint64_t from = s.spans[0].first, to = s.spans[0].second;
            for (size_t i = 1; i <= s.spans.size(); ++i) {
                if (i < s.spans.size() && s.spans[i].first <= to) {
                    to = std::max(to, s.spans[i].second);
                    continue;
                }
                add(reinterpret_cast<const uint8_t *>(from), from - begin, to - from);
                if (i < s.spans.size()) from = s.spans[i].first, to = s.spans[i].second;
            }
            for (uint32_t c = 0; c < n; ++c) {
                s.device_components[c] = image.components[c];
                s.device_components[c].data = reinterpret_cast<uint64_t>(dev) + (image.components[c].data - begin);
            }
        } else {
            uint64_t offset = 0;
            for (uint32_t c = 0; c < n; ++c) {
                const uint64_t span = component_span(image.components[c]);
                add(reinterpret_cast<const uint8_t *>(image.components[c].data), offset, span);
                s.device_components[c] = image.components[c];
                s.device_components[c].data = reinterpret_cast<uint64_t>(dev) + offset;
                offset += (span + 255) & ~uint64_t{255};
            }
        }
        // The previous frame of this slot finished before the slot was freed, so
        // its upload no longer reads the staging buffer.
        if (s.copies.size() == 1)
            std::memcpy(s.copies[0].dst, s.copies[0].src, s.copies[0].bytes);
        else
            pool_.parallel_for(s.copies.size(), [&](size_t i, unsigned) {
                std::memcpy(s.copies[i].dst, s.copies[i].src, s.copies[i].bytes);
            });
        s.staging_ms = ms_since(t0);
        cudaStream_t in = s.urgent.get();
        mark(s, kMarkStart, in);
        check_cuda(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, in), "frame upload");
    }

    /** A slot's HT coding sets and the chosen sets' tables, which Tier-2 then reads. */
    void reserve_ht_sets(Slot &s, size_t n)
    {
        s.plane_model.reserve(htenc::kHtPlaneBins * sizeof(uint64_t));
        s.ht_top_plane.reserve(4);
        s.ht_sets.reserve(std::max<size_t>(n, 1) * sizeof(htenc::HtCodingSets));
        s.set_passes.reserve(n * 2);
        s.set_byte_offset.reserve(n * 8);
        s.set_pass_offset.reserve((n + 1) * 4);
        s.set_pass_end.reserve(n * htenc::kHtSetPasses * 4);
        s.set_pass_term.reserve(n * htenc::kHtSetPasses);
        s.set_num_passes.reserve(n * 4);
        s.set_zero_bitplanes.reserve(n);
        s.chosen = HtChosenSetTables{s.set_passes.as<uint16_t>(),       s.set_byte_offset.as<uint64_t>(),
                                     s.set_pass_offset.as<uint32_t>(),  s.set_pass_end.as<uint32_t>(),
                                     s.set_pass_term.as<uint8_t>(),     s.set_num_passes.as<uint32_t>(),
                                     s.set_zero_bitplanes.as<uint8_t>()};
        s.t2_blocks.byte_offset = s.chosen.byte_offset;
        s.t2_blocks.pass_offset = s.chosen.pass_offset;
        s.t2_blocks.pass_end = s.chosen.pass_end;
        s.t2_blocks.pass_terminated = s.chosen.pass_terminated;
        s.t2_blocks.num_passes = s.chosen.num_passes;
        s.t2_blocks.zero_bitplanes = s.chosen.zero_bitplanes;
    }

    /** The passes table Tier-2 writes from: PCRD-opt's, or with HT coding sets the chosen sets'. */
    const uint16_t *tier2_passes(Slot &s, const uint16_t *d_passes, cudaStream_t stream)
    {
        if (!plan_.ht_coding_sets()) return d_passes;
        ht_choose_sets_gpu(s.jobs.as<GpuCodeBlockJob>(), s.ht_sets.as<htenc::HtCodingSets>(), blocks_, d_passes,
                           s.chosen, stream);
        return s.chosen.passes;
    }

    /** Tier-1 results to the tables PCRD-opt and Tier-2 read; the pass count and status come back pinned. */
    void queue_gather(Slot &s)
    {
        cudaStream_t mn = s.bulk.get();
        auto *status = s.status_word.as<uint32_t>();
        check_cuda(cudaMemsetAsync(status, 0, 4, mn), "status reset");
        const uint32_t threads = 256, grid = (blocks_ + 1 + threads - 1) / threads;
        encoder_gather_results_kernel<<<grid, threads, 0, mn>>>(
            s.jobs.as<GpuCodeBlockJob>(), s.results.as<GpuCodeBlockResult>(), blocks_, s.num_passes.as<uint32_t>(),
            s.zero_bitplanes.as<uint8_t>(), s.byte_offset.as<uint64_t>(), status);
        check_cuda(cudaGetLastError(), "gather kernel");
        scan_exclusive_sum(s.num_passes.as<uint32_t>(), s.pass_offset.as<uint32_t>(), blocks_ + 1,
                           s.scan_temp.as<void>(), s.scan_temp.size(), mn);
        auto *small = s.host_small.as<uint32_t>();
        check_cuda(cudaMemcpyAsync(small, s.pass_offset.as<uint32_t>() + blocks_, 4, cudaMemcpyDeviceToHost, mn),
                   "pass count download");
        check_cuda(cudaMemcpyAsync(small + 1, status, 4, cudaMemcpyDeviceToHost, mn), "status download");
        if (blocks_) {
            encoder_compact_passes_kernel<<<(blocks_ + kCompactWarps - 1) / kCompactWarps, kCompactWarps * 32, 0, mn>>>(
                s.jobs.as<GpuCodeBlockJob>(), s.pass_offset.as<uint32_t>(), blocks_, s.sparse_end.as<uint32_t>(),
                s.sparse_dist.as<uint64_t>(), s.sparse_term.as<uint8_t>(), s.pass_end.as<uint32_t>(),
                s.pass_dist.as<uint64_t>(), s.pass_term.as<uint8_t>());
            check_cuda(cudaGetLastError(), "compact kernel");
        }
    }

    /** Worker thread: the slots in submit order, each through rate control and Tier-2. */
    void worker_loop()
    {
        std::unique_ptr<ContextScope> scope;
        j2kc_status scope_status = J2KC_OK;
        std::string scope_message;
        try {
            scope = std::make_unique<ContextScope>(context_, device_);
        } catch (const Error &e) {
            scope_status = e.status();
            scope_message = e.what();
        }
        while (const std::optional<size_t> entry = queue_->take()) {
            Slot *slot = slots()[*entry].get();
            if (scope_status != J2KC_OK) {
                slot->status = scope_status;
                slot->message = scope_message;
            } else {
                try {
                    finish_frame(*slot);
                } catch (const Error &e) {
                    slot->status = e.status();
                    slot->message = e.what();
                } catch (const std::bad_alloc &) {
                    slot->status = J2KC_ERR_NOMEM;
                    slot->message = "out of memory";
                } catch (const std::exception &e) {
                    slot->status = J2KC_ERR_INTERNAL;
                    slot->message = e.what();
                }
                if (slot->status != J2KC_OK) {
                    // Leave the slot's streams idle for its next frame, whatever failed.
                    cudaStreamSynchronize(slot->bulk.get());
                    cudaStreamSynchronize(slot->urgent.get());
                    cudaGetLastError();
                }
            }
            queue_->finish(*entry);
        }
    }

    /** Frames small enough for the larger defaults of slots and back-half workers. */
    bool small_frames() const { return samples_ <= kSmallFrameSamples; }

    /** Worker thread: waits for the slot's Tier-1, then PCRD-opt and Tier-2 (host-driven rounds). */
    void finish_frame(Slot &s)
    {
        // Tier-1 and the pass tables are done once the bulk stream is; the
        // rest runs on the urgent stream, ahead of other frames' bulk kernels.
        check_cuda(cudaStreamSynchronize(s.bulk.get()), "cudaStreamSynchronize");
        cudaStream_t ur = s.urgent.get();
        const uint32_t *small = s.host_small.as<uint32_t>();
        if (small[1] != 0)
            fail(J2KC_ERR_INTERNAL, "GPU Tier-1 rejected code-block %u (status %u)", small[1] & 0xFFFFFF,
                 small[1] >> 24);
        s.times = {};
        if (timing()) {
            // GPU timeline between stage boundaries (other frames' kernels share it).
            s.times.upload = s.staging_ms + elapsed_ms(s.marks[kMarkStart], s.marks[kMarkUploaded]);
            s.times.color = elapsed_ms(s.marks[kMarkUploaded], s.consumed);
            s.times.dwt = elapsed_ms(s.consumed, s.marks[kMarkDwt]);
            s.times.tier1 = elapsed_ms(s.marks[kMarkDwt], s.marks[kMarkTier1]);
        }
        s.pcrd_blocks.num_passes = small[0];
        auto t0 = Clock::now();
        // PCRD-opt measures every selection it searches and measures the one it
        // returns last, so Tier-2 may write from those counts (when it measured at all).
        bool measured = false;
        s.pcrd.select(
            s.pcrd_blocks, rate_.params,
            [&](const uint16_t *d_passes) {
                measured = true;
                return s.tier2.measure(tier2_passes(s, d_passes, ur), s.t2_blocks, ur);
            },
            ur, /*copy_passes=*/false);
        if (timing()) {
            s.times.rate = ms_since(t0);
            t0 = Clock::now();
        }
        // Without a measure, the chosen sets' tables are made here; after one they are its.
        const uint16_t *passes =
            measured && plan_.ht_coding_sets() ? s.chosen.passes : tier2_passes(s, s.pcrd.device_passes(), ur);
        if (plan_.fitted_steps()) queue_step_fit(s);
        s.size = s.tier2.write(passes, s.t2_blocks, s.out.as<uint8_t>(), out_capacity_, s.host_out.as<uint8_t>(),
                               out_capacity_, ur, /*reuse_measure=*/measured);
        if (plan_.fitted_steps()) {
            check_cuda(cudaStreamSynchronize(ur), "cudaStreamSynchronize");
            write_fitted_steps(s.host_out.as<uint8_t>(), s.size, plan_, s.host_step_fit_sums.as<uint64_t>());
        }
        if (timing()) s.times.tier2 = ms_since(t0);  // the codestream's download included
        s.times.total = ms_since(s.submitted);
    }

    size_t step_fit_sums_bytes() const
    {
        return size_t{2} * num_bands(plan_.levels()) * plan_.siz.components.size() * sizeof(uint64_t);
    }

    /** The step fit's sums of the selected truncations, downloaded ahead of the codestream that takes them. */
    void queue_step_fit(Slot &s)
    {
        cudaStream_t ur = s.urgent.get();
        auto *sums = s.step_fit_sums.as<unsigned long long>();
        check_cuda(cudaMemsetAsync(sums, 0, step_fit_sums_bytes(), ur), "step fit reset");
        if (blocks_) {
            encoder_step_fit_kernel<<<blocks_, kStepFitThreads, 0, ur>>>(
                s.jobs.as<GpuCodeBlockJob>(), s.pcrd.device_passes(), plan_.cod.layers, s.zero_bitplanes.as<uint8_t>(),
                gpu_->band_slot.as<uint32_t>(), step_fit_count_log2(plan_), sums);
            check_cuda(cudaGetLastError(), "step fit kernel");
        }
        check_cuda(cudaMemcpyAsync(s.host_step_fit_sums.as<uint64_t>(), sums, step_fit_sums_bytes(),
                                   cudaMemcpyDeviceToHost, ur),
                   "step fit download");
    }

    void *context_;
    int device_;
    cudaStream_t lent_stream_;
    std::unique_ptr<GpuState> gpu_;
    std::vector<TilePlan> tiles_;
    std::vector<GpuCodeBlockJob> jobs_;  ///< coeffs and scratch relative to a slot's buffers
    std::vector<const TileLayout *> layouts_;
    Tier2GpuConfig t2_config_;
    RateSetup rate_;
    size_t samples_ = 1, dwt_scratch_bytes_ = 4;
    uint64_t arena_bytes_ = 1, t1_scratch_bytes_ = 16, staging_hint_ = 0;
    uint32_t blocks_ = 0, pass_slots_ = 1;
    uint64_t out_capacity_ = 0;

    std::optional<FrameQueue> queue_;  ///< which slots hold which frames, in submit order
    std::vector<std::thread> workers_;
};

}  // namespace

std::unique_ptr<Encoder> create_cuda_encoder(const j2kc_encoder_config &config, const j2kc_image &shape,
                                             const Logger &log, double step_phase)
{
    return std::make_unique<CudaEncoder>(config, shape, log, step_phase);
}

}  // namespace j2kc
