/**
 * @file gpu_tier2_test.cpp
 * @brief Tier-2 on the GPU (tier2/tier2_cuda.h, the cell table) against
 * the CPU path: measure() against FrameBlocks::exact_size() and write()
 * against assemble_codestream(), byte for byte, over random frames (tiles,
 * precincts, subsampling, 1..5 layers, every progression, POC, SOP/EPH,
 * PLT, TLM, tile-parts by resolution/component/DCI 4K, every code-block
 * style) with random truncation points.
 *
 * Tier2GpuModel* run the J2KC_HD kernel bodies (tier2_cell_core.h) on the
 * host in the kernels' order: the same code as the device, so they check the
 * algorithm everywhere. Gpu* run Tier2Gpu on a device and skip without one.
 */
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/status.h"
#include "pipeline/codestream_assembly.h"
#include "pipeline/encoder_common.h"
#include "tier1/tier1.h"
#include "tier2/progression.h"
#include "tier2/tier2_cell_core.h"
#include "tier2/tier2_cell_tables.h"
#include "tier2/tier2_cuda.h"
#include "tier2/tier2_header_count_core.h"

using namespace j2kc;

namespace {

// ---------------------------------------------------------------- frames

struct Frame {
    EncoderPlan plan;
    std::vector<TileLayout> layouts;
    std::vector<std::vector<EncodedCodeBlock>> blocks;  ///< per tile
    std::vector<uint16_t> passes;                       ///< [frame block * layers + layer]
    uint32_t num_blocks = 0;
    bool component_sizes = false;
    std::string what;
};

bool ends_segment(uint8_t style, uint32_t pass)
{
    if (style & cblk_style::kTermAll) return true;
    if (style & cblk_style::kBypass) {
        if (pass < 9) return false;
        if (pass == 9) return true;
        return (pass - 10) % 3 != 0;
    }
    return false;
}

/** A valid pass table of random lengths (sometimes long: Lblock growth, multi-byte PLT lengths). */
EncodedCodeBlock synthetic_block(std::mt19937 &rng, uint8_t style)
{
    EncodedCodeBlock b;
    const uint32_t kind = rng() % 8;
    const uint32_t passes = kind == 0 ? 0 : kind == 1 ? 1 + rng() % 3 : rng() % 48;
    uint32_t end = 0;
    for (uint32_t p = 0; p < passes; ++p) {
        const uint32_t r = rng() % 24;
        end += r == 0 ? 0 : r == 1 ? 300 + rng() % 3000 : rng() % 70;
        PassInfo info;
        info.end = end;
        info.terminated = ends_segment(style, p) || p + 1 == passes;
        b.passes.push_back(info);
    }
    b.data.resize(end);
    for (auto &v : b.data) v = static_cast<uint8_t>(rng());
    b.zero_bitplanes = static_cast<uint8_t>(rng() % 20);
    return b;
}

/** A block coded by the CPU Tier-1 from random indices. */
EncodedCodeBlock tier1_block(std::mt19937 &rng, const TileLayout &layout, const CodeBlock &cb, uint8_t style)
{
    const uint32_t w = cb.rect.width(), h = cb.rect.height();
    std::vector<int32_t> coeffs(size_t{w} * h);
    const uint32_t bits = rng() % 5 == 0 ? 0 : rng() % 11;
    for (auto &v : coeffs) {
        const int32_t m = bits ? int32_t(rng() % (1u << bits)) >> (rng() % 4) : 0;
        v = rng() % 2 ? -m : m;
    }
    Tier1EncodeParams p;
    p.orientation = layout.components[cb.component].resolutions[cb.resolution].bands[cb.band].orientation;
    p.style = style;
    p.num_bitplanes = 12;
    EncodedCodeBlock out;
    encode_code_block(coeffs.data(), w, w, h, p, out);
    return out;
}

Quantization quant_for(uint8_t levels, uint8_t guard)
{
    Quantization q;
    q.style = Quantization::kNone;
    q.guard_bits = guard;
    q.steps.resize(3 * size_t{levels} + 1);
    for (size_t i = 0; i < q.steps.size(); ++i) q.steps[i].exponent = static_cast<uint8_t>(9 + i % 3);
    return q;
}

/** Cumulative truncation points: non-decreasing, at most 164 new passes a layer, some blocks late. */
void random_passes(std::mt19937 &rng, Frame &f)
{
    const uint32_t L = f.plan.cod.layers;
    f.passes.assign(size_t{f.num_blocks} * L, 0);
    const uint32_t mode = rng() % 6;  // 0: everything in layer 0; 1: nothing; else random
    uint32_t b = 0;
    for (const auto &tile : f.blocks) {
        for (const EncodedCodeBlock &cb : tile) {
            const uint32_t n = static_cast<uint32_t>(cb.passes.size());
            uint32_t cum = 0;
            for (uint32_t l = 0; l < L; ++l) {
                if (mode == 0)
                    cum = n;
                else if (mode != 1 && rng() % 3 != 0)
                    cum += rng() % (n - cum + 1);
                if (l + 1 == L && mode >= 4) cum = n;
                f.passes[size_t{b} * L + l] = static_cast<uint16_t>(cum);
            }
            ++b;
        }
    }
}

struct FrameOptions {
    bool real_tier1 = false;
    bool dci_4k = false;
    bool small = true;
};

/** A random frame; false when the CPU would refuse its tile-part split (more than 255). */
bool random_frame(std::mt19937 &rng, const FrameOptions &opt, Frame &f)
{
    f = Frame();
    EncoderPlan &plan = f.plan;
    ImageSize &siz = plan.siz;
    const uint32_t ncomp = opt.dci_4k ? 3 : 1 + rng() % 4;
    const bool subsample = !opt.dci_4k && rng() % 3 == 0;
    const uint32_t maxdim = opt.small ? 90 : 300;
    siz.x0 = rng() % 4 == 0 ? rng() % 9 : 0;
    siz.y0 = rng() % 4 == 0 ? rng() % 9 : 0;
    siz.width = siz.x0 + 1 + rng() % maxdim;
    siz.height = siz.y0 + 1 + rng() % maxdim;
    if (opt.dci_4k || rng() % 2) {
        siz.tile_x0 = siz.tile_y0 = 0;
        siz.tile_width = siz.width;
        siz.tile_height = siz.height;
    } else {
        siz.tile_x0 = rng() % (siz.x0 + 1);
        siz.tile_y0 = rng() % (siz.y0 + 1);
        siz.tile_width = 8 + rng() % 60;
        siz.tile_height = 8 + rng() % 60;
    }
    for (uint32_t c = 0; c < ncomp; ++c) {
        ComponentSize cs;
        cs.precision = opt.dci_4k ? 12 : 8;
        if (subsample && c > 0) {
            cs.dx = static_cast<uint8_t>(1 + rng() % 2);
            cs.dy = static_cast<uint8_t>(1 + rng() % 2);
        }
        siz.components.push_back(cs);
    }
    CodingStyle &cod = plan.cod;
    ComponentCoding &cc = cod.component;
    static const uint8_t styles[] = {0,
                                     cblk_style::kBypass,
                                     cblk_style::kTermAll,
                                     cblk_style::kBypass | cblk_style::kTermAll,
                                     cblk_style::kReset | cblk_style::kPredictableTermination,
                                     cblk_style::kVerticallyCausal | cblk_style::kSegmentationSymbols,
                                     cblk_style::kBypass | cblk_style::kPredictableTermination};
    if (opt.dci_4k) {
        cod.layers = 1;
        cod.progression = kCPRL;
        cc.levels = static_cast<uint8_t>(3 + rng() % 4);
        cc.cblk_width_log2 = cc.cblk_height_log2 = 5;
        cc.precincts_defined = true;
        cc.precinct_width_log2.fill(rng() % 2 ? 8 : 4);
        cc.precinct_height_log2.fill(rng() % 2 ? 8 : 4);
        cc.precinct_width_log2[0] = cc.precinct_height_log2[0] = 3;
        cc.cblk_style = 0;
        plan.poc.push_back({0, 0, 1, cc.levels, 3, kCPRL});
        plan.poc.push_back({cc.levels, 0, 1, static_cast<uint8_t>(cc.levels + 1), 3, kCPRL});
        plan.tile_parts = J2KC_TILE_PARTS_DCI_4K;
        plan.tlm = true;
    } else {
        cod.layers = static_cast<uint16_t>(1 + rng() % 5);
        cod.progression = static_cast<uint8_t>(rng() % 5);
        cod.sop = rng() % 2;
        cod.eph = rng() % 2;
        cc.levels = static_cast<uint8_t>(rng() % 5);
        cc.cblk_width_log2 = static_cast<uint8_t>(2 + rng() % 5);
        cc.cblk_height_log2 = static_cast<uint8_t>(2 + rng() % 5);
        cc.cblk_style = styles[rng() % 7];
        if (rng() % 2) {
            cc.precincts_defined = true;
            for (int r = 0; r <= cc.levels; ++r) {
                cc.precinct_width_log2[r] = static_cast<uint8_t>((r ? 1 : 0) + rng() % 6);
                cc.precinct_height_log2[r] = static_cast<uint8_t>((r ? 1 : 0) + rng() % 6);
            }
        }
        if (rng() % 3 == 0) {
            const uint32_t entries = 1 + rng() % 3;
            for (uint32_t e = 0; e < entries; ++e) {
                ProgressionChange p;
                p.resolution_start = static_cast<uint8_t>(rng() % (cc.levels + 1));
                p.resolution_end = static_cast<uint8_t>(p.resolution_start + 1 + rng() % (cc.levels + 1));
                p.component_start = static_cast<uint16_t>(rng() % ncomp);
                p.component_end = static_cast<uint16_t>(p.component_start + 1 + rng() % ncomp);
                p.layer_end = static_cast<uint16_t>(1 + rng() % cod.layers);
                p.progression = static_cast<uint8_t>(rng() % 5);
                plan.poc.push_back(p);
            }
        }
        plan.tile_parts = static_cast<j2kc_tile_parts>(rng() % 4);
        plan.tlm = rng() % 2;
        plan.plt = rng() % 2;
        if (rng() % 4 == 0) plan.comment = "gpu tier2 test";
    }
    plan.quant.assign(ncomp, quant_for(cc.levels, 2));
    if (ncomp > 1 && rng() % 2) plan.quant[1] = quant_for(cc.levels, 3);  // a QCC
    f.component_sizes = rng() % 2;
    if (f.component_sizes) plan.component_bytes = uint64_t{1} << 40;

    const uint32_t tiles = siz.num_tiles();
    if (tiles > 40) return false;
    f.layouts.resize(tiles);
    f.blocks.resize(tiles);
    for (uint32_t t = 0; t < tiles; ++t) {
        f.layouts[t] = build_partition(siz, t, std::vector<ComponentCoding>(ncomp, cc));
        const TileLayout &l = f.layouts[t];
        // The CPU refuses more than 255 tile-parts in a tile.
        const auto order = packet_order(l, cod.layers, cod.progression, plan.poc);
        std::vector<PacketRecord> records(order.size());
        for (size_t p = 0; p < order.size(); ++p) records[p].id = order[p];
        try {
            split_tile_parts(plan, records);
        } catch (const Error &) {
            return false;
        }
        for (const CodeBlock &cb : l.code_blocks)
            f.blocks[t].push_back(opt.real_tier1 ? tier1_block(rng, l, cb, cc.cblk_style)
                                                 : synthetic_block(rng, cc.cblk_style));
        f.num_blocks += static_cast<uint32_t>(l.code_blocks.size());
    }
    random_passes(rng, f);
    f.what = "tiles " + std::to_string(tiles) + " comps " + std::to_string(ncomp) + " levels " +
             std::to_string(cc.levels) + " layers " + std::to_string(cod.layers) + " prog " +
             std::to_string(cod.progression) + " poc " + std::to_string(plan.poc.size()) + " sop " +
             std::to_string(cod.sop) + " eph " + std::to_string(cod.eph) + " plt " + std::to_string(plan.plt) +
             " tlm " + std::to_string(plan.tlm) + " parts " + std::to_string(plan.tile_parts) + " style " +
             std::to_string(cc.cblk_style) + " blocks " + std::to_string(f.num_blocks);
    return true;
}

// ---------------------------------------------------------------- CPU path

FrameBlocks frame_blocks(const Frame &f)
{
    return collect_blocks(
        f.plan, f.layouts.size(), [&](uint32_t t) -> const TileLayout & { return f.layouts[t]; },
        [&](uint32_t t) -> const std::vector<EncodedCodeBlock> & { return f.blocks[t]; });
}

struct Reference {
    PcrdSizes sizes;
    std::vector<uint8_t> codestream;
};

Reference cpu_reference(const Frame &f, const uint16_t *passes)
{
    const FrameBlocks fb = frame_blocks(f);
    std::vector<EncodedTilePackets> packets(f.layouts.size());
    Reference r;
    r.sizes = fb.exact_size(passes, packets);
    r.codestream = assemble_codestream(f.plan, packets);
    return r;
}

std::vector<const TileLayout *> layout_ptrs(const Frame &f)
{
    std::vector<const TileLayout *> v;
    for (const TileLayout &l : f.layouts) v.push_back(&l);
    return v;
}

/** What the encoder passes to Tier2Gpu::prepare(), from its plan. */
Tier2GpuConfig config_for(const Frame &f)
{
    const RateSetup setup = make_rate_setup(f.plan, layout_ptrs(f));
    Tier2GpuConfig c;
    c.packets = setup.packet_params;
    c.plt = f.plan.plt;
    c.component_sizes = f.plan.component_bytes != 0;
    c.tile_part_packets = setup.tile_part_packets;
    c.main_header = main_header_bytes(f.plan, setup.tile_parts);
    return c;
}

/** The frame's blocks as the flat arrays of GpuBlocks (host copies). */
struct FlatBlocks {
    std::vector<uint8_t> bytes;
    std::vector<uint64_t> byte_offset;
    std::vector<uint32_t> pass_offset, pass_end, num_passes;
    std::vector<uint8_t> pass_terminated, zero_bitplanes;
};

FlatBlocks flatten(const Frame &f, std::mt19937 &rng, bool misalign)
{
    FlatBlocks fl;
    for (const auto &tile : f.blocks) {
        for (const EncodedCodeBlock &cb : tile) {
            // 16-byte aligned starts, or any start (the copy's unaligned paths).
            size_t at = (fl.bytes.size() + 15) & ~size_t{15};
            if (misalign) at += rng() % 16;
            fl.bytes.resize(at);
            fl.byte_offset.push_back(at);
            fl.bytes.insert(fl.bytes.end(), cb.data.begin(), cb.data.end());
            fl.pass_offset.push_back(static_cast<uint32_t>(fl.pass_end.size()));
            for (const PassInfo &p : cb.passes) {
                fl.pass_end.push_back(p.end);
                fl.pass_terminated.push_back(p.terminated);
            }
            // Gaps in the pass arrays too, as the GPU Tier-1 reserves a maximum per block.
            for (uint32_t k = rng() % 3; k > 0; --k) {
                fl.pass_end.push_back(0xDEADBEEF);
                fl.pass_terminated.push_back(7);
            }
            fl.num_passes.push_back(static_cast<uint32_t>(cb.passes.size()));
            fl.zero_bitplanes.push_back(cb.zero_bitplanes);
        }
    }
    fl.bytes.resize(fl.bytes.size() + 16);
    return fl;
}

// ---------------------------------------------------------------- host model of the kernels

struct HostModel {
    T2gHostTables h;
    T2gTables t;
    std::vector<TagTreeNode> inclusion, zbp;
    std::vector<uint8_t> lblock;
    std::vector<uint32_t> header_len, packet_len, contrib_rel, psot, status, first_included, run_steps, run_included;
    std::vector<uint64_t> cell_len, cell_off, sums, run_body, run_entry;
    T2gScratch s;

    HostModel(const Tier2GpuConfig &config, const std::vector<const TileLayout *> &layouts)
        : h(build_t2g_tables(config, layouts))
    {
        t = h.scalars;
        t.precincts = h.precincts.data();
        t.bands = h.bands.data();
        t.precinct_packets = h.precinct_packets.data();
        t.packets = h.packets.data();
        t.tile_parts = h.tile_parts.data();
        t.block_precinct = h.block_precinct.data();
        t.runs = h.runs.data();
        inclusion.resize(t.num_nodes);
        zbp.resize(t.num_nodes);
        lblock.resize(t.num_blocks);
        header_len.resize(t.num_packets);
        packet_len.resize(t.num_packets);
        contrib_rel.resize(size_t{t.num_blocks} * t.layers);
        psot.resize(t.num_tile_parts);
        cell_len = h.fixed_cell_len;
        cell_off.resize(t.num_cells);
        sums.resize(2 + t.num_components);
        status.resize(4);
        first_included.resize(t.num_nodes);
        run_steps.resize(size_t{t.num_runs} * kPacketHeaderPhases);
        run_body.resize(t.num_runs);
        run_included.resize(t.num_runs);
        run_entry.resize(t.num_runs);
        s.run_entry = run_entry.data();
        s.first_included = first_included.data();
        s.run_steps = run_steps.data();
        s.run_body = run_body.data();
        s.run_included = run_included.data();
        s.inclusion = inclusion.data();
        s.zero_bitplanes = zbp.data();
        s.lblock = lblock.data();
        s.header_len = header_len.data();
        s.packet_len = packet_len.data();
        s.contrib_rel = contrib_rel.data();
        s.psot = psot.data();
        s.cell_len = cell_len.data();
        s.cell_off = cell_off.data();
        s.sums = sums.data();
        s.status = status.data();
    }

    static T2gBlocks view(const FlatBlocks &fl)
    {
        T2gBlocks b;
        b.bytes = fl.bytes.data();
        b.byte_offset = fl.byte_offset.data();
        b.pass_offset = fl.pass_offset.data();
        b.pass_end = fl.pass_end.data();
        b.pass_terminated = fl.pass_terminated.data();
        b.num_passes = fl.num_passes.data();
        b.zero_bitplanes = fl.zero_bitplanes.data();
        return b;
    }

    void check()
    {
        if (status[0]) fail(t2g_error_status(status[0]), "%s", t2g_error_message(status.data()).c_str());
    }

    /** The counting kernels, with the parallel header count where the device takes it (one layer). */
    void count(const FlatBlocks &fl, const uint16_t *passes) { count_with(fl, passes, t.layers == 1); }

    void count_with(const FlatBlocks &fl, const uint16_t *passes, bool parallel)
    {
        std::fill(status.begin(), status.end(), 0);
        std::fill(sums.begin(), sums.end(), 0);
        const T2gBlocks b = view(fl);
        if (parallel) {
            count_first_packets(b, passes);
        } else {
            for (uint32_t i = 0; i < t.num_precincts; ++i) t2g_precinct_packets(t, b, passes, s, i, nullptr);
        }
        for (uint32_t k = 0; k < t.num_tile_parts && !status[0]; ++k) t2g_tile_part_count(t, s, k);
        check();
    }

    /** The three kernels of tier2_header_count_core.h, a precinct's runs walked in one share. */
    void count_first_packets(const T2gBlocks &b, const uint16_t *passes)
    {
        for (uint32_t bi = 0; bi < t.num_bands; ++bi) {
            const uint32_t levels = t2g_tree_levels(t.bands[bi]);
            for (uint32_t level = 0; level < levels; ++level) {
                const TagTreeLevel l = t2g_tree_level(t.bands[bi], level);
                for (uint32_t i = 0; i < l.width * l.height; ++i) t2g_first_packet_node(t, b, passes, s, bi, level, i);
            }
        }
        for (uint32_t r = 0; r < t.num_runs; ++r) {
            const T2gRun run = t.runs[r];
            if (t.precincts[run.precinct].layers_emitted == 0) continue;
            T2gPhaseWalk walks[kPacketHeaderPhases];
            for (uint32_t p = 0; p < kPacketHeaderPhases; ++p) walks[p] = {p, 0};
            uint64_t at = 0;
            uint32_t any = 0;
            for (uint32_t j = 0; j < run.count; ++j) {
                uint32_t steps[kPacketHeaderPhases];
                T2gBlockCount c;
                for (uint32_t p = 0; p < kPacketHeaderPhases; ++p) {
                    PacketHeaderWriter w = PacketHeaderWriter::at_phase(p);
                    c = t2g_first_packet_block(t, b, passes, s, run, run.first_leaf + j, w);
                    steps[p] = T2gPhaseWalk::of(w).step();
                }
                for (T2gPhaseWalk &walk : walks) walk.take(steps);
                contrib_rel[t.bands[run.band].first_block + run.first_leaf + j] = static_cast<uint32_t>(at);
                at += c.failed ? 0 : c.body;
                any |= c.included;
            }
            for (uint32_t p = 0; p < kPacketHeaderPhases; ++p)
                run_steps[size_t{r} * kPacketHeaderPhases + p] = walks[p].step();
            run_body[r] = at;
            run_included[r] = any;
        }
        if (status[0]) return;
        for (uint32_t pi = 0; pi < t.num_precincts; ++pi) {
            const T2gPrecinct prec = t.precincts[pi];
            if (prec.layers_emitted == 0) continue;
            bool any = false;
            for (uint32_t r = prec.run_begin; r < prec.run_begin + prec.num_runs; ++r) any |= run_included[r] != 0;
            T2gPhaseWalk header{t2g_first_packet_phase(), 0};
            uint64_t total = 0;
            for (uint32_t r = prec.run_begin; r < prec.run_begin + prec.num_runs; ++r) {
                run_entry[r] = any ? header.packed() : kT2gNoEntry;
                header.take(run_steps.data() + size_t{r} * kPacketHeaderPhases);
                const T2gRun run = t.runs[r];
                for (uint32_t j = 0; j < run.count; ++j)
                    contrib_rel[t.bands[run.band].first_block + run.first_leaf + j] += static_cast<uint32_t>(total);
                total += run_body[r];
            }
            t2g_store_packet_length(t, s, t.precinct_packets[prec.packet_begin], t2g_first_packet_header(any, header),
                                    total);
        }
    }

    PcrdSizes measure(const FlatBlocks &fl, const uint16_t *passes, bool components)
    {
        count(fl, passes);
        PcrdSizes out;
        out.total = sums[0];
        if (components) out.component.assign(sums.begin() + 1, sums.begin() + 1 + t.num_components);
        return out;
    }

    /** The two header kernels of one layer: each precinct's header opened, then each code-block's bits OR-ed in. */
    void write_first_packets(const T2gBlocks &b, const uint16_t *passes, uint8_t *out)
    {
        const uint32_t sop = t.sop ? kT2gSopBytes : 0, eph = t.eph ? kT2gEphBytes : 0;
        for (uint32_t pi = 0; pi < t.num_precincts; ++pi) {
            const T2gPrecinct prec = t.precincts[pi];
            if (prec.layers_emitted == 0) continue;
            const uint32_t pk = t.precinct_packets[prec.packet_begin];
            uint8_t *at = out + cell_off[t.packets[pk].cell];
            const uint32_t header = header_len[pk] - eph;
            bool any = false;
            for (uint32_t r = prec.run_begin; r < prec.run_begin + prec.num_runs; ++r) any |= run_included[r] != 0;
            std::fill(at + sop, at + sop + header, 0);
            t2g_packet_markers(t, t.packets[pk], at, header);
            t2g_first_packet_open(at + sop, header, any);
        }
        for (uint32_t r = 0; r < t.num_runs; ++r) {
            const T2gRun run = t.runs[r];
            const T2gPrecinct prec = t.precincts[run.precinct];
            if (prec.layers_emitted == 0 || run_entry[r] == kT2gNoEntry) continue;
            const uint32_t pk = t.precinct_packets[prec.packet_begin];
            T2gPhaseWalk walk = T2gPhaseWalk::unpacked(run_entry[r]);
            for (uint32_t j = 0; j < run.count; ++j) {
                uint32_t steps[kPacketHeaderPhases];
                for (uint32_t p = 0; p < kPacketHeaderPhases; ++p) {
                    PacketHeaderWriter w = PacketHeaderWriter::at_phase(p);
                    t2g_first_packet_block(t, b, passes, s, run, run.first_leaf + j, w);
                    steps[p] = T2gPhaseWalk::of(w).step();
                }
                t2g_first_packet_block_write(t, b, passes, s, run, run.first_leaf + j, walk,
                                             out + cell_off[t.packets[pk].cell] + sop, header_len[pk] - eph);
                walk.take(steps);
            }
        }
    }

    std::vector<uint8_t> write(const FlatBlocks &fl, const uint16_t *passes)
    {
        count(fl, passes);
        uint64_t off = 0;
        for (uint32_t c = 0; c < t.num_cells; ++c) {
            cell_off[c] = off;
            off += cell_len[c];
        }
        std::vector<uint8_t> out(off, 0xAB);
        std::copy(h.main_header.begin(), h.main_header.end(), out.begin());
        for (uint32_t k = 0; k < t.num_tile_parts; ++k) t2g_tile_part_write(t, s, k, out.data());
        const T2gBlocks b = view(fl);
        if (t.layers == 1)
            write_first_packets(b, passes, out.data());
        else
            for (uint32_t i = 0; i < t.num_precincts; ++i) t2g_precinct_packets(t, b, passes, s, i, out.data());
        for (uint32_t cb = 0; cb < t.num_blocks; ++cb) {
            for (uint32_t l = 0; l < t.layers; ++l) {
                const T2gCopy c = t2g_contribution(t, b, passes, s, cb, l);
                if (c.length) std::memcpy(out.data() + c.dst, fl.bytes.data() + c.src, c.length);
            }
        }
        check();
        return out;
    }
};

std::string first_difference(const std::vector<uint8_t> &a, const std::vector<uint8_t> &b)
{
    const size_t n = std::min(a.size(), b.size());
    for (size_t i = 0; i < n; ++i)
        if (a[i] != b[i])
            return "first difference at byte " + std::to_string(i) + " of " + std::to_string(a.size()) + "/" +
                   std::to_string(b.size()) + ": " + std::to_string(a[i]) + " vs " + std::to_string(b[i]);
    return a.size() == b.size() ? "equal" : "sizes " + std::to_string(a.size()) + " vs " + std::to_string(b.size());
}

void expect_sizes(const PcrdSizes &got, const PcrdSizes &want, const std::string &what)
{
    EXPECT_EQ(got.total, want.total) << what;
    EXPECT_EQ(got.component, want.component) << what;
}

// ---------------------------------------------------------------- CPU tests of the model

TEST(Tier2GpuModel, MatchesCpuOnRandomFrames)
{
    std::mt19937 rng(20261122);
    int done = 0;
    for (int iter = 0; done < 160 && iter < 1000; ++iter) {
        Frame f;
        FrameOptions opt;
        opt.real_tier1 = iter % 4 == 0;
        if (!random_frame(rng, opt, f)) continue;
        ++done;
        const Tier2GpuConfig config = config_for(f);
        HostModel model(config, layout_ptrs(f));
        const FlatBlocks fl = flatten(f, rng, iter % 2);
        for (int sel = 0; sel < 2; ++sel) {
            if (sel) random_passes(rng, f);
            const Reference ref = cpu_reference(f, f.passes.data());
            expect_sizes(model.measure(fl, f.passes.data(), f.component_sizes), ref.sizes, f.what);
            const std::vector<uint8_t> got = model.write(fl, f.passes.data());
            ASSERT_EQ(got, ref.codestream) << f.what << ": " << first_difference(got, ref.codestream);
            EXPECT_EQ(model.h.fixed_bytes + ref.sizes.total, ref.codestream.size()) << f.what;
        }
    }
    EXPECT_GE(done, 100);
}

TEST(Tier2GpuModel, DciFourKPocAndTileParts)
{
    std::mt19937 rng(4096);
    int done = 0;
    for (int iter = 0; done < 12 && iter < 100; ++iter) {
        Frame f;
        FrameOptions opt;
        opt.dci_4k = true;
        opt.small = false;
        opt.real_tier1 = iter % 3 == 0;
        if (!random_frame(rng, opt, f)) continue;
        ++done;
        const Tier2GpuConfig config = config_for(f);
        HostModel model(config, layout_ptrs(f));
        EXPECT_EQ(model.t.num_tile_parts, 6u) << f.what;  // component x {2K, 4K level}
        const FlatBlocks fl = flatten(f, rng, true);
        const Reference ref = cpu_reference(f, f.passes.data());
        expect_sizes(model.measure(fl, f.passes.data(), f.component_sizes), ref.sizes, f.what);
        const std::vector<uint8_t> got = model.write(fl, f.passes.data());
        ASSERT_EQ(got, ref.codestream) << f.what << ": " << first_difference(got, ref.codestream);
    }
}

/** A tile-part of ~70000 packets: PLT splits into segments at 65535 as write_plt does. */
Frame many_packets_frame(std::mt19937 &rng, bool sop)
{
    Frame f;
    EncoderPlan &plan = f.plan;
    plan.siz.width = 300;
    plan.siz.height = 240;
    plan.siz.tile_width = 300;
    plan.siz.tile_height = 240;
    plan.siz.components.resize(1);
    plan.cod.layers = 1;
    plan.cod.sop = sop;
    ComponentCoding &cc = plan.cod.component;
    cc.levels = 0;
    cc.cblk_width_log2 = cc.cblk_height_log2 = 2;
    cc.precincts_defined = true;
    cc.precinct_width_log2[0] = 0;
    cc.precinct_height_log2[0] = 0;
    plan.quant.assign(1, quant_for(0, 2));
    plan.plt = true;
    plan.tlm = true;
    f.layouts.push_back(build_partition(plan.siz, 0, std::vector<ComponentCoding>(1, cc)));
    f.blocks.resize(1);
    for (size_t i = 0; i < f.layouts[0].code_blocks.size(); ++i) {
        EncodedCodeBlock b;
        const uint32_t kind = rng() % 50;
        if (kind < 3) {  // a few long packets: 2- and 3-byte PLT lengths
            b.passes.push_back({uint32_t(kind == 0 ? 20000 + rng() % 1000 : 100 + rng() % 300), 0, true});
            b.data.resize(b.passes[0].end);
            for (auto &v : b.data) v = static_cast<uint8_t>(rng());
        }
        f.blocks[0].push_back(b);
    }
    f.num_blocks = static_cast<uint32_t>(f.blocks[0].size());
    f.passes.assign(f.num_blocks, 0);
    for (uint32_t b = 0; b < f.num_blocks; ++b) f.passes[b] = static_cast<uint16_t>(f.blocks[0][b].passes.size());
    f.what = "many packets";
    return f;
}

TEST(Tier2GpuModel, PltSplitsLikeTheCpu)
{
    std::mt19937 rng(65535);
    for (bool sop : {false, true}) {
        Frame f = many_packets_frame(rng, sop);
        const Tier2GpuConfig config = config_for(f);
        HostModel model(config, layout_ptrs(f));
        ASSERT_GT(model.t.num_packets, 65535u);
        const FlatBlocks fl = flatten(f, rng, true);
        const Reference ref = cpu_reference(f, f.passes.data());
        expect_sizes(model.measure(fl, f.passes.data(), false), ref.sizes, f.what);
        const std::vector<uint8_t> got = model.write(fl, f.passes.data());
        ASSERT_EQ(got, ref.codestream) << first_difference(got, ref.codestream);
    }
}

/** Truncation points the CPU rejects, for the model and the device. */
std::vector<uint16_t> bad_passes(std::mt19937 &rng, const Frame &f, int kind)
{
    std::vector<uint16_t> p = f.passes;
    const uint32_t L = f.plan.cod.layers;
    uint32_t b = 0;
    for (const auto &tile : f.blocks)
        for (const EncodedCodeBlock &cb : tile) {
            if (cb.passes.size() >= 2 && rng() % 4 == 0) {
                if (kind == 0)
                    p[size_t{b} * L + L - 1] = static_cast<uint16_t>(cb.passes.size() + 1);  // too many
                else if (L > 1) {                                                            // decreasing
                    p[size_t{b} * L] = static_cast<uint16_t>(cb.passes.size());
                    p[size_t{b} * L + 1] = 1;
                }
                return p;
            }
            ++b;
        }
    return {};
}

TEST(Tier2GpuModel, RejectsWhatTheCpuRejects)
{
    std::mt19937 rng(7);
    int done = 0;
    for (int iter = 0; done < 20 && iter < 400; ++iter) {
        Frame f;
        if (!random_frame(rng, FrameOptions(), f)) continue;
        const std::vector<uint16_t> bad = bad_passes(rng, f, iter % 2);
        if (bad.empty()) continue;
        ++done;
        const Tier2GpuConfig config = config_for(f);
        HostModel model(config, layout_ptrs(f));
        const FlatBlocks fl = flatten(f, rng, false);
        bool cpu_threw = false;
        try {
            cpu_reference(f, bad.data());
        } catch (const Error &) {
            cpu_threw = true;
        }
        bool model_threw = false;
        try {
            model.measure(fl, bad.data(), false);
        } catch (const Error &e) {
            model_threw = true;
            EXPECT_EQ(e.status(), J2KC_ERR_INVALID_ARG);
        }
        // A POC may leave the bad layer out of the codestream: then neither complains.
        EXPECT_EQ(cpu_threw, model_threw) << f.what;
        // And the good selection still works after a rejected one.
        const Reference ref = cpu_reference(f, f.passes.data());
        ASSERT_EQ(model.write(fl, f.passes.data()), ref.codestream) << f.what;
    }
    EXPECT_GE(done, 10);
}

/**
 * A block whose header bits run to 1s, for 0xFF bytes and their stuffed
 * bits: segment lengths of all 1s (some long: Lblock's comma code), often
 * 37 passes or more (Table B.4's longest codes), zero bit-planes mostly
 * `zero_bitplanes` (tag-tree 1s); an HT block has at most its three passes.
 */
EncodedCodeBlock ones_block(std::mt19937 &rng, uint8_t style, uint8_t zero_bitplanes)
{
    const bool ht = (style & cblk_style::kHighThroughput) != 0;
    EncodedCodeBlock b;
    const uint32_t kind = rng() % 6;
    const uint32_t passes = kind == 0 ? 0 : ht ? 1 + rng() % 3 : kind == 1 ? 37 + rng() % 128 : 1 + rng() % 12;
    uint32_t end = 0;
    for (uint32_t p = 0; p < passes; ++p) {
        end += (1u << (rng() % 16 == 0 ? 12 : rng() % 9)) - 1;
        PassInfo info;
        info.end = end;
        info.terminated = ht ? p == 0 || p == 2 || p + 1 == passes : ends_segment(style, p) || p + 1 == passes;
        b.passes.push_back(info);
    }
    b.data.assign(end, 0xFF);
    b.zero_bitplanes = rng() % 4 == 0 ? static_cast<uint8_t>(rng() % 30) : zero_bitplanes;
    return b;
}

/** One layer, and precincts of thousands of 4x4 code-blocks (no precinct partition). */
Frame many_blocks_frame(std::mt19937 &rng)
{
    Frame f;
    EncoderPlan &plan = f.plan;
    plan.siz.width = plan.siz.tile_width = 200 + rng() % 80;
    plan.siz.height = plan.siz.tile_height = 200 + rng() % 80;
    plan.siz.components.resize(1);
    plan.cod.layers = 1;
    plan.cod.sop = rng() % 2;
    plan.cod.eph = rng() % 2;
    ComponentCoding &cc = plan.cod.component;
    cc.levels = 1;
    cc.cblk_width_log2 = cc.cblk_height_log2 = 2;
    plan.quant.assign(1, quant_for(1, 2));
    f.layouts.push_back(build_partition(plan.siz, 0, std::vector<ComponentCoding>(1, cc)));
    f.blocks.assign(1, std::vector<EncodedCodeBlock>(f.layouts[0].code_blocks.size()));
    f.num_blocks = static_cast<uint32_t>(f.blocks[0].size());
    f.what = "many blocks";
    return f;
}

/** Packet-header bytes of value 0xFF in a codestream the model wrote. */
uint64_t header_ff_bytes(const HostModel &m, const std::vector<uint8_t> &cs)
{
    const uint32_t sop = m.t.sop ? kT2gSopBytes : 0, eph = m.t.eph ? kT2gEphBytes : 0;
    uint64_t n = 0;
    for (uint32_t pk = 0; pk < m.t.num_packets; ++pk) {
        const uint64_t at = m.cell_off[m.t.packets[pk].cell] + sop;
        n += std::count(cs.begin() + at, cs.begin() + at + m.header_len[pk] - eph, 0xFF);
    }
    return n;
}

TEST(Tier2GpuModel, ParallelHeadersAreTheSerialCoders)
{
    std::mt19937 rng(0xFF);
    static const uint8_t styles[] = {cblk_style::kHighThroughput, cblk_style::kTermAll, 0, cblk_style::kBypass};
    int done = 0;
    uint64_t ff = 0, empty = 0, long_precincts = 0;
    for (int iter = 0; done < 30 && iter < 5000; ++iter) {
        Frame f;
        FrameOptions opt;
        opt.small = iter % 3 != 0;
        if (iter % 4 == 0)
            f = many_blocks_frame(rng);
        else if (!random_frame(rng, opt, f) || f.plan.cod.layers != 1)
            continue;
        ++done;
        const uint8_t style = styles[rng() % 4];
        f.plan.cod.component.cblk_style = style;
        const uint8_t zero_bitplanes = static_cast<uint8_t>(rng() % 8);
        for (auto &tile : f.blocks)
            for (EncodedCodeBlock &cb : tile) cb = ones_block(rng, style, zero_bitplanes);
        random_passes(rng, f);
        HostModel model(config_for(f), layout_ptrs(f));
        const FlatBlocks fl = flatten(f, rng, false);
        model.count_with(fl, f.passes.data(), false);
        const std::vector<uint32_t> header = model.header_len, packet = model.packet_len, at = model.contrib_rel;
        model.count_with(fl, f.passes.data(), true);
        ASSERT_EQ(model.header_len, header) << f.what;
        ASSERT_EQ(model.packet_len, packet) << f.what;
        for (uint32_t cb = 0; cb < f.num_blocks; ++cb) {
            if (f.passes[cb] > 0) {
                ASSERT_EQ(model.contrib_rel[cb], at[cb]) << f.what << " block " << cb;
            }
        }
        const Reference ref = cpu_reference(f, f.passes.data());
        const std::vector<uint8_t> got = model.write(fl, f.passes.data());
        ASSERT_EQ(got, ref.codestream) << f.what << ": " << first_difference(got, ref.codestream);
        ff += header_ff_bytes(model, got);
        for (uint32_t pk = 0; pk < model.t.num_packets; ++pk)
            empty += model.header_len[pk] == 1u + (model.t.eph ? 2 : 0);
        for (uint32_t pi = 0; pi < model.t.num_precincts; ++pi) long_precincts += model.t.precincts[pi].num_runs > 8;
    }
    EXPECT_GE(done, 20);
    // The stuffing, zero-length packets and precincts of many runs were all met.
    EXPECT_GT(ff, 1000u);
    EXPECT_GT(empty, 100u);
    EXPECT_GT(long_precincts, 5u);
}

TEST(Tier2GpuTables, RejectsInconsistentConfigurations)
{
    std::mt19937 rng(11);
    Frame f;
    FrameOptions opt;
    while (!random_frame(rng, opt, f) || !f.plan.tlm || f.layouts.size() < 2) {}
    const Tier2GpuConfig good = config_for(f);
    EXPECT_NO_THROW(build_t2g_tables(good, layout_ptrs(f)));
    Tier2GpuConfig c = good;
    c.main_header = main_header_bytes(f.plan, 1);  // TLM with too few entries
    EXPECT_THROW(build_t2g_tables(c, layout_ptrs(f)), Error);
    c = good;
    c.tile_part_packets[0].push_back(1);  // one packet too many
    EXPECT_THROW(build_t2g_tables(c, layout_ptrs(f)), Error);
    c = good;
    c.packets.cblk_style.push_back(0);
    EXPECT_THROW(build_t2g_tables(c, layout_ptrs(f)), Error);
    c = good;
    c.main_header[0] = 0;
    EXPECT_THROW(build_t2g_tables(c, layout_ptrs(f)), Error);
    c = good;
    c.tile_part_packets.pop_back();
    EXPECT_THROW(build_t2g_tables(c, layout_ptrs(f)), Error);
}

// ---------------------------------------------------------------- GPU tests

bool have_device()
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return n > 0;
}

#define SKIP_WITHOUT_DEVICE() \
    if (!have_device()) GTEST_SKIP() << "no CUDA device"

template <typename T>
struct DevArray {
    T *p = nullptr;
    explicit DevArray(const std::vector<T> &v)
    {
        EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(1, v.size()) * sizeof(T)), cudaSuccess);
        if (!v.empty()) {
            EXPECT_EQ(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
        }
    }
    explicit DevArray(size_t n) { EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(1, n) * sizeof(T)), cudaSuccess); }
    ~DevArray() { cudaFree(p); }
    DevArray(const DevArray &) = delete;
    DevArray &operator=(const DevArray &) = delete;
};

struct DeviceFrame {
    DevArray<uint8_t> bytes;
    DevArray<uint64_t> byte_offset;
    DevArray<uint32_t> pass_offset, pass_end, num_passes;
    DevArray<uint8_t> pass_terminated, zero_bitplanes;
    GpuBlocks g;
    explicit DeviceFrame(const FlatBlocks &fl)
        : bytes(fl.bytes), byte_offset(fl.byte_offset), pass_offset(fl.pass_offset), pass_end(fl.pass_end),
          num_passes(fl.num_passes), pass_terminated(fl.pass_terminated), zero_bitplanes(fl.zero_bitplanes)
    {
        g.bytes = bytes.p;
        g.byte_offset = byte_offset.p;
        g.pass_offset = pass_offset.p;
        g.pass_end = pass_end.p;
        g.pass_terminated = pass_terminated.p;
        g.num_passes = num_passes.p;
        g.zero_bitplanes = zero_bitplanes.p;
        g.num_blocks = static_cast<uint32_t>(fl.num_passes.size());
    }
};

/** measure() and write() on the device against the CPU for the frame's selection. */
void check_on_device(Tier2Gpu &t2, const Frame &f, const FlatBlocks &fl, cudaStream_t stream)
{
    const DeviceFrame dev(fl);
    const DevArray<uint16_t> passes(f.passes);
    const Reference ref = cpu_reference(f, f.passes.data());
    expect_sizes(t2.measure(passes.p, dev.g, stream), ref.sizes, f.what);
    const size_t capacity = ref.codestream.size() + 64;
    DevArray<uint8_t> out(capacity);
    std::vector<uint8_t> host(capacity, 0);
    // Right after measure() on the same selection: the counting kernels can be skipped.
    const size_t n = t2.write(passes.p, dev.g, out.p, capacity, host.data(), host.size(), stream, true);
    host.resize(n);
    ASSERT_EQ(host, ref.codestream) << f.what << ": " << first_difference(host, ref.codestream);
    EXPECT_EQ(t2.fixed_bytes() + ref.sizes.total, n) << f.what;
    // And the device copy is the same (write() with no host buffer, counting again).
    ASSERT_EQ(cudaMemset(out.p, 0xEE, capacity), cudaSuccess);
    const size_t n2 = t2.write(passes.p, dev.g, out.p, capacity, nullptr, 0, stream);
    ASSERT_EQ(n2, n);
    std::vector<uint8_t> again(n);
    ASSERT_EQ(cudaMemcpy(again.data(), out.p, n, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(again, ref.codestream) << f.what;
}

TEST(GpuTier2, MatchesCpuOnRandomFrames)
{
    SKIP_WITHOUT_DEVICE();
    std::mt19937 rng(20261122);
    cudaStream_t stream;
    ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    int done = 0;
    for (int iter = 0; done < 160 && iter < 1000; ++iter) {
        Frame f;
        FrameOptions opt;
        opt.real_tier1 = iter % 4 == 0;
        if (!random_frame(rng, opt, f)) continue;
        ++done;
        Tier2Gpu t2;
        t2.prepare(config_for(f), layout_ptrs(f), stream);
        const FlatBlocks fl = flatten(f, rng, iter % 2);
        check_on_device(t2, f, fl, stream);
        random_passes(rng, f);  // a second selection on the same geometry
        check_on_device(t2, f, fl, stream);
        if (HasFatalFailure()) break;
    }
    EXPECT_GE(done, 100);
    cudaStreamDestroy(stream);
}

TEST(GpuTier2, DciFourKAndLargeFrames)
{
    SKIP_WITHOUT_DEVICE();
    std::mt19937 rng(4096);
    int done = 0;
    for (int iter = 0; done < 16 && iter < 200; ++iter) {
        Frame f;
        FrameOptions opt;
        opt.dci_4k = iter % 2 == 0;
        opt.small = false;
        opt.real_tier1 = iter % 3 == 0;
        if (!random_frame(rng, opt, f)) continue;
        ++done;
        Tier2Gpu t2;
        t2.prepare(config_for(f), layout_ptrs(f), nullptr);
        check_on_device(t2, f, flatten(f, rng, iter % 4 < 2), nullptr);
        if (HasFatalFailure()) break;
    }
}

TEST(GpuTier2, PltSplitsLikeTheCpu)
{
    SKIP_WITHOUT_DEVICE();
    std::mt19937 rng(65535);
    for (bool sop : {false, true}) {
        const Frame f = many_packets_frame(rng, sop);
        Tier2Gpu t2;
        t2.prepare(config_for(f), layout_ptrs(f), nullptr);
        check_on_device(t2, f, flatten(f, rng, sop), nullptr);
    }
}

TEST(GpuTier2, ErrorsAreReportedAndLeaveTheEncoderUsable)
{
    SKIP_WITHOUT_DEVICE();
    std::mt19937 rng(7);
    int done = 0;
    for (int iter = 0; done < 10 && iter < 400; ++iter) {
        Frame f;
        if (!random_frame(rng, FrameOptions(), f)) continue;
        const std::vector<uint16_t> bad = bad_passes(rng, f, iter % 2);
        if (bad.empty()) continue;
        bool cpu_threw = false;
        try {
            cpu_reference(f, bad.data());
        } catch (const Error &) {
            cpu_threw = true;
        }
        if (!cpu_threw) continue;
        ++done;
        Tier2Gpu t2;
        t2.prepare(config_for(f), layout_ptrs(f), nullptr);
        const FlatBlocks fl = flatten(f, rng, false);
        const DeviceFrame dev(fl);
        const DevArray<uint16_t> d_bad(bad);
        const Reference ref = cpu_reference(f, f.passes.data());
        DevArray<uint8_t> out(ref.codestream.size());
        try {
            t2.measure(d_bad.p, dev.g, nullptr);
            ADD_FAILURE() << "bad selection accepted: " << f.what;
        } catch (const Error &e) {
            EXPECT_EQ(e.status(), J2KC_ERR_INVALID_ARG) << e.what();
        }
        EXPECT_THROW(t2.write(d_bad.p, dev.g, out.p, ref.codestream.size(), nullptr, 0, nullptr), Error);
        // Too small an output buffer: LIMIT, and nothing written past it (a guard region stays intact).
        const DevArray<uint16_t> d_good(f.passes);
        const size_t small = ref.codestream.size() / 2;
        std::vector<uint8_t> guard(ref.codestream.size(), 0x5A);
        ASSERT_EQ(cudaMemcpy(out.p, guard.data(), guard.size(), cudaMemcpyHostToDevice), cudaSuccess);
        try {
            t2.write(d_good.p, dev.g, out.p, small, nullptr, 0, nullptr);
            ADD_FAILURE() << "write into too small a buffer accepted";
        } catch (const Error &e) {
            EXPECT_EQ(e.status(), J2KC_ERR_LIMIT) << e.what();
        }
        std::vector<uint8_t> after(guard.size());
        ASSERT_EQ(cudaMemcpy(after.data(), out.p, after.size(), cudaMemcpyDeviceToHost), cudaSuccess);
        EXPECT_TRUE(std::equal(after.begin() + small, after.end(), guard.begin() + small));
        // Then the good selection still comes out right.
        check_on_device(t2, f, fl, nullptr);
    }
    EXPECT_GE(done, 5);
}

}  // namespace
