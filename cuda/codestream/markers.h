/**
 * @file markers.h
 * @brief The codestream's marker segments as plain structs (ISO/IEC 15444-1
 * Annex A), and the parsed form of a whole codestream: main header, and per
 * tile the merged tile-part headers and the tile's packet data.
 *
 * Field names follow the standard (Xsiz, SPcod, ...) in snake_case. Values are
 * stored decoded (code-block exponents as xcb, not xcb - 2).
 */
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace j2kc {

enum Marker : uint16_t {
    kSOC = 0xFF4F,
    kCAP = 0xFF50,
    kSIZ = 0xFF51,
    kCOD = 0xFF52,
    kCOC = 0xFF53,
    kTLM = 0xFF55,
    kPRF = 0xFF56,
    kPLM = 0xFF57,
    kPLT = 0xFF58,
    kCPF = 0xFF59,
    kQCD = 0xFF5C,
    kQCC = 0xFF5D,
    kRGN = 0xFF5E,
    kPOC = 0xFF5F,
    kPPM = 0xFF60,
    kPPT = 0xFF61,
    kCRG = 0xFF63,
    kCOM = 0xFF64,
    kSOT = 0xFF90,
    kSOP = 0xFF91,
    kEPH = 0xFF92,
    kSOD = 0xFF93,
    kEOC = 0xFFD9,
};

constexpr int kMaxLevels = 32;
constexpr int kMaxResolutions = kMaxLevels + 1;

/** SIZ: one component's Ssiz, XRsiz, YRsiz. */
struct ComponentSize {
    uint8_t precision = 8;  ///< 1..38 bits (Ssiz & 0x7F) + 1
    bool is_signed = false;
    uint8_t dx = 1, dy = 1;
};

/** SIZ: image and tile geometry on the reference grid. */
struct ImageSize {
    uint16_t rsiz = 0;
    uint32_t width = 0, height = 0;            ///< Xsiz, Ysiz (right/bottom edges, not sizes!)
    uint32_t x0 = 0, y0 = 0;                   ///< XOsiz, YOsiz
    uint32_t tile_width = 0, tile_height = 0;  ///< XTsiz, YTsiz
    uint32_t tile_x0 = 0, tile_y0 = 0;         ///< XTOsiz, YTOsiz
    std::vector<ComponentSize> components;

    // 64-bit intermediates: width - tile_x0 + tile_width can pass 2^32.
    uint32_t tiles_x() const
    {
        return static_cast<uint32_t>((uint64_t{width} - tile_x0 + tile_width - 1) / tile_width);
    }
    uint32_t tiles_y() const
    {
        return static_cast<uint32_t>((uint64_t{height} - tile_y0 + tile_height - 1) / tile_height);
    }
    uint32_t num_tiles() const { return tiles_x() * tiles_y(); }
};

enum class Wavelet : uint8_t { kIrreversible97 = 0, kReversible53 = 1 };

/** Code-block style bits of SPcod/SPcoc (Table A.19). */
namespace cblk_style {
constexpr uint8_t kBypass = 0x01;   ///< selective arithmetic coding bypass
constexpr uint8_t kReset = 0x02;    ///< reset context probabilities each pass
constexpr uint8_t kTermAll = 0x04;  ///< terminate every pass
constexpr uint8_t kVerticallyCausal = 0x08;
constexpr uint8_t kPredictableTermination = 0x10;
constexpr uint8_t kSegmentationSymbols = 0x20;
constexpr uint8_t kHighThroughput = 0x40;  ///< Part 15: HT code-blocks (HT block coder)
constexpr uint8_t kMixed = 0x80;           ///< Part 15 with kHighThroughput: each block HT or Part-1 (MIXED)
/** The Part-1 coding modes (bits 0..5): those of Part-1 blocks, and the causal bit of HT SigProp. */
constexpr uint8_t kPart1Modes = 0x3F;
}  // namespace cblk_style

/** Rsiz bit 14: the codestream uses Part-15 (HTJ2K) capabilities. */
constexpr uint16_t kRsizPart15 = 0x4000;
/** Pcap bit of Part 15 in the CAP marker (bit 32 - i for Part i). */
constexpr uint32_t kPcapPart15 = 0x00020000;

/** The Ccap15 fields of CAP (ISO/IEC 15444-15 Table A.3). */
namespace ccap15 {
/** Bits 14..15: 0 every block HT, 2 some blocks HT (HTDECLARED: not every block need be), 3 MIXED. */
constexpr uint16_t kModeMask = 0xC000;
constexpr uint16_t kModeHtOnly = 0x0000;      ///< HTONLY: every code-block HT
constexpr uint16_t kModeHtDeclared = 0x8000;  ///< HTDECLARED: tile-components all HT or all Part-1
constexpr uint16_t kModeMixed = 0xC000;       ///< MIXED: HT and Part-1 blocks in a tile-component
constexpr uint16_t kMultiHt = 0x2000;         ///< bit 13: several HT sets per code-block
constexpr uint16_t kRgn = 0x1000;             ///< bit 12: RGN marker segments may be present
constexpr uint16_t kHeterogeneous = 0x0800;   ///< bit 11: HTHETEROGENEOUS
constexpr uint16_t kIrreversible = 0x0020;    ///< bit 5: irreversible transform may be used
constexpr uint16_t kMagbMask = 0x001F;        ///< bits 0..4: B, the bound on magnitude bit-planes
/** The magnitude bound MAGB that the 5-bit B field stands for (Table A.3). */
inline uint32_t magb(uint16_t c)
{
    const uint32_t b = c & kMagbMask;
    return b < 20 ? b + 8 : (b < 31 ? 4 * (b - 19) + 27 : 74);
}
}  // namespace ccap15

/** SPcod/SPcoc plus the precinct bit of Scod/Scoc: everything per component. */
struct ComponentCoding {
    uint8_t levels = 5;           ///< NL, 0..32
    uint8_t cblk_width_log2 = 6;  ///< xcb (2..10), xcb + ycb <= 12
    uint8_t cblk_height_log2 = 6;
    uint8_t cblk_style = 0;
    Wavelet wavelet = Wavelet::kIrreversible97;
    bool precincts_defined = false;                               ///< false: PPx = PPy = 15 everywhere
    std::array<uint8_t, kMaxResolutions> precinct_width_log2{};   ///< PPx per resolution r
    std::array<uint8_t, kMaxResolutions> precinct_height_log2{};  ///< PPy per resolution r

    ComponentCoding()
    {
        precinct_width_log2.fill(15);
        precinct_height_log2.fill(15);
    }
};

/** COD: tile-wide coding style, with the default component coding. */
struct CodingStyle {
    bool sop = false;         ///< Scod bit 1
    bool eph = false;         ///< Scod bit 2
    uint8_t progression = 0;  ///< 0 LRCP .. 4 CPRL
    uint16_t layers = 1;
    uint8_t mct = 0;  ///< 1: RCT/ICT on components 0..2
    ComponentCoding component;
};

/** One quantisation step: exponent epsilon_b (5 bits) and mantissa mu_b (11 bits). */
struct QuantStep {
    uint8_t exponent = 0;
    uint16_t mantissa = 0;
};

/** QCD/QCC. */
struct Quantization {
    enum Style : uint8_t { kNone = 0, kScalarDerived = 1, kScalarExpounded = 2 };
    Style style = kNone;
    uint8_t guard_bits = 1;
    /// kNone and kScalarExpounded: one per sub-band in order LL, then HL, LH, HH
    /// from the lowest resolution up; kScalarDerived: just the LL step.
    std::vector<QuantStep> steps;

    /// Step of sub-band `band` (0 = LL, 3(r-1)+1.. = HL, LH, HH of resolution r),
    /// applying the derived-quantisation rule (E.1.1.2) where needed.
    QuantStep step(int band, int levels) const;
};

/** One POC entry (Table A.32); ends are exclusive. */
struct ProgressionChange {
    uint8_t resolution_start = 0;
    uint16_t component_start = 0;
    uint16_t layer_end = 1;
    uint8_t resolution_end = 1;
    uint16_t component_end = 1;
    uint8_t progression = 0;
};

/** TLM entry as read (informational: the decoder walks SOT markers itself). */
struct TilePartLength {
    uint16_t tile = 0;
    uint32_t length = 0;
};

/** Header segments that may appear in the main header or a tile's headers. */
struct HeaderParameters {
    std::optional<CodingStyle> cod;
    std::map<uint16_t, ComponentCoding> coc;  ///< by component
    std::optional<Quantization> qcd;
    std::map<uint16_t, Quantization> qcc;   ///< by component
    std::map<uint16_t, uint8_t> roi_shift;  ///< RGN SPrgn by component
    std::vector<ProgressionChange> poc;
};

/**
 * A tile's packet data: in place in the codestream, which then outlives it
 * (parse_codestream's `tile_data_in_place`: a tile of one tile-part), or its
 * tile-parts' bodies joined in its own storage. Copying a tile copies the
 * view, and the bytes only when they are its own.
 */
class TileData {
public:
    using value_type = uint8_t;
    using const_iterator = const uint8_t *;
    using iterator = const_iterator;

    TileData() = default;
    /** Implicit: a tile built by hand (tests, tools) takes its joined bytes as a vector. */
    TileData(std::vector<uint8_t> bytes) : joined_(std::move(bytes)) {}

    /** Views `size` bytes at `first`, which outlive this tile. */
    void view(const uint8_t *first, size_t size)
    {
        joined_.clear();
        in_place_ = first;
        in_place_size_ = size;
    }
    /** Appends a tile-part's body to its own storage. */
    void append(const uint8_t *first, size_t size) { joined_.insert(joined_.end(), first, first + size); }
    void reserve(size_t capacity) { joined_.reserve(capacity); }

    const uint8_t *data() const { return in_place_ ? in_place_ : joined_.data(); }
    size_t size() const { return in_place_ ? in_place_size_ : joined_.size(); }
    bool empty() const { return size() == 0; }
    bool in_place() const { return in_place_ != nullptr; }
    const uint8_t *begin() const { return data(); }
    const uint8_t *end() const { return data() + size(); }
    uint8_t operator[](size_t i) const { return data()[i]; }
    friend bool operator==(const TileData &a, const std::vector<uint8_t> &b)
    {
        return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
    }

private:
    std::vector<uint8_t> joined_;
    const uint8_t *in_place_ = nullptr;
    size_t in_place_size_ = 0;
};

/** A tile as parsed: its merged tile-part headers and its packet data. */
struct Tile {
    uint32_t index = 0;
    HeaderParameters header;
    uint8_t tile_parts_seen = 0;
    uint8_t tile_parts_declared = 0;       ///< TNsot, 0 = unknown
    TileData data;                         ///< packet data of all tile-parts, in order
    bool has_packed_headers = false;       ///< PPM or PPT present for this tile
    std::vector<uint8_t> packed_headers;   ///< packet headers from PPM/PPT, in order
    std::vector<uint32_t> packet_lengths;  ///< from PLT (or PLM), in order; informational
    bool truncated = false;                ///< its last tile-part was cut short
};

/** One tile-part as found in the codestream (SOT fields and where its data lies). */
struct TilePartInfo {
    uint16_t tile = 0;         ///< Isot
    uint8_t part = 0;          ///< TPsot
    uint8_t parts = 0;         ///< TNsot (0 = not given)
    uint32_t psot = 0;         ///< Psot as written (0 = up to EOC)
    uint64_t offset = 0;       ///< of its SOT marker
    uint64_t data_offset = 0;  ///< first byte after SOD
    uint64_t data_length = 0;  ///< bytes of packet data actually present
    bool truncated = false;    ///< Psot ran past the end of the data
};

/** A whole parsed codestream. */
struct Codestream {
    ImageSize siz;
    HeaderParameters main;  ///< main.cod and main.qcd always set
    std::vector<std::string> comments;
    std::vector<TilePartLength> tlm;
    std::vector<std::pair<uint16_t, uint16_t>> crg;  ///< component registration
    uint32_t cap = 0;                                ///< Pcap (Part 15 etc.), 0 = none
    std::vector<uint16_t> ccap;                      ///< the Ccap^i of CAP, one per Pcap bit, Part 1 first
    bool has_ccap15 = false;                         ///< CAP carries Ccap15 (Pcap has kPcapPart15)
    uint16_t ccap15 = 0;                             ///< Ccap15 (fields in namespace ccap15)
    std::vector<Tile> tiles;                         ///< tiles that appeared, in index order
    std::vector<TilePartInfo> tile_parts;            ///< every tile-part, in codestream order
    std::vector<std::string> warnings;               ///< non-fatal oddities met while parsing
    /// The warnings that say the codestream is damaged (cut short, tile-parts
    /// or tiles or EOC missing, inconsistent SOT counts), not merely odd: a
    /// strict decoder refuses the frame for the first of them.
    std::vector<std::string> damage;
    bool has_eoc = false;          ///< EOC was found
    bool truncated = false;        ///< the data ended inside a tile-part
    uint64_t main_header_end = 0;  ///< offset of the first SOT

    /// The effective COD for a tile (tile COD over main COD).
    const CodingStyle &coding_style(const Tile &tile) const;
    /// The effective component coding: tile COC > tile COD > main COC > main COD.
    const ComponentCoding &component_coding(const Tile &tile, uint16_t component) const;
    /// The effective quantisation: tile QCC > tile QCD > main QCC > main QCD.
    const Quantization &quantization(const Tile &tile, uint16_t component) const;
    /// RGN shift for a component (tile over main), 0 when none.
    uint8_t roi_shift(const Tile &tile, uint16_t component) const;
    /// POC entries in force for the tile (tile POC replaces the main one).
    const std::vector<ProgressionChange> &progression_changes(const Tile &tile) const;
};

}  // namespace j2kc
