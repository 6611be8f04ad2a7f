/**
 * @file dump.h
 * @brief Human-readable codestream description (for `j2kc dump`) and the
 * profile checks that DCI and IMF tools apply (ISO/IEC 15444-1 Amd 1 and
 * Amd 8, and the checks of cinema validators and players), on the parsed
 * structs and the raw marker bytes.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "codestream/markers.h"

namespace j2kc {

/** @brief Appends printf-style text (up to 511 bytes a call) to `s`: the dumps' line maker. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void appendf(std::string &s, const char *format, ...);

/** @brief SIZ, CAP, COD/COC, QCD/QCC steps, RGN, POC, TLM, CRG, COM, tile-parts, tiles, warnings. */
std::string dump_codestream(const Codestream &cs);

/**
 * @brief The profile rules `cs` breaks, one line each; empty when it keeps
 * them or claims no profile checked here.
 *
 * Rsiz 3/4 (DCI 2K/4K): libdcp's verify_j2k rules (Rsiz by width, Lsiz 47,
 * zero origins, one tile, 3 components 12-bit unsubsampled, exactly one COD
 * and one QCD, Scod 1, CPRL, 1 layer, MCT 1, NL 5/6, 32x32 blocks style 0,
 * 9/7, precincts 77 88.., guard bits 1/2, TLM, POC none / the exact 4K
 * bytes, TNsot 3/6 in every SOT, only the markers libdcp knows, COC/QCC in
 * the main header repeating COD, no empty COM). Rsiz 0x04xx..0x09xx (IMF):
 * the OpenJPEG/Grok IMF rules (levels, size, components, depth, subsampling,
 * tiling, wavelet, layers, CPRL, no POC/RGN, 32x32 style 0, precincts, one
 * tile-part per component, TLM, NL limits).
 * `data`/`size` are the codestream `cs` was parsed from (raw marker checks).
 * With fps > 0 the DCI byte caps are checked too: each tile-part <=
 * floor(200e6 / (8 fps)), the codestream <= floor(250e6 / (8 fps)).
 */
std::vector<std::string> check_profile(const Codestream &cs, const uint8_t *data, size_t size, double fps = 0);

}  // namespace j2kc
