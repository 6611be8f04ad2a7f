/**
 * @file tier1_bench.cpp
 * @brief Benchmark (not a test) of the CPU Tier-1 decoder (ISO/IEC 15444-1
 * Annexes C and D) on the code-blocks of a real codestream.
 *
 *   tier1_bench gen OUT.ppm [W H [SEED]]
 *       writes a synthetic natural-looking 12-bit RGB image (default
 *       4096x2160): 1/f value noise over several octaves, hard-edged shapes,
 *       gradients and sensor noise, so the wavelet bands have the statistics
 *       of camera material rather than of white noise.
 *   tier1_bench IN.j2c [--reps N] [--oracle] [--check]
 *       parses IN, runs Tier-2 (packet headers) once and times it, then
 *       decodes every code-block single-threaded N times with Tier1Decoder
 *       and reports the best run: compressed MB/s, ns per coefficient (over
 *       the coefficients of the decoded blocks and over all image samples)
 *       and frames/s on one core (thread CPU time). --oracle times the frozen straightforward
 *       decoder of tests/tier1_decoder_oracle.h on the same blocks; --check
 *       compares the two outputs block by block. --jobs times the
 *       job-table path (tier1_decode_job.h, the code the GPU runs, decoding in
 *       place) on the host; --gpu runs the same table through the CUDA kernels
 *       (tier1_decode_gpu, and ht_decode_gpu for HT code-blocks, as the
 *       pipeline runs them), reports their time from events (best of N) and
 *       checks it against Tier1Decoder's output. --openjpeg times OpenJPEG's
 *       whole decode of IN on one thread (when built with libopenjp2.a; link
 *       it statically so that `perf record` names its Tier-1 functions).
 *
 * Outputs go where the pipeline puts them (the component planes at the
 * blocks' positions), so the store pattern matches production.
 */
#include <algorithm>
#include <ctime>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "codestream/markers.h"
#include "codestream/reader.h"
#include "common/status.h"
#include "pipeline/band_layout.h"
#include "tier1/tier1_decode_job.h"
#include "tier1/tier1.h"
#include "tier1/tier1_decode_cuda.h"
#include "tier1/ht_decode_cuda.h"
#include "tier1/ht_decode_job.h"
#include "tier1_decoder_oracle.h"

#include <cuda_runtime.h>
#include "geometry/partition.h"
#include "tier2/packet_decoder.h"

#if defined(J2KC_BENCH_OPENJPEG)
#include <openjpeg.h>
#endif

using namespace j2kc;

namespace {

/** Thread CPU time, not wall time: the machines this runs on are often
 *  oversubscribed, and Tier-1 here is single-threaded and never waits. */
struct Clock {
    using time_point = double;
    static double now()
    {
        timespec ts;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
    }
};

double seconds_since(Clock::time_point t0) { return Clock::now() - t0; }

// ------------------------------------------------------------------ image

/** Smooth value noise: a random lattice of spacing `cell`, bicubic-ish
 *  (smoothstep) interpolation. */
struct ValueNoise {
    uint32_t gw, gh, cell;
    std::vector<float> g;
    ValueNoise(uint32_t w, uint32_t h, uint32_t c, std::mt19937 &rng) : cell(c)
    {
        gw = w / c + 2;
        gh = h / c + 2;
        g.resize(size_t{gw} * gh);
        std::normal_distribution<float> n(0.f, 1.f);
        for (float &v : g) v = n(rng);
    }
    float at(uint32_t x, uint32_t y) const
    {
        const uint32_t cx = x / cell, cy = y / cell;
        float fx = float(x % cell) / cell, fy = float(y % cell) / cell;
        fx = fx * fx * (3 - 2 * fx);
        fy = fy * fy * (3 - 2 * fy);
        const float *r0 = &g[size_t{cy} * gw + cx], *r1 = r0 + gw;
        const float top = r0[0] + (r0[1] - r0[0]) * fx;
        const float bot = r1[0] + (r1[1] - r1[0]) * fx;
        return top + (bot - top) * fy;
    }
};

int generate(const char *path, uint32_t w, uint32_t h, uint32_t seed)
{
    std::mt19937 rng(seed);
    // 1/f: amplitude proportional to the cell size.
    std::vector<ValueNoise> octaves;
    std::vector<float> amp;
    for (uint32_t cell = 1024; cell >= 2; cell /= 2) {
        octaves.emplace_back(w, h, cell, rng);
        amp.push_back(0.9f * std::pow(float(cell) / 1024.f, 0.8f));
    }
    ValueNoise chroma1(w, h, 256, rng), chroma2(w, h, 128, rng);
    struct Shape {
        float cx, cy, r, level;
        bool box;
    };
    std::vector<Shape> shapes;
    std::uniform_real_distribution<float> ux(0.f, float(w)), uy(0.f, float(h)), ur(20.f, 400.f), ul(-0.4f, 0.4f);
    for (int k = 0; k < 60; ++k) shapes.push_back({ux(rng), uy(rng), ur(rng), ul(rng), (k & 1) != 0});
    std::normal_distribution<float> noise(0.f, 2.5f);

    FILE *f = std::fopen(path, "wb");
    if (!f) {
        std::perror(path);
        return 1;
    }
    std::fprintf(f, "P6\n%u %u\n4095\n", w, h);
    std::vector<uint8_t> row(size_t{w} * 6);
    for (uint32_t y = 0; y < h; ++y) {
        for (uint32_t x = 0; x < w; ++x) {
            float lum = 0.45f + 0.1f * float(x) / w;
            for (size_t o = 0; o < octaves.size(); ++o) lum += 0.12f * amp[o] * octaves[o].at(x, y);
            for (const Shape &s : shapes) {
                const float dx = float(x) - s.cx, dy = float(y) - s.cy;
                const bool in =
                    s.box ? (std::fabs(dx) < s.r && std::fabs(dy) < 0.6f * s.r) : (dx * dx + dy * dy < s.r * s.r);
                if (in) lum += 0.5f * s.level;
            }
            const float c1 = 0.05f * chroma1.at(x, y), c2 = 0.05f * chroma2.at(x, y);
            const float rgb[3] = {lum + c1, lum - 0.5f * c1 + c2, lum - c2};
            for (int c = 0; c < 3; ++c) {
                float v = rgb[c] * 4095.f + noise(rng);
                const int q = static_cast<int>(std::lround(std::min(4095.f, std::max(0.f, v))));
                row[size_t{x} * 6 + 2 * c] = static_cast<uint8_t>(q >> 8);
                row[size_t{x} * 6 + 2 * c + 1] = static_cast<uint8_t>(q);
            }
        }
        std::fwrite(row.data(), 1, row.size(), f);
    }
    std::fclose(f);
    return 0;
}

#if defined(J2KC_BENCH_OPENJPEG)
/** OpenJPEG on the same bytes from memory, one thread: the whole decode
 *  (Tier-2, Tier-1, DWT, MCT), no file output. Returns the best CPU time. */
struct MemStream {
    const std::vector<uint8_t> *data;
    size_t pos;
};

double time_openjpeg(const std::vector<uint8_t> &file, int reps)
{
    auto read = [](void *buf, OPJ_SIZE_T n, void *user) -> OPJ_SIZE_T {
        MemStream *m = static_cast<MemStream *>(user);
        const size_t left = m->data->size() - m->pos;
        if (left == 0) return static_cast<OPJ_SIZE_T>(-1);
        const size_t k = std::min<size_t>(n, left);
        std::memcpy(buf, m->data->data() + m->pos, k);
        m->pos += k;
        return k;
    };
    auto skip = [](OPJ_OFF_T n, void *user) -> OPJ_OFF_T {
        MemStream *m = static_cast<MemStream *>(user);
        const OPJ_OFF_T left = static_cast<OPJ_OFF_T>(m->data->size() - m->pos);
        const OPJ_OFF_T k = std::min(n, left);
        m->pos += static_cast<size_t>(k);
        return k;
    };
    auto seek = [](OPJ_OFF_T n, void *user) -> OPJ_BOOL {
        MemStream *m = static_cast<MemStream *>(user);
        if (n < 0 || static_cast<size_t>(n) > m->data->size()) return OPJ_FALSE;
        m->pos = static_cast<size_t>(n);
        return OPJ_TRUE;
    };
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
        MemStream ms{&file, 0};
        opj_stream_t *st = opj_stream_create(1 << 20, OPJ_TRUE);
        opj_stream_set_user_data(st, &ms, nullptr);
        opj_stream_set_user_data_length(st, file.size());
        opj_stream_set_read_function(st, read);
        opj_stream_set_skip_function(st, skip);
        opj_stream_set_seek_function(st, seek);
        opj_codec_t *codec = opj_create_decompress(OPJ_CODEC_J2K);
        opj_dparameters_t params;
        opj_set_default_decoder_parameters(&params);
        opj_setup_decoder(codec, &params);
        opj_codec_set_threads(codec, 1);
        opj_image_t *image = nullptr;
        const Clock::time_point t0 = Clock::now();
        const bool ok =
            opj_read_header(st, codec, &image) && opj_decode(codec, st, image) && opj_end_decompress(codec, st);
        const double s = seconds_since(t0);
        if (!ok) std::printf("openjpeg: decode failed\n");
        best = std::min(best, s);
        opj_image_destroy(image);
        opj_destroy_codec(codec);
        opj_stream_destroy(st);
    }
    return best;
}
#endif

// ------------------------------------------------------------------ blocks

struct Job {
    uint32_t width, height;
    Tier1DecodeParams params;
    size_t data_offset;  // into Blocks::bytes
    size_t first_segment, num_segments;
    uint32_t plane;     // output plane
    size_t out_offset;  // into the plane
    size_t out_stride;
    size_t bytes;
};

struct Blocks {
    std::vector<uint8_t> bytes;
    std::vector<CodewordSegment> segments;
    std::vector<Job> jobs;
    std::vector<std::vector<int32_t>> planes;
    uint64_t image_samples = 0;
    uint64_t block_samples = 0;
    double tier2_seconds = 0;
};

Blocks collect(const Codestream &cs)
{
    Blocks b;
    for (const ComponentSize &c : cs.siz.components)
        b.image_samples += uint64_t{(cs.siz.width + c.dx - 1) / c.dx - (cs.siz.x0 + c.dx - 1) / c.dx} *
                           ((cs.siz.height + c.dy - 1) / c.dy - (cs.siz.y0 + c.dy - 1) / c.dy);
    for (const Tile &tile : cs.tiles) {
        const Clock::time_point t0 = Clock::now();
        const TileLayout layout = build_partition(cs.siz, cs, tile);
        TileCodewords codewords;
        decode_tile_packets(cs, tile, layout, 0, codewords);
        b.tier2_seconds += seconds_since(t0);
        const uint32_t plane_base = static_cast<uint32_t>(b.planes.size());
        for (const TileComponent &tc : layout.components)
            b.planes.emplace_back(size_t{tc.rect.width()} * tc.rect.height());
        for (size_t i = 0; i < layout.code_blocks.size(); ++i) {
            const CodeBlock &cb = layout.code_blocks[i];
            const CodeBlockCodewords &cw = codewords[i];
            if (!cw.included || cw.num_passes == 0) continue;
            const TileComponent &tc = layout.components[cb.component];
            const Resolution &res = tc.resolutions[cb.resolution];
            const Band &band = res.bands[cb.band];
            const Quantization &quant = cs.quantization(tile, cb.component);
            const QuantStep step = quant.step(band.quant_index, tc.levels);
            Job job;
            job.width = cb.rect.width();
            job.height = cb.rect.height();
            job.params.orientation = band.orientation;
            job.params.style = cs.component_coding(tile, cb.component).cblk_style;
            job.params.num_bitplanes = static_cast<uint8_t>(int{quant.guard_bits} + step.exponent - 1);
            job.params.zero_bitplanes = cw.zero_bitplanes;
            job.params.roi_shift = cs.roi_shift(tile, cb.component);
            job.data_offset = b.bytes.size();
            for (const CodeBlockChunk &chunk : cw.chunks)
                b.bytes.insert(b.bytes.end(), chunk.data, chunk.data + chunk.length);
            job.bytes = b.bytes.size() - job.data_offset;
            job.first_segment = b.segments.size();
            job.num_segments = cw.segments.size();
            b.segments.insert(b.segments.end(), cw.segments.begin(), cw.segments.end());
            uint32_t x, y;
            code_block_origin(tc, cb, x, y);
            job.plane = plane_base + cb.component;
            job.out_stride = tc.rect.width();
            job.out_offset = size_t{y} * job.out_stride + x;
            b.block_samples += uint64_t{job.width} * job.height;
            b.jobs.push_back(job);
        }
    }
    return b;
}

/** The blocks as a T1DecodeJob table over one buffer holding every plane. */
struct JobTable {
    std::vector<T1DecodeJob> jobs;
    std::vector<size_t> plane_at;
    size_t elements = 0, scratch_words = 1;
};

JobTable job_table(const Blocks &b)
{
    JobTable t;
    for (const auto &p : b.planes) {
        t.plane_at.push_back(t.elements);
        t.elements += p.size();
    }
    for (const Job &j : b.jobs) {
        T1DecodeJob job{};
        job.data_offset = j.data_offset;
        job.data_length = uint32_t(j.bytes);
        job.segment_offset = uint32_t(j.first_segment);
        job.num_segments = uint32_t(j.num_segments);
        job.out_offset = t.plane_at[j.plane] + j.out_offset;
        job.out_stride = uint32_t(j.out_stride);
        job.width = uint16_t(j.width);
        job.height = uint16_t(j.height);
        job.orientation = uint8_t(j.params.orientation);
        job.style = j.params.style;
        job.num_bitplanes = j.params.num_bitplanes;
        job.zero_bitplanes = j.params.zero_bitplanes;
        job.roi_shift = j.params.roi_shift;
        t.scratch_words = std::max(t.scratch_words, t1_decode_job_scratch_words(j.width, j.height));
        t.jobs.push_back(job);
    }
    return t;
}

size_t count_diffs(const Blocks &b, const JobTable &t, const std::vector<int32_t> &all)
{
    size_t diffs = 0;
    for (size_t p = 0; p < b.planes.size(); ++p)
        for (size_t i = 0; i < b.planes[p].size(); ++i) diffs += b.planes[p][i] != all[t.plane_at[p] + i];
    return diffs;
}

#define BENCH_CUDA(call)                                                     \
    do {                                                                     \
        const cudaError_t e_ = (call);                                       \
        if (e_ != cudaSuccess) {                                             \
            std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_)); \
            return 3;                                                        \
        }                                                                    \
    } while (0)

/** The table through the CUDA kernel: best kernel time of `reps` (events), checked against b.planes. */
int bench_gpu(const Blocks &b, const JobTable &t, int reps)
{
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::printf("gpu: no CUDA device\n");
        return 0;
    }
    const uint32_t n = uint32_t(t.jobs.size());
    T1DecodeJob *jobs;
    uint8_t *bytes, *status;
    CodewordSegment *segs;
    int32_t *out;
    uint32_t *scratch;
    BENCH_CUDA(cudaMalloc(&jobs, std::max<size_t>(n, 1) * sizeof(T1DecodeJob)));
    BENCH_CUDA(cudaMalloc(&bytes, std::max<size_t>(b.bytes.size(), 1)));
    BENCH_CUDA(cudaMalloc(&segs, std::max<size_t>(b.segments.size(), 1) * sizeof(CodewordSegment)));
    BENCH_CUDA(cudaMalloc(&out, std::max<size_t>(t.elements, 1) * 4));
    BENCH_CUDA(cudaMalloc(&status, std::max<size_t>(n, 1)));
    BENCH_CUDA(cudaMalloc(&scratch, size_t{tier1_decode_gpu_threads(n, 1)} * t.scratch_words * 4));
    BENCH_CUDA(cudaMemcpy(jobs, t.jobs.data(), n * sizeof(T1DecodeJob), cudaMemcpyHostToDevice));
    std::vector<uint32_t> host_order(n);
    tier1_decode_order(t.jobs.data(), n, host_order.data());
    uint32_t *order;
    BENCH_CUDA(cudaMalloc(&order, std::max<size_t>(n, 1) * 4));
    BENCH_CUDA(cudaMemcpy(order, host_order.data(), n * 4, cudaMemcpyHostToDevice));
    BENCH_CUDA(cudaMemcpy(bytes, b.bytes.data(), b.bytes.size(), cudaMemcpyHostToDevice));
    BENCH_CUDA(
        cudaMemcpy(segs, b.segments.data(), b.segments.size() * sizeof(CodewordSegment), cudaMemcpyHostToDevice));
    // Blocks without data have no job: the buffer starts as zeros, as the planes do.
    BENCH_CUDA(cudaMemset(out, 0, t.elements * 4));
    cudaEvent_t e0, e1;
    BENCH_CUDA(cudaEventCreate(&e0));
    BENCH_CUDA(cudaEventCreate(&e1));
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    // The kernels as the pipeline runs them: Part 1's when the table has
    // Part-1 jobs, then HT's when it has HT jobs (ht_decode_cuda.h).
    const bool ht =
        std::any_of(t.jobs.begin(), t.jobs.end(), [](const T1DecodeJob &j) { return j.style & kT1JobStyleHt; });
    const bool part1 =
        std::any_of(t.jobs.begin(), t.jobs.end(), [](const T1DecodeJob &j) { return !(j.style & kT1JobStyleHt); });
    auto launch = [&](const T1DecodeJob *tab, uint32_t count, int32_t *dst, uint32_t *scr, uint8_t *st, uint32_t lanes,
                      const uint32_t *ord) {
        if (part1) tier1_decode_gpu(tab, count, bytes, segs, dst, scr, t.scratch_words, st, nullptr, lanes, ord);
        if (ht) ht_decode_gpu(tab, count, bytes, segs, dst, st, nullptr, ord);
    };
    // Every lanes-per-warp setting (tier1_decode_cuda.h), the default last so its output is checked.
    float best = 1e30f;
    // Table order, then the pipeline's (by decreasing bytes), which the checked default run uses.
    for (int sorted = 0; sorted < 2; ++sorted)
        for (uint32_t lanes : {1u, 2u, 4u, 8u, 16u, 32u, 0u}) {
            if (!sorted && !lanes) continue;
            best = 1e30f;
            for (int r = 0; r < reps + 1; ++r) {  // the first run warms up
                BENCH_CUDA(cudaEventRecord(e0));
                launch(jobs, n, out, scratch, status, lanes, sorted ? order : nullptr);
                BENCH_CUDA(cudaEventRecord(e1));
                BENCH_CUDA(cudaEventSynchronize(e1));
                float ms = 0;
                BENCH_CUDA(cudaEventElapsedTime(&ms, e0, e1));
                if (r) best = std::min(best, ms);
            }
            if (lanes)
                std::printf("gpu lanes %2u %s %8.3f ms/frame\n", lanes, sorted ? "by bytes   " : "table order",
                            double(best));
        }
    // The tail: the largest job alone, one thread (no frame decodes faster
    // than its longest block), then `batch` copies of the frame in one launch
    // (frames in flight: how much of the GPU one frame leaves idle).
    auto timed = [&](uint32_t count, const uint32_t *ord, int32_t *dst, const T1DecodeJob *tab) -> float {
        float b = 1e30f;
        for (int r = 0; r < reps + 1; ++r) {
            if (cudaEventRecord(e0) != cudaSuccess) return -1;
            launch(tab, count, dst, scratch, status, 0, ord);
            if (cudaEventRecord(e1) != cudaSuccess || cudaEventSynchronize(e1) != cudaSuccess) return -1;
            float ms = 0;
            cudaEventElapsedTime(&ms, e0, e1);
            if (r) b = std::min(b, ms);
        }
        return b;
    };
    if (n) {
        // A one-job table: the kernel skips order entries past its job count.
        const T1DecodeJob &big = t.jobs[host_order[0]];
        T1DecodeJob *one;
        BENCH_CUDA(cudaMalloc(&one, sizeof(T1DecodeJob)));
        BENCH_CUDA(cudaMemcpy(one, &big, sizeof(T1DecodeJob), cudaMemcpyHostToDevice));
        std::printf("gpu tail   %8.3f ms        the largest job alone (%u bytes, %ux%u; frame: %zu bytes in %u jobs)\n",
                    double(timed(1, nullptr, out, one)), big.data_length, big.width, big.height, b.bytes.size(), n);
        cudaFree(one);
    }
    for (uint32_t batch : {4u, 8u})
        for (uint32_t batch_lanes : {1u, 2u, 8u, 32u}) {
            std::vector<T1DecodeJob> many;
            std::vector<uint32_t> many_order;
            for (uint32_t k = 0; k < batch; ++k)
                for (uint32_t j = 0; j < n; ++j) {
                    T1DecodeJob job = t.jobs[j];
                    job.out_offset += uint64_t{k} * t.elements;
                    many.push_back(job);
                }
            for (uint32_t j = 0; j < n; ++j)  // like frames in flight: the big blocks of every frame first
                for (uint32_t k = 0; k < batch; ++k) many_order.push_back(k * n + host_order[j]);
            T1DecodeJob *mj;
            int32_t *mo;
            uint32_t *mord, *mscratch;
            uint8_t *mstatus;
            const uint32_t m = uint32_t(many.size());
            BENCH_CUDA(cudaMalloc(&mj, std::max<size_t>(m, 1) * sizeof(T1DecodeJob)));
            BENCH_CUDA(cudaMalloc(&mo, std::max<size_t>(t.elements, 1) * 4 * batch));
            BENCH_CUDA(cudaMalloc(&mord, std::max<size_t>(m, 1) * 4));
            BENCH_CUDA(cudaMalloc(&mstatus, std::max<size_t>(m, 1)));
            BENCH_CUDA(cudaMalloc(&mscratch, size_t{tier1_decode_gpu_threads(m, batch_lanes)} * t.scratch_words * 4));
            BENCH_CUDA(cudaMemcpy(mj, many.data(), m * sizeof(T1DecodeJob), cudaMemcpyHostToDevice));
            BENCH_CUDA(cudaMemcpy(mord, many_order.data(), m * 4, cudaMemcpyHostToDevice));
            float bb = 1e30f;
            for (int r = 0; r < reps + 1; ++r) {
                BENCH_CUDA(cudaEventRecord(e0));
                launch(mj, m, mo, mscratch, mstatus, batch_lanes, mord);
                BENCH_CUDA(cudaEventRecord(e1));
                BENCH_CUDA(cudaEventSynchronize(e1));
                float ms = 0;
                BENCH_CUDA(cudaEventElapsedTime(&ms, e0, e1));
                if (r) bb = std::min(bb, ms);
            }
            std::printf("gpu batch %u %8.3f ms/frame  %u frames in one launch (%.3f ms in all), %u lane%s a warp\n",
                        batch, double(bb) / batch, batch, double(bb), batch_lanes, batch_lanes > 1 ? "s" : "");
            cudaFree(mj);
            cudaFree(mo);
            cudaFree(mord);
            cudaFree(mstatus);
            cudaFree(mscratch);
        }
    // The checked run last (the default lanes, by bytes), as the pipeline runs it.
    best = timed(n, order, out, jobs);
    std::vector<int32_t> all(t.elements);
    std::vector<uint8_t> st(n);
    BENCH_CUDA(cudaMemcpy(all.data(), out, t.elements * 4, cudaMemcpyDeviceToHost));
    BENCH_CUDA(cudaMemcpy(st.data(), status, n, cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (uint8_t v : st) bad += v != kT1JobOk;
    const size_t diffs = count_diffs(b, t, all);
    std::printf(
        "gpu        %8.3f ms/frame  kernel time (events, best of %d, default lanes) on %s, %u jobs, %zu not ok; "
        "check: %zu differing coefficients against Tier1Decoder\n",
        double(best), reps, prop.name, n, bad, diffs);
    cudaFree(jobs);
    cudaFree(bytes);
    cudaFree(segs);
    cudaFree(out);
    cudaFree(status);
    cudaFree(scratch);
    cudaFree(order);
    return diffs || bad ? 2 : 0;
}

template <typename F>
double best_of(int reps, F &&run)
{
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
        const Clock::time_point t0 = Clock::now();
        run();
        best = std::min(best, seconds_since(t0));
    }
    return best;
}

void report(const char *name, double s, const Blocks &b, uint64_t bytes)
{
    std::printf(
        "%-10s %8.2f ms/frame  %7.2f MB/s compressed  %6.2f ns/coef (decoded blocks)  "
        "%6.2f ns/sample (image)  %6.2f frames/s/core\n",
        name, s * 1e3, double(bytes) / s / 1e6, s * 1e9 / double(b.block_samples), s * 1e9 / double(b.image_samples),
        1.0 / s);
}

int bench(const char *path, int reps, bool oracle, bool check, bool opj, bool jobs, bool gpu)
{
    FILE *f = std::fopen(path, "rb");
    if (!f) {
        std::perror(path);
        return 1;
    }
    std::vector<uint8_t> file;
    uint8_t buf[1 << 16];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) file.insert(file.end(), buf, buf + n);
    std::fclose(f);

    const Clock::time_point t0 = Clock::now();
    const Codestream cs = parse_codestream(file.data(), file.size());
    const double parse_s = seconds_since(t0);
    Blocks b = collect(cs);
    uint64_t bytes = 0;
    for (const Job &j : b.jobs) bytes += j.bytes;
    std::printf(
        "%s: %zu bytes, %zu components, %zu tiles, %zu code-blocks with data, %.1f MB of block "
        "data, %.3f bit/sample\n",
        path, file.size(), cs.siz.components.size(), cs.tiles.size(), b.jobs.size(), bytes / 1e6,
        8.0 * double(bytes) / double(b.image_samples));
    std::printf("parse %.2f ms, Tier-2 (partition + packet headers) %.2f ms, single thread\n", parse_s * 1e3,
                b.tier2_seconds * 1e3);

    Tier1Decoder dec;
    auto run_new = [&] {
        for (const Job &j : b.jobs)
            dec.decode(b.bytes.data() + j.data_offset, b.segments.data() + j.first_segment, j.num_segments, j.width,
                       j.height, j.params, b.planes[j.plane].data() + j.out_offset, j.out_stride);
    };
    run_new();  // warm-up: scratch sized, pages touched
    report("tier1", best_of(reps, run_new), b, bytes);

    if (jobs || gpu) {
        const JobTable t = job_table(b);
        if (jobs) {
            std::vector<int32_t> all(t.elements, 0);
            std::vector<uint32_t> scratch(t.scratch_words);
            size_t bad = 0;
            auto run_jobs = [&] {
                bad = 0;
                for (const T1DecodeJob &job : t.jobs)
                    bad += t1_decode_job(job, b.bytes.data(), b.segments.data(), all.data(), scratch.data(),
                                         scratch.size()) != kT1JobOk;
            };
            run_jobs();
            report("jobs", best_of(reps, run_jobs), b, bytes);
            const size_t diffs = count_diffs(b, t, all);
            std::printf("jobs check: %zu differing coefficients against Tier1Decoder, %zu jobs not ok\n", diffs, bad);
            if (diffs || bad) return 2;
        }
        if (gpu) {
            const int r = bench_gpu(b, t, reps);
            if (r) return r;
        }
    }

#if defined(J2KC_BENCH_OPENJPEG)
    if (opj) {
        const double s = time_openjpeg(file, reps);
        std::printf("openjpeg   %8.2f ms/frame  whole decode (T2 + T1 + DWT + MCT), one thread\n", s * 1e3);
    }
#else
    if (opj) std::printf("openjpeg: not built in (no openjpeg.h / libopenjp2.a at configure time)\n");
#endif

    if (oracle || check) {
        t1oracle::OracleDecoder odec;
        std::vector<std::vector<int32_t>> planes2;
        for (const auto &p : b.planes) planes2.emplace_back(p.size());
        auto run_oracle = [&] {
            for (const Job &j : b.jobs)
                odec.decode(b.bytes.data() + j.data_offset, b.segments.data() + j.first_segment, j.num_segments,
                            j.width, j.height, j.params.orientation, j.params.style, j.params.num_bitplanes,
                            j.params.zero_bitplanes, j.params.roi_shift, planes2[j.plane].data() + j.out_offset,
                            j.out_stride);
        };
        if (oracle)
            report("oracle", best_of(reps, run_oracle), b, bytes);
        else
            run_oracle();
        if (check) {
            size_t diffs = 0;
            for (size_t p = 0; p < b.planes.size(); ++p)
                for (size_t i = 0; i < b.planes[p].size(); ++i) diffs += b.planes[p][i] != planes2[p][i];
            std::printf("check: %zu differing coefficients against the oracle\n", diffs);
            if (diffs) return 2;
        }
    }
    return 0;
}

}  // namespace

int main(int argc, char **argv)
{
    try {
        if (argc >= 3 && std::strcmp(argv[1], "gen") == 0) {
            const uint32_t w = argc > 4 ? uint32_t(std::atoi(argv[3])) : 4096;
            const uint32_t h = argc > 4 ? uint32_t(std::atoi(argv[4])) : 2160;
            const uint32_t seed = argc > 5 ? uint32_t(std::atoi(argv[5])) : 1;
            return generate(argv[2], w, h, seed);
        }
        if (argc < 2) {
            std::fprintf(stderr,
                         "usage: tier1_bench gen OUT.ppm [W H [SEED]]\n"
                         "       tier1_bench IN.j2c [--reps N] [--oracle] [--check] [--openjpeg] [--jobs] [--gpu]\n");
            return 1;
        }
        int reps = 5;
        bool oracle = false, check = false, opj = false, jobs = false, gpu = false;
        for (int i = 2; i < argc; ++i) {
            if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
                reps = std::max(1, std::atoi(argv[++i]));
            else if (std::strcmp(argv[i], "--oracle") == 0)
                oracle = true;
            else if (std::strcmp(argv[i], "--check") == 0)
                check = true;
            else if (std::strcmp(argv[i], "--openjpeg") == 0)
                opj = true;
            else if (std::strcmp(argv[i], "--jobs") == 0)
                jobs = true;
            else if (std::strcmp(argv[i], "--gpu") == 0)
                gpu = true;
        }
        return bench(argv[1], reps, oracle, check, opj, jobs, gpu);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "tier1_bench: %s\n", e.what());
        return 1;
    }
}
