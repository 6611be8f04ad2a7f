/**
 * @file delivery.h
 * @brief What `j2kc decode` makes of the decoded components by default: the
 * image they code, as opj_decompress and grk_decompress deliver it, so that
 * the files the tools write compare sample for sample. YCbCr (sYCC, e-sYCC)
 * becomes RGB with its chroma upsampled, CMYK becomes RGB, and an ICC profile
 * or CIELab is turned into sRGB through lcms2 (where the tool is built with
 * it). Palettes are already applied by the library; the channels go in
 * the order of a JP2's channel definitions (cdef) first, as OpenJPEG
 * reorders them before opj_decompress converts the colour. `--raw-components`
 * skips all of this.
 */
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "j2kc.h"
#include "tools/image_io.h"

namespace j2kc {
namespace tools {

/** What the delivery needs to know of the stream beyond its components. */
struct StreamColour {
    j2kc_color_space space = J2KC_COLOR_UNKNOWN;  ///< as j2kc_stream_info reports it
    const uint8_t *icc = nullptr;                 ///< the file's ICC profile, or null
    size_t icc_size = 0;
    /** CIELab (EnumCS 14) range and offset parameters RL, OL, RA, OA, RB, OB, IL, when the file gives them. */
    std::optional<std::array<uint32_t, 7>> lab_parameters;
    uint32_t x0 = 0, y0 = 0;  ///< the image's origin on the (reduced) reference grid
    /**
     * The order a JP2 file's channel definitions (cdef, I.5.3.6) give the
     * channels, as jp2_channels() sorts them (colours by association, then
     * opacity, then the rest): channel_order[k] is the decoded component
     * (the cmap channel with a palette) delivered k-th. Empty: the coded
     * order. OpenJPEG swaps each colour channel into its place instead, which
     * gives the same order except where two or more non-colour channels are
     * coded before colour ones: it leaves those in whatever order the swaps
     * made (opacity coded first can end up last), j2kc keeps opacity first.
     */
    std::vector<uint16_t> channel_order;
    /** Why the file's cdef is not applied (malformed), or empty. */
    std::string channels_ignored;
};

/**
 * @brief Turns `image` (the decoded components, each at its own size) into
 * the image the stream codes, in place: channels in cdef's order first (as
 * OpenJPEG applies cdef before opj_decompress converts the colour), then the
 * colour. Returns one line for each step that could not be taken (a
 * malformed cdef, a layout or profile the conversion does not handle, a
 * build without lcms2); the components are then left as they were.
 */
std::vector<std::string> deliver_image(Image &image, const StreamColour &colour);

/** @brief "lcms2 2.14", or an empty string when the tool is built without it. */
std::string colour_management();

}  // namespace tools
}  // namespace j2kc
