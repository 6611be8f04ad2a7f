/**
 * @file writer.h
 * @brief Marker segment writers (ISO/IEC 15444-1 Annex A) into a ByteWriter.
 * What they write, parse_codestream reads back to the same structs. Values
 * that the syntax cannot carry fail with J2KC_ERR_INVALID_ARG.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "codestream/markers.h"
#include "common/byte_io.h"

namespace j2kc {

/** @brief SOC (A.4.1). */
void write_soc(ByteWriter &w);
/** @brief SIZ (A.5.1): Lsiz = 38 + 3 Csiz. */
void write_siz(ByteWriter &w, const ImageSize &siz);
/** @brief CAP (A.5.2): Pcap and one Ccap word per bit set in Pcap. */
void write_cap(ByteWriter &w, uint32_t pcap, const std::vector<uint16_t> &ccap);
/** @brief COD (A.6.1); precinct bytes written when cod.component.precincts_defined. */
void write_cod(ByteWriter &w, const CodingStyle &cod);
/** @brief COC (A.6.2); component index in 1 byte when num_components < 257, else 2. */
void write_coc(ByteWriter &w, uint16_t component, const ComponentCoding &coding, uint32_t num_components);
/** @brief QCD (A.6.4): all of q.steps (just steps[0] for derived quantisation). */
void write_qcd(ByteWriter &w, const Quantization &q);
/** @brief QCC (A.6.5). */
void write_qcc(ByteWriter &w, uint16_t component, const Quantization &q, uint32_t num_components);
/** @brief RGN (A.6.3), implicit ROI style (Srgn 0). */
void write_rgn(ByteWriter &w, uint16_t component, uint8_t shift, uint32_t num_components);
/** @brief POC (A.6.6); component_end == 256 (or 16384 when wide) is written as 0. */
void write_poc(ByteWriter &w, const std::vector<ProgressionChange> &entries, uint32_t num_components);
/** @brief CRG (A.9.1): one (Xcrg, Ycrg) pair per component. */
void write_crg(ByteWriter &w, const std::vector<std::pair<uint16_t, uint16_t>> &offsets);

/** Bytes of one TLM entry for ST/SP. */
constexpr size_t tlm_entry_bytes(int st, int sp) { return size_t(st) + (sp ? 4 : 2); }
/** Entries per TLM segment: FFmpeg's decoder counts them in 8 bits. */
constexpr size_t kTlmEntriesPerSegment = 255;

/**
 * @brief TLM (A.7.1), split into segments of <= 255 entries with Ztlm 0, 1, ...
 *
 * st (0, 1, 2: bytes of Ttlm) and sp (0: 16-bit Ptlm, 1: 32-bit) are chosen
 * from the entries when -1 (st 1 if every tile < 256, else 2; sp 1 if any
 * length > 65535). st 0 requires entry i to be tile i. Returns the bytes written.
 */
size_t write_tlm(ByteWriter &w, const std::vector<TilePartLength> &entries, int st = -1, int sp = -1);
/** @brief Bytes write_tlm will take for n entries with explicit st/sp (to reserve space). */
size_t tlm_bytes(size_t entries, int st, int sp);

/** @brief PLT (A.7.3) for one tile-part, split at Lplt 65535 with Zplt 0, 1, ... */
void write_plt(ByteWriter &w, const std::vector<uint32_t> &packet_lengths);
/** @brief PPM (A.7.4): Nppm + Ippm per tile-part (codestream order), split at Lppm 65535. */
void write_ppm(ByteWriter &w, const std::vector<std::vector<uint8_t>> &tile_part_headers);
/** @brief PPT (A.7.5) for one tile-part, split at Lppt 65535, Zppt from first_z; returns next Z. */
unsigned write_ppt(ByteWriter &w, const std::vector<uint8_t> &packet_headers, unsigned first_z = 0);
/** @brief COM (A.9.2), Rcom 1 (Latin text). */
void write_com(ByteWriter &w, const std::string &text);

/**
 * @brief SOT (A.4.2). Returns the offset of the SOT marker in w, for
 * patch_sot_psot once the tile-part's length is known.
 */
size_t write_sot(ByteWriter &w, uint16_t tile, uint8_t part, uint8_t parts, uint32_t psot = 0);
/** @brief Sets Psot of the SOT written at sot_offset. */
void patch_sot_psot(ByteWriter &w, size_t sot_offset, uint32_t psot);
/** @brief SOD (A.4.3). */
void write_sod(ByteWriter &w);
/** @brief EOC (A.4.4). */
void write_eoc(ByteWriter &w);

}  // namespace j2kc
