/**
 * @file container.h
 * @brief The JP2 file format (ISO/IEC 15444-1 Annex I) as far as the j2kc
 * tool needs it: wrapping an encoded codestream in the minimal box set
 * (signature, ftyp, jp2h with ihdr/bpcc/colr, jp2c) and finding the
 * codestream inside a JP2 file for `j2kc dump`. The decoder reads JP2 files
 * through the C API itself.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tools/image_io.h"

namespace j2kc {
namespace tools {

/** @brief True when the bytes start with the JP2 signature box. */
bool is_jp2(const uint8_t *data, size_t size);

/**
 * @brief Wraps a codestream of `image`'s shape in a JP2 file. The colour
 * space is sRGB for 3 or 4 equal components, sYCC for 3 with subsampled
 * chroma, greyscale otherwise.
 */
std::vector<uint8_t> wrap_jp2(const std::vector<uint8_t> &codestream, const Image &image);

/**
 * @brief Locates the contiguous codestream box (jp2c) of a JP2 file; sets
 * offset and size. Throws INVALID_DATA when the boxes are broken or absent.
 */
void find_jp2_codestream(const uint8_t *data, size_t size, size_t *offset, size_t *length);

}  // namespace tools
}  // namespace j2kc
