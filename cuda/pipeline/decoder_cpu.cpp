/**
 * @file decoder_cpu.cpp
 * @brief The decoder: codestream or JP2 in, the caller's planes out. Tier-2
 * and Tier-1 always run on the CPU (tile_decoder); the sample stages run on
 * the CPU here, or on the GPU in decoder_cuda.cu. The CPU backend keeps the
 * asynchronous API's queue but decodes each frame when it is received.
 */
#include <algorithm>
#include <chrono>
#include <deque>
#include <memory>
#include <vector>

#include "codestream/jp2.h"
#include "codestream/reader.h"
#include "common/status.h"
#include "common/thread_pool.h"
#include "pipeline/cuda_device.h"
#include "pipeline/decoder.h"
#include "pipeline/decoder_common.h"
#include "pipeline/reconstruct.h"
#include "pipeline/tile_decoder.h"

namespace j2kc {

ParsedStream parse_stream(const uint8_t *data, size_t size, const j2kc_decoder_config &config)
{
    J2KC_CHECK_ARG(data && size > 0, "no data");
    ParsedStream s;
    const uint8_t *cs_data = data;
    size_t cs_size = size;
    if (is_jp2(data, size)) {
        s.jp2 = parse_jp2(data, size);
        cs_data = s.jp2->codestream;
        cs_size = s.jp2->codestream_size;
    }
    ParseLimits limits;
    if (config.max_pixels) limits.max_pixels = config.max_pixels;
    if (config.max_components) limits.max_components = config.max_components;
    if (config.max_tiles) limits.max_tiles = config.max_tiles;
    if (config.max_memory) limits.max_memory = config.max_memory;
    limits.max_tile_components = config.max_tile_components ? config.max_tile_components : kDecoderMaxTileComponents;
    s.cs = parse_codestream(cs_data, cs_size, limits, true);
    // The parser bounds the samples; the partition's bookkeeping grows with
    // the code-block and precinct counts instead, so it is bounded here, per
    // tile (tiles are decoded one at a time), before any tile is built.
    for_each_tile(s, [&](const Tile &tile) {
        const uint64_t need = tile_working_memory(s.cs, tile);
        J2KC_CHECK_LIMIT(need <= limits.max_memory, "tile %u needs %llu bytes of working memory, the limit is %llu",
                         tile.index, static_cast<unsigned long long>(need),
                         static_cast<unsigned long long>(limits.max_memory));
    });
    s.reduce = static_cast<uint32_t>(std::max(0, config.reduce));
    s.max_layers = static_cast<uint32_t>(std::max(0, config.layers));
    s.strict = config.strict != 0;
    return s;
}

namespace {

/**
 * The colour fields of the stream description. A JP2 file's first colour
 * box decides alone (I.5.3.3): an unknown EnumCS, an ICC profile or a
 * malformed box leave the space UNKNOWN rather than guessed. Without one
 * (raw codestreams) the space follows the codestream's own hints: Rsiz of
 * the DCI profiles, one or two components, the RCT/ICT.
 */
void describe_colour(const ParsedStream &s, j2kc_stream_info &info)
{
    const ImageSize &siz = s.cs.siz;
    info.enumerated_cs = 0;
    info.icc_profile = nullptr;
    info.icc_profile_size = 0;
    info.num_alpha_channels = 0;
    if (s.jp2) {
        for (const Jp2ChannelDefinition &d : s.jp2->channel_definitions)
            info.num_alpha_channels += d.type == 1 || d.type == 2;
    }
    if (s.jp2 && s.jp2->has_colour_box) {
        info.color_space = s.jp2->color_space;
        if (const Jp2Colour *c = s.jp2->colour()) {
            info.enumerated_cs = c->method == 1 ? c->enumerated : 0;
            info.icc_profile = c->icc;
            info.icc_profile_size = c->icc_size;
        }
    } else if (siz.rsiz == 3 || siz.rsiz == 4) {
        info.color_space = J2KC_COLOR_XYZ;
    } else if (siz.components.size() < 3) {
        info.color_space = J2KC_COLOR_GRAY;
    } else if (s.cs.main.cod->mct) {
        info.color_space = J2KC_COLOR_SRGB;
    } else {
        info.color_space = J2KC_COLOR_UNKNOWN;
    }
}

}  // namespace

void describe_stream(const ParsedStream &s, j2kc_stream_info &info)
{
    const ImageSize &siz = s.cs.siz;
    const CodingStyle &cod = *s.cs.main.cod;
    J2KC_CHECK_SUPPORTED(s.reduce <= cod.component.levels, "reduce %u exceeds the %u decomposition levels", s.reduce,
                         cod.component.levels);
    info.width = reduced_origin(siz.width, 1, s.reduce) - reduced_origin(siz.x0, 1, s.reduce);
    info.height = reduced_origin(siz.height, 1, s.reduce) - reduced_origin(siz.y0, 1, s.reduce);
    info.num_components = static_cast<uint32_t>(siz.components.size());
    info.rsiz = siz.rsiz;
    info.levels = cod.component.levels;
    bool reversible = true;
    for (uint16_t c = 0; c < siz.components.size(); ++c) {
        auto it = s.cs.main.coc.find(c);
        const ComponentCoding &cc = it != s.cs.main.coc.end() ? it->second : cod.component;
        reversible = reversible && cc.wavelet == Wavelet::kReversible53;
    }
    info.reversible = reversible;
    info.mct = cod.mct;
    info.is_jp2 = s.jp2.has_value();
    info.layers = cod.layers;
    info.num_tiles = static_cast<uint32_t>(siz.num_tiles());
    describe_colour(s, info);
    if (s.jp2 && s.jp2->palette) {
        // pclr/cmap (I.5.3.4-5): the output channels in cmap order, palette
        // channels with the palette column's depth and signedness.
        const std::vector<Jp2PaletteOutput> outs = jp2_palette_outputs(*s.jp2, siz);
        info.num_components = static_cast<uint32_t>(outs.size());
        const uint32_t n = info.components ? std::min(info.components_capacity, info.num_components) : 0;
        for (uint32_t c = 0; c < n; ++c) {
            const ComponentSize &k = siz.components[outs[c].component];
            j2kc_component_info &ci = info.components[c];
            ci.width = reduced_origin(siz.width, k.dx, s.reduce) - reduced_origin(siz.x0, k.dx, s.reduce);
            ci.height = reduced_origin(siz.height, k.dy, s.reduce) - reduced_origin(siz.y0, k.dy, s.reduce);
            ci.precision = outs[c].precision;
            ci.is_signed = outs[c].is_signed;
            ci.dx = k.dx;
            ci.dy = k.dy;
        }
        return;
    }
    if (info.components) {
        const uint32_t n = std::min(info.components_capacity, info.num_components);
        for (uint32_t c = 0; c < n; ++c) {
            const ComponentSize &k = siz.components[c];
            j2kc_component_info &ci = info.components[c];
            ci.width = reduced_origin(siz.width, k.dx, s.reduce) - reduced_origin(siz.x0, k.dx, s.reduce);
            ci.height = reduced_origin(siz.height, k.dy, s.reduce) - reduced_origin(siz.y0, k.dy, s.reduce);
            ci.precision = k.precision;
            ci.is_signed = k.is_signed;
            ci.dx = k.dx;
            ci.dy = k.dy;
        }
    }
}

std::vector<std::string> stream_warnings(const ParsedStream &s)
{
    std::vector<std::string> all;
    if (s.jp2)
        for (const std::string &w : s.jp2->warnings) all.push_back("JP2: " + w);
    all.insert(all.end(), s.cs.warnings.begin(), s.cs.warnings.end());
    return all;
}

void check_intact(const ParsedStream &s)
{
    if (!s.strict) return;
    std::vector<std::string> damage = s.cs.damage;
    if (s.jp2 && s.jp2->codestream_clipped) damage.insert(damage.begin(), "the jp2c box runs past the end of the file");
    if (damage.empty()) return;
    const std::string more = damage.size() > 1 ? " (and " + std::to_string(damage.size() - 1) + " more)" : "";
    fail(J2KC_ERR_INVALID_DATA, "damaged codestream (strict decoding): %s%s", damage.front().c_str(), more.c_str());
}

void report_corrupt_blocks(const ParsedStream &s, uint32_t tile, uint32_t corrupt, const Logger &log)
{
    if (!corrupt) return;
    J2KC_CHECK_DATA(!s.strict, "damaged codestream (strict decoding): tile %u has %u corrupt code-blocks", tile,
                    corrupt);
    log.log(J2KC_LOG_WARNING, "tile %u: %u corrupt code-blocks decoded as zero", tile, corrupt);
}

OutputPlacement check_output(const ParsedStream &s, const j2kc_image &out)
{
    const ImageSize &siz = s.cs.siz;
    J2KC_CHECK_ARG(out.num_components >= 1 && out.num_components <= siz.components.size() && out.components,
                   "output has %u components, the stream %zu", out.num_components, siz.components.size());
    OutputPlacement placement;
    placement.image = &out;
    for (uint32_t c = 0; c < out.num_components; ++c) {
        const ComponentSize &k = siz.components[c];
        const j2kc_component &o = out.components[c];
        const uint32_t ox = reduced_origin(siz.x0, k.dx, s.reduce);
        const uint32_t oy = reduced_origin(siz.y0, k.dy, s.reduce);
        const uint32_t w = reduced_origin(siz.width, k.dx, s.reduce) - ox;
        const uint32_t h = reduced_origin(siz.height, k.dy, s.reduce) - oy;
        J2KC_CHECK_ARG(o.width == w && o.height == h, "output component %u is %ux%u, the stream's %ux%u", c, o.width,
                       o.height, w, h);
        J2KC_CHECK_ARG(o.data != 0, "output component %u has no data", c);
        // Ssiz allows 38 bits; the sample stages hold 32 (legal input, so UNSUPPORTED, not ARG).
        J2KC_CHECK_SUPPORTED(k.precision <= 32, "component %u has %u-bit samples, at most 32 are decoded", c,
                             k.precision);
        placement.origin_x.push_back(ox);
        placement.origin_y.push_back(oy);
    }
    return placement;
}

/** Every tile of the grid, parsed or absent (absent ones decode as zero coefficients). */
void for_each_tile(const ParsedStream &s, const std::function<void(const Tile &)> &fn)
{
    size_t next = 0;
    Tile absent;
    for (uint32_t t = 0; t < s.cs.siz.num_tiles(); ++t) {
        if (next < s.cs.tiles.size() && s.cs.tiles[next].index == t) {
            fn(s.cs.tiles[next++]);
        } else {
            absent.index = t;
            fn(absent);
        }
    }
}

namespace {

/**
 * The reference backend. Its queue only keeps the bytes: each frame is decoded
 * when it has to come out (the queue is full, or the caller flushes), tile by
 * tile with Tier-1 on the pool, so the frames come out exactly as the
 * synchronous path makes them.
 */
class CpuDecoder final : public Decoder {
public:
    CpuDecoder(const j2kc_decoder_config &config, const Logger &log)
        : config_(config), log_(log), pool_(config.threads > 0 ? unsigned(config.threads) : 0u),
          depth_(decoder_queue_depth(config, kCpuDecoderDepth))
    {}

    j2kc_backend backend() const override { return J2KC_BACKEND_CPU; }

    void parse(const uint8_t *data, size_t size, j2kc_stream_info &info) override
    {
        describe_stream(parse_stream(data, size, config_), info);
    }

    bool submit(const uint8_t *data, size_t size, int64_t tag) override
    {
        if (queue_.size() >= depth_) return false;
        queue_.push_back({std::vector<uint8_t>(data, data + size), tag, Clock::now()});
        return true;
    }

    bool receive(const j2kc_image *output, int64_t &tag, bool flush) override
    {
        // Frames are decoded lazily, so none is finished before it must be:
        // a caller's in-flight handling runs here as it does on the CUDA backend.
        if (queue_.empty() || (!flush && queue_.size() < depth_)) return false;
        Queued frame = std::move(queue_.front());
        queue_.pop_front();
        tag = frame.tag;
        if (!output) return true;  // dropped: nothing to decode it for
        decode_frame(frame.data.data(), frame.data.size(), *output);
        times_.total += ms_since(frame.submitted);
        return true;
    }

    void reset() override
    {
        queue_.clear();
        times_ = {};
    }

    void decode(const uint8_t *data, size_t size, const j2kc_image &output) override
    {
        J2KC_CHECK_ARG(queue_.empty(), "%zu frames are queued: receive them before a synchronous decode",
                       queue_.size());
        const auto start = Clock::now();
        decode_frame(data, size, output);
        times_.total += ms_since(start);
    }

    j2kc_stage_times stage_times() const override { return times_; }

private:
    using Clock = std::chrono::steady_clock;
    static double ms_since(Clock::time_point t)
    {
        return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
    }

    struct Queued {
        std::vector<uint8_t> data;
        int64_t tag;
        Clock::time_point submitted;
    };

    void decode_frame(const uint8_t *data, size_t size, const j2kc_image &output)
    {
        J2KC_CHECK_ARG(output.memory == J2KC_MEMORY_HOST,
                       "the CPU backend writes host memory only: ask for backend cuda");
        auto t0 = Clock::now();
        const ParsedStream s = parse_stream(data, size, config_);
        check_intact(s);
        for (const std::string &w : stream_warnings(s)) log_.log(J2KC_LOG_WARNING, "%s", w.c_str());
        // A palette: decode the codestream components (32-bit planes) here,
        // then map them into the caller's channels.
        const bool palette = s.jp2 && s.jp2->palette;
        std::vector<Jp2PaletteOutput> outs;
        std::vector<std::vector<int32_t>> index_planes;
        std::vector<j2kc_component> index_components;
        j2kc_image indices = output;
        if (palette) {
            outs = jp2_palette_outputs(*s.jp2, s.cs.siz);
            const ImageSize &siz = s.cs.siz;
            for (size_t c = 0; c < siz.components.size(); ++c) {
                const ComponentSize &k = siz.components[c];
                j2kc_component ic{};
                ic.width = reduced_origin(siz.width, k.dx, s.reduce) - reduced_origin(siz.x0, k.dx, s.reduce);
                ic.height = reduced_origin(siz.height, k.dy, s.reduce) - reduced_origin(siz.y0, k.dy, s.reduce);
                index_planes.emplace_back(size_t{ic.width} * ic.height);
                ic.data = reinterpret_cast<uint64_t>(index_planes.back().data());
                ic.row_stride = static_cast<ptrdiff_t>(ic.width) * 4;
                ic.sample_stride = 4;
                ic.bytes_per_sample = 4;
                ic.precision = k.precision;
                ic.is_signed = k.is_signed;
                ic.dx = k.dx;
                ic.dy = k.dy;
                index_components.push_back(ic);
            }
            indices.num_components = static_cast<uint32_t>(index_components.size());
            indices.components = index_components.data();
        }
        const OutputPlacement placement = check_output(s, palette ? indices : output);
        times_.tier2 += ms_since(t0);
        TileDecodeOptions options{s.reduce, s.max_layers, s.strict};
        for_each_tile(s, [&](const Tile &tile) {
            t0 = Clock::now();
            decode_tile_coefficients(s.cs, tile, options, pool_, storage_, tile_coefficients_);
            times_.tier1 += ms_since(t0);
            report_corrupt_blocks(s, tile.index, tile_coefficients_.corrupt_code_blocks, log_);
            t0 = Clock::now();
            reconstruct_tile_cpu(tile_coefficients_, placement, pool_);
            times_.dwt += ms_since(t0);
        });
        if (palette) jp2_apply_palette(*s.jp2, outs, indices, output);
    }

    j2kc_decoder_config config_;
    Logger log_;
    ThreadPool pool_;
    size_t depth_;
    std::deque<Queued> queue_;
    std::vector<std::vector<int32_t>> storage_;  ///< tile-component planes, reused from tile to tile
    TileCoefficients tile_coefficients_;
    j2kc_stage_times times_{};
};

}  // namespace

std::unique_ptr<Decoder> create_cpu_decoder(const j2kc_decoder_config &config, const Logger &log)
{
    return std::make_unique<CpuDecoder>(config, log);
}

std::unique_ptr<Decoder> create_decoder(const j2kc_decoder_config &config, const Logger &log)
{
    J2KC_CHECK_ARG(config.reduce >= 0 && config.reduce <= 32, "reduce must be 0..32");
    J2KC_CHECK_ARG(config.layers >= 0 && config.layers <= 65535, "layers must be 0..65535");
    J2KC_CHECK_ARG(config.frames_in_flight >= 0 && config.frames_in_flight <= 64, "frames_in_flight must be 0..64");
    switch (config.backend) {
    case J2KC_BACKEND_CPU: return create_cpu_decoder(config, log);
    case J2KC_BACKEND_CUDA:
        require_cuda_device(config.device);
        return route_palettes_to_cpu(create_cuda_decoder(config, log), config, log);
    case J2KC_BACKEND_AUTO:
        if (cuda_device_usable(config.device))
            return route_palettes_to_cpu(create_cuda_decoder(config, log), config, log);
        log.log(J2KC_LOG_VERBOSE, "no usable CUDA device: decoding on the CPU");
        return create_cpu_decoder(config, log);
    }
    J2KC_CHECK_ARG(false, "unknown backend %d", int(config.backend));
}

}  // namespace j2kc
