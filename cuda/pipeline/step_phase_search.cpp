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
 * frame decides. By default, and always in DCI and IMF sequences, which
 * must keep one QCD, the first frame decides for the whole sequence, so a
 * sequence pays for the search once.
 */
#include "pipeline/step_phase_search.h"

#include <cstdint>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "color/color_ops.h"
#include "common/status.h"
#include "pipeline/decoder.h"
#include "pipeline/host_mirror.h"
#include "pipeline/stage_times.h"

namespace j2kc {
namespace {

class StepPhaseSearch final : public Encoder {
public:
    StepPhaseSearch(int phases, bool per_sequence, const StepPhaseEncoders &phase, const j2kc_encoder_config &config,
                    const Logger &log)
        : phase_(phase), per_sequence_(per_sequence), config_(config), log_(log)
    {
        for (int k = 0; k < phases; ++k) grid_.push_back(phase_(double(k) / phases, /*one_frame=*/true));
        backend_ = grid_.front()->backend();
    }

    j2kc_backend backend() const override { return backend_; }

    bool submit(const j2kc_image &image, int64_t tag) override
    {
        if (chosen_) {
            if (!sequence_) sequence_ = phase_(*chosen_, /*one_frame=*/false);
            return sequence_->submit(image, tag);
        }
        times_ = {};
        // The error is taken on host samples: a frame in CUDA memory is read
        // down once, in order on the lent stream as the encoders read it.
        std::optional<HostMirror> host;
        if (image.memory == J2KC_MEMORY_CUDA) {
            host.emplace(image, config_.cuda_context, config_.device);
            host->download(config_.cuda_stream);
        }
        take_source(host ? host->image : image);
        Candidate best;
        for (size_t k = 0; k < grid_.size(); ++k) consider(best, double(k) / grid_.size(), *grid_[k], image, tag);
        // PSNR moves smoothly with the phase, so the nearest decode lies
        // next to the grid's best: the spacing is halved three times around
        // it (deep samples near the decoders' rounding peak within 1/32).
        for (const int halving : {2, 4, 8}) {
            const double centre = best.phase, spacing = 1.0 / (double(grid_.size()) * halving);
            for (const double side : {-spacing, spacing}) {
                const double p = wrap_phase(centre + side);
                consider(best, p, *phase_(p, /*one_frame=*/true), image, tag);
            }
        }
        log_.log(J2KC_LOG_VERBOSE, "step phase 2^%.4f kept%s (squared error %llu)", best.phase,
                 per_sequence_ ? " for the sequence" : "", static_cast<unsigned long long>(best.error));
        done_.emplace_back(std::move(best.codestream), tag);
        if (per_sequence_) {
            // The sequence's encoder comes with the next frame, once the
            // grid's encoders and the decoder have given their memory back.
            chosen_ = best.phase;
            grid_.clear();
            decoder_.reset();
            source_ = {};
            decoded_ = {};
        }
        return true;
    }

    bool receive(std::vector<uint8_t> &codestream, int64_t &tag, bool flush) override
    {
        if (done_.empty()) return sequence_ && sequence_->receive(codestream, tag, flush);
        codestream = std::move(done_.front().first);
        tag = done_.front().second;
        done_.pop_front();
        return true;
    }

    /** The sequence encoder's, or every phase's stage times of the last frame added up. */
    j2kc_stage_times stage_times() const override { return sequence_ ? sequence_->stage_times() : times_; }

private:
    /** The codestream nearest the frame so far, at step phase `phase`. */
    struct Candidate {
        double phase = 0;
        uint64_t error = UINT64_MAX;
        std::vector<uint8_t> codestream;
    };

    /** A phase one plane away codes the same steps a plane finer or coarser, so phases wrap into [0, 1). */
    static double wrap_phase(double p) { return p < 0 ? p + 1 : p >= 1 ? p - 1 : p; }

    /** Codes the frame at `phase` and keeps it in `best` if it decodes nearer (the first coded wins a tie). */
    void consider(Candidate &best, double phase, Encoder &encoder, const j2kc_image &image, int64_t tag)
    {
        std::vector<uint8_t> codestream = code_frame(encoder, image, tag);
        const uint64_t error = squared_error(codestream);
        if (error < best.error) best = {phase, error, std::move(codestream)};
    }

    std::vector<uint8_t> code_frame(Encoder &encoder, const j2kc_image &image, int64_t tag)
    {
        std::vector<uint8_t> codestream;
        int64_t got = 0;
        if (!encoder.submit(image, tag) || !encoder.receive(codestream, got, true))
            fail(J2KC_ERR_INTERNAL, "a step phase's encoder returned no codestream");
        add_stage_times(times_, encoder.stage_times());
        return codestream;
    }

    /** The decoder of the encoders' backend, one frame at a time: both give the same samples. */
    Decoder &decoder()
    {
        if (!decoder_) {
            j2kc_decoder_config dc;
            j2kc_decoder_config_default(&dc);
            dc.backend = backend_;
            dc.device = config_.device;
            dc.cuda_context = config_.cuda_context;
            dc.cuda_stream = config_.cuda_stream;
            dc.threads = config_.threads;
            dc.frames_in_flight = 1;
            decoder_ = create_decoder(dc, log_);
        }
        return *decoder_;
    }

    /**
     * The frame's samples (host memory) as offset-binary integers, one
     * plane a component, and the decoder's output planes in its shape: read
     * once a frame, so each coding's error is a pass over two arrays (at 4K
     * the sample-by-sample unpacking took as long as a coding on the GPU).
     */
    void take_source(const j2kc_image &image)
    {
        const uint32_t n = image.num_components;
        source_.resize(n);
        decoded_.resize(n);
        shape_.assign(image.components, image.components + n);
        for (uint32_t c = 0; c < n; ++c) {
            const j2kc_component &k = image.components[c];
            const int32_t half = int32_t{1} << (k.precision - 1);
            source_[c].resize(size_t{k.width} * k.height);
            decoded_[c].resize(size_t{k.width} * k.height);
            for (uint32_t y = 0; y < k.height; ++y)
                for (uint32_t x = 0; x < k.width; ++x)
                    source_[c][size_t{y} * k.width + x] = unpack_sample(k, x, y) + half;
            j2kc_component &out = shape_[c];
            out.data = reinterpret_cast<uintptr_t>(decoded_[c].data());
            out.bytes_per_sample = 4;
            out.sample_stride = 4;
            out.row_stride = static_cast<ptrdiff_t>(k.width) * 4;
            out.shift = 0;
        }
        frame_ = image;
        frame_.components = shape_.data();
        frame_.memory = J2KC_MEMORY_HOST;
    }

    /** Sum of squared differences between the decoded codestream and the frame, over all samples. */
    uint64_t squared_error(const std::vector<uint8_t> &codestream)
    {
        decoder().decode(codestream.data(), codestream.size(), frame_);
        uint64_t sum = 0;
        for (size_t c = 0; c < source_.size(); ++c) {
            // The decoder packs P-bit fields; a signed one is two's
            // complement, which the sign bit's flip turns into offset binary.
            const uint32_t flip = shape_[c].is_signed ? uint32_t{1} << (shape_[c].precision - 1) : 0;
            const int32_t *s = source_[c].data();
            const uint32_t *d = decoded_[c].data();
            for (size_t i = 0; i < source_[c].size(); ++i) {
                const int64_t e = int64_t{s[i]} - int64_t{d[i] ^ flip};
                sum += static_cast<uint64_t>(e * e);
            }
        }
        return sum;
    }

    StepPhaseEncoders phase_;
    bool per_sequence_;
    j2kc_encoder_config config_;
    Logger log_;
    j2kc_backend backend_;
    std::vector<std::unique_ptr<Encoder>> grid_;  ///< the encoders of phases k / N, kept between frames
    std::unique_ptr<Decoder> decoder_;
    std::vector<std::vector<int32_t>> source_;    ///< the frame's samples, offset binary (take_source)
    std::vector<std::vector<uint32_t>> decoded_;  ///< the decoder's output planes
    std::vector<j2kc_component> shape_;           ///< decoded_ as components
    j2kc_image frame_{};                          ///< decoded_ as an image, the decoder's output
    j2kc_stage_times times_{};
    std::deque<std::pair<std::vector<uint8_t>, int64_t>> done_;
    std::optional<double> chosen_;  ///< the sequence's phase, once its first frame chose it
    std::unique_ptr<Encoder> sequence_;
};

}  // namespace

std::unique_ptr<Encoder> create_step_phase_search(int phases, bool per_sequence, const StepPhaseEncoders &phase,
                                                  const j2kc_encoder_config &config, const Logger &log)
{
    return std::make_unique<StepPhaseSearch>(phases, per_sequence, phase, config, log);
}

}  // namespace j2kc
