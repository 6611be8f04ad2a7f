/**
 * @file codestream_assembly.cpp
 * @brief Codestream syntax of the encoder's output (ISO/IEC 15444-1 Annex A):
 * SOC, SIZ, COD, QCD/QCC, TLM, POC, COM; per tile-part SOT, PLT, SOD and
 * packets; EOC. Marker order follows what cinema validators accept
 * (OpenJPEG's: SOC, SIZ, COD, QCD, QCC, TLM, POC, COM).
 */
#include "pipeline/codestream_assembly.h"

#include <cstring>

#include "codestream/writer.h"
#include "common/byte_io.h"
#include "common/int_math.h"
#include "common/status.h"
#include "quant/quant.h"

namespace j2kc {
namespace {

/** The key whose change starts a new tile-part. */
int64_t split_key(const EncoderPlan &plan, const PacketId &id)
{
    switch (plan.tile_parts) {
    case J2KC_TILE_PARTS_RESOLUTION: return id.resolution;
    case J2KC_TILE_PARTS_COMPONENT: return id.component;
    case J2KC_TILE_PARTS_DCI_4K:
        // Component x {r < NL, r = NL}: the embedded 2K image, then the 4K level.
        return int64_t{id.component} << 1 | (id.resolution == plan.levels() ? 1 : 0);
    default: return 0;
    }
}

bool same_quantization(const Quantization &a, const Quantization &b)
{
    if (a.style != b.style || a.guard_bits != b.guard_bits || a.steps.size() != b.steps.size()) return false;
    for (size_t i = 0; i < a.steps.size(); ++i)
        if (a.steps[i].exponent != b.steps[i].exponent || a.steps[i].mantissa != b.steps[i].mantissa) return false;
    return true;
}

int tlm_sp(const EncoderPlan &plan)
{
    // 32-bit lengths unless every tile-part is sure to fit in 16 bits: with no
    // budget nobody knows, and DCI tile-parts are far above 64 KiB anyway.
    (void)plan;
    return 1;
}

int tlm_st(const EncoderPlan &plan) { return plan.siz.num_tiles() <= 255 ? 1 : 2; }

/** The main header up to the quantisation markers. */
void write_header_to_cod(ByteWriter &w, const EncoderPlan &plan)
{
    write_soc(w);
    write_siz(w, plan.siz);
    if (plan.cap) write_cap(w, plan.cap, plan.ccap);
    write_cod(w, plan.cod);
}

/** QCD, then a QCC for each component whose planned steps differ (`quant`: those steps or their fit). */
void write_quantization(ByteWriter &w, const EncoderPlan &plan, const std::vector<Quantization> &quant)
{
    write_qcd(w, quant[0]);
    const uint32_t n = static_cast<uint32_t>(plan.siz.components.size());
    for (uint16_t c = 1; c < n; ++c)
        if (!same_quantization(plan.quant[c], plan.quant[0])) write_qcc(w, c, quant[c], n);
}

void write_main_header(ByteWriter &w, const EncoderPlan &plan, const std::vector<TilePartLength> &tlm)
{
    write_header_to_cod(w, plan);
    write_quantization(w, plan, plan.quant);
    const uint32_t n = static_cast<uint32_t>(plan.siz.components.size());
    if (plan.tlm) write_tlm(w, tlm, tlm_st(plan), tlm_sp(plan));
    if (!plan.poc.empty()) write_poc(w, plan.poc, n);
    if (!plan.comment.empty()) write_com(w, plan.comment);
}

uint64_t plt_bytes(const std::vector<PacketRecord> &packets, const TilePartSpan &span)
{
    std::vector<uint32_t> lengths;
    lengths.reserve(span.num_packets);
    for (uint32_t p = 0; p < span.num_packets; ++p) lengths.push_back(packets[span.first_packet + p].length);
    ByteWriter w;
    write_plt(w, lengths);
    return w.size();
}

uint64_t span_bytes(const std::vector<PacketRecord> &packets, const TilePartSpan &span)
{
    uint64_t bytes = 0;
    for (uint32_t p = 0; p < span.num_packets; ++p) bytes += packets[span.first_packet + p].length;
    return bytes;
}

}  // namespace

std::vector<TilePartSpan> split_tile_parts(const EncoderPlan &plan, const std::vector<PacketRecord> &packets)
{
    std::vector<TilePartSpan> spans;
    for (uint32_t p = 0; p < packets.size(); ++p) {
        const int64_t key = split_key(plan, packets[p].id);
        if (spans.empty() || key != split_key(plan, packets[spans.back().first_packet].id)) {
            spans.push_back({p, 0, packets[p].id.component});
        }
        TilePartSpan &span = spans.back();
        ++span.num_packets;
        if (span.component != packets[p].id.component) span.component = -1;
    }
    if (spans.empty()) spans.push_back({0, 0, -1});  // a tile with no packets still gets a tile-part
    J2KC_CHECK_ARG(spans.size() <= 255, "%zu tile-parts in one tile (at most 255): choose fewer splits", spans.size());
    return spans;
}

std::vector<uint8_t> main_header_bytes(const EncoderPlan &plan, size_t tile_parts)
{
    ByteWriter w;
    write_main_header(w, plan, std::vector<TilePartLength>(plan.tlm ? tile_parts : 0));
    return std::move(w.buffer());
}

uint64_t fixed_overhead(const EncoderPlan &plan, size_t tile_parts)
{
    return main_header_bytes(plan, tile_parts).size() + 2;  // EOC
}

CodestreamSizes measure_codestream(const EncoderPlan &plan, const std::vector<EncodedTilePackets> &tiles)
{
    CodestreamSizes sizes;
    sizes.component.assign(plan.siz.components.size(), 0);
    size_t tile_parts = 0;
    for (const EncodedTilePackets &tile : tiles) {
        for (const TilePartSpan &span : split_tile_parts(plan, tile.packets)) {
            ++tile_parts;
            const uint64_t bytes = 14 + span_bytes(tile.packets, span) + (plan.plt ? plt_bytes(tile.packets, span) : 0);
            sizes.total += bytes;
            if (span.component >= 0) sizes.component[span.component] += bytes;
        }
    }
    sizes.total += fixed_overhead(plan, tile_parts);
    return sizes;
}

std::vector<uint8_t> assemble_codestream(const EncoderPlan &plan, const std::vector<EncodedTilePackets> &tiles)
{
    // Tile-part lengths first, so TLM is written once, in place.
    std::vector<std::vector<TilePartSpan>> spans;
    std::vector<TilePartLength> tlm;
    for (uint32_t t = 0; t < tiles.size(); ++t) {
        spans.push_back(split_tile_parts(plan, tiles[t].packets));
        for (const TilePartSpan &span : spans.back()) {
            const uint64_t bytes =
                14 + span_bytes(tiles[t].packets, span) + (plan.plt ? plt_bytes(tiles[t].packets, span) : 0);
            J2KC_CHECK_ARG(bytes <= UINT32_MAX, "tile-part of %llu bytes (Psot is 32-bit)",
                           static_cast<unsigned long long>(bytes));
            tlm.push_back({static_cast<uint16_t>(t), static_cast<uint32_t>(bytes)});
        }
    }
    ByteWriter w;
    write_main_header(w, plan, tlm);
    size_t entry = 0;
    for (uint32_t t = 0; t < tiles.size(); ++t) {
        const EncodedTilePackets &tile = tiles[t];
        const auto &parts = spans[t];
        for (uint8_t i = 0; i < parts.size(); ++i) {
            const TilePartSpan &span = parts[i];
            write_sot(w, static_cast<uint16_t>(t), i, static_cast<uint8_t>(parts.size()), tlm[entry++].length);
            if (plan.plt) {
                std::vector<uint32_t> lengths;
                for (uint32_t p = 0; p < span.num_packets; ++p)
                    lengths.push_back(tile.packets[span.first_packet + p].length);
                write_plt(w, lengths);
            }
            write_sod(w);
            if (span.num_packets) {
                const PacketRecord &first = tile.packets[span.first_packet];
                const PacketRecord &last = tile.packets[span.first_packet + span.num_packets - 1];
                w.bytes(tile.data.data() + first.offset, last.offset + last.length - first.offset);
            }
        }
    }
    write_eoc(w);
    return std::move(w.buffer());
}

uint32_t step_fit_slot(const EncoderPlan &plan, uint32_t component, uint32_t band)
{
    uint32_t first = 0;
    while (!same_quantization(plan.quant[first], plan.quant[component])) ++first;
    return first * num_bands(plan.levels()) + band;
}

int step_fit_count_log2(const EncoderPlan &plan)
{
    uint64_t samples = 0;
    for (const ComponentSize &c : plan.siz.components)
        samples += uint64_t{ceil_div(plan.siz.width, c.dx)} * ceil_div(plan.siz.height, c.dy);
    int bits = 0;
    while ((uint64_t{1} << bits) < samples) ++bits;
    return bits;
}

void write_fitted_steps(uint8_t *codestream, size_t size, const EncoderPlan &plan, const uint64_t *sums)
{
    std::vector<Quantization> fitted = plan.quant;
    for (size_t c = 0; c < fitted.size(); ++c)
        for (size_t b = 0; b < fitted[c].steps.size(); ++b) {
            const size_t slot = step_fit_slot(plan, static_cast<uint32_t>(c), static_cast<uint32_t>(b));
            fitted[c].steps[b] = fit_step(fitted[c].steps[b], sums[2 * slot], sums[2 * slot + 1]);
        }
    ByteWriter head;
    write_header_to_cod(head, plan);
    ByteWriter steps;
    write_quantization(steps, plan, fitted);
    // The same markers as the header written, only their mantissas differ.
    if (head.size() + steps.size() > size) fail(J2KC_ERR_INTERNAL, "codestream shorter than its main header");
    std::memcpy(codestream + head.size(), steps.buffer().data(), steps.size());
}

}  // namespace j2kc
