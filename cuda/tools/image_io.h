/**
 * @file image_io.h
 * @brief Image files for the j2kc tool: PGX (the component file of the
 * ISO/IEC 15444-4 conformance suite), PGM/PPM (P5/P6), PAM (P7) and raw
 * planar samples. No codec logic: these only move integer samples between
 * files and memory, one plane per JPEG 2000 component, each at its own size,
 * precision and signedness.
 *
 * Conventions follow opj_decompress so outputs compare file to file:
 * - PGX: "PG ML <+|-> <depth> <width> <height>\n", samples of 1 byte
 *   (depth <= 8), 2 bytes (<= 16) or 4 bytes (<= 32), two's complement when
 *   signed; a multi-component image goes to OUT_0.pgx, OUT_1.pgx, ... (the
 *   "_N" suffix is written even for one component, as opj_decompress does).
 * - PNM: signed components are offset by 2^(depth-1) on output; maxval is
 *   2^depth - 1; 16-bit samples are big-endian.
 * - raw: components one after another, each at its own size; 1, 2 or 4 bytes
 *   a sample by depth; ".raw" big-endian (as opj), ".rawl"/".yuv" little-endian.
 *
 * Malformed files throw j2kc::Error (INVALID_DATA) with a one-line message;
 * every allocation is bounded by the size of the file being read.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace j2kc {
namespace tools {

/** @brief One component: samples row by row, width * height of them. */
struct Plane {
    uint32_t width = 0, height = 0;
    uint8_t dx = 1, dy = 1;  ///< subsampling on the reference grid
    int precision = 8;       ///< 1..32 bits
    bool is_signed = false;
    std::vector<int32_t> samples;
};

/** @brief Components on one reference grid of width x height. */
struct Image {
    uint32_t width = 0, height = 0;
    std::vector<Plane> planes;
};

enum class FileFormat { unknown, pgx, pgm, ppm, pam, raw, rawl, j2c, jp2 };

/** @brief Format named by the file extension (case-insensitive). */
FileFormat format_from_path(const std::string &path);

/** @brief Description of headerless planar samples (--raw WxHxCxBITS[u|s][@SUB]). */
struct RawLayout {
    uint32_t width = 0, height = 0, components = 0;
    int precision = 8;
    bool is_signed = false;
    bool little_endian = false;
    std::vector<uint8_t> dx, dy;  ///< one entry a component
};

/**
 * @brief Parses "WxHxCxBITS[u|s][@SUB]". SUB is 4:4:4, 4:2:2, 4:2:0, 4:1:1,
 * 4:4:0 (components 1 and 2 subsampled, others not) or an explicit list
 * "DXxDY:DXxDY:..." with one entry a component. Throws INVALID_ARG.
 */
RawLayout parse_raw_layout(const std::string &spec);

/** @brief Bytes one sample takes in PGX and raw files: 1, 2 or 4. */
unsigned sample_bytes(int precision);

/** @brief out.pgx -> out_<index>.pgx (the same rule for .pgm). */
std::string component_path(const std::string &path, size_t index);

/* In-memory parsers and writers (the file functions below wrap these). */
Plane parse_pgx(const uint8_t *data, size_t size);
std::vector<uint8_t> format_pgx(const Plane &plane, bool little_endian = false);
/** @brief P5, P6 or P7 (PAM) with maxval 1..65535. */
Image parse_pnm(const uint8_t *data, size_t size);
/** @brief format is pgm (1 plane), ppm (3) or pam (1..4); planes of one size and precision <= 16. */
std::vector<uint8_t> format_pnm(const Image &image, FileFormat format);
Image parse_raw(const uint8_t *data, size_t size, const RawLayout &layout);
std::vector<uint8_t> format_raw(const Image &image, bool little_endian);

/**
 * @brief Sets the reference grid from the planes' sizes and derives each
 * plane's dx/dy (the smallest factor with ceil(W / dx) == width).
 * Throws INVALID_ARG when no factor up to 255 fits.
 */
void derive_reference_grid(Image &image);

/** @brief Checks planes' sizes against the grid, precision and sample ranges. */
void validate_image(const Image &image);

std::vector<uint8_t> read_file(const std::string &path);
void write_file(const std::string &path, const std::vector<uint8_t> &bytes);

/**
 * @brief Reads an image by extension. PGX: "a.pgx,b.pgx,..." lists one file
 * a component; a path that does not exist but whose "_0" sibling does reads
 * X_0.pgx, X_1.pgx, ... until one is missing. Raw formats need a layout.
 */
Image read_image(const std::string &path, const RawLayout *raw = nullptr);

/**
 * @brief Writes an image by extension and returns the files written. PGX
 * writes one file a component; PGM with more than one plane writes X_N.pgm.
 */
std::vector<std::string> write_image(const std::string &path, const Image &image);

}  // namespace tools
}  // namespace j2kc
