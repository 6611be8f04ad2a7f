/**
 * @file step_phase_search.h
 * @brief A frame coded at several phases of the base quantisation step
 * under a byte budget (an encoder choice within ISO/IEC 15444-1 Annex E and
 * J.10's rate control), keeping the codestream whose decoded frame is nearest
 * the source (j2kc_encoder_config::step_phases).
 */
#pragma once

#include <functional>
#include <memory>

#include "common/log.h"
#include "pipeline/encoder.h"

namespace j2kc {

/** Builds the codestream encoder of plan_encoder's step phase p (0 <= p <
 *  1); `one_frame`: one frame in flight (a phase's encoder during a search,
 *  which waits for each frame). */
using StepPhaseEncoders = std::function<std::unique_ptr<Encoder>(double p, bool one_frame)>;

/**
 * An encoder that codes each frame at step phases k / `phases` (k = 0 ..
 * phases - 1), then at the two phases either side of the best so far at
 * half that spacing, then again at a quarter and at an eighth (phases + 6
 * codings): each codestream is decoded (by the decoder of the encoders'
 * backend), and the one with the least squared error over all samples is
 * kept (the first coded on a tie). The choice depends only on the codestreams' bytes, so
 * backends that write the same bytes choose alike. With `per_sequence`
 * only the first frame is searched: the phase it chose codes every later
 * frame, through an encoder with the configuration's frames in flight.
 */
std::unique_ptr<Encoder> create_step_phase_search(int phases, bool per_sequence, const StepPhaseEncoders &phase,
                                                  const j2kc_encoder_config &config, const Logger &log);

}  // namespace j2kc
