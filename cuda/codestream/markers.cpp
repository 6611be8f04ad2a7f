/**
 * @file markers.cpp
 * @brief Precedence of header parameters (A.6: tile-part COC > tile-part COD >
 * main COC > main COD, likewise for QCC/QCD) and derived quantisation (E.1.1.2).
 */
#include "codestream/markers.h"

#include "common/status.h"

namespace j2kc {

QuantStep Quantization::step(int band, int levels) const
{
    if (style == kScalarDerived) {
        J2KC_CHECK_DATA(!steps.empty(), "derived quantisation without an LL step");
        // E-5: eps_b = eps_0 - NL + nb, where nb is the band's decomposition level.
        const int nb = band == 0 ? levels : levels - (band - 1) / 3;
        const int exponent = int{steps[0].exponent} - levels + nb;
        J2KC_CHECK_DATA(exponent >= 0, "derived quantisation exponent below zero");
        return {static_cast<uint8_t>(exponent), steps[0].mantissa};
    }
    J2KC_CHECK_DATA(band >= 0 && static_cast<size_t>(band) < steps.size(),
                    "quantisation has %zu steps, sub-band %d needs more", steps.size(), band);
    return steps[band];
}

const CodingStyle &Codestream::coding_style(const Tile &tile) const
{
    return tile.header.cod ? *tile.header.cod : *main.cod;
}

const ComponentCoding &Codestream::component_coding(const Tile &tile, uint16_t component) const
{
    if (auto it = tile.header.coc.find(component); it != tile.header.coc.end()) return it->second;
    if (tile.header.cod) return tile.header.cod->component;
    if (auto it = main.coc.find(component); it != main.coc.end()) return it->second;
    return main.cod->component;
}

const Quantization &Codestream::quantization(const Tile &tile, uint16_t component) const
{
    if (auto it = tile.header.qcc.find(component); it != tile.header.qcc.end()) return it->second;
    if (tile.header.qcd) return *tile.header.qcd;
    if (auto it = main.qcc.find(component); it != main.qcc.end()) return it->second;
    return *main.qcd;
}

uint8_t Codestream::roi_shift(const Tile &tile, uint16_t component) const
{
    if (auto it = tile.header.roi_shift.find(component); it != tile.header.roi_shift.end()) return it->second;
    if (auto it = main.roi_shift.find(component); it != main.roi_shift.end()) return it->second;
    return 0;
}

const std::vector<ProgressionChange> &Codestream::progression_changes(const Tile &tile) const
{
    return tile.header.poc.empty() ? main.poc : tile.header.poc;
}

}  // namespace j2kc
