/**
 * @file encoder_cpu.cpp
 * @brief The CPU reference encoder's front half (Annex G colour, Annex F
 * DWT, Annex E quantisation) and the backend choice.
 */
#include <memory>
#include <string>
#include <vector>

#include "color/color.h"
#include "common/status.h"
#include "dwt/dwt.h"
#include "pipeline/cuda_device.h"
#include "pipeline/reconstruct.h"
#include "pipeline/staged_encoder.h"
#include "pipeline/step_phase_search.h"
#include "quant/quant.h"

namespace j2kc {
namespace {

class CpuEncoder final : public StagedEncoder {
public:
    using StagedEncoder::StagedEncoder;
    j2kc_backend backend() const override { return J2KC_BACKEND_CPU; }

private:
    std::vector<uint8_t> encode_frame(const j2kc_image &image) override
    {
        J2KC_CHECK_ARG(image.memory == J2KC_MEMORY_HOST, "the CPU backend reads host memory only");
        for (TileWork &tw : work_) transform_tile(image, tw);
        const auto t0 = Clock::now();
        code_blocks(work_);
        times_.tier1 = ms_since(t0);
        return rate_and_assemble(work_);
    }

    void transform_tile(const j2kc_image &image, TileWork &tw)
    {
        const uint32_t n = image.num_components;
        std::vector<j2kc_component> views(n);
        std::vector<size_t> strides(n);
        for (uint32_t c = 0; c < n; ++c) {
            views[c] = tile_view(image.components[c], tw.layout.components[c].rect, 0, 0);
            strides[c] = tw.layout.components[c].rect.width();
        }
        tw.indices.resize(n);
        auto t0 = Clock::now();
        if (plan_.reversible()) {
            std::vector<int32_t *> planes(n);
            for (uint32_t c = 0; c < n; ++c) {
                tw.indices[c].assign(tw.layout.components[c].rect.area(), 0);
                planes[c] = tw.indices[c].data();
            }
            color_forward_ref(views.data(), n, plan_.cod.mct != 0, planes.data(), strides.data());
            times_.color += ms_since(t0);
            t0 = Clock::now();
            pool_.parallel_for(n, [&](size_t c, unsigned) {
                dwt53_forward(planes[c], strides[c], tw.layout.components[c].rect, plan_.levels());
            });
            times_.dwt += ms_since(t0);
            return;
        }
        floats_.resize(n);
        std::vector<float *> planes(n);
        for (uint32_t c = 0; c < n; ++c) {
            floats_[c].assign(tw.layout.components[c].rect.area(), 0.0f);
            planes[c] = floats_[c].data();
        }
        color_forward_ref(views.data(), n, plan_.cod.mct != 0, planes.data(), strides.data());
        times_.color += ms_since(t0);
        t0 = Clock::now();
        pool_.parallel_for(n, [&](size_t c, unsigned) {
            dwt97_forward(planes[c], strides[c], tw.layout.components[c].rect, plan_.levels());
        });
        times_.dwt += ms_since(t0);
        t0 = Clock::now();
        pool_.parallel_for(n, [&](size_t c, unsigned) {
            tw.indices[c].assign(floats_[c].size(), 0);
            const QuantizeParams q =
                make_quantize_params(plan_.quant[c], Wavelet::kIrreversible97, plan_.siz.components[c].precision,
                                     tw.layout.components[c].rect, plan_.levels());
            quantize_ref(floats_[c].data(), strides[c], tw.indices[c].data(), strides[c], q);
        });
        times_.quant += ms_since(t0);
    }

    std::vector<std::vector<float>> floats_;
};

}  // namespace

std::unique_ptr<Encoder> create_cpu_encoder(const j2kc_encoder_config &config, const j2kc_image &shape,
                                            const Logger &log, double step_phase)
{
    return std::make_unique<CpuEncoder>(config, shape, log, step_phase);
}

namespace {

std::unique_ptr<Encoder> create_backend_encoder(const j2kc_encoder_config &config, const j2kc_image &shape,
                                                const Logger &log, double step_phase)
{
    switch (config.backend) {
    case J2KC_BACKEND_CPU: return create_cpu_encoder(config, shape, log, step_phase);
    case J2KC_BACKEND_CUDA:
        require_cuda_device(config.device);
        return create_cuda_encoder(config, shape, log, step_phase);
    case J2KC_BACKEND_AUTO:
        if (cuda_device_usable(config.device)) return create_cuda_encoder(config, shape, log, step_phase);
        log.log(J2KC_LOG_VERBOSE, "no usable CUDA device: encoding on the CPU");
        return create_cpu_encoder(config, shape, log, step_phase);
    default: fail(J2KC_ERR_INVALID_ARG, "unknown backend %d", int(config.backend));
    }
}

/**
 * An encoder's configuration and shape with copies of what they point to:
 * the step phase search builds its sequence's encoder after the first frame,
 * when the caller's strings and component array may be gone.
 */
struct EncoderArgs {
    EncoderArgs(const j2kc_encoder_config &c, const j2kc_image &s)
        : config(c), shape(s), comment(c.comment ? c.comment : ""),
          icc(c.icc_profile, c.icc_profile + (c.icc_profile ? c.icc_profile_size : 0)),
          components(s.components, s.components + s.num_components)
    {
        config.comment = c.comment ? comment.c_str() : nullptr;
        config.icc_profile = icc.empty() ? nullptr : icc.data();
        shape.components = components.data();
    }
    EncoderArgs(const EncoderArgs &) = delete;
    EncoderArgs &operator=(const EncoderArgs &) = delete;

    j2kc_encoder_config config;
    j2kc_image shape;
    std::string comment;
    std::vector<uint8_t> icc;
    std::vector<j2kc_component> components;
};

}  // namespace

std::unique_ptr<Encoder> create_encoder(const j2kc_encoder_config &config, const j2kc_image &shape, const Logger &log)
{
    std::vector<uint8_t> header = container_header(config, shape);
    const EncoderPlan plan = plan_encoder(config, shape);
    std::unique_ptr<Encoder> codestreams;
    if (plan.step_phases > 1) {
        // The search codes a frame at each phase in turn and waits for it: one
        // frame in flight each, not a queue's buffers times the phases.
        const auto args = std::make_shared<const EncoderArgs>(config, shape);
        const StepPhaseEncoders phase = [args, log](double p, bool one_frame) {
            j2kc_encoder_config c = args->config;
            if (one_frame) c.frames_in_flight = 1;
            return create_backend_encoder(c, args->shape, log, p);
        };
        codestreams = create_step_phase_search(plan.step_phases, plan.step_phase_per_sequence, phase, config, log);
    } else {
        codestreams = create_backend_encoder(config, shape, log, 0);
    }
    return with_container(std::move(codestreams), config, std::move(header));
}

}  // namespace j2kc
