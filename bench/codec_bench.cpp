// codec_bench: frames per second of the encoder and decoder through the C API,
// on synthetic natural-looking frames (smooth gradients, edges, texture and
// noise), for the DCI 4K/2K, lossless and decode cases.
// A benchmark, not a test: it prints a table and asserts nothing.
//
// usage: codec_bench [--backend cuda|cpu] [--frames N] [--threads N] [case...]
// cases: dci4k dci2k lossless4k decode4k decode2k decodelossless4k, and with the
// HTJ2K block coder ht4k htlossless4k decodeht4k decodehtlossless4k (4K 12-bit
// 4:4:4 at a fixed step, quality 3 (about 2.5 bits a sample), and lossless),
// htbudget4k (the same frames under the DCI 4K cap of 1,302,083 bytes, generic
// profile), htimf4k (IMF APP2.HT irreversible under that cap), and
// decodehtbudget4k decodehtbudget4k64 (decoding the frame coded under a budget
// of 2 bits a sample, most blocks ending in SigProp and MagRef passes, with
// 32 x 32 and 64 x 64 blocks) (default: all)
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "j2kc.h"
#include "test_images.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Frame {
    uint32_t width, height;
    std::vector<uint16_t> packed;  // xyz12le-like: 3 x 16-bit per pixel, value << 4
    std::vector<j2kc_component> comps;
    j2kc_image image{};
};

Frame make_frame(uint32_t w, uint32_t h, uint32_t seed)
{
    Frame f{w, h, std::vector<uint16_t>(size_t{w} * h * 3), {}, {}};
    uint32_t rng = seed * 2654435761u + 1;
    for (uint32_t y = 0; y < h; ++y)
        for (uint32_t x = 0; x < w; ++x) {
            rng = rng * 1664525u + 1013904223u;
            const double noise = double(rng >> 24) / 255.0 - 0.5;
            const double base = 0.5 + 0.25 * std::sin(x * 0.004 + seed) * std::cos(y * 0.006) +
                                0.1 * ((((x >> 6) + (y >> 6)) & 1) ? 1 : -1) + 0.05 * std::sin(x * 0.3 + y * 0.2);
            for (int c = 0; c < 3; ++c) {
                double v = base * (0.8 + 0.1 * c) + 0.02 * noise + 0.05 * c;
                v = std::min(1.0, std::max(0.0, v));
                f.packed[(size_t{y} * w + x) * 3 + c] = static_cast<uint16_t>(uint32_t(v * 4095) << 4);
            }
        }
    for (int c = 0; c < 3; ++c)
        f.comps.push_back(j2kc_test::component16(reinterpret_cast<uint64_t>(f.packed.data() + c), w, h, 12,
                                                 ptrdiff_t(w) * 6, 6, 1, 1, 4));
    f.image = j2kc_test::image_view(f.comps, w, h);
    return f;
}

void log_stage(void *, int level, const char *msg)
{
    if (level <= J2KC_LOG_INFO) std::fprintf(stderr, "  [j2kc] %s\n", msg);
}

struct Result {
    double fps = 0, mean_bytes = 0, psnr = 0;
};

/**
 * Encode throughput with several frames in flight (j2kc_encoder_submit /
 * receive; J2KC_BENCH_ENCODE_IN_FLIGHT=N sets frames_in_flight, default the
 * library's), from host frames or from a frame already in CUDA memory.
 */
Result run_encode(const Frame &frame, j2kc_encoder_config cfg, int frames, bool device_input,
                  std::vector<uint8_t> *keep = nullptr)
{
    Result r;
    if (const char *v = std::getenv("J2KC_BENCH_ENCODE_IN_FLIGHT")) cfg.frames_in_flight = std::atoi(v);
    j2kc_image image = frame.image;
    std::vector<j2kc_component> comps = frame.comps;
    void *dev = nullptr;
    if (device_input) {
        const size_t bytes = frame.packed.size() * 2;
        if (cudaMalloc(&dev, bytes) != cudaSuccess) return r;
        cudaMemcpy(dev, frame.packed.data(), bytes, cudaMemcpyHostToDevice);
        for (int c = 0; c < 3; ++c) comps[c].data = reinterpret_cast<uint64_t>(static_cast<uint16_t *>(dev) + c);
        image.memory = J2KC_MEMORY_CUDA;
    }
    image.components = comps.data();
    j2kc_encoder *enc = nullptr;
    int st = j2kc_encoder_create(&enc, &cfg, &image);
    if (st != J2KC_OK) {
        std::fprintf(stderr, "encoder: %s\n", j2kc_status_string(st));
        return r;
    }
    // Frames go through the queue as FFmpeg feeds them: submit while a slot is
    // free, take whatever is finished, wait for the oldest only when full.
    j2kc_packet pkt{};
    double bytes = 0;
    int received = 0, failed = 0;
    auto take = [&](int flush) {
        const int s = j2kc_encoder_receive(enc, &pkt, flush);
        if (s == J2KC_OK) {
            bytes += double(pkt.size);
            ++received;
        } else if (s != J2KC_ERR_AGAIN && s != J2KC_ERR_EOF) {
            ++failed;
        }
        return s;
    };
    auto run = [&](int count) {
        for (int i = 0; i < count && !failed; ++i) {
            while ((st = j2kc_encoder_submit(enc, &image, i)) == J2KC_ERR_AGAIN)
                if (take(1) != J2KC_OK) break;
            if (st != J2KC_OK) {
                ++failed;
                break;
            }
            while (take(0) == J2KC_OK) {}
        }
        while (take(1) == J2KC_OK) {}
    };
    run(4);  // warm-up: every slot's pools touched
    bytes = 0;
    received = 0;
    const auto t0 = Clock::now();
    run(frames);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (failed) std::fprintf(stderr, "encode: %d frames failed (%s)\n", failed, j2kc_status_string(st));
    r.fps = received / s;
    r.mean_bytes = received ? bytes / received : 0;
    if (keep && received) keep->assign(pkt.data, pkt.data + pkt.size);
    j2kc_encoder_free(&enc);
    if (dev) cudaFree(dev);
    return r;
}

/**
 * Decode throughput with several frames in flight (j2kc_decoder_submit /
 * receive, frames_in_flight 0 = the library's default), into host frames
 * (or, with J2KC_BENCH_DECODE_CUDA=1, into a frame in CUDA memory, copied
 * back once at the end for the PSNR).
 * Prints the stage split per frame: CPU Tier-2 and Tier-1 (summed over the
 * worker threads, so divide by the thread count for wall time), GPU upload,
 * dequantisation + inverse DWT, MCT + pack, download.
 */
Result run_decode(const std::vector<uint8_t> &cs, const Frame &src, j2kc_backend backend, int threads, int frames,
                  int in_flight)
{
    Result r;
    j2kc_decoder_config cfg;
    j2kc_decoder_config_default(&cfg);
    cfg.backend = backend;
    cfg.threads = threads;
    cfg.frames_in_flight = in_flight;
    size_t free_before = 0, free_after = 0, total = 0;
    if (backend == J2KC_BACKEND_CUDA) cudaMemGetInfo(&free_before, &total);
    j2kc_decoder *dec = nullptr;
    if (j2kc_decoder_create(&dec, &cfg) != J2KC_OK) return r;
    Frame out = make_frame(1, 1, 0);
    out.packed.assign(src.packed.size(), 0);
    out.comps = src.comps;
    for (int c = 0; c < 3; ++c) out.comps[c].data = reinterpret_cast<uint64_t>(out.packed.data() + c);
    out.image = src.image;
    out.image.components = out.comps.data();
    const char *to_cuda = std::getenv("J2KC_BENCH_DECODE_CUDA");
    void *dev = nullptr;
    if (backend == J2KC_BACKEND_CUDA && to_cuda && std::atoi(to_cuda)) {
        if (cudaMalloc(&dev, out.packed.size() * 2) != cudaSuccess) return r;
        for (int c = 0; c < 3; ++c) out.comps[c].data = reinterpret_cast<uint64_t>(static_cast<uint16_t *>(dev) + c);
        out.image.memory = J2KC_MEMORY_CUDA;
    }
    // Warm-up: a queue's worth of frames, so that every slot has sized its
    // buffers (a slot allocates them on its first frame) before the clock starts.
    int64_t tag = 0;
    int warm = 0;
    while (j2kc_decoder_submit(dec, cs.data(), cs.size(), warm) == J2KC_OK) ++warm;
    for (int i = 0; i < warm; ++i)
        if (j2kc_decoder_receive(dec, &out.image, &tag, 1) != J2KC_OK) return r;
    j2kc_decoder_reset(dec);  // stage times from here on
    int received = 0, failed = 0;
    const auto t0 = Clock::now();
    for (int i = 0; i < frames; ++i)
        while (j2kc_decoder_submit(dec, cs.data(), cs.size(), i) == J2KC_ERR_AGAIN) {
            failed += j2kc_decoder_receive(dec, &out.image, &tag, 0) != J2KC_OK;
            ++received;
        }
    for (; received < frames; ++received) failed += j2kc_decoder_receive(dec, &out.image, &tag, 1) != J2KC_OK;
    r.fps = frames / std::chrono::duration<double>(Clock::now() - t0).count();
    if (backend == J2KC_BACKEND_CUDA) cudaMemGetInfo(&free_after, &total);
    if (dev) {
        cudaMemcpy(out.packed.data(), dev, out.packed.size() * 2, cudaMemcpyDeviceToHost);
        cudaFree(dev);
    }
    j2kc_stage_times t{};
    j2kc_decoder_stage_times(dec, &t);
    const double n = frames;
    if (backend == J2KC_BACKEND_CUDA)
        std::printf(
            "|   decode split, ms/frame | in flight %d, %d threads | CPU tier2 %.2f, tier1 %.2f (thread-ms) | "
            "GPU upload %.2f, dequant+IDWT %.2f, MCT+pack %.2f, download %.2f; latency %.1f; "
            "GPU memory %.0f MB%s |\n",
            in_flight, threads, t.tier2 / n, t.tier1 / n, t.upload / n, t.dwt / n, t.color / n, t.download / n,
            t.total / n, double(free_before - free_after) / 1e6, failed ? " (FAILED FRAMES)" : "");
    else
        std::printf(
            "|   decode split, ms/frame | in flight %d, %d threads | CPU headers %.2f, tier2+tier1 %.2f | "
            "sample stages %.2f (wall); latency %.1f%s |\n",
            in_flight, threads, t.tier2 / n, t.tier1 / n, t.dwt / n, t.total / n, failed ? " (FAILED FRAMES)" : "");
    double se = 0;
    for (size_t i = 0; i < src.packed.size(); ++i) {
        const double d = double(src.packed[i] >> 4) - double(out.packed[i] >> 4);
        se += d * d;
    }
    r.psnr = se == 0 ? 999 : 10 * std::log10(4095.0 * 4095.0 * src.packed.size() / se);
    j2kc_decoder_free(&dec);
    return r;
}

}  // namespace

/** The HT block coder at a fixed step (quality 3) or lossless, 32 x 32 code-blocks. */
void set_ht(j2kc_encoder_config &cfg, bool lossless)
{
    cfg.block_coder = J2KC_BLOCK_CODER_HT;
    cfg.lossless = lossless;
    if (!lossless) cfg.quality = 3.0;
    cfg.cblk_width_log2 = cfg.cblk_height_log2 = 5;
}

int main(int argc, char **argv)
{
    j2kc_backend backend = J2KC_BACKEND_CUDA;
    int frames = 20, threads = 0;
    std::vector<std::string> cases;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--backend" && i + 1 < argc)
            backend = std::string(argv[++i]) == "cpu" ? J2KC_BACKEND_CPU : J2KC_BACKEND_CUDA;
        else if (a == "--frames" && i + 1 < argc)
            frames = std::atoi(argv[++i]);
        else if (a == "--threads" && i + 1 < argc)
            threads = std::atoi(argv[++i]);
        else
            cases.push_back(a);
    }
    if (cases.empty())
        cases = {"dci4k",
                 "dci2k",
                 "lossless4k",
                 "decode4k",
                 "decode2k",
                 "decodelossless4k",
                 "ht4k",
                 "htlossless4k",
                 "htbudget4k",
                 "htimf4k",
                 "decodeht4k",
                 "decodehtlossless4k",
                 "decodehtbudget4k",
                 "decodehtbudget4k64"};
    const bool timing = std::getenv("J2KC_TIMING") != nullptr;
    // Decoder frames in flight to measure (J2KC_BENCH_DECODE_IN_FLIGHT=1,8,16; 0 = the library's default).
    std::vector<int> decode_depths = {1, 0};
    if (const char *v = std::getenv("J2KC_BENCH_DECODE_IN_FLIGHT")) {
        decode_depths.clear();
        for (const char *p = v; *p;) {
            char *end = nullptr;
            decode_depths.push_back(std::max(0, int(std::strtol(p, &end, 10))));
            p = *end == ',' ? end + 1 : end;
            if (end == p && *p) break;
        }
    }
    std::printf("| case | input | fps | bytes/frame |\n|---|---|---|---|\n");
    const Frame f4k = make_frame(4096, 2160, 1);
    std::vector<uint8_t> dci4k_stream;
    for (const std::string &c : cases) {
        j2kc_encoder_config cfg;
        j2kc_encoder_config_default(&cfg);
        cfg.backend = backend;
        cfg.threads = threads;
        if (timing) cfg.log = log_stage;
        if (c == "dci4k" || c == "dci2k") {
            const Frame f2k = c == "dci2k" ? make_frame(2048, 1080, 2) : Frame{};
            const Frame &f = c == "dci4k" ? f4k : f2k;
            cfg.profile = c == "dci4k" ? J2KC_PROFILE_DCI_4K : J2KC_PROFILE_DCI_2K;
            for (bool dev : {true, false}) {
                if (dev && backend != J2KC_BACKEND_CUDA) continue;
                const Result r = run_encode(f, cfg, frames, dev, c == "dci4k" && !dev ? &dci4k_stream : nullptr);
                std::printf("| encode %s | %s | %.1f | %.0f |\n", c.c_str(), dev ? "CUDA frames" : "host frames", r.fps,
                            r.mean_bytes);
                std::fflush(stdout);
            }
        } else if (c == "lossless4k") {
            cfg.lossless = 1;
            cfg.cblk_width_log2 = cfg.cblk_height_log2 = 5;
            for (bool dev : {true, false}) {
                if (dev && backend != J2KC_BACKEND_CUDA) continue;
                const Result r = run_encode(f4k, cfg, frames, dev);
                std::printf("| encode lossless 4K 12-bit | %s | %.1f | %.0f |\n", dev ? "CUDA frames" : "host frames",
                            r.fps, r.mean_bytes);
                std::fflush(stdout);
            }
        } else if (c == "ht4k" || c == "htlossless4k") {
            set_ht(cfg, c == "htlossless4k");
            for (bool dev : {true, false}) {
                if (dev && backend != J2KC_BACKEND_CUDA) continue;
                const Result r = run_encode(f4k, cfg, frames, dev);
                std::printf("| encode HT 4K 12-bit %s | %s | %.1f | %.0f |\n", cfg.lossless ? "lossless" : "quality 3",
                            dev ? "CUDA frames" : "host frames", r.fps, r.mean_bytes);
                std::fflush(stdout);
            }
        } else if (c == "htbudget4k" || c == "htimf4k") {
            // Rate control among the blocks' HT coding sets; PSNR of the last frame (CPU decode).
            set_ht(cfg, false);
            cfg.frame_bytes = 1302083;
            if (c == "htimf4k") cfg.profile = J2KC_PROFILE_IMF;
            for (bool dev : {true, false}) {
                if (dev && backend != J2KC_BACKEND_CUDA) continue;
                std::vector<uint8_t> stream;
                const Result r = run_encode(f4k, cfg, frames, dev, &stream);
                const Result d = run_decode(stream, f4k, J2KC_BACKEND_CPU, threads, 1, 0);
                std::printf("| encode HT 4K 12-bit, %s budget 1302083 B | %s | %.1f | %.0f (PSNR %.2f dB) |\n",
                            c == "htimf4k" ? "IMF APP2.HT" : "generic", dev ? "CUDA frames" : "host frames", r.fps,
                            r.mean_bytes, d.psnr);
                std::fflush(stdout);
            }
        } else if (c == "decodeht4k" || c == "decodehtlossless4k") {
            set_ht(cfg, c == "decodehtlossless4k");
            std::vector<uint8_t> stream;
            run_encode(f4k, cfg, 1, false, &stream);
            for (int in_flight : decode_depths) {
                const Result r = run_decode(stream, f4k, backend, threads, frames, in_flight);
                std::printf(
                    "| decode HT 4K 12-bit %s, %zu bytes (host frames, %s in flight) | %s | %.1f | PSNR %.2f dB |\n",
                    cfg.lossless ? "lossless" : "quality 3", stream.size(),
                    in_flight == 0 ? "default" : std::to_string(in_flight).c_str(),
                    backend == J2KC_BACKEND_CUDA ? "cuda" : "cpu", r.fps, r.psnr);
                std::fflush(stdout);
            }
        } else if (c == "decodehtbudget4k" || c == "decodehtbudget4k64") {
            set_ht(cfg, false);
            if (c == "decodehtbudget4k64") cfg.cblk_width_log2 = cfg.cblk_height_log2 = 6;
            cfg.frame_bytes = size_t{f4k.width} * f4k.height * 3 * 2 / 8;
            std::vector<uint8_t> stream;
            run_encode(f4k, cfg, 1, false, &stream);
            const int side = 1 << cfg.cblk_width_log2;
            for (int in_flight : decode_depths) {
                const Result r = run_decode(stream, f4k, backend, threads, frames, in_flight);
                std::printf(
                    "| decode HT 4K 12-bit, budget 2 bits a sample, %dx%d blocks, %zu bytes (%s in flight) "
                    "| %s | %.1f | PSNR %.2f dB |\n",
                    side, side, stream.size(), in_flight == 0 ? "default" : std::to_string(in_flight).c_str(),
                    backend == J2KC_BACKEND_CUDA ? "cuda" : "cpu", r.fps, r.psnr);
                std::fflush(stdout);
            }
        } else if (c == "decode4k" || c == "decode2k" || c == "decodelossless4k") {
            // Each decode case encodes its own stream once: DCI 4K or 2K at
            // the profile's cap, or 12-bit lossless 4K (5/3, 32 x 32 blocks).
            const bool dci2k = c == "decode2k", lossless = c == "decodelossless4k";
            const Frame f2k = dci2k ? make_frame(2048, 1080, 2) : Frame{};
            const Frame &f = dci2k ? f2k : f4k;
            std::vector<uint8_t> stream;
            if (c == "decode4k" && !dci4k_stream.empty()) {
                stream = dci4k_stream;
            } else {
                if (lossless) {
                    cfg.lossless = 1;
                    cfg.cblk_width_log2 = cfg.cblk_height_log2 = 5;
                } else {
                    cfg.profile = dci2k ? J2KC_PROFILE_DCI_2K : J2KC_PROFILE_DCI_4K;
                }
                run_encode(f, cfg, 1, false, &stream);
            }
            const char *name = dci2k ? "DCI 2K" : lossless ? "lossless 4K 12-bit" : "DCI 4K";
            for (int in_flight : decode_depths) {
                const Result r = run_decode(stream, f, backend, threads, frames, in_flight);
                std::printf("| decode %s (host frames, %s in flight) | %s | %.1f | PSNR %.2f dB |\n", name,
                            in_flight == 0 ? "default" : std::to_string(in_flight).c_str(),
                            backend == J2KC_BACKEND_CUDA ? "cuda" : "cpu", r.fps, r.psnr);
                std::fflush(stdout);
            }
        }
    }
    return 0;
}
