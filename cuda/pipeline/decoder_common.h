/**
 * @file decoder_common.h
 * @brief What both decoder backends share: the parsed input, the stream
 * description, output checks and the walk over the tile grid.
 */
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codestream/jp2.h"
#include "codestream/markers.h"
#include "common/log.h"
#include "j2kc.h"
#include "pipeline/decoder.h"
#include "pipeline/reconstruct.h"

namespace j2kc {

struct ParsedStream {
    std::optional<Jp2File> jp2;
    Codestream cs;
    uint32_t reduce = 0;
    uint32_t max_layers = 0;
    bool strict = false;  ///< damage fails the frame (j2kc_decoder_config::strict)
};

/** Frames a decoder queues before submit says AGAIN (config 0: the backend's default). */
inline size_t decoder_queue_depth(const j2kc_decoder_config &config, size_t backend_default)
{
    return config.frames_in_flight > 0 ? static_cast<size_t>(config.frames_in_flight) : backend_default;
}

/** The CPU backend's default: one frame decoding while others wait their turn on the same cores. */
constexpr size_t kCpuDecoderDepth = 3;
/**
 * The CUDA backend's: enough frames for the CPU's Tier-2 and the GPU's
 * Tier-1 of the next ones to hide a frame's latency (about 20 ms at DCI 4K,
 * most of it its longest code-block); 8 rather than 3 gain about a third
 * through FFmpeg (docs/measurements.md).
 */
constexpr size_t kCudaDecoderDepth = 8;

/** Parses a frame; its tiles' data may point into `data`, which outlives the result. */
ParsedStream parse_stream(const uint8_t *data, size_t size, const j2kc_decoder_config &config);
void describe_stream(const ParsedStream &s, j2kc_stream_info &info);
/** The oddities met while parsing, JP2 boxes first, for the frame's log. */
std::vector<std::string> stream_warnings(const ParsedStream &s);
/**
 * Strict decoding: INVALID_DATA naming the first damage the parse met (a
 * truncated file or codestream, missing tile-parts, tiles or EOC); nothing
 * when the stream is whole or the decoder is lenient.
 */
void check_intact(const ParsedStream &s);
/** Strict decoding: INVALID_DATA when Tier-1 found corrupt code-blocks in a tile; a warning otherwise. */
void report_corrupt_blocks(const ParsedStream &s, uint32_t tile, uint32_t corrupt, const Logger &log);
OutputPlacement check_output(const ParsedStream &s, const j2kc_image &out);
void for_each_tile(const ParsedStream &s, const std::function<void(const Tile &)> &fn);

std::unique_ptr<Decoder> create_cpu_decoder(const j2kc_decoder_config &config, const Logger &log);
std::unique_ptr<Decoder> create_cuda_decoder(const j2kc_decoder_config &config, const Logger &log);
/** `gpu` for every stream but JP2 palettes, which a CPU decoder made on demand maps (decoder_palette.cpp). */
std::unique_ptr<Decoder> route_palettes_to_cpu(std::unique_ptr<Decoder> gpu, const j2kc_decoder_config &config,
                                               const Logger &log);

}  // namespace j2kc
