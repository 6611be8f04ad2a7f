/**
 * @file decoder.h
 * @brief The decoder behind j2kc_decoder: headers and Tier-2/Tier-1 on the
 * CPU (threads over code-blocks), the sample stages on the GPU or the CPU.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "common/log.h"
#include "j2kc.h"

namespace j2kc {

class Decoder {
public:
    virtual ~Decoder() = default;
    virtual j2kc_backend backend() const = 0;
    virtual void parse(const uint8_t *data, size_t size, j2kc_stream_info &info) = 0;
    virtual void decode(const uint8_t *data, size_t size, const j2kc_image &output) = 0;
};

std::unique_ptr<Decoder> create_decoder(const j2kc_decoder_config &config, const Logger &log);

}  // namespace j2kc
