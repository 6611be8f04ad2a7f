/**
 * @file tier2.cu
 * @brief Tier-2 on the GPU (Bruns et al., "Evaluation of GPU/CPU
 * Co-Processing Models for JPEG 2000 Packetization", section VII; ISO/IEC
 * 15444-1 B.9-B.12, A.4, A.7.1, A.7.3, A.8): cell lengths, one exclusive
 * prefix sum, fill.
 *
 * Kernels, all on the caller's stream:
 *  1. with one layer, the parallel count of tier2_header_count_core.h
 *     (tier2_first_packet_trees_kernel, _runs_kernel, _precincts_kernel);
 *     with several, tier2_count_packets_kernel: one thread per precinct
 *     (the first lane of a warp each) walks its layers in order (a header
 *     depends on the precinct's earlier layers only) and counts each
 *     packet's header and body bytes (tier2_cell_core.h);
 *  2. tier2_count_tile_parts_kernel: one thread per tile-part: PLT bytes,
 *     Psot, and the sums measure() reports (integer atomics: exact);
 *  3. scan_exclusive_sum over the cell lengths (common/scan.h, CUB);
 *  4. tier2_check_kernel: the codestream size against the capacity;
 *  5. fill: main header (copied, prepared once), tier2_write_tile_parts_kernel
 *     (SOT, PLT, SOD, TLM entries, EOC), the headers with SOP and EPH (one
 *     layer: tier2_first_packet_open_kernel and _write_kernel, the steps
 *     of 1; several: tier2_write_headers_kernel, the serial coder of 1 now
 *     writing), tier2_copy_bodies_kernel
 *     (one warp per code-block and layer, 16-byte chunks where source and
 *     destination agree in alignment, else destination-aligned words).
 * Every kernel after 1 returns at once when an earlier one reported an error,
 * so a rejected selection never reads or writes out of bounds.
 */
#include <cuda_runtime.h>

#include <algorithm>

#include "common/cuda_util.cuh"
#include "common/scan.h"
#include "common/status.h"
#include "tier2/tier2_cell_core.h"
#include "tier2/tier2_cell_tables.h"
#include "tier2/tier2_cuda.h"
#include "tier2/tier2_header_count_core.h"

namespace j2kc {

/**
 * Warps a CTA of the two precinct kernels has; each takes one precinct, on
 * its lane 0. A precinct's packets are one thread's serial work, and
 * precincts differ in size and in the branches their code-blocks take:
 * precincts that shared a warp would wait on each other's paths, and a frame
 * of few large precincts (no precinct partition) would run on one warp.
 */
constexpr uint32_t kPrecinctWarps = 4;

/** The precinct this thread codes, if any. */
__device__ bool tier2_thread_precinct(uint32_t num_precincts, uint32_t &i)
{
    i = blockIdx.x * kPrecinctWarps + threadIdx.x / 32;
    return threadIdx.x % 32 == 0 && i < num_precincts;
}

__global__ void tier2_count_packets_kernel(T2gTables t, T2gBlocks b, const uint16_t *passes, T2gScratch s)
{
    uint32_t i;
    if (tier2_thread_precinct(t.num_precincts, i)) t2g_precinct_packets(t, b, passes, s, i, nullptr);
}

/** Threads a CTA of the tree kernel has; one CTA a precinct-band. */
constexpr uint32_t kTreeThreads = 128;
/** Warps a CTA of the run kernel has; one CTA a run, a warp a code-block at a time. */
constexpr uint32_t kRunWarps = 8;
/** Warps a CTA of the first-packet precinct kernel has, each walking a share of the precinct's runs. */
constexpr uint32_t kRunWalkWarps = 8;

__global__ void tier2_first_packet_trees_kernel(T2gTables t, T2gBlocks b, const uint16_t *passes, T2gScratch s)
{
    const uint32_t bi = blockIdx.x;
    if (bi >= t.num_bands) return;
    const T2gBand band = t.bands[bi];
    const uint32_t levels = t2g_tree_levels(band);
    for (uint32_t level = 0; level < levels; ++level) {
        const TagTreeLevel l = t2g_tree_level(band, level);
        for (uint32_t i = threadIdx.x; i < l.width * l.height; i += blockDim.x)
            t2g_first_packet_node(t, b, passes, s, bi, level, i);
        __syncthreads();
    }
}

/** The run's code-blocks coded from every phase (a warp a code-block, a lane a phase): their steps, bodies, inclusion. */
__device__ void tier2_run_block_steps(const T2gTables &t, const T2gBlocks &b, const uint16_t *passes,
                                      const T2gScratch &s, const T2gRun &run,
                                      uint32_t (&steps)[kT2gRunBlocks][kPacketHeaderPhases],
                                      uint64_t (&body)[kT2gRunBlocks], uint32_t (&included)[kT2gRunBlocks])
{
    const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane >= kPacketHeaderPhases) return;
    for (uint32_t j = warp; j < run.count; j += kRunWarps) {
        PacketHeaderWriter w = PacketHeaderWriter::at_phase(lane);
        const T2gBlockCount c = t2g_first_packet_block(t, b, passes, s, run, run.first_leaf + j, w);
        steps[j][lane] = T2gPhaseWalk::of(w).step();
        if (lane == 0) {
            body[j] = c.failed ? 0 : c.body;
            included[j] = c.included;
        }
    }
}

__global__ void tier2_first_packet_runs_kernel(T2gTables t, T2gBlocks b, const uint16_t *passes, T2gScratch s)
{
    __shared__ uint32_t steps[kT2gRunBlocks][kPacketHeaderPhases];
    __shared__ uint64_t body[kT2gRunBlocks];
    __shared__ uint32_t included[kT2gRunBlocks];
    const uint32_t r = blockIdx.x;
    if (r >= t.num_runs) return;
    const T2gRun run = t.runs[r];
    // A packet a POC leaves out is neither coded nor checked.
    if (t.precincts[run.precinct].layers_emitted == 0) return;
    tier2_run_block_steps(t, b, passes, s, run, steps, body, included);
    __syncthreads();
    const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (warp != 0) return;
    if (lane < kPacketHeaderPhases) {
        T2gPhaseWalk walk{lane, 0};
        for (uint32_t j = 0; j < run.count; ++j) walk.take(steps[j]);
        s.run_steps[size_t{r} * kPacketHeaderPhases + lane] = walk.step();
    }
    if (lane == 0) {
        const uint32_t first = t.bands[run.band].first_block + run.first_leaf;
        uint64_t at = 0;
        uint32_t any = 0;
        for (uint32_t j = 0; j < run.count; ++j) {
            s.contrib_rel[first + j] = static_cast<uint32_t>(at);  // within the run; the precinct kernel adds the rest
            at += body[j];
            any |= included[j];
        }
        s.run_body[r] = at;
        s.run_included[r] = any;
    }
}

__global__ void tier2_first_packet_precincts_kernel(T2gTables t, T2gScratch s)
{
    __shared__ T2gPhaseWalk walks[kRunWalkWarps][kPacketHeaderPhases];
    __shared__ uint64_t warp_body[kRunWalkWarps];
    __shared__ uint32_t warp_included[kRunWalkWarps];
    __shared__ uint32_t failed;
    const uint32_t pi = blockIdx.x;
    if (pi >= t.num_precincts) return;
    const T2gPrecinct prec = t.precincts[pi];
    if (prec.layers_emitted == 0) return;
    if (threadIdx.x == 0) failed = t2g_failed(s.status);
    const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const uint32_t share = (prec.num_runs + kRunWalkWarps - 1) / kRunWalkWarps;
    const uint32_t begin = prec.run_begin + t2g_min(warp * share, prec.num_runs);
    const uint32_t end = prec.run_begin + t2g_min((warp + 1) * share, prec.num_runs);
    if (lane < kPacketHeaderPhases) {
        T2gPhaseWalk walk{lane, 0};
        for (uint32_t r = begin; r < end; ++r) walk.take(s.run_steps + size_t{r} * kPacketHeaderPhases);
        walks[warp][lane] = walk;
    }
    uint64_t body = 0;
    uint32_t included = 0;
    for (uint32_t r = begin + lane; r < end; r += 32) {
        body += s.run_body[r];
        included |= s.run_included[r];
    }
    for (uint32_t d = 16; d > 0; d >>= 1) {
        body += __shfl_down_sync(0xFFFFFFFFu, body, d);
        included |= __shfl_down_sync(0xFFFFFFFFu, included, d);
    }
    if (lane == 0) {
        warp_body[warp] = body;
        warp_included[warp] = included;
    }
    __syncthreads();
    if (failed) return;
    __shared__ uint64_t warp_at[kRunWalkWarps];
    __shared__ T2gPhaseWalk warp_entry[kRunWalkWarps];
    __shared__ bool any;
    if (threadIdx.x == 0) {
        T2gPhaseWalk header{t2g_first_packet_phase(), 0};
        uint64_t total = 0;
        any = false;
        for (uint32_t w = 0; w < kRunWalkWarps; ++w) {
            warp_entry[w] = header;
            header.take(walks[w]);
            warp_at[w] = total;
            total += warp_body[w];
            any |= warp_included[w] != 0;
        }
        t2g_store_packet_length(t, s, t.precinct_packets[prec.packet_begin], t2g_first_packet_header(any, header),
                                total);
    }
    __syncthreads();
    uint64_t at = warp_at[warp];
    T2gPhaseWalk entry = warp_entry[warp];
    for (uint32_t r = begin; r < end; ++r) {
        const T2gRun run = t.runs[r];
        if (lane < run.count)
            s.contrib_rel[t.bands[run.band].first_block + run.first_leaf + lane] += static_cast<uint32_t>(at);
        if (lane == 0) {
            s.run_entry[r] = any ? entry.packed() : kT2gNoEntry;
            entry.take(s.run_steps + size_t{r} * kPacketHeaderPhases);
        }
        at += s.run_body[r];
    }
}

/** A warp a precinct: SOP and EPH of its first packet, the header zeroed and its first bit written. */
__global__ void tier2_first_packet_open_kernel(T2gTables t, T2gScratch s, uint8_t *out)
{
    const uint32_t pi = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    if (pi >= t.num_precincts || t2g_failed(s.status)) return;
    const T2gPrecinct prec = t.precincts[pi];
    if (prec.layers_emitted == 0) return;
    const uint32_t pk = t.precinct_packets[prec.packet_begin];
    const T2gPacket packet = t.packets[pk];
    uint8_t *at = out + s.cell_off[packet.cell];
    const uint32_t sop = t.sop ? kT2gSopBytes : 0, header = s.header_len[pk] - (t.eph ? kT2gEphBytes : 0);
    uint32_t included = 0;
    for (uint32_t r = prec.run_begin + lane; r < prec.run_begin + prec.num_runs; r += 32) included |= s.run_included[r];
    included = __any_sync(0xFFFFFFFFu, included);
    for (uint32_t i = lane; i < header; i += 32) at[sop + i] = 0;
    __syncwarp();
    if (lane != 0) return;
    t2g_packet_markers(t, packet, at, header);
    t2g_first_packet_open(at + sop, header, included != 0);
}

/** A CTA a run: its code-blocks' bits OR-ed into the header the open kernel prepared. */
__global__ void tier2_first_packet_write_kernel(T2gTables t, T2gBlocks b, const uint16_t *passes, T2gScratch s,
                                                uint8_t *out)
{
    __shared__ uint32_t steps[kT2gRunBlocks][kPacketHeaderPhases];
    __shared__ uint64_t body[kT2gRunBlocks];
    __shared__ uint32_t included[kT2gRunBlocks];
    __shared__ T2gPhaseWalk entries[kT2gRunBlocks];
    const uint32_t r = blockIdx.x;
    if (r >= t.num_runs || t2g_failed(s.status)) return;
    const T2gRun run = t.runs[r];
    const T2gPrecinct prec = t.precincts[run.precinct];
    if (prec.layers_emitted == 0 || s.run_entry[r] == kT2gNoEntry) return;
    tier2_run_block_steps(t, b, passes, s, run, steps, body, included);
    __syncthreads();
    if (threadIdx.x == 0) {
        T2gPhaseWalk walk = T2gPhaseWalk::unpacked(s.run_entry[r]);
        for (uint32_t j = 0; j < run.count; ++j) {
            entries[j] = walk;
            walk.take(steps[j]);
        }
    }
    __syncthreads();
    const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const uint32_t pk = t.precinct_packets[prec.packet_begin];
    uint8_t *header = out + s.cell_off[t.packets[pk].cell] + (t.sop ? kT2gSopBytes : 0);
    const uint32_t size = s.header_len[pk] - (t.eph ? kT2gEphBytes : 0);
    for (uint32_t j = warp; lane == 0 && j < run.count; j += kRunWarps)
        t2g_first_packet_block_write(t, b, passes, s, run, run.first_leaf + j, entries[j], header, size);
}

__global__ void tier2_count_tile_parts_kernel(T2gTables t, T2gScratch s)
{
    const uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= t.num_tile_parts || t2g_failed(s.status)) return;
    t2g_tile_part_count(t, s, k);
}

__global__ void tier2_check_kernel(T2gTables t, T2gScratch s, uint64_t capacity)
{
    if (threadIdx.x != 0 || t2g_failed(s.status)) return;
    const uint64_t total = s.cell_off[t.num_cells - 1] + s.cell_len[t.num_cells - 1];
    s.sums[1 + t.num_components] = total;
    if (total > capacity) t2g_fail(s.status, kT2gCapacity, 0, 0, 0);
}

__global__ void tier2_write_tile_parts_kernel(T2gTables t, T2gScratch s, uint8_t *out)
{
    const uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= t.num_tile_parts || t2g_failed(s.status)) return;
    t2g_tile_part_write(t, s, k, out);
}

__global__ void tier2_write_headers_kernel(T2gTables t, T2gBlocks b, const uint16_t *passes, T2gScratch s, uint8_t *out)
{
    uint32_t i;
    if (!tier2_thread_precinct(t.num_precincts, i) || t2g_failed(s.status)) return;
    t2g_precinct_packets(t, b, passes, s, i, out);
}

/** One warp copies n bytes; lane is the warp lane. */
__device__ __forceinline__ void tier2_warp_copy(uint8_t *dst, const uint8_t *src, uint32_t n, uint32_t lane)
{
    const uint32_t dmis = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(dst) & 15);
    const uint32_t smis = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(src) & 15);
    // Bytes up to the destination's next 16-byte boundary when the source can
    // follow it there, else to its next 4-byte boundary.
    const uint32_t align = dmis == smis ? 16 : 4;
    uint32_t head = (align - (static_cast<uint32_t>(reinterpret_cast<uintptr_t>(dst)) & (align - 1))) & (align - 1);
    if (head > n) head = n;
    if (lane < head) dst[lane] = src[lane];
    dst += head;
    src += head;
    n -= head;
    uint32_t done;
    if (dmis == smis) {
        const uint32_t chunks = n >> 4;
        const uint4 *s4 = reinterpret_cast<const uint4 *>(src);
        uint4 *d4 = reinterpret_cast<uint4 *>(dst);
        for (uint32_t i = lane; i < chunks; i += 32) d4[i] = __ldg(s4 + i);
        done = chunks << 4;
    } else if (((dmis ^ smis) & 3) == 0) {
        const uint32_t words = n >> 2;
        const uint32_t *s1 = reinterpret_cast<const uint32_t *>(src);
        uint32_t *d1 = reinterpret_cast<uint32_t *>(dst);
        for (uint32_t i = lane; i < words; i += 32) d1[i] = __ldg(s1 + i);
        done = words << 2;
    } else {
        // Destination-aligned words gathered from unaligned source bytes.
        const uint32_t words = n >> 2;
        uint32_t *d1 = reinterpret_cast<uint32_t *>(dst);
        for (uint32_t i = lane; i < words; i += 32) {
            const uint8_t *p = src + 4 * i;
            d1[i] = uint32_t{__ldg(p)} | uint32_t{__ldg(p + 1)} << 8 | uint32_t{__ldg(p + 2)} << 16 |
                    uint32_t{__ldg(p + 3)} << 24;
        }
        done = words << 2;
    }
    for (uint32_t i = done + lane; i < n; i += 32) dst[i] = src[i];
}

__global__ void tier2_copy_bodies_kernel(T2gTables t, T2gBlocks b, const uint16_t *passes, T2gScratch s, uint8_t *out)
{
    const uint64_t warp = (uint64_t{blockIdx.x} * blockDim.x + threadIdx.x) >> 5;
    const uint32_t lane = threadIdx.x & 31;
    if (warp >= uint64_t{t.num_blocks} * t.layers || t2g_failed(s.status)) return;
    const uint32_t cb = static_cast<uint32_t>(warp / t.layers), layer = static_cast<uint32_t>(warp % t.layers);
    const T2gCopy c = t2g_contribution(t, b, passes, s, cb, layer);
    if (c.length == 0) return;
    tier2_warp_copy(out + c.dst, b.bytes + c.src, c.length, lane);
}

namespace {

constexpr uint32_t kThreads = 64;

uint32_t grid_for(uint64_t threads, uint32_t per_block)
{
    return static_cast<uint32_t>(std::max<uint64_t>(1, (threads + per_block - 1) / per_block));
}

template <typename T>
T *upload(DeviceBuffer &buf, const std::vector<T> &v, cudaStream_t stream)
{
    T *p = static_cast<T *>(buf.reserve(std::max<size_t>(1, v.size()) * sizeof(T)));
    if (!v.empty())
        check_cuda(cudaMemcpyAsync(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice, stream),
                   "Tier-2 table upload");
    return p;
}

template <typename T>
T *alloc(DeviceBuffer &buf, size_t n)
{
    return static_cast<T *>(buf.reserve(std::max<size_t>(1, n) * sizeof(T)));
}

}  // namespace

bool tier2_gpu_available()
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return n > 0;
}

struct Tier2Gpu::Impl {
    T2gHostTables host;
    T2gTables tables;
    T2gScratch scratch;
    bool component_sizes = false;
    bool prepared = false;
    bool counted = false;  ///< the lengths of the last successful measure()/write() are in scratch
    size_t scan_temp_bytes = 0;
    DeviceBuffer precincts, bands, precinct_packets, packets, tile_parts, block_precinct, runs, main_header;
    DeviceBuffer inclusion, zero_bitplanes, lblock, header_len, packet_len, contrib_rel, psot, cell_len, cell_off, sums,
        status, scan_temp, first_included, run_steps, run_body, run_included, run_entry;
    PinnedBuffer pinned;  ///< status (4 words) then sums

    uint32_t *pinned_status() const { return pinned.as<uint32_t>(); }
    uint64_t *pinned_sums() const { return reinterpret_cast<uint64_t *>(pinned.as<uint8_t>() + 16); }
    size_t sums_count() const { return 2 + tables.num_components; }

    T2gBlocks view(const GpuBlocks &g) const
    {
        J2KC_CHECK_ARG(prepared, "Tier2Gpu used before prepare()");
        J2KC_CHECK_ARG(g.num_blocks == tables.num_blocks, "%u code-blocks given, the geometry has %u", g.num_blocks,
                       tables.num_blocks);
        J2KC_CHECK_ARG(tables.num_blocks == 0 || (g.bytes && g.byte_offset && g.pass_offset && g.pass_end &&
                                                  g.num_passes && g.zero_bitplanes),
                       "code-block arrays missing");
        T2gBlocks b;
        b.bytes = g.bytes;
        b.byte_offset = g.byte_offset;
        b.pass_offset = g.pass_offset;
        b.pass_end = g.pass_end;
        b.pass_terminated = g.pass_terminated;
        b.num_passes = g.num_passes;
        b.zero_bitplanes = g.zero_bitplanes;
        return b;
    }

    /** Kernels 1 and 2 (status and sums cleared first). */
    void count(const uint16_t *passes, const T2gBlocks &b, cudaStream_t stream)
    {
        J2KC_CHECK_ARG(passes || tables.num_blocks == 0, "no passes table");
        check_cuda(cudaMemsetAsync(scratch.status, 0, 4 * sizeof(uint32_t), stream), "cudaMemsetAsync");
        check_cuda(cudaMemsetAsync(scratch.sums, 0, sums_count() * sizeof(uint64_t), stream), "cudaMemsetAsync");
        if (tables.layers == 1 && tables.num_precincts) {
            if (tables.num_bands)
                tier2_first_packet_trees_kernel<<<tables.num_bands, kTreeThreads, 0, stream>>>(tables, b, passes,
                                                                                               scratch);
            if (tables.num_runs)
                tier2_first_packet_runs_kernel<<<tables.num_runs, kRunWarps * 32, 0, stream>>>(tables, b, passes,
                                                                                               scratch);
            tier2_first_packet_precincts_kernel<<<tables.num_precincts, kRunWalkWarps * 32, 0, stream>>>(tables,
                                                                                                         scratch);
        } else if (tables.num_precincts) {
            tier2_count_packets_kernel<<<grid_for(tables.num_precincts, kPrecinctWarps), kPrecinctWarps * 32, 0,
                                         stream>>>(tables, b, passes, scratch);
        }
        tier2_count_tile_parts_kernel<<<grid_for(tables.num_tile_parts, kThreads), kThreads, 0, stream>>>(tables,
                                                                                                          scratch);
        check_cuda(cudaGetLastError(), "Tier-2 count kernels");
    }

    /** Reads status and sums back; throws on a kernel error. */
    void finish(cudaStream_t stream)
    {
        check_cuda(
            cudaMemcpyAsync(pinned_status(), scratch.status, 4 * sizeof(uint32_t), cudaMemcpyDeviceToHost, stream),
            "Tier-2 status read-back");
        check_cuda(cudaMemcpyAsync(pinned_sums(), scratch.sums, sums_count() * sizeof(uint64_t), cudaMemcpyDeviceToHost,
                                   stream),
                   "Tier-2 sums read-back");
        check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        const uint32_t *st = pinned_status();
        if (st[0] != kT2gOk) fail(t2g_error_status(st[0]), "%s", t2g_error_message(st).c_str());
    }
};

Tier2Gpu::Tier2Gpu() : impl_(std::make_unique<Impl>()) {}
Tier2Gpu::~Tier2Gpu() = default;

void Tier2Gpu::prepare(const Tier2GpuConfig &config, const std::vector<const TileLayout *> &layouts, void *stream)
{
    Impl &m = *impl_;
    m.prepared = false;
    m.counted = false;
    m.host = build_t2g_tables(config, layouts);
    m.component_sizes = config.component_sizes;
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    const T2gHostTables &h = m.host;

    T2gTables &t = m.tables;
    t = h.scalars;
    t.precincts = upload(m.precincts, h.precincts, s);
    t.bands = upload(m.bands, h.bands, s);
    t.precinct_packets = upload(m.precinct_packets, h.precinct_packets, s);
    t.packets = upload(m.packets, h.packets, s);
    t.tile_parts = upload(m.tile_parts, h.tile_parts, s);
    t.block_precinct = upload(m.block_precinct, h.block_precinct, s);
    t.runs = upload(m.runs, h.runs, s);
    upload(m.main_header, h.main_header, s);

    T2gScratch &k = m.scratch;
    k.inclusion = alloc<TagTreeNode>(m.inclusion, t.num_nodes);
    k.zero_bitplanes = alloc<TagTreeNode>(m.zero_bitplanes, t.num_nodes);
    k.lblock = alloc<uint8_t>(m.lblock, t.num_blocks);
    k.header_len = alloc<uint32_t>(m.header_len, t.num_packets);
    k.packet_len = alloc<uint32_t>(m.packet_len, t.num_packets);
    k.contrib_rel = alloc<uint32_t>(m.contrib_rel, size_t{t.num_blocks} * t.layers);
    k.psot = alloc<uint32_t>(m.psot, t.num_tile_parts);
    k.cell_len = upload(m.cell_len, h.fixed_cell_len, s);  // main header and EOC stay; the rest is recounted
    k.cell_off = alloc<uint64_t>(m.cell_off, t.num_cells);
    k.sums = alloc<uint64_t>(m.sums, m.sums_count());
    k.status = alloc<uint32_t>(m.status, 4);
    k.first_included = alloc<uint32_t>(m.first_included, t.num_nodes);
    k.run_steps = alloc<uint32_t>(m.run_steps, size_t{t.num_runs} * kPacketHeaderPhases);
    k.run_body = alloc<uint64_t>(m.run_body, t.num_runs);
    k.run_included = alloc<uint32_t>(m.run_included, t.num_runs);
    k.run_entry = alloc<uint64_t>(m.run_entry, t.num_runs);
    m.scan_temp_bytes = std::max<size_t>(16, scan_exclusive_sum_temp_bytes<uint64_t>(t.num_cells));
    m.scan_temp.reserve(m.scan_temp_bytes);
    m.pinned.reserve(16 + m.sums_count() * sizeof(uint64_t));
    check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    m.prepared = true;
}

PcrdSizes Tier2Gpu::measure(const uint16_t *d_passes, const GpuBlocks &blocks, void *stream)
{
    Impl &m = *impl_;
    const T2gBlocks b = m.view(blocks);
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    m.counted = false;
    m.count(d_passes, b, s);
    m.finish(s);
    m.counted = true;
    PcrdSizes out;
    const uint64_t *sums = m.pinned_sums();
    out.total = sums[0];
    if (m.component_sizes) out.component.assign(sums + 1, sums + 1 + m.tables.num_components);
    return out;
}

size_t Tier2Gpu::write(const uint16_t *d_passes, const GpuBlocks &blocks, uint8_t *d_out, size_t capacity,
                       uint8_t *host_out, size_t host_capacity, void *stream, bool reuse_measure)
{
    Impl &m = *impl_;
    const T2gBlocks b = m.view(blocks);
    J2KC_CHECK_ARG(d_out || capacity == 0, "no output buffer");
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    const T2gTables &t = m.tables;
    const bool reuse = reuse_measure && m.counted;
    m.counted = false;
    if (reuse) {
        // Lengths, Psot and body offsets are in place from the last call.
        J2KC_CHECK_ARG(d_passes, "no passes table");
        check_cuda(cudaMemsetAsync(m.scratch.status, 0, 4 * sizeof(uint32_t), s), "cudaMemsetAsync");
    } else {
        m.count(d_passes, b, s);
    }
    scan_exclusive_sum(m.scratch.cell_len, m.scratch.cell_off, t.num_cells, m.scan_temp.as<void>(), m.scan_temp_bytes,
                       s);
    tier2_check_kernel<<<1, 32, 0, s>>>(t, m.scratch, capacity);
    const size_t header = m.host.main_header.size();
    if (header <= capacity)
        check_cuda(cudaMemcpyAsync(d_out, m.main_header.as<uint8_t>(), header, cudaMemcpyDeviceToDevice, s),
                   "main header copy");
    tier2_write_tile_parts_kernel<<<grid_for(t.num_tile_parts, kThreads), kThreads, 0, s>>>(t, m.scratch, d_out);
    if (t.layers == 1 && t.num_precincts) {
        tier2_first_packet_open_kernel<<<grid_for(t.num_precincts, kRunWalkWarps), kRunWalkWarps * 32, 0, s>>>(
            t, m.scratch, d_out);
        if (t.num_runs)
            tier2_first_packet_write_kernel<<<t.num_runs, kRunWarps * 32, 0, s>>>(t, b, d_passes, m.scratch, d_out);
    } else if (t.num_precincts) {
        tier2_write_headers_kernel<<<grid_for(t.num_precincts, kPrecinctWarps), kPrecinctWarps * 32, 0, s>>>(
            t, b, d_passes, m.scratch, d_out);
    }
    const uint64_t warps = uint64_t{t.num_blocks} * t.layers;
    if (warps) tier2_copy_bodies_kernel<<<grid_for(warps * 32, 256), 256, 0, s>>>(t, b, d_passes, m.scratch, d_out);
    check_cuda(cudaGetLastError(), "Tier-2 fill kernels");
    m.finish(s);
    m.counted = true;
    const uint64_t size = m.pinned_sums()[1 + t.num_components];
    if (host_out) {
        J2KC_CHECK_LIMIT(size <= host_capacity, "codestream of %llu bytes does not fit the host buffer of %zu",
                         static_cast<unsigned long long>(size), host_capacity);
        check_cuda(cudaMemcpyAsync(host_out, d_out, size, cudaMemcpyDeviceToHost, s), "codestream download");
        check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    }
    return static_cast<size_t>(size);
}

uint64_t Tier2Gpu::fixed_bytes() const { return impl_->host.fixed_bytes; }
uint32_t Tier2Gpu::num_blocks() const { return impl_->tables.num_blocks; }
uint32_t Tier2Gpu::num_tile_parts() const { return impl_->tables.num_tile_parts; }

}  // namespace j2kc
