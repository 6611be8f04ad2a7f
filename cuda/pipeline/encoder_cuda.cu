/**
 * @file encoder_cuda.cu
 * @brief The CUDA encoder. Frames go up once (or are taken as they are from
 * CUDA memory); colour transform, DWT and quantisation run on the GPU with the
 * kernels that are bit-identical to the CPU reference.
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "color/color.h"
#include "common/cuda_util.cuh"
#include "common/status.h"
#include "dwt/dwt.h"
#include "pipeline/reconstruct.h"
#include "pipeline/staged_encoder.h"
#include "quant/quant.h"

namespace j2kc {
namespace {

uint64_t component_span(const j2kc_component &c)
{
    if (c.width == 0 || c.height == 0) return 0;
    return uint64_t(c.height - 1) * uint64_t(c.row_stride) + uint64_t(c.width - 1) * c.sample_stride +
           c.bytes_per_sample;
}

class CudaEncoder final : public StagedEncoder {
public:
    CudaEncoder(const j2kc_encoder_config &config, const j2kc_image &shape, const Logger &log)
        : StagedEncoder(config, shape, log), context_(config.cuda_context), device_(config.device),
          gpu_(std::make_unique<GpuState>(config))
    {
    }

    ~CudaEncoder() override
    {
        ContextScope scope(context_, device_);
        gpu_.reset();
    }

    j2kc_backend backend() const override { return J2KC_BACKEND_CUDA; }

private:
    void transform(const j2kc_image &image, std::vector<TileWork> &work) override
    {
        ContextScope scope(context_, device_);
        auto t0 = Clock::now();
        const j2kc_component *components = upload(image);
        times_.upload += ms_since(t0);
        for (TileWork &tw : work) transform_tile(components, image.num_components, tw);
        gpu_->stream.sync();
    }

    /** Device view of the frame: host planes are copied up as whole byte spans. */
    const j2kc_component *upload(const j2kc_image &image)
    {
        device_components_.assign(image.components, image.components + image.num_components);
        if (image.memory == J2KC_MEMORY_CUDA) return device_components_.data();
        uint64_t begin = UINT64_MAX, end = 0;
        for (uint32_t c = 0; c < image.num_components; ++c) {
            begin = std::min(begin, image.components[c].data);
            end = std::max(end, image.components[c].data + component_span(image.components[c]));
        }
        // One span when the planes sit together (FFmpeg's buffers), else one per component.
        uint64_t separate = 0;
        for (uint32_t c = 0; c < image.num_components; ++c) separate += component_span(image.components[c]);
        if (end - begin <= 2 * separate) {
            auto *dev = static_cast<uint8_t *>(gpu_->frame.reserve(end - begin));
            check_cuda(cudaMemcpyAsync(dev, reinterpret_cast<const void *>(begin), end - begin,
                                       cudaMemcpyHostToDevice, gpu_->stream.get()),
                       "frame upload");
            for (uint32_t c = 0; c < image.num_components; ++c)
                device_components_[c].data = reinterpret_cast<uint64_t>(dev) + (image.components[c].data - begin);
        } else {
            if (gpu_->planes_up.size() < image.num_components) gpu_->planes_up.resize(image.num_components);
            for (uint32_t c = 0; c < image.num_components; ++c) {
                const uint64_t bytes = component_span(image.components[c]);
                void *dev = gpu_->planes_up[c].reserve(std::max<uint64_t>(bytes, 1));
                check_cuda(cudaMemcpyAsync(dev, reinterpret_cast<const void *>(image.components[c].data), bytes,
                                           cudaMemcpyHostToDevice, gpu_->stream.get()),
                           "frame upload");
                device_components_[c].data = reinterpret_cast<uint64_t>(dev);
            }
        }
        return device_components_.data();
    }

    void transform_tile(const j2kc_component *components, uint32_t n, TileWork &tw)
    {
        std::vector<j2kc_component> views(n);
        std::vector<size_t> strides(n), offsets(n);
        size_t total = 0, scratch_bytes = 4;
        for (uint32_t c = 0; c < n; ++c) {
            const Rect &rect = tw.layout.components[c].rect;
            views[c] = tile_view(components[c], rect, 0, 0);
            strides[c] = rect.width();
            offsets[c] = total;
            total += rect.area();
            scratch_bytes = std::max(scratch_bytes, dwt_gpu_scratch_bytes(rect));
        }
        auto *planes = static_cast<int32_t *>(gpu_->planes.reserve(std::max<size_t>(total, 1) * 4));
        auto *indices = static_cast<int32_t *>(gpu_->indices.reserve(std::max<size_t>(total, 1) * 4));
        void *scratch = gpu_->scratch.reserve(scratch_bytes);
        cudaStream_t s = gpu_->stream.get();
        const bool mct = plan_.cod.mct != 0;
        if (plan_.reversible()) {
            std::vector<int32_t *> p(n);
            for (uint32_t c = 0; c < n; ++c) p[c] = indices + offsets[c];
            color_forward_gpu(views.data(), n, mct, p.data(), strides.data(), s);
            for (uint32_t c = 0; c < n; ++c)
                dwt53_forward_gpu(p[c], strides[c], tw.layout.components[c].rect, plan_.levels(), scratch, s);
        } else {
            std::vector<float *> p(n);
            for (uint32_t c = 0; c < n; ++c) p[c] = reinterpret_cast<float *>(planes + offsets[c]);
            color_forward_gpu(views.data(), n, mct, p.data(), strides.data(), s);
            for (uint32_t c = 0; c < n; ++c) {
                const Rect &rect = tw.layout.components[c].rect;
                dwt97_forward_gpu(p[c], strides[c], rect, plan_.levels(), scratch, s);
                const QuantizeParams q = make_quantize_params(plan_.quant[c], Wavelet::kIrreversible97,
                                                              plan_.siz.components[c].precision, rect, plan_.levels());
                quantize_gpu(p[c], strides[c], indices + offsets[c], strides[c], q, s);
            }
        }
        // Tier-1 reads the indices on the host for now.
        auto *host = static_cast<int32_t *>(gpu_->pinned.reserve(std::max<size_t>(total, 1) * 4));
        check_cuda(cudaMemcpyAsync(host, indices, total * 4, cudaMemcpyDeviceToHost, s), "index download");
        gpu_->stream.sync();
        tw.indices.resize(n);
        for (uint32_t c = 0; c < n; ++c)
            tw.indices[c].assign(host + offsets[c], host + offsets[c] + tw.layout.components[c].rect.area());
    }

    /** Everything that lives in the GPU's context. */
    struct GpuState {
        explicit GpuState(const j2kc_encoder_config &c) : stream(c.cuda_stream, c.cuda_context, c.device) {}
        StreamHolder stream;
        DeviceBuffer frame, planes, indices, scratch;
        std::vector<DeviceBuffer> planes_up;
        PinnedBuffer pinned;
    };

    void *context_;
    int device_;
    std::vector<j2kc_component> device_components_;
    std::unique_ptr<GpuState> gpu_;
};

}  // namespace

std::unique_ptr<Encoder> create_cuda_encoder(const j2kc_encoder_config &config, const j2kc_image &shape,
                                             const Logger &log)
{
    return std::make_unique<CudaEncoder>(config, shape, log);
}

}  // namespace j2kc
