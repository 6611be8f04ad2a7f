/**
 * @file tier2_cuda.h
 * @brief Tier-2 on the GPU (ISO/IEC 15444-1 B.9-B.12 packets; A.4 SOT/SOD/
 * EOC, A.7.1 TLM, A.7.3 PLT, A.8 SOP/EPH) after Bruns, Martínez-del-Amor and
 * Sparenberg, "Evaluation of GPU/CPU Co-Processing Models for JPEG 2000
 * Packetization", section VII: a table of codestream cells (main header,
 * SOT+PLT+SOD of each tile-part, each packet, EOC), their exact lengths, a
 * device-wide exclusive prefix sum for the offsets, and fill kernels: packet
 * headers with the shared tag-tree and header bit writers, warp-cooperative
 * copies of the truncated code-block streams. Only the finished codestream
 * goes back to the host.
 *
 * The codestream is byte-identical to assemble_codestream() of the CPU path
 * (pipeline/codestream_assembly.h) for the same code-block data, truncation
 * points and plan; measure() gives the numbers FrameBlocks::exact_size()
 * gives.
 *
 * Host interface only: no CUDA types. Device pointers are plain pointers,
 * the stream is a cudaStream_t passed as void *. All device memory is sized
 * in prepare() (once per geometry); measure() and write() allocate nothing.
 * One Tier2Gpu serves one stream at a time (its scratch is shared by calls).
 * Every call runs in the CUDA context current at the call (the caller's lent
 * context); prepare(), measure() and write() must see the same one.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "geometry/partition.h"
#include "rate/pcrd.h"
#include "tier2/packet_encoder.h"

namespace j2kc {

/** What is fixed for every frame of an encoder (built by the caller from its plan). */
struct Tier2GpuConfig {
    /**
     * Layers, progression, POC entries, SOP, EPH, code-block style per
     * component: RateSetup::packet_params. packed_headers must be false.
     */
    PacketEncodeParams packets;
    /** PLT in every tile-part header (EncoderPlan::plt). */
    bool plt = false;
    /**
     * The main header as the CPU writes it: SOC SIZ COD QCD [QCC...] [TLM]
     * [POC] [COM]. With TLM, its segments must hold one entry per tile-part
     * of the frame (their values are ignored: write() fills them in); Stlm's
     * ST and SP are read from the segments.
     */
    std::vector<uint8_t> main_header;
    /**
     * Per tile: the number of packets of each of its tile-parts, in order
     * (RateSetup::tile_part_packets: TilePartSpan::num_packets of split_tile_parts() over the packet
     * order); their sum must be the tile's packet count. An empty list means
     * one tile-part.
     */
    std::vector<std::vector<uint32_t>> tile_part_packets;
    /** measure() fills PcrdSizes::component (set it when there are component budgets). */
    bool component_sizes = false;
};

/**
 * Tier-1's output for every code-block of a frame (device memory): tiles
 * concatenated in order, each tile's blocks in TileLayout::code_blocks order
 * (frame block index = FrameBlocks::tile_first_block[t] + i).
 */
struct GpuBlocks {
    const uint8_t *bytes = nullptr;            ///< arena of all codeword bytes
    const uint64_t *byte_offset = nullptr;     ///< per block: its data (EncodedCodeBlock::data[0]) in bytes
    const uint32_t *pass_offset = nullptr;     ///< per block: its first entry in the pass arrays
    const uint32_t *pass_end = nullptr;        ///< per pass: PassInfo::end
    const uint8_t *pass_terminated = nullptr;  ///< per pass: PassInfo::terminated (0/1); may be null
    const uint32_t *num_passes = nullptr;      ///< per block
    const uint8_t *zero_bitplanes = nullptr;   ///< per block
    uint32_t num_blocks = 0;
};

/** True when the CUDA runtime sees at least one device. */
bool tier2_gpu_available();

class Tier2Gpu {
public:
    Tier2Gpu();
    ~Tier2Gpu();
    Tier2Gpu(const Tier2Gpu &) = delete;
    Tier2Gpu &operator=(const Tier2Gpu &) = delete;

    /**
     * Once per geometry: packet order (POC included) and tile-part split of
     * every tile, the cell table, and all device memory. `layouts` are the
     * frame's tiles in tile order. Synchronises `stream`. Throws INVALID_ARG
     * on an inconsistent configuration.
     */
    void prepare(const Tier2GpuConfig &config, const std::vector<const TileLayout *> &layouts, void *stream);

    /**
     * Exact sizes for the selection `d_passes` (device, [block * layers +
     * layer], cumulative passes as PcrdCuda::device_passes()): total = every
     * packet plus the PLT segments (markers of the main header and
     * SOT/SOD/EOC excluded), component[c] = the same over the tile-parts
     * that hold component c alone; exactly FrameBlocks::exact_size().
     * Synchronises `stream`. Throws INVALID_ARG on truncation points the CPU
     * coder would reject.
     */
    PcrdSizes measure(const uint16_t *d_passes, const GpuBlocks &blocks, void *stream);

    /**
     * Writes the whole codestream of the selection to d_out (device,
     * `capacity` bytes) and returns its size. If host_out is not null, also
     * copies it there (host_capacity bytes; pinned memory makes that fast).
     * Synchronises `stream`. Throws LIMIT when the codestream does not fit
     * capacity or host_capacity (nothing is written beyond either), and
     * INVALID_ARG as measure().
     *
     * reuse_measure: the caller promises that the last successful measure()
     * or write() of this object was on this very selection and blocks (as
     * pcrd_select's last exact-size call is on the selection it returns);
     * the counting kernels are then skipped. Ignored before the first one.
     */
    size_t write(const uint16_t *d_passes, const GpuBlocks &blocks, uint8_t *d_out, size_t capacity, uint8_t *host_out,
                 size_t host_capacity, void *stream, bool reuse_measure = false);

    /** Codestream bytes that do not depend on the selection (main header, SOT/SOD, EOC). */
    uint64_t fixed_bytes() const;
    uint32_t num_blocks() const;
    uint32_t num_tile_parts() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace j2kc
