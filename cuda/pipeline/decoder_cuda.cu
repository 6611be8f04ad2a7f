/**
 * @file decoder_cuda.cu
 * @brief The CUDA decoder (paper 002): Tier-2 and Tier-1 on the CPU cores,
 * then per tile the coefficients go up through pinned memory and the GPU
 * dequantises, inverse transforms, applies the inverse MCT, clips and packs
 * straight into the output layout, in device memory (CUDA frames) or staged
 * back to host memory. The kernels are the same stages' .cu twins of the
 * CPU reference, so the pixels are identical.
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "color/color.h"
#include "common/cuda_util.cuh"
#include "common/status.h"
#include "common/thread_pool.h"
#include "dwt/dwt.h"
#include "pipeline/decoder_common.h"
#include "pipeline/tile_decoder.h"
#include "quant/quant.h"

namespace j2kc {
namespace {

/**
 * Host output planes mirrored in device memory. Components whose byte ranges
 * overlap (packed formats) share one mirror, which starts as a copy of the
 * host bytes so that whatever lies between our samples survives the round trip.
 */
class HostOutputMirror {
public:
    void prepare(const j2kc_image &host, cudaStream_t stream)
    {
        const uint32_t n = host.num_components;
        groups_.clear();
        device_components_.assign(host.components, host.components + n);
        std::vector<uint32_t> order(n);
        for (uint32_t c = 0; c < n; ++c) order[c] = c;
        std::sort(order.begin(), order.end(),
                  [&](uint32_t a, uint32_t b) { return host.components[a].data < host.components[b].data; });
        for (uint32_t c : order) {
            const uint64_t begin = host.components[c].data, end = begin + component_span(host.components[c]);
            if (!groups_.empty() && begin < groups_.back().end) {
                groups_.back().end = std::max(groups_.back().end, end);
                groups_.back().members.push_back(c);
            } else {
                groups_.push_back({begin, end, {c}});
            }
        }
        if (buffers_.size() < groups_.size()) buffers_.resize(groups_.size());
        for (size_t g = 0; g < groups_.size(); ++g) {
            Group &grp = groups_[g];
            const size_t bytes = grp.end - grp.begin;
            auto *dev = static_cast<uint8_t *>(buffers_[g].reserve(std::max<size_t>(bytes, 1)));
            check_cuda(cudaMemcpyAsync(dev, reinterpret_cast<const void *>(grp.begin), bytes,
                                       cudaMemcpyHostToDevice, stream),
                       "upload of the output planes");
            for (uint32_t c : grp.members)
                device_components_[c].data = reinterpret_cast<uint64_t>(dev) + (host.components[c].data - grp.begin);
        }
    }

    const j2kc_component *components() const { return device_components_.data(); }

    void download(cudaStream_t stream)
    {
        for (size_t g = 0; g < groups_.size(); ++g)
            check_cuda(cudaMemcpyAsync(reinterpret_cast<void *>(groups_[g].begin), buffers_[g].as<void>(),
                                       groups_[g].end - groups_[g].begin, cudaMemcpyDeviceToHost, stream),
                       "download of the output planes");
    }

private:
    struct Group {
        uint64_t begin, end;
        std::vector<uint32_t> members;
    };
    std::vector<Group> groups_;
    std::vector<DeviceBuffer> buffers_;
    std::vector<j2kc_component> device_components_;
};

class CudaDecoder final : public Decoder {
public:
    CudaDecoder(const j2kc_decoder_config &config, const Logger &log)
        : config_(config), log_(log), pool_(config.threads > 0 ? unsigned(config.threads) : 0u),
          gpu_(std::make_unique<GpuState>(config))
    {
    }

    ~CudaDecoder() override
    {
        // Device memory goes back in the context it came from.
        ContextScope scope(config_.cuda_context, config_.device);
        gpu_.reset();
    }

    j2kc_backend backend() const override { return J2KC_BACKEND_CUDA; }

    void parse(const uint8_t *data, size_t size, j2kc_stream_info &info) override
    {
        describe_stream(parse_stream(data, size, config_), info);
    }

    void decode(const uint8_t *data, size_t size, const j2kc_image &output) override
    {
        ContextScope scope(config_.cuda_context, config_.device);
        const ParsedStream s = parse_stream(data, size, config_);
        for (const std::string &w : s.cs.warnings) log_.log(J2KC_LOG_WARNING, "%s", w.c_str());
        OutputPlacement placement = check_output(s, output);
        j2kc_image device_image = output;
        if (output.memory == J2KC_MEMORY_HOST) {
            gpu_->mirror.prepare(output, gpu_->stream.get());
            device_image.components = const_cast<j2kc_component *>(gpu_->mirror.components());
            device_image.memory = J2KC_MEMORY_CUDA;
        }
        placement.image = &device_image;
        const TileDecodeOptions options{s.reduce, s.max_layers};
        for_each_tile(s, [&](const Tile &tile) {
            decode_tile_coefficients(s.cs, tile, options, pool_, coefficients_);
            if (coefficients_.corrupt_code_blocks)
                log_.log(J2KC_LOG_WARNING, "tile %u: %u corrupt code-blocks decoded as zero", tile.index,
                         coefficients_.corrupt_code_blocks);
            reconstruct_tile_gpu(placement);
        });
        if (output.memory == J2KC_MEMORY_HOST) gpu_->mirror.download(gpu_->stream.get());
        gpu_->stream.sync();
    }

private:
    /** Uploads the tile's coefficients and runs the sample stages on the GPU. */
    void reconstruct_tile_gpu(const OutputPlacement &placement)
    {
        TileCoefficients &tile = coefficients_;
        const j2kc_image &image = *placement.image;
        const uint32_t n = image.num_components;
        // The previous tile's kernels may still read the staging buffers.
        gpu_->stream.sync();
        size_t total = 0;
        for (uint32_t c = 0; c < n; ++c) total += tile.components[c].coefficients.size();
        auto *pinned = static_cast<int32_t *>(gpu_->pinned.reserve(std::max<size_t>(total, 1) * sizeof(int32_t)));
        auto *raw = static_cast<int32_t *>(gpu_->raw.reserve(std::max<size_t>(total, 1) * sizeof(int32_t)));
        auto *planes = static_cast<int32_t *>(gpu_->planes.reserve(std::max<size_t>(total, 1) * sizeof(int32_t)));
        size_t scratch_bytes = 0;
        for (uint32_t c = 0; c < n; ++c) scratch_bytes = std::max(scratch_bytes, dwt_gpu_scratch_bytes(tile.components[c].tc_rect));
        void *scratch = gpu_->scratch.reserve(std::max<size_t>(scratch_bytes, 4));

        std::vector<size_t> offset(n);
        size_t at = 0;
        for (uint32_t c = 0; c < n; ++c) {
            const auto &coef = tile.components[c].coefficients;
            std::memcpy(pinned + at, coef.data(), coef.size() * sizeof(int32_t));
            offset[c] = at;
            at += coef.size();
        }
        check_cuda(cudaMemcpyAsync(raw, pinned, at * sizeof(int32_t), cudaMemcpyHostToDevice, gpu_->stream.get()),
                   "coefficient upload");
        for (uint32_t c = 0; c < n; ++c) {
            const ComponentPlane &p = tile.components[c];
            if (p.out_rect.empty()) continue;
            int32_t *in = raw + offset[c];
            if (p.wavelet == Wavelet::kReversible53) {
                int32_t *out = planes + offset[c];
                dequantize_gpu(in, p.stride, out, p.stride, p.dequant, gpu_->stream.get());
                dwt53_inverse_gpu(out, p.stride, p.tc_rect, p.levels, p.levels_to_skip, scratch, gpu_->stream.get());
            } else {
                float *out = reinterpret_cast<float *>(planes + offset[c]);
                dequantize_gpu(in, p.stride, out, p.stride, p.dequant, gpu_->stream.get());
                dwt97_inverse_gpu(out, p.stride, p.tc_rect, p.levels, p.levels_to_skip, scratch, gpu_->stream.get());
            }
        }

        const bool mct = tile.mct && n >= 3;
        auto emit = [&](uint32_t first, uint32_t count, bool with_mct) {
            const ComponentPlane &p0 = tile.components[first];
            if (p0.out_rect.empty()) return;
            std::vector<j2kc_component> outs;
            std::vector<size_t> strides;
            std::vector<SampleFormat> formats;
            std::vector<int32_t *> ptrs;
            for (uint32_t c = first; c < first + count; ++c) {
                const ComponentPlane &p = tile.components[c];
                outs.push_back(tile_view(image.components[c], p.out_rect, placement.origin_x[c], placement.origin_y[c]));
                strides.push_back(p.stride);
                formats.push_back({p.precision, p.is_signed});
                ptrs.push_back(planes + offset[c]);
            }
            if (p0.wavelet == Wavelet::kReversible53) {
                std::vector<const int32_t *> in(ptrs.begin(), ptrs.end());
                color_inverse_gpu(in.data(), strides.data(), formats.data(), count, with_mct, outs.data(), gpu_->stream.get());
            } else {
                std::vector<const float *> in;
                for (int32_t *q : ptrs) in.push_back(reinterpret_cast<const float *>(q));
                color_inverse_gpu(in.data(), strides.data(), formats.data(), count, with_mct, outs.data(), gpu_->stream.get());
            }
        };
        uint32_t c = 0;
        if (mct) {
            emit(0, 3, true);
            c = 3;
        }
        for (; c < n; ++c) emit(c, 1, false);
    }

    /** Everything that lives in the GPU's context. */
    struct GpuState {
        explicit GpuState(const j2kc_decoder_config &c) : stream(c.cuda_stream, c.cuda_context, c.device) {}
        StreamHolder stream;
        PinnedBuffer pinned;
        DeviceBuffer raw, planes, scratch;
        HostOutputMirror mirror;
    };

    j2kc_decoder_config config_;
    Logger log_;
    ThreadPool pool_;
    TileCoefficients coefficients_;
    std::unique_ptr<GpuState> gpu_;
};

}  // namespace

std::unique_ptr<Decoder> create_cuda_decoder(const j2kc_decoder_config &config, const Logger &log)
{
    return std::make_unique<CudaDecoder>(config, log);
}

}  // namespace j2kc
