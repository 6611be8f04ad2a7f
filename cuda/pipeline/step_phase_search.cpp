/**
 * @file step_phase_search.cpp
 * @brief Step phases searched under a byte budget (step_phase_search.h).
 *
 * Under a budget the base step is a power of two (encoder_plan.cpp's rule)
 * and PCRD-opt cuts each code-block at one of its passes. Which of the
 * planes' passes the budget reaches moves PSNR at equal bytes by up to a few
 * tenths of a dB, differently for each frame; the wavelet-domain distortion
 * measures tried ranked the phases wrongly on most frames, above all near
 * the decoders' rounding to integers (docs/measurements.md), so the decoded
 * frame decides.
 */
#include "pipeline/step_phase_search.h"

#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "color/color_ops.h"
#include "common/status.h"
#include "pipeline/decoder.h"
#include "pipeline/stage_times.h"

namespace j2kc {
namespace {

class StepPhaseSearch final : public Encoder {
public:
    StepPhaseSearch(int phases, const std::function<std::unique_ptr<Encoder>(int)> &phase,
                    const j2kc_encoder_config &config, const Logger &log)
        : log_(log)
    {
        for (int k = 0; k < phases; ++k) phases_.push_back(phase(k));
        j2kc_decoder_config dc;
        j2kc_decoder_config_default(&dc);
        dc.backend = J2KC_BACKEND_CPU;
        dc.threads = config.threads;
        decoder_ = create_decoder(dc, log);
    }

    j2kc_backend backend() const override { return phases_.front()->backend(); }

    bool submit(const j2kc_image &image, int64_t tag) override
    {
        J2KC_CHECK_SUPPORTED(image.memory == J2KC_MEMORY_HOST, "step phases are searched on frames in host memory");
        times_ = {};
        std::vector<uint8_t> best, codestream;
        uint64_t best_error = UINT64_MAX;
        int best_phase = 0;
        for (size_t k = 0; k < phases_.size(); ++k) {
            codestream = code_frame(*phases_[k], image, tag);
            const uint64_t error = squared_error(codestream, image);
            if (error < best_error) {
                best_error = error;
                best_phase = static_cast<int>(k);
                std::swap(best, codestream);
            }
        }
        log_.log(J2KC_LOG_VERBOSE, "step phase %d of %zu kept (squared error %llu)", best_phase, phases_.size(),
                 static_cast<unsigned long long>(best_error));
        done_.emplace_back(std::move(best), tag);
        return true;
    }

    bool receive(std::vector<uint8_t> &codestream, int64_t &tag, bool) override
    {
        if (done_.empty()) return false;
        codestream = std::move(done_.front().first);
        tag = done_.front().second;
        done_.pop_front();
        return true;
    }

    /** Every phase's stage times added up. */
    j2kc_stage_times stage_times() const override { return times_; }

private:
    std::vector<uint8_t> code_frame(Encoder &encoder, const j2kc_image &image, int64_t tag)
    {
        std::vector<uint8_t> codestream;
        int64_t got = 0;
        if (!encoder.submit(image, tag) || !encoder.receive(codestream, got, true))
            fail(J2KC_ERR_INTERNAL, "a step phase's encoder returned no codestream");
        add_stage_times(times_, encoder.stage_times());
        return codestream;
    }

    /** Sum of squared differences between the decoded codestream and the frame, over all samples. */
    uint64_t squared_error(const std::vector<uint8_t> &codestream, const j2kc_image &image)
    {
        const uint32_t n = image.num_components;
        planes_.resize(n);
        std::vector<j2kc_component> out(image.components, image.components + n);
        for (uint32_t c = 0; c < n; ++c) {
            planes_[c].assign(size_t{out[c].width} * out[c].height, 0);
            out[c].data = reinterpret_cast<uintptr_t>(planes_[c].data());
            out[c].bytes_per_sample = 4;
            out[c].sample_stride = 4;
            out[c].row_stride = static_cast<ptrdiff_t>(out[c].width) * 4;
            out[c].shift = 0;
        }
        j2kc_image decoded = image;
        decoded.components = out.data();
        decoder_->decode(codestream.data(), codestream.size(), decoded);
        uint64_t sum = 0;
        for (uint32_t c = 0; c < n; ++c)
            for (uint32_t y = 0; y < out[c].height; ++y)
                for (uint32_t x = 0; x < out[c].width; ++x) {
                    const int64_t d = int64_t{unpack_sample(image.components[c], x, y)} - unpack_sample(out[c], x, y);
                    sum += static_cast<uint64_t>(d * d);
                }
        return sum;
    }

    Logger log_;
    std::vector<std::unique_ptr<Encoder>> phases_;
    std::unique_ptr<Decoder> decoder_;
    std::vector<std::vector<int32_t>> planes_;
    j2kc_stage_times times_{};
    std::deque<std::pair<std::vector<uint8_t>, int64_t>> done_;
};

}  // namespace

std::unique_ptr<Encoder> create_step_phase_search(int phases, const std::function<std::unique_ptr<Encoder>(int)> &phase,
                                                  const j2kc_encoder_config &config, const Logger &log)
{
    return std::make_unique<StepPhaseSearch>(phases, phase, config, log);
}

}  // namespace j2kc
