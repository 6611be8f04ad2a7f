/**
 * @file decoder_palette.cpp
 * @brief The CUDA backend's decoder for every stream, JP2 palettes included:
 * files with pclr/cmap boxes (I.5.3.4-5) go to the CPU backend, which maps
 * the palette on host planes, and come back in submit order with the GPU's
 * frames. Palettes are indexed images (a few per collection, never a cinema
 * stream), so the CPU's speed is enough, and both backends give the same
 * samples.
 */
#include <deque>
#include <memory>
#include <optional>
#include <utility>

#include "codestream/jp2.h"
#include "pipeline/decoder_common.h"
#include "pipeline/host_mirror.h"
#include "pipeline/stage_times.h"

namespace j2kc {
namespace {

/** Whether the bytes are a JP2 file with a palette (a file that does not parse goes to the GPU, which says why). */
bool has_palette(const uint8_t *data, size_t size)
{
    if (!is_jp2(data, size)) return false;
    try {
        return parse_jp2(data, size).palette.has_value();
    } catch (const Error &) {
        return false;
    }
}

class PaletteRoutingDecoder final : public Decoder {
public:
    PaletteRoutingDecoder(std::unique_ptr<Decoder> gpu, const j2kc_decoder_config &config, const Logger &log)
        : gpu_(std::move(gpu)), config_(config), log_(log)
    {}

    j2kc_backend backend() const override { return J2KC_BACKEND_CUDA; }
    int download_device() const override { return gpu_->download_device(); }

    void parse(const uint8_t *data, size_t size, j2kc_stream_info &info) override
    {
        route(data, size).parse(data, size, info);
    }

    bool submit(const uint8_t *data, size_t size, int64_t tag) override
    {
        const bool palette = has_palette(data, size);
        if (!(palette ? cpu() : *gpu_).submit(data, size, tag)) return false;
        on_cpu_.push_back(palette);
        return true;
    }

    bool receive(const j2kc_image *output, int64_t &tag, bool flush) override
    {
        if (on_cpu_.empty()) return false;
        const bool on_cpu = on_cpu_.front();
        // The CPU writes host memory: a CUDA frame is filled from a host copy of its layout.
        std::optional<HostMirror> mirror;
        if (on_cpu && output && output->memory == J2KC_MEMORY_CUDA) mirror.emplace(*output, config_.cuda_context, config_.device);
        bool got = false;
        try {
            // The CPU decodes a frame when it is received; the oldest frame is
            // the one the caller waits for, so it is decoded now, as a flush would.
            got = on_cpu ? cpu_->receive(mirror ? &mirror->image : output, tag, /*flush=*/true)
                         : gpu_->receive(output, tag, flush);
        } catch (...) {
            on_cpu_.pop_front();  // the frame left its queue with its error
            throw;
        }
        if (!got) return false;
        on_cpu_.pop_front();
        if (mirror) mirror->upload();
        return true;
    }

    void reset() override
    {
        gpu_->reset();
        if (cpu_) cpu_->reset();
        on_cpu_.clear();
    }

    void decode(const uint8_t *data, size_t size, const j2kc_image &output) override
    {
        if (!has_palette(data, size)) return gpu_->decode(data, size, output);
        if (output.memory != J2KC_MEMORY_CUDA) return cpu().decode(data, size, output);
        HostMirror mirror(output, config_.cuda_context, config_.device);
        cpu().decode(data, size, mirror.image);
        mirror.upload();
    }

    j2kc_stage_times stage_times() const override
    {
        j2kc_stage_times t = gpu_->stage_times();
        if (cpu_) add_stage_times(t, cpu_->stage_times());
        return t;
    }

private:
    Decoder &cpu()
    {
        if (!cpu_) {
            log_.log(J2KC_LOG_VERBOSE, "a JP2 palette: that file decodes on the CPU backend");
            cpu_ = create_cpu_decoder(config_, log_);
        }
        return *cpu_;
    }

    Decoder &route(const uint8_t *data, size_t size) { return has_palette(data, size) ? cpu() : *gpu_; }

    std::unique_ptr<Decoder> gpu_, cpu_;
    j2kc_decoder_config config_;
    Logger log_;
    std::deque<bool> on_cpu_;  ///< per queued frame, in submit order: decoded by cpu_
};

}  // namespace

std::unique_ptr<Decoder> route_palettes_to_cpu(std::unique_ptr<Decoder> gpu, const j2kc_decoder_config &config,
                                               const Logger &log)
{
    return std::make_unique<PaletteRoutingDecoder>(std::move(gpu), config, log);
}

}  // namespace j2kc
