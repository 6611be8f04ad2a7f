/**
 * @file staged_encoder.h
 * @brief The encoder's frame loop shared by the backends: the backend turns a
 * frame into quantisation indices per tile (colour, DWT, quantisation), and
 * the stages after that (Tier-1, PCRD-opt, Tier-2, codestream assembly) run
 * here unless the backend takes them over too.
 */
#pragma once

#include <chrono>
#include <deque>
#include <vector>

#include "common/log.h"
#include "common/thread_pool.h"
#include "pipeline/encoder.h"
#include "pipeline/encoder_common.h"
#include "pipeline/encoder_plan.h"
#include "tier1/tier1.h"
#include "tier2/partition.h"

namespace j2kc {

/** One tile's indices and code-blocks on their way through the stages. */
struct TileWork {
    TileLayout layout;
    std::vector<std::vector<int32_t>> indices;  ///< per component, Mallat layout, row stride = width
    std::vector<EncodedCodeBlock> blocks;       ///< per code-block of layout
};

class StagedEncoder : public Encoder {
public:
    StagedEncoder(const j2kc_encoder_config &config, const j2kc_image &shape, const Logger &log);

    bool submit(const j2kc_image &image, int64_t tag) override;
    bool receive(std::vector<uint8_t> &codestream, int64_t &tag, bool flush) override;
    j2kc_stage_times stage_times() const override { return times_; }

protected:
    using Clock = std::chrono::steady_clock;
    static double ms_since(Clock::time_point t)
    {
        return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
    }

    /** Colour transform, DWT and quantisation of every tile into work[t].indices. */
    virtual void transform(const j2kc_image &image, std::vector<TileWork> &work) = 0;

    /** Tier-1 of every code-block of every tile, on the thread pool. */
    void code_blocks(std::vector<TileWork> &work);

    const EncoderPlan plan_;
    Logger log_;
    ThreadPool pool_;
    j2kc_stage_times times_{};

private:
    std::vector<uint8_t> encode(const j2kc_image &image);

    bool timing_;
    std::vector<TileWork> work_;
    std::deque<std::pair<std::vector<uint8_t>, int64_t>> done_;
};

}  // namespace j2kc
