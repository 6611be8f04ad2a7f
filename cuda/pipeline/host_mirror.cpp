/**
 * @file host_mirror.cpp
 * @brief Host copies of frames in CUDA memory (host_mirror.h).
 */
#include "pipeline/host_mirror.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "common/cuda_util.cuh"
#include "pipeline/reconstruct.h"

namespace j2kc {

HostMirror::HostMirror(const j2kc_image &device, void *context, int ordinal)
    : image(device), context_(context), ordinal_(ordinal)
{
    uint64_t end = 0;
    for (uint32_t c = 0; c < device.num_components; ++c) {
        begin_ = std::min(begin_, device.components[c].data);
        end = std::max(end, device.components[c].data + component_span(device.components[c]));
    }
    bytes_.assign(end > begin_ ? end - begin_ : 0, 0);
    components_.assign(device.components, device.components + device.num_components);
    for (j2kc_component &k : components_) k.data = reinterpret_cast<uint64_t>(bytes_.data()) + (k.data - begin_);
    image.components = components_.data();
    image.memory = J2KC_MEMORY_HOST;
}

void HostMirror::upload()
{
    if (bytes_.empty()) return;
    ContextScope scope(context_, ordinal_);
    check_cuda(cudaMemcpy(reinterpret_cast<void *>(begin_), bytes_.data(), bytes_.size(), cudaMemcpyHostToDevice),
               "frame upload from its host copy");
}

void HostMirror::download(void *stream)
{
    if (bytes_.empty()) return;
    ContextScope scope(context_, ordinal_);
    const auto s = static_cast<cudaStream_t>(stream);
    check_cuda(cudaMemcpyAsync(bytes_.data(), reinterpret_cast<const void *>(begin_), bytes_.size(),
                               cudaMemcpyDeviceToHost, s),
               "frame download to its host copy");
    check_cuda(cudaStreamSynchronize(s), "frame download to its host copy");
}

}  // namespace j2kc
