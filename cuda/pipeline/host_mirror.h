/**
 * @file host_mirror.h
 * @brief Host memory laid out as a frame in CUDA memory, for the parts of
 * a CUDA backend that work on host samples: the CPU decoder's palette
 * frames going up, the step phase search's source frame coming down.
 */
#pragma once

#include <cstdint>
#include <vector>

#include "j2kc.h"

namespace j2kc {

/**
 * The same offsets and strides as the CUDA frame, from its lowest address,
 * so the samples move in one copy of the bytes the components span; bytes
 * between samples are zeros (or whatever the frame holds there, after a
 * download). `image` describes the host copy.
 */
class HostMirror {
public:
    /** A zeroed copy of `device`'s layout; `context`/`ordinal` as ContextScope takes them. */
    HostMirror(const j2kc_image &device, void *context, int ordinal);

    HostMirror(const HostMirror &) = delete;
    HostMirror &operator=(const HostMirror &) = delete;

    /** The host copy's bytes into the frame. Throws CUDA. */
    void upload();
    /** The frame's bytes into the host copy, read in order on `stream`
     *  (NULL: the legacy default stream), and waited for. Throws CUDA. */
    void download(void *stream);

    j2kc_image image;

private:
    void *context_;
    int ordinal_;
    uint64_t begin_ = UINT64_MAX;
    std::vector<uint8_t> bytes_;
    std::vector<j2kc_component> components_;
};

}  // namespace j2kc
