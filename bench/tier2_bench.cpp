/**
 * @file tier2_bench.cpp
 * @brief Benchmark (not a test) of the decoder's CPU Tier-2 per frame: what
 * the CUDA decoder's Tier-2 worker runs for each frame (stream parsing, the
 * partition, packet headers of every tile, then every code-block's codeword
 * bytes, segments and job gathered into one buffer as the pinned upload
 * buffer receives them, but for a tile's data whole, which goes up from
 * where it lies in the codestream), on one thread, or with --threads N on a
 * pool of N (the caller one of them) that reads the packets the stream
 * locates at once.
 *
 *   tier2_bench [--reps N] [--threads N] [--save OUT.j2c] [IN.j2c ...]
 *
 * Without inputs it encodes a DCI 4K (4096 x 2160, 12-bit, profile cap)
 * natural-looking frame with the CPU backend and times that. Reports the
 * best and the median of N frames in the caller's thread CPU time, and the
 * median in wall time (the time one frame alone waits for).
 */
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "test_images.h"
#include "j2kc.h"
#include "pipeline/decoder_common.h"
#include "pipeline/tile_decoder.h"
#include "tier1/tier1_decode_cuda.h"

using namespace j2kc;

namespace {

double thread_seconds()
{
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

/** A smooth 12-bit X'Y'Z'-like picture with edges, texture and sensor noise. */
std::vector<uint16_t> natural_frame(uint32_t w, uint32_t h)
{
    std::vector<uint16_t> packed(size_t{w} * h * 3);
    uint32_t rng = 12345;
    for (uint32_t y = 0; y < h; ++y)
        for (uint32_t x = 0; x < w; ++x) {
            rng = rng * 1664525u + 1013904223u;
            const double noise = double(rng >> 24) / 255.0 - 0.5;
            const double base = 0.5 + 0.25 * std::sin(x * 0.004) * std::cos(y * 0.006) +
                                0.1 * ((((x >> 6) + (y >> 6)) & 1) ? 1 : -1) + 0.05 * std::sin(x * 0.3 + y * 0.2);
            for (int c = 0; c < 3; ++c) {
                const double v = std::min(1.0, std::max(0.0, base * (0.8 + 0.1 * c) + 0.02 * noise + 0.05 * c));
                packed[(size_t{y} * w + x) * 3 + c] = static_cast<uint16_t>(uint32_t(v * 4095) << 4);
            }
        }
    return packed;
}

std::vector<uint8_t> encode_dci4k()
{
    const uint32_t w = 4096, h = 2160;
    std::vector<uint16_t> packed = natural_frame(w, h);
    std::vector<j2kc_component> comps;
    for (int c = 0; c < 3; ++c)
        comps.push_back(j2kc_test::component16(reinterpret_cast<uint64_t>(packed.data() + c), w, h, 12,
                                               ptrdiff_t(w) * 6, 6, 1, 1, 4));
    j2kc_image image = j2kc_test::image_view(comps, w, h);
    j2kc_encoder_config cfg;
    j2kc_encoder_config_default(&cfg);
    cfg.backend = J2KC_BACKEND_CPU;
    cfg.profile = J2KC_PROFILE_DCI_4K;
    j2kc_encoder *enc = nullptr;
    std::vector<uint8_t> out;
    if (j2kc_encoder_create(&enc, &cfg, &image) != J2KC_OK) return out;
    j2kc_packet pkt{};
    if (j2kc_encode(enc, &image, &pkt) == J2KC_OK) out.assign(pkt.data, pkt.data + pkt.size);
    j2kc_encoder_free(&enc);
    return out;
}

/** A frame's Tier-2 state, the part a decoder slot keeps and the part it does not. */
struct FrameState {
    std::vector<TileBlocks> blocks;
    std::vector<TileCoefficients> planes;
    std::vector<std::vector<size_t>> offset;
    Tier1JobTable table;
    std::vector<uint32_t> order;
    std::vector<uint8_t> upload;  ///< stands for the slot's pinned buffer
};

/** Thread CPU milliseconds of a frame's three stages. */
struct StageTimes {
    double parse = 0, packets = 0, gather = 0;
};

/**
 * One frame's Tier-2 as the CUDA decoder's run_tier2 / gather_jobs do it;
 * returns the code-blocks. The stages: the stream's headers and tiles, each
 * tile's partition and packets, then the job table and the upload buffer.
 */
size_t tier2_frame(const std::vector<uint8_t> &stream, const j2kc_decoder_config &config, FrameState &f,
                   StageTimes &times, ThreadPool *pool)
{
    const double t0 = thread_seconds();
    const ParsedStream s = parse_stream(stream.data(), stream.size(), config);
    check_intact(s);
    const std::vector<std::string> warnings = stream_warnings(s);
    std::vector<const Tile *> tiles;
    std::vector<Tile> absent;
    absent.reserve(s.cs.tiles.size() + 1);
    for_each_tile(s, [&](const Tile &tile) {
        if (&tile >= s.cs.tiles.data() && &tile < s.cs.tiles.data() + s.cs.tiles.size()) {
            tiles.push_back(&tile);
        } else {
            absent.push_back(tile);
            tiles.push_back(&absent.back());
        }
    });
    const TileDecodeOptions options{s.reduce, s.max_layers, s.strict};
    const double t1 = thread_seconds();
    f.blocks.resize(tiles.size());
    f.planes.resize(tiles.size());
    f.offset.assign(tiles.size(), {});
    size_t samples = 0;
    for (size_t t = 0; t < tiles.size(); ++t) {
        prepare_tile(s.cs, *tiles[t], options, f.blocks[t], f.planes[t], pool);
        for (const ComponentPlane &p : f.planes[t].components) {
            f.offset[t].push_back(samples);
            samples += p.samples();
        }
    }
    const double t2 = thread_seconds();
    f.table.clear();
    for (size_t t = 0; t < tiles.size(); ++t)
        append_tier1_jobs(s.cs, *tiles[t], options, f.blocks[t], f.planes[t], f.offset[t].data(), f.table);
    f.order.resize(f.table.jobs.size());
    tier1_decode_order(f.table.jobs.data(), static_cast<uint32_t>(f.table.jobs.size()), f.order.data());
    const size_t jobs = f.table.jobs.size() * sizeof(T1DecodeJob);
    const size_t segments = f.table.segments.size() * sizeof(CodewordSegment);
    const size_t order = f.order.size() * sizeof(uint32_t);
    // The CUDA decoder sends a table of one run inside the codestream (a
    // tile's data whole) up from where it lies, and copies other tables.
    const CodeBlockChunk *run = f.table.byte_runs.size() == 1 ? &f.table.byte_runs[0] : nullptr;
    const bool in_place = run && run->data >= stream.data() && run->data + run->length <= stream.data() + stream.size();
    f.upload.resize(jobs + segments + order + (in_place ? 0 : f.table.num_bytes));
    uint8_t *at = f.upload.data();
    if (jobs) std::memcpy(at, f.table.jobs.data(), jobs);
    if (segments) std::memcpy(at + jobs, f.table.segments.data(), segments);
    if (order) std::memcpy(at + jobs + segments, f.order.data(), order);
    if (!in_place) f.table.copy_bytes(at + jobs + segments + order, pool);
    const double t3 = thread_seconds();
    times = {1e3 * (t1 - t0), 1e3 * (t2 - t1), 1e3 * (t3 - t2)};
    return f.table.jobs.size();
}

void run(const std::string &name, const std::vector<uint8_t> &stream, int reps, ThreadPool *pool)
{
    j2kc_decoder_config config;
    j2kc_decoder_config_default(&config);
    // The decoder's frames are new each time; its slots' Tier-2 results, job
    // tables, job orders and pinned buffers are not.
    FrameState slot;
    StageTimes stage;
    const size_t blocks = tier2_frame(stream, config, slot, stage, pool);
    std::vector<double> ms, wall, parse, packets, gather;
    const auto take_slot = [&](FrameState &frame) {
        std::swap(frame.blocks, slot.blocks);
        std::swap(frame.table, slot.table);
        std::swap(frame.order, slot.order);
        std::swap(frame.upload, slot.upload);
    };
    for (int i = 0; i < reps; ++i) {
        FrameState state;
        take_slot(state);
        const double t0 = thread_seconds();
        const auto w0 = std::chrono::steady_clock::now();
        tier2_frame(stream, config, state, stage, pool);
        ms.push_back(1e3 * (thread_seconds() - t0));
        wall.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - w0).count());
        parse.push_back(stage.parse);
        packets.push_back(stage.packets);
        gather.push_back(stage.gather);
        take_slot(state);
    }
    const auto median = [](std::vector<double> &v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    std::sort(ms.begin(), ms.end());
    std::printf(
        "%s: %zu bytes, %zu code-blocks, Tier-2 best %.2f ms, median %.2f ms (caller's thread, %u threads, "
        "%d frames); medians: parse %.2f, partition + packets %.2f, jobs + upload %.2f ms",
        name.c_str(), stream.size(), blocks, ms.front(), ms[ms.size() / 2], pool ? pool->size() : 1u, reps,
        median(parse), median(packets), median(gather));
    std::printf("; wall median %.2f ms\n", median(wall));
}

}  // namespace

int main(int argc, char **argv)
{
    int reps = 20;
    unsigned threads = 1;
    std::string save;
    std::vector<std::string> inputs;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--reps" && i + 1 < argc)
            reps = std::max(1, std::atoi(argv[++i]));
        else if (a == "--threads" && i + 1 < argc)
            threads = unsigned(std::max(1, std::atoi(argv[++i])));
        else if (a == "--save" && i + 1 < argc)
            save = argv[++i];
        else
            inputs.push_back(a);
    }
    ThreadPool pool(threads);
    ThreadPool *tier2_pool = threads > 1 ? &pool : nullptr;
    try {
        if (inputs.empty()) {
            const std::vector<uint8_t> stream = encode_dci4k();
            if (stream.empty()) {
                std::fprintf(stderr, "encoding the DCI 4K frame failed\n");
                return 1;
            }
            if (!save.empty())
                std::ofstream(save, std::ios::binary)
                    .write(reinterpret_cast<const char *>(stream.data()), stream.size());
            run("DCI 4K", stream, reps, tier2_pool);
        }
        for (const std::string &path : inputs) {
            std::ifstream in(path, std::ios::binary);
            const std::vector<uint8_t> stream{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
            run(path, stream, reps, tier2_pool);
        }
    } catch (const Error &e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
    return 0;
}
