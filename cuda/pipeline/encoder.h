/**
 * @file encoder.h
 * @brief The encoder behind j2kc_encoder: a queue of frames in, codestreams
 * out. The CPU backend runs every stage's reference; the CUDA backend keeps
 * everything between upload and the finished codestream on the GPU.
 */
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/log.h"
#include "j2kc.h"

namespace j2kc {

class Encoder {
public:
    virtual ~Encoder() = default;
    virtual j2kc_backend backend() const = 0;
    /** Queues a frame; false when the queue is full (receive first). */
    virtual bool submit(const j2kc_image &image, int64_t tag) = 0;
    /** The oldest finished codestream; false when none (and, with flush, none pending). */
    virtual bool receive(std::vector<uint8_t> &codestream, int64_t &tag, bool flush) = 0;
    virtual j2kc_stage_times stage_times() const = 0;
};

/** Chooses the backend (AUTO: CUDA when a device is usable) and builds the encoder. */
std::unique_ptr<Encoder> create_encoder(const j2kc_encoder_config &config, const j2kc_image &shape, const Logger &log);

}  // namespace j2kc
