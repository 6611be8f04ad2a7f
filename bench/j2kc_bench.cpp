// @file j2kc_bench.cpp: the benchmark's driver for j2k_cuda through its C API
// (cuda/include/j2kc.h), run by bench/run.py on the same planar frame
// files the peers read. A benchmark, not a test: it prints one JSON object.
//
//   j2kc_bench encode --in FILE --width W --height H --comps C --prec P
//       [--sub 1x1:2x1:2x1] [--distinct N] [--frames N] [--warmup N]
//       [--backend cuda|cpu] [--threads N] [--profile none|dci_2k|dci_4k|imf]
//       [--lossless] [--bytes B] [--quality Q] [--step-phases N] [--ht] [--device-input] [--in-flight N]
//       [--out-dir DIR]
//   j2kc_bench decode [--frames N] [--warmup N] [--backend cuda|cpu]
//       [--threads N] [--tier1 auto|cpu|gpu] [--in-flight N] [--output host|pinned|device]
//       [--out FILE] [--sync] CODESTREAM...
//   j2kc_bench caps      what this build can set: {"decoder_tier1": true|false}
//
// FILE holds N frames, each component after the other (planar), samples as
// 16-bit little-endian integers (8-bit and up alike). Encode times --frames
// frames (the N distinct ones in turn) after --warmup frames, with the queue
// of j2kc_encoder_submit/receive kept full as a streaming caller would, and
// writes the N codestreams to DIR/NNN.j2c. Decode times --frames decodes of
// the given codestreams in turn after --warmup (at least the queue's depth),
// through j2kc_decoder_submit/receive with the queue kept full (j2kc_decode on
// cores without them), and writes each one's samples (planar, 16-bit) to
// --out for PSNR. GPU memory is the drop of
// cudaMemGetInfo's free bytes from before the codec was made to its lowest
// reading during the run (other processes leave the GPU alone meanwhile).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "j2kc.h"

// Declared weak so the driver builds against cores with and without the
// asynchronous decoder and its stage timer (older cores: j2kc_decode alone).
extern "C" int j2kc_decoder_stage_times(const j2kc_decoder *, j2kc_stage_times *) __attribute__((weak));
extern "C" int j2kc_decoder_submit(j2kc_decoder *, const uint8_t *, size_t, int64_t) __attribute__((weak));
extern "C" int j2kc_decoder_receive(j2kc_decoder *, const j2kc_image *, int64_t *, int) __attribute__((weak));
extern "C" int j2kc_decoder_reset(j2kc_decoder *) __attribute__((weak));

// Where the CUDA decoder runs Tier-1 (j2kc_decoder_config::tier1_on_gpu: -1
// auto, 0 the CPU workers, 1 the GPU), found at compile time, so this driver
// also builds against cores without the field (their Tier-1 is on the CPU),
// and `caps` tells run.py. Another name or other values: one line here, or
// -D... in prep.sh's J2KC_BENCH_FLAGS.
#ifndef J2KC_BENCH_TIER1_FIELD
#define J2KC_BENCH_TIER1_FIELD tier1_on_gpu
#endif
#ifndef J2KC_BENCH_TIER1_AUTO
#define J2KC_BENCH_TIER1_AUTO (-1)
#define J2KC_BENCH_TIER1_CPU 0
#define J2KC_BENCH_TIER1_GPU 1
#endif

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
    std::string cmd, in, out, out_dir, backend = "cuda", profile = "none", sub;
    uint32_t width = 0, height = 0, comps = 3, prec = 12;
    int distinct = 1, frames = 10, warmup = 2, threads = 0, lossless = 0, device_input = 0, sync = 0;
    int ht = 0;         // HTJ2K code-blocks (ISO/IEC 15444-15) instead of Part 1's
    int in_flight = 0;  // frames_in_flight; 0: the config's default
    uint64_t bytes = 0;
    double quality = 0;
    int step_phases = 0;          // j2kc_encoder_config::step_phases
    std::string tier1;            // empty: the config's default
    std::string output = "host";  // decode: host (pageable), pinned or device planes
    std::vector<std::string> files;
};

template <class Config>
auto set_tier1(Config &c, int v, int)
    -> decltype((void)(c.J2KC_BENCH_TIER1_FIELD = static_cast<decltype(c.J2KC_BENCH_TIER1_FIELD)>(v)), bool())
{
    c.J2KC_BENCH_TIER1_FIELD = static_cast<decltype(c.J2KC_BENCH_TIER1_FIELD)>(v);
    return true;
}
template <class Config>
bool set_tier1(Config &, int, long)
{
    return false;  // this core's decoder config has no Tier-1 placement
}
template <class Config>
auto get_tier1(const Config &c, int) -> decltype(int(c.J2KC_BENCH_TIER1_FIELD))
{
    return int(c.J2KC_BENCH_TIER1_FIELD);
}
template <class Config>
int get_tier1(const Config &, long)
{
    return J2KC_BENCH_TIER1_CPU;  // no field: Tier-1 on the CPU workers
}

[[noreturn]] void die(const std::string &msg)
{
    std::fprintf(stderr, "j2kc_bench: %s\n", msg.c_str());
    std::exit(1);
}

void check(int status, const char *what)
{
    if (status != J2KC_OK) die(std::string(what) + ": " + j2kc_status_string(status));
}

Args parse(int argc, char **argv)
{
    if (argc < 2) die("usage: j2kc_bench encode|decode ...");
    Args a;
    a.cmd = argv[1];
    for (int i = 2; i < argc; ++i) {
        const std::string k = argv[i];
        auto val = [&]() -> std::string {
            if (i + 1 >= argc) die("missing value for " + k);
            return argv[++i];
        };
        if (k == "--in")
            a.in = val();
        else if (k == "--out")
            a.out = val();
        else if (k == "--out-dir")
            a.out_dir = val();
        else if (k == "--backend")
            a.backend = val();
        else if (k == "--profile")
            a.profile = val();
        else if (k == "--sub")
            a.sub = val();
        else if (k == "--width")
            a.width = std::stoul(val());
        else if (k == "--height")
            a.height = std::stoul(val());
        else if (k == "--comps")
            a.comps = std::stoul(val());
        else if (k == "--prec")
            a.prec = std::stoul(val());
        else if (k == "--distinct")
            a.distinct = std::stoi(val());
        else if (k == "--frames")
            a.frames = std::stoi(val());
        else if (k == "--warmup")
            a.warmup = std::stoi(val());
        else if (k == "--threads")
            a.threads = std::stoi(val());
        else if (k == "--in-flight")
            a.in_flight = std::stoi(val());
        else if (k == "--output")
            a.output = val();
        else if (k == "--bytes")
            a.bytes = std::stoull(val());
        else if (k == "--quality")
            a.quality = std::stod(val());
        else if (k == "--step-phases")
            a.step_phases = std::stoi(val());
        else if (k == "--tier1")
            a.tier1 = val();
        else if (k == "--lossless")
            a.lossless = 1;
        else if (k == "--ht")
            a.ht = 1;
        else if (k == "--device-input")
            a.device_input = 1;
        else if (k == "--sync")
            a.sync = 1;
        else if (!k.empty() && k[0] == '-')
            die("unknown option " + k);
        else
            a.files.push_back(k);
    }
    return a;
}

j2kc_backend backend_of(const std::string &s)
{
    if (s == "cpu") return J2KC_BACKEND_CPU;
    if (s == "cuda") return J2KC_BACKEND_CUDA;
    return J2KC_BACKEND_AUTO;
}

// Lowest free GPU memory seen, sampled between frames.
struct GpuMemory {
    size_t start_free = 0, min_free = SIZE_MAX;
    bool ok = false;
    void begin()
    {
        size_t f = 0, t = 0;
        ok = cudaMemGetInfo(&f, &t) == cudaSuccess;
        start_free = f;
        min_free = f;
    }
    void sample()
    {
        size_t f = 0, t = 0;
        if (ok && cudaMemGetInfo(&f, &t) == cudaSuccess) min_free = std::min(min_free, f);
    }
    double used_mib() const { return ok ? double(start_free - min_free) / (1 << 20) : -1; }
};

std::vector<uint8_t> read_file(const std::string &path)
{
    std::ifstream f(path, std::ios::binary);
    if (!f) die("cannot read " + path);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

void print_stages(const j2kc_stage_times &t, double n)
{
    std::printf(
        ", \"stages_ms\": {\"upload\": %.3f, \"color\": %.3f, \"dwt\": %.3f, \"quant\": %.3f, "
        "\"tier1\": %.3f, \"rate\": %.3f, \"tier2\": %.3f, \"download\": %.3f, \"total\": %.3f}",
        t.upload / n, t.color / n, t.dwt / n, t.quant / n, t.tier1 / n, t.rate / n, t.tier2 / n, t.download / n,
        t.total / n);
}

/** sum += sign * t, stage by stage. */
void add_stages(j2kc_stage_times &sum, const j2kc_stage_times &t, double sign = 1)
{
    sum.upload += sign * t.upload;
    sum.color += sign * t.color;
    sum.dwt += sign * t.dwt;
    sum.quant += sign * t.quant;
    sum.tier1 += sign * t.tier1;
    sum.rate += sign * t.rate;
    sum.tier2 += sign * t.tier2;
    sum.download += sign * t.download;
    sum.total += sign * t.total;
}

int encode(const Args &a)
{
    if (!a.width || !a.height || !a.comps) die("encode needs --width --height --comps");
    std::vector<uint32_t> dx(a.comps, 1), dy(a.comps, 1);
    if (!a.sub.empty()) {  // "1x1:2x1:2x1"
        size_t pos = 0;
        for (uint32_t c = 0; c < a.comps; ++c) {
            if (std::sscanf(a.sub.c_str() + pos, "%ux%u", &dx[c], &dy[c]) != 2) die("bad --sub");
            pos = a.sub.find(':', pos);
            if (pos == std::string::npos) break;
            ++pos;
        }
    }
    std::vector<size_t> plane_bytes(a.comps);
    size_t frame_bytes = 0;
    for (uint32_t c = 0; c < a.comps; ++c) {
        plane_bytes[c] = size_t((a.width + dx[c] - 1) / dx[c]) * ((a.height + dy[c] - 1) / dy[c]) * 2;
        frame_bytes += plane_bytes[c];
    }
    const std::vector<uint8_t> data = read_file(a.in);
    if (data.size() < frame_bytes * a.distinct) die("input holds fewer than --distinct frames");

    // Frames as the caller holds them: host memory, or CUDA memory filled once.
    std::vector<void *> device(a.distinct, nullptr);
    if (a.device_input)
        for (int i = 0; i < a.distinct; ++i) {
            if (cudaMalloc(&device[i], frame_bytes) != cudaSuccess) die("cudaMalloc failed");
            cudaMemcpy(device[i], data.data() + frame_bytes * i, frame_bytes, cudaMemcpyHostToDevice);
        }
    std::vector<std::vector<j2kc_component>> comps(a.distinct, std::vector<j2kc_component>(a.comps));
    std::vector<j2kc_image> images(a.distinct);
    for (int i = 0; i < a.distinct; ++i) {
        size_t off = 0;
        for (uint32_t c = 0; c < a.comps; ++c) {
            j2kc_component &k = comps[i][c];
            std::memset(&k, 0, sizeof(k));
            const uint8_t *base =
                a.device_input ? static_cast<const uint8_t *>(device[i]) : data.data() + frame_bytes * i;
            k.data = reinterpret_cast<uint64_t>(base + off);
            k.dx = uint8_t(dx[c]);
            k.dy = uint8_t(dy[c]);
            k.row_stride = ptrdiff_t((a.width + dx[c] - 1) / dx[c]) * 2;
            k.sample_stride = 2;
            k.bytes_per_sample = 2;
            k.precision = uint8_t(a.prec);
            off += plane_bytes[c];
        }
        j2kc_image &im = images[i];
        std::memset(&im, 0, sizeof(im));
        im.struct_size = sizeof(im);
        im.memory = a.device_input ? J2KC_MEMORY_CUDA : J2KC_MEMORY_HOST;
        im.width = a.width;
        im.height = a.height;
        im.num_components = a.comps;
        im.components = comps[i].data();
        j2kc_image_fill_sizes(&im);
    }

    j2kc_encoder_config cfg;
    j2kc_encoder_config_default(&cfg);
    cfg.backend = backend_of(a.backend);
    cfg.threads = a.threads;
    if (a.in_flight) cfg.frames_in_flight = a.in_flight;
    cfg.profile = a.profile == "dci_2k"   ? J2KC_PROFILE_DCI_2K
                  : a.profile == "dci_4k" ? J2KC_PROFILE_DCI_4K
                  : a.profile == "imf"    ? J2KC_PROFILE_IMF
                                          : J2KC_PROFILE_NONE;
    cfg.lossless = a.lossless;
    cfg.frame_bytes = a.bytes;
    if (a.quality > 0) cfg.quality = a.quality;
    cfg.step_phases = a.step_phases;
    if (a.ht) cfg.block_coder = J2KC_BLOCK_CODER_HT;

    GpuMemory mem;
    mem.begin();
    j2kc_encoder *enc = nullptr;
    check(j2kc_encoder_create(&enc, &cfg, &images[0]), "encoder_create");
    mem.sample();

    std::vector<size_t> sizes(a.distinct, 0);
    j2kc_stage_times stage_sum{};
    int stage_count = 0;
    int received = 0;
    const int total = a.warmup + a.frames;
    // The clock runs from the output that ends the warm-up to the one
    // --frames later, the queue kept full up to it (frames go on being
    // submitted behind it and are drained off the clock): a streaming
    // caller's rate, as FFmpeg's is read from its progress (one frame's
    // latency: --in-flight 1).
    Clock::time_point t0 = Clock::now(), t1 = t0;
    auto take = [&](j2kc_packet &p) {
        const int idx = int(p.tag);
        if (idx < a.distinct && sizes[idx] == 0) {
            sizes[idx] = p.size;
            if (!a.out_dir.empty()) {
                char name[64];
                std::snprintf(name, sizeof(name), "/%03d.j2c", idx);
                std::ofstream f(a.out_dir + name, std::ios::binary);
                f.write(reinterpret_cast<const char *>(p.data), std::streamsize(p.size));
                if (!f) die("cannot write " + a.out_dir + name);
            }
        }
        j2kc_stage_times t{};
        if (idx >= a.warmup && j2kc_encoder_stage_times(enc, &t) == J2KC_OK && t.total > 0) {
            add_stages(stage_sum, t);
            ++stage_count;
        }
        ++received;
        mem.sample();
        if (received == a.warmup) t0 = Clock::now();
        if (received == total) t1 = Clock::now();
    };
    for (int f = 0; received < total; ++f) {
        const j2kc_image &im = images[f % a.distinct];
        int s;
        while ((s = j2kc_encoder_submit(enc, &im, f)) == J2KC_ERR_AGAIN) {
            j2kc_packet p;
            check(j2kc_encoder_receive(enc, &p, 1), "receive");
            take(p);
        }
        check(s, "submit");
        j2kc_packet p;
        while ((s = j2kc_encoder_receive(enc, &p, 0)) == J2KC_OK) take(p);
        if (s != J2KC_ERR_AGAIN) check(s, "receive");
    }
    {
        j2kc_packet p;
        int s;
        while ((s = j2kc_encoder_receive(enc, &p, 1)) == J2KC_OK) take(p);
        if (s != J2KC_ERR_EOF) check(s, "receive");
    }
    const double secs = std::chrono::duration<double>(t1 - t0).count();
    const char *backend = j2kc_encoder_backend(enc) == J2KC_BACKEND_CUDA ? "cuda" : "cpu";
    j2kc_encoder_free(&enc);

    std::printf(
        "{\"fps\": %.4f, \"frames\": %d, \"seconds\": %.6f, \"backend\": \"%s\", \"gpu_mem_mib\": %.1f, "
        "\"bytes\": [",
        a.frames / secs, a.frames, secs, backend, mem.used_mib());
    for (int i = 0; i < a.distinct; ++i) std::printf("%s%zu", i ? ", " : "", sizes[i]);
    std::printf("]");
    if (stage_count) print_stages(stage_sum, stage_count);
    std::printf("}\n");
    for (void *d : device) cudaFree(d);
    return 0;
}

int decode(const Args &a)
{
    if (a.files.empty()) die("decode needs codestreams");
    std::vector<std::vector<uint8_t>> streams;
    for (const auto &f : a.files) streams.push_back(read_file(f));

    j2kc_decoder_config cfg;
    j2kc_decoder_config_default(&cfg);
    cfg.backend = backend_of(a.backend);
    cfg.threads = a.threads;
    if (a.in_flight) cfg.frames_in_flight = a.in_flight;
    if (!a.tier1.empty()) {
        const int v = a.tier1 == "auto"  ? J2KC_BENCH_TIER1_AUTO
                      : a.tier1 == "cpu" ? J2KC_BENCH_TIER1_CPU
                      : a.tier1 == "gpu" ? J2KC_BENCH_TIER1_GPU
                                         : -1;
        if (v < 0) die("--tier1 takes auto, cpu or gpu");
        if (!set_tier1(cfg, v, 0)) die("--tier1: this core's j2kc_decoder_config has no Tier-1 placement field");
    }
    GpuMemory mem;
    mem.begin();
    j2kc_decoder *dec = nullptr;
    check(j2kc_decoder_create(&dec, &cfg), "decoder_create");

    // Output planes, 16-bit, one set per codestream, allocated before timing.
    if (a.output != "host" && a.output != "pinned" && a.output != "device")
        die("--output takes host, pinned or device");
    if (a.output != "host" && !a.out.empty()) die("--out needs --output host");
    struct Out {
        std::vector<std::vector<uint16_t>> planes;
        std::vector<void *> cuda;  ///< --output pinned or device: the planes' memory
        std::vector<j2kc_component> comps;
        j2kc_image image{};
    };
    std::vector<Out> outs(streams.size());
    for (size_t i = 0; i < streams.size(); ++i) {
        std::vector<j2kc_component_info> ci(64);
        j2kc_stream_info info;
        std::memset(&info, 0, sizeof(info));
        info.struct_size = sizeof(info);
        info.components = ci.data();
        info.components_capacity = uint32_t(ci.size());
        check(j2kc_decoder_parse(dec, streams[i].data(), streams[i].size(), &info), "parse");
        Out &o = outs[i];
        o.planes.resize(info.num_components);
        o.comps.resize(info.num_components);
        for (uint32_t c = 0; c < info.num_components; ++c) {
            const size_t plane_bytes = size_t(ci[c].width) * ci[c].height * 2;
            void *mem_at = nullptr;
            if (a.output == "host") {
                o.planes[c].resize(plane_bytes / 2);
                mem_at = o.planes[c].data();
            } else if (a.output == "pinned") {
                if (cudaMallocHost(&mem_at, std::max<size_t>(plane_bytes, 2)) != cudaSuccess) die("cudaMallocHost");
            } else if (cudaMalloc(&mem_at, std::max<size_t>(plane_bytes, 2)) != cudaSuccess) {
                die("cudaMalloc");
            }
            if (a.output != "host") o.cuda.push_back(mem_at);
            j2kc_component &k = o.comps[c];
            std::memset(&k, 0, sizeof(k));
            k.data = reinterpret_cast<uint64_t>(mem_at);
            k.row_stride = ptrdiff_t(ci[c].width) * 2;
            k.sample_stride = 2;
            k.bytes_per_sample = 2;
            k.precision = std::min<uint8_t>(ci[c].precision, 16);
            k.is_signed = ci[c].is_signed;
            k.dx = ci[c].dx;
            k.dy = ci[c].dy;
            k.width = ci[c].width;
            k.height = ci[c].height;
        }
        o.image.struct_size = sizeof(o.image);
        o.image.memory = a.output == "device" ? J2KC_MEMORY_CUDA : J2KC_MEMORY_HOST;
        o.image.width = info.width;
        o.image.height = info.height;
        o.image.num_components = info.num_components;
        o.image.components = o.comps.data();
    }
    mem.sample();
    const bool async = !a.sync && j2kc_decoder_submit && j2kc_decoder_receive;
    // A slot sizes its buffers on its first frame: the queue is filled once
    // before the warm-up proper, however few frames that asks for. Its depth
    // is the number of submits it took.
    int depth = 0;
    if (async) {
        while (j2kc_decoder_submit(dec, streams[depth % streams.size()].data(), streams[depth % streams.size()].size(),
                                   depth) == J2KC_OK)
            ++depth;
        for (int f = 0; f < depth; ++f) {
            int64_t tag = 0;
            check(j2kc_decoder_receive(dec, &outs[f % streams.size()].image, &tag, 1), "receive");
        }
    }
    // The clock runs between two receives with the queue full at both: from
    // the end of a warm-up of at least a queue's depth (every frame then in
    // flight was submitted to a full queue, none in the first burst) to the
    // frame --frames later, with as many frames again submitted behind it
    // and drained off the clock. A streaming caller's rate, as FFmpeg's is
    // read from its progress (one frame's latency: --in-flight 1). Stage sums
    // (summed at each receive) are taken at both ends too.
    const int lead = std::max(a.warmup, depth);
    const int total = lead + a.frames;
    Clock::time_point t0, t1;
    int received = 0;
    j2kc_stage_times warmup_stages{}, window_stages{};
    bool have_stages = false;
    auto received_one = [&] {
        mem.sample();
        if (++received == lead) {
            t0 = Clock::now();
            if (async && j2kc_decoder_stage_times) j2kc_decoder_stage_times(dec, &warmup_stages);
        }
        if (received == total) {
            t1 = Clock::now();
            have_stages = async && j2kc_decoder_reset && j2kc_decoder_stage_times &&
                          j2kc_decoder_stage_times(dec, &window_stages) == J2KC_OK && window_stages.total > 0;
        }
    };
    // Frames [first, first + count) in turn over the streams, the queue
    // drained at the end.
    auto run = [&](int first, int count) {
        if (!async) {
            for (int f = first; f < first + count; ++f) {
                const size_t i = size_t(f) % streams.size();
                check(j2kc_decode(dec, streams[i].data(), streams[i].size(), &outs[i].image), "decode");
                received_one();
            }
            return;
        }
        std::vector<size_t> fifo;  // stream index of each queued frame, oldest first
        auto take = [&](int flush) {
            int64_t tag = 0;
            const int s = j2kc_decoder_receive(dec, &outs[fifo.front()].image, &tag, flush);
            if (s == J2KC_ERR_AGAIN) return false;
            check(s, "receive");
            fifo.erase(fifo.begin());
            received_one();
            return true;
        };
        for (int f = first; f < first + count; ++f) {
            const size_t i = size_t(f) % streams.size();
            int s;
            while ((s = j2kc_decoder_submit(dec, streams[i].data(), streams[i].size(), f)) == J2KC_ERR_AGAIN) take(0);
            check(s, "submit");
            fifo.push_back(i);
            while (!fifo.empty() && take(0)) {}
        }
        while (!fifo.empty()) take(1);
    };
    if (async && j2kc_decoder_reset) j2kc_decoder_reset(dec);  // stage sums from here
    t0 = t1 = Clock::now();
    run(0, total + depth);
    const double secs = std::chrono::duration<double>(t1 - t0).count();
    const char *backend = j2kc_decoder_backend(dec) == J2KC_BACKEND_CUDA ? "cuda" : "cpu";
    // Where Tier-1 ran: the GPU on the CUDA backend unless the config says the CPU.
    const char *tier1_place =
        std::strcmp(backend, "cuda") == 0 && get_tier1(cfg, 0) != J2KC_BENCH_TIER1_CPU ? "gpu" : "cpu";
    // Async cores sum stage times since the reset; older ones have none.
    j2kc_stage_times stages = window_stages;
    add_stages(stages, warmup_stages, -1);
    j2kc_decoder_free(&dec);
    for (const Out &o : outs)
        for (void *p : o.cuda) a.output == "pinned" ? cudaFreeHost(p) : cudaFree(p);
    if (!a.out.empty()) {
        std::ofstream f(a.out, std::ios::binary);
        for (const Out &o : outs)
            for (const auto &p : o.planes)
                f.write(reinterpret_cast<const char *>(p.data()), std::streamsize(p.size() * 2));
    }
    std::printf(
        "{\"fps\": %.4f, \"frames\": %d, \"seconds\": %.6f, \"backend\": \"%s\", \"gpu_mem_mib\": %.1f, "
        "\"api\": \"%s\"",
        a.frames / secs, a.frames, secs, backend, mem.used_mib(), async ? "submit/receive" : "j2kc_decode");
    std::printf(", \"tier1_place\": \"%s\"", tier1_place);
    if (!a.tier1.empty()) std::printf(", \"tier1\": \"%s\"", a.tier1.c_str());
    std::printf(", \"output\": \"%s\"", a.output.c_str());
    if (have_stages) print_stages(stages, a.frames);
    std::printf("}\n");
    return 0;
}

}  // namespace

int main(int argc, char **argv)
{
    try {
        const Args a = parse(argc, argv);
        if (a.cmd == "encode") return encode(a);
        if (a.cmd == "decode") return decode(a);
        if (a.cmd == "caps") {
            j2kc_decoder_config cfg;
            j2kc_decoder_config_default(&cfg);
            std::printf("{\"decoder_tier1\": %s}\n", set_tier1(cfg, J2KC_BENCH_TIER1_AUTO, 0) ? "true" : "false");
            return 0;
        }
        die("unknown command " + a.cmd);
    } catch (const std::exception &e) {
        die(e.what());
    }
}
