/**
 * @file dump_bridge.h
 * @brief What `j2kc dump` prints, behind one small function so the tool
 * does not depend on how the library exposes it. Today the detailed dump
 * comes from the core's internal codestream/dump.h (the tool links the
 * static library); the proposal is a public j2kc_dump() in j2kc.h.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace j2kc {
namespace tools {

/**
 * @brief Readable description of a raw codestream or JP2 file: main header,
 * tile-parts, marker segments and profile checks. Sets *profile_ok to false
 * when the stream claims a profile whose constraints it breaks.
 * Throws j2kc::Error when the stream cannot be read.
 */
std::string dump_stream(const uint8_t *data, size_t size, bool *profile_ok);

}  // namespace tools
}  // namespace j2kc
