/**
 * @file decoder.h
 * @brief The decoder behind j2kc_decoder: a queue of codestreams in, images
 * out in submit order. Headers, Tier-2 and Tier-1 run on the CPU (workers over
 * the code-blocks of several frames at once in the CUDA backend), the sample
 * stages on the GPU or the CPU.
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

    /**
     * Queues a codestream (copied: the caller's bytes may go once this
     * returns); false when frames_in_flight frames are queued already.
     * Problems with the data itself are reported by the receive of its tag.
     */
    virtual bool submit(const uint8_t *data, size_t size, int64_t tag) = 0;

    /**
     * Writes the oldest queued frame into `output` (nullptr: drops it). Returns false when there
     * is none to give: nothing queued, or (without flush, and with room left in
     * the queue) the oldest is not finished. Otherwise the frame leaves the
     * queue, `tag` is set, and its error, if any, is thrown after that.
     */
    virtual bool receive(const j2kc_image *output, int64_t &tag, bool flush) = 0;

    /** Drops every queued frame (work in progress is stopped or waited for). */
    virtual void reset() = 0;

    /** One frame, synchronously; the queue must be empty. */
    virtual void decode(const uint8_t *data, size_t size, const j2kc_image &output) = 0;

    /** Milliseconds summed over the frames received since creation or the last reset. */
    virtual j2kc_stage_times stage_times() const = 0;

    /**
     * The CUDA device whose copies bring host output down, for memory to be
     * page-locked through (host_memory.h); -1 when output is written by the
     * CPU and page-locking gains nothing.
     */
    virtual int download_device() const { return -1; }
};

std::unique_ptr<Decoder> create_decoder(const j2kc_decoder_config &config, const Logger &log);

}  // namespace j2kc
