/**
 * @file jp2.h
 * @brief The JP2 file format (ISO/IEC 15444-1 Annex I): box parsing with the
 * colour description the pipeline needs (ihdr, bpcc, colr, pclr, cmap, cdef,
 * res), the codestream's place in the file, and a minimal JP2 writer.
 */
#pragma once

#include <cstddef>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codestream/markers.h"
#include "j2kc.h"

namespace j2kc {

/** Box types (I.4), as the big-endian value of their four characters. */
namespace jp2_box {
constexpr uint32_t kSignature = 0x6A502020;          ///< 'jP  '
constexpr uint32_t kFileType = 0x66747970;           ///< 'ftyp'
constexpr uint32_t kHeader = 0x6A703268;             ///< 'jp2h'
constexpr uint32_t kImageHeader = 0x69686472;        ///< 'ihdr'
constexpr uint32_t kBitsPerComponent = 0x62706363;   ///< 'bpcc'
constexpr uint32_t kColour = 0x636F6C72;             ///< 'colr'
constexpr uint32_t kPalette = 0x70636C72;            ///< 'pclr'
constexpr uint32_t kComponentMapping = 0x636D6170;   ///< 'cmap'
constexpr uint32_t kChannelDefinition = 0x63646566;  ///< 'cdef'
constexpr uint32_t kResolution = 0x72657320;         ///< 'res '
constexpr uint32_t kCaptureResolution = 0x72657363;  ///< 'resc'
constexpr uint32_t kDisplayResolution = 0x72657364;  ///< 'resd'
constexpr uint32_t kCodestream = 0x6A703263;         ///< 'jp2c'
constexpr uint32_t kBrandJp2 = 0x6A703220;           ///< 'jp2 '
constexpr uint32_t kBrandJph = 0x6A706820;           ///< 'jph ': the JPH file format of ISO/IEC 15444-15 Annex D
}  // namespace jp2_box

/** pclr (I.5.3.4): a palette of num_entries rows, one value per column. */
struct Jp2Palette {
    struct Column {
        uint8_t precision = 8;  ///< 1..38
        bool is_signed = false;
    };
    uint16_t num_entries = 0;     ///< NE, 1..1024
    std::vector<Column> columns;  ///< NPC, 1..255
    std::vector<int64_t> values;  ///< num_entries x columns.size(), row by row (sign-extended)

    int64_t value(uint32_t entry, uint32_t column) const { return values[size_t{entry} * columns.size() + column]; }
};

/** cmap entry (I.5.3.5): where one channel comes from. */
struct Jp2ComponentMapping {
    uint16_t component = 0;  ///< CMP: codestream component
    uint8_t type = 0;        ///< MTYP: 0 direct, 1 through the palette
    uint8_t column = 0;      ///< PCOL: palette column when type is 1
};

/** cdef entry (I.5.3.6). */
struct Jp2ChannelDefinition {
    uint16_t channel = 0;      ///< Cn
    uint16_t type = 0;         ///< Typ: 0 colour, 1 opacity, 2 premultiplied opacity, 0xFFFF unspecified
    uint16_t association = 0;  ///< Asoc: 0 whole image, 1.. colour n, 0xFFFF none
};

/** resc/resd (I.5.3.7): grid resolution VR = VRN/VRD * 10^VRE per metre. */
struct Jp2Resolution {
    uint16_t v_num = 0, v_den = 0, h_num = 0, h_den = 0;
    int8_t v_exp = 0, h_exp = 0;
};

/**
 * colr (I.5.3.3; methods 3 and CIELab parameters from ISO/IEC 15444-2
 * M.11.7). The ICC profile is not copied: it points into the parsed bytes.
 */
struct Jp2Colour {
    uint8_t method = 0;  ///< 1 enumerated, 2 restricted ICC, 3 any ICC (JPX)
    int8_t precedence = 0;
    uint8_t approximation = 0;
    uint32_t enumerated = 0;       ///< EnumCS when method 1
    const uint8_t *icc = nullptr;  ///< the ICC profile when method 2 or 3
    size_t icc_size = 0;
    /**
     * CIELab (EnumCS 14) parameters RL, OL, RA, OA, RB, OB, IL in that
     * order, when the box gives them; without them the defaults of M.11.7.4 apply.
     */
    std::optional<std::array<uint32_t, 7>> lab_parameters;
};

/** A parsed JP2 file. `codestream` points into the caller's buffer. */
struct Jp2File {
    const uint8_t *codestream = nullptr;
    size_t codestream_size = 0;
    size_t codestream_offset = 0;
    bool codestream_clipped = false;  ///< the jp2c box ran past the end of the file

    uint32_t brand = 0, minor_version = 0;
    std::vector<uint32_t> compatibility;

    // ihdr (I.5.3.1)
    uint32_t height = 0, width = 0;
    uint16_t num_components = 0;
    uint8_t bpc = 0;  ///< raw BPC: (precision - 1) | signed << 7, 0xFF = see bpcc
    uint8_t compression = 7;
    bool colourspace_unknown = false;
    bool ipr = false;
    std::vector<uint8_t> bpcc;  ///< raw per-component depths (I.5.3.2) when bpc is 0xFF

    std::vector<Jp2Colour> colours;  ///< every well-formed colr box of a known method
    /**
     * The colour specification the file says to use: the first colr box of a
     * known method (I.5.3.3: readers ignore the ones after it). colour() is
     * null when there is none, or when that box is malformed (a warning says
     * so); then the colour is unknown, never taken from a later box.
     */
    bool has_colour_box = false;
    std::optional<size_t> colour_index;                 ///< into `colours`
    j2kc_color_space color_space = J2KC_COLOR_UNKNOWN;  ///< of colour() when it is enumerated and known

    const Jp2Colour *colour() const { return colour_index ? &colours[*colour_index] : nullptr; }
    std::optional<Jp2Palette> palette;
    std::vector<Jp2ComponentMapping> component_mapping;  ///< cmap (only with a palette)
    /** cdef, as written; empty when the box is malformed (then dropped, with a warning). */
    std::vector<Jp2ChannelDefinition> channel_definitions;
    /** Why a malformed cdef was dropped (it names a channel twice, one that is not there, ...), else empty. */
    std::string channel_definitions_ignored;
    std::optional<Jp2Resolution> capture_resolution, display_resolution;
    std::vector<std::string> warnings;

    /** Precision (1..38) of codestream component c as ihdr/bpcc declare it. */
    uint8_t component_precision(uint16_t c) const;
    bool component_signed(uint16_t c) const;
};

/** One output channel after palette expansion and cdef reordering. */
struct Jp2Channel {
    uint16_t component = 0;       ///< codestream component it comes from
    int32_t palette_column = -1;  ///< >= 0: look the sample up in this palette column
    uint16_t type = 0;            ///< cdef Typ (0 colour, 1 opacity, 2 premultiplied, 0xFFFF unspecified)
    uint16_t association = 0;     ///< cdef Asoc (colour index from 1, 0 whole image, 0xFFFF none)
    uint16_t channel = 0;         ///< its place before reordering: cmap entry, or component without a palette
};

/** @brief The space of a JP2/JPX EnumCS, UNKNOWN for numbers with no entry in j2kc_color_space. */
j2kc_color_space jp2_enumerated_space(uint32_t enumcs);

/** @brief The EnumCS JP2 writes for SRGB, GRAY and SYCC; 0 for the others. */
uint32_t jp2_enumerated_cs(j2kc_color_space space);

/**
 * @brief Whether bytes can be an ICC profile (ICC.1 7.2): at least a header
 * and a tag count, the 'acsp' signature, and a declared size that fits.
 * On failure `why` says what is wrong.
 */
bool icc_profile_plausible(const uint8_t *data, size_t size, std::string *why);

/** @brief True when data starts with the JP2 signature box (I.5.1). */
bool is_jp2(const uint8_t *data, size_t size);

/**
 * @brief Parses a JP2 file: signature, ftyp, jp2h (ihdr, bpcc, colr, pclr,
 * cmap, cdef, res) and the first jp2c. Boxes are walked with explicit depth
 * (jp2h and res are the only superboxes entered), every length is checked.
 * INVALID_DATA for malformed boxes, a missing jp2h/ihdr/jp2c, or a palette
 * without a component mapping (or the reverse). A jp2c that runs past the end
 * is clipped to the data (a warning), as the codestream parser keeps what is there;
 * a malformed cdef (a wrong count, a reserved type, a channel named twice or
 * one that is not there) is dropped with a warning, the channels then keep
 * their coded order.
 */
Jp2File parse_jp2(const uint8_t *data, size_t size);

/**
 * @brief The channels to output, in order: colour channels by association
 * (1, 2, 3, ...), then opacity and premultiplied opacity channels by
 * association (0, the whole image, first), then the rest in channel order. With
 * no cdef the first n channels are colour n (n = 3 for sRGB/sYCC, 1 for grey)
 * and the others unspecified. Throws INVALID_DATA if a component is >= num_codestream_components.
 */
std::vector<Jp2Channel> jp2_channels(const Jp2File &file, uint32_t num_codestream_components);

/** One output channel of a JP2 decode with a palette, in cmap order (I.5.3.5). */
struct Jp2PaletteOutput {
    uint16_t component = 0;       ///< codestream component the samples (or indices) come from
    int32_t palette_column = -1;  ///< >= 0: the sample is an index into this pclr column
    uint8_t precision = 0;        ///< pclr B_i for palette channels, else the component's
    bool is_signed = false;
};

/**
 * @brief The output channels of a JP2 file with pclr/cmap (cmap order):
 * palette channels take their depth and signedness from pclr, direct ones
 * from the codestream component (siz). Empty when the file has no palette.
 * INVALID_DATA when cmap names a component the codestream lacks.
 */
std::vector<Jp2PaletteOutput> jp2_palette_outputs(const Jp2File &file, const ImageSize &siz);

/**
 * @brief Index to value through one pclr column (I.5.3.4): indices below 0
 * take entry 0 and indices past the last entry the last entry (the standard
 * leaves them undefined; this never reads outside the palette).
 */
int64_t jp2_palette_lookup(const Jp2Palette &palette, uint32_t column, int64_t index);

/**
 * @brief The palette step of a decode, on host planes: `decoded` holds the
 * codestream components as the decoder wrote them (any plane format of
 * j2kc_image), `out` one plane per jp2_palette_outputs() entry, same size as
 * its component; each output sample is the palette value of the index sample
 * (palette channels) or the sample itself (direct channels), stored in the
 * plane's format (bytes_per_sample, shift; signed values as two's complement).
 * INVALID_ARG when the planes do not match.
 */
void jp2_apply_palette(const Jp2File &file, const std::vector<Jp2PaletteOutput> &outputs, const j2kc_image &decoded,
                       const j2kc_image &out);

/**
 * @brief The boxes of a minimal JP2 file up to the codestream: signature,
 * ftyp with `brand` as brand and compatible brand ('jp2 ', or 'jph ' for the
 * JPH file format of ISO/IEC 15444-15, whose boxes are otherwise JP2's), jp2h with ihdr, bpcc when depths differ, colr and cdef. colr
 * is method 2 with `icc` when one is given (checked with
 * icc_profile_plausible), else enumerated: sRGB, greyscale or sYCC, and for
 * UNKNOWN sRGB or greyscale by component count with ihdr UnkC = 1. cdef marks
 * the last channel as opacity when there are 2 (grey) or 4 (colour)
 * components. INVALID_ARG for other spaces without an ICC profile, for a
 * space the components cannot hold, or for an implausible profile.
 */
std::vector<uint8_t> jp2_file_header(const ImageSize &siz, j2kc_color_space colour,
                                     const std::vector<uint8_t> &icc = {}, uint32_t brand = jp2_box::kBrandJp2);

/** @brief Appends the jp2c box (I.5.4) holding `size` codestream bytes (XLBox past 4 GiB). */
void append_jp2_codestream_box(std::vector<uint8_t> &file, const uint8_t *codestream, size_t size);

/** @brief jp2_file_header + append_jp2_codestream_box: a whole JP2 file. */
std::vector<uint8_t> wrap_jp2(const std::vector<uint8_t> &codestream, const ImageSize &siz, j2kc_color_space colour,
                              const std::vector<uint8_t> &icc = {});

}  // namespace j2kc
