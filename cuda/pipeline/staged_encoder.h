/**
 * @file staged_encoder.h
 * @brief What the encoder backends share: the plan, the tile layouts, the
 * frame queue and the stage timer, plus the CPU reference of the stages after
 * quantisation (Tier-1, PCRD-opt, Tier-2, codestream assembly). A backend
 * implements encode_frame() (the CPU one runs every stage's reference) or,
 * to keep frames in flight, submit() and receive() (the CUDA one).
 */
#pragma once

#include <chrono>
#include <deque>
#include <vector>

#include "common/log.h"
#include "common/thread_pool.h"
#include "geometry/partition.h"
#include "pipeline/encoder.h"
#include "pipeline/encoder_common.h"
#include "pipeline/encoder_plan.h"
#include "tier1/tier1.h"

namespace j2kc {

/** One tile's indices and code-blocks on their way through the stages. */
struct TileWork {
    TileLayout layout;
    std::vector<std::vector<int32_t>> indices;  ///< per component, Mallat layout, row stride = width
    std::vector<EncodedCodeBlock> blocks;       ///< per code-block of layout
};

class StagedEncoder : public Encoder {
public:
    /** `step_phase`: plan_encoder's, the phase of the base step this encoder codes at. */
    StagedEncoder(const j2kc_encoder_config &config, const j2kc_image &shape, const Logger &log, double step_phase);

    bool submit(const j2kc_image &image, int64_t tag) override;
    bool receive(std::vector<uint8_t> &codestream, int64_t &tag, bool flush) override;
    j2kc_stage_times stage_times() const override { return times_; }

protected:
    using Clock = std::chrono::steady_clock;
    static double ms_since(Clock::time_point t)
    {
        return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
    }

    /**
     * One frame to one codestream, filling times_ as it goes (the
     * synchronous queue of submit/receive above). A backend that keeps
     * several frames in flight overrides submit/receive instead.
     */
    virtual std::vector<uint8_t> encode_frame(const j2kc_image &image);

    /** Tier-1 of every code-block of every tile, on the thread pool (CPU reference). */
    void code_blocks(std::vector<TileWork> &work);
    /** Where a code-block's indices lie in its tile's index planes. */
    const int32_t *block_indices(const TileWork &tw, const CodeBlock &cb, size_t &stride) const;
    /** The frame's modelled bytes of coding down to each plane (htenc::ht_add_cleanup_model over
     *  all its code-blocks), which picks the HT sets' planes and Part 1's lowest plane. */
    void plane_cost_model(const std::vector<TileWork> &work, uint64_t (&bits)[htenc::kHtPlaneBins]);
    /** PCRD-opt with exact Tier-2 sizing, then the codestream (CPU reference). */
    std::vector<uint8_t> rate_and_assemble(const std::vector<TileWork> &work);
    /** The step fit's sums (codestream_assembly.h's write_fitted_steps) of the selected truncations. */
    std::vector<uint64_t> step_fit_sums(const std::vector<TileWork> &work, const PcrdResult &selection);
    void log_kept_passes(const FrameBlocks &frame, const PcrdResult &selection) const;

    bool timing() const { return timing_; }

    const EncoderPlan plan_;
    Logger log_;
    ThreadPool pool_;
    j2kc_stage_times times_{};
    std::vector<TileWork> work_;  ///< one per tile, layouts built once

private:
    bool timing_;
    std::deque<std::pair<std::vector<uint8_t>, int64_t>> done_;
};

}  // namespace j2kc
