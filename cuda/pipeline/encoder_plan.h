/**
 * @file encoder_plan.h
 * @brief Turns the encoder's options and the image shape into the concrete
 * coding parameters of every marker segment, applying the profile rules of
 * ISO/IEC 15444-1 Amd 1 (DCI), Amd 8 (IMF) and Amd 3 (broadcast). Both
 * backends encode from the same plan.
 */
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "codestream/markers.h"
#include "j2kc.h"

namespace j2kc {

struct EncoderPlan {
    j2kc_profile profile = J2KC_PROFILE_NONE;
    ImageSize siz;
    CodingStyle cod;                     ///< cod.component is every component's coding
    std::vector<Quantization> quant;     ///< per component (QCD = quant[0], QCC where different)
    std::vector<ProgressionChange> poc;  ///< main-header POC, empty for none
    bool lossless = false;
    j2kc_tile_parts tile_parts = J2KC_TILE_PARTS_NONE;
    bool tlm = false;
    bool plt = false;
    uint64_t frame_bytes = 0;      ///< whole codestream cap, 0 = none
    uint64_t component_bytes = 0;  ///< each component's tile-parts (with SOT/SOD), 0 = none
    std::string comment;
    bool ht = false;             ///< HTJ2K block coder (code-block style 0x40)
    uint32_t cap = 0;            ///< Pcap of the CAP marker, 0 = no CAP
    std::vector<uint16_t> ccap;  ///< one Ccap word per bit of cap

    uint8_t levels() const { return cod.component.levels; }
    bool reversible() const { return cod.component.wavelet == Wavelet::kReversible53; }
    bool has_budget() const { return frame_bytes || component_bytes; }
    /** The bytes a frame may take: the lower of the frame cap and the component caps together. */
    uint64_t budget_bytes() const
    {
        const uint64_t all = component_bytes * siz.components.size();
        return frame_bytes && all ? std::min(frame_bytes, all) : frame_bytes ? frame_bytes : all;
    }
    /**
     * HT blocks coded as several HT sets (tier1/ht_coding_sets.h), among
     * which rate control picks one per block, rather than one cleanup pass:
     * under a budget with one layer. With several layers a block's sets
     * would be spread over packets as placeholder passes, which HT decoders
     * do not agree on, so each block's single pass goes whole into one layer.
     */
    bool ht_coding_sets() const { return ht && has_budget() && cod.layers == 1; }
    /** Part 1 blocks coded down to the plane the frame's cost model picks
     *  under the budget (tier1/tier1_plane_floor.h), not to plane 0. */
    bool lowest_plane_from_budget() const { return !ht && has_budget(); }
    /**
     * Each frame's steps fitted to its truncated reconstruction after rate
     * control (quant/step_fit_core.h): irreversible Part 1 under a budget,
     * generic profile only, as the DCI and IMF packagers (asdcp-wrap) want
     * every frame's QCD equal to the first's. Components that share their
     * steps (QCD) share the fit, so the header keeps its markers and size.
     */
    bool fitted_steps() const { return profile == J2KC_PROFILE_NONE && !ht && !reversible() && has_budget(); }
    /** Step phases the encoder codes a frame at and chooses among
     *  (j2kc_encoder_config::step_phases): 1 unless irreversible under a
     *  generic, DCI or IMF budget, with either block coder. */
    int step_phases = 1;
    /** The phase is searched on the first frame and kept for the sequence:
     *  by default, and always under a DCI or IMF budget, whose frames must
     *  share their QCD (as for fitted_steps()). */
    bool step_phase_per_sequence = false;
};

/**
 * Validates the configuration against the shape and the chosen profile and
 * fills the plan; an impossible combination throws INVALID_ARG with a line
 * that names the option. `step_phase` p (0 <= p < 1, a fraction of a
 * bit-plane) scales the base step under a budget by 2^p.
 */
EncoderPlan plan_encoder(const j2kc_encoder_config &config, const j2kc_image &shape, double step_phase = 0);

/** Frame and per-component byte caps of the DCI profiles at a frame rate (Amd 1). */
uint64_t dci_frame_cap(int fps_num, int fps_den);
uint64_t dci_component_cap(int fps_num, int fps_den);

}  // namespace j2kc
