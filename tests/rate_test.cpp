/**
 * @file rate_test.cpp
 * @brief Tests of PCRD-opt (rate/, the slope-threshold search; ISO/IEC 15444-1
 * Annex J.14): hull properties, optimality against brute force on small
 * instances, budgets met on realistic frames, per-component caps, layers,
 * the exact-size loop, and the CUDA backend against the CPU reference.
 */
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "common/status.h"
#include "rate/pcrd.h"
#include "rate/pcrd_core.h"

namespace j2kc {
namespace {

/** One frame's worth of Tier-1 output, owned. */
struct Frame {
    std::vector<uint32_t> offset{0};
    std::vector<uint32_t> end;
    std::vector<uint64_t> dist;
    std::vector<double> weight;
    std::vector<uint16_t> comp;

    uint32_t blocks() const { return static_cast<uint32_t>(weight.size()); }
    uint32_t passes(uint32_t b) const { return offset[b + 1] - offset[b]; }
    PcrdBlocks view() const
    {
        PcrdBlocks v;
        v.num_blocks = blocks();
        v.num_passes = static_cast<uint32_t>(end.size());
        v.pass_offset = offset.data();
        v.pass_end = end.data();
        v.pass_distortion = dist.data();
        v.weight = weight.data();
        v.component = comp.data();
        return v;
    }
    void add_block(const std::vector<uint32_t> &ends, const std::vector<uint64_t> &dists, double w, uint16_t c)
    {
        end.insert(end.end(), ends.begin(), ends.end());
        dist.insert(dist.end(), dists.begin(), dists.end());
        offset.push_back(static_cast<uint32_t>(end.size()));
        weight.push_back(w);
        comp.push_back(c);
    }
};

/** Arbitrary monotone data: zero-length passes, zero-gain passes, jumps. */
Frame random_frame(uint32_t seed, uint32_t blocks, uint32_t max_passes, uint16_t comps)
{
    std::mt19937 rng(seed);
    Frame f;
    for (uint32_t b = 0; b < blocks; ++b) {
        const uint32_t n = rng() % (max_passes + 1);
        std::vector<uint32_t> e;
        std::vector<uint64_t> d;
        uint32_t at = 0;
        for (uint32_t p = 0; p < n; ++p) {
            const uint32_t kind = rng() % 8;
            at += kind == 0 ? 0 : rng() % 200;
            e.push_back(at);
            d.push_back(kind == 1 ? 0 : (uint64_t{rng()} << (rng() % 20)));
        }
        const double w =
            (rng() % 16 == 0) ? 0.0 : std::ldexp(1.0 + (rng() % 1000) / 1000.0, static_cast<int>(rng() % 20) - 10);
        f.add_block(e, d, w, static_cast<uint16_t>(rng() % comps));
    }
    return f;
}

/**
 * Tier-1-like data: per bit-plane three passes, bytes growing and distortion
 * reductions falling about 4x per plane, with noise.
 */
Frame realistic_frame(uint32_t seed, uint32_t blocks, uint16_t comps, double comp0_scale = 1.0)
{
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(0.5, 1.5);
    Frame f;
    for (uint32_t b = 0; b < blocks; ++b) {
        const uint16_t c = static_cast<uint16_t>(b * comps / blocks);
        const uint32_t planes = rng() % 12;
        const uint32_t n = planes ? 3 * planes - 2 : 0;
        std::vector<uint32_t> e;
        std::vector<uint64_t> d;
        double bytes = 0, gain = std::ldexp(1.0, 40) * u(rng);
        for (uint32_t p = 0; p < n; ++p) {
            const uint32_t plane = (p + 2) / 3;
            bytes += (2.0 + 6.0 * plane) * u(rng) * (c == 0 ? comp0_scale : 1.0);
            e.push_back(static_cast<uint32_t>(bytes));
            d.push_back(static_cast<uint64_t>(gain * u(rng) / (1 << (2 * plane))));
        }
        const double w = std::ldexp(1.0, -static_cast<int>(rng() % 6)) * (c == 0 ? 2.0 : 1.0);
        f.add_block(e, d, w, c);
    }
    return f;
}

PcrdParams params_for(uint32_t components)
{
    PcrdParams p;
    p.num_components = components;
    return p;
}

PcrdHeaderModel zero_model()
{
    PcrdHeaderModel m;
    m.empty_bits = m.first_bits = m.later_bits = m.pass_bits = m.pass_code = m.length_bits = 0;
    return m;
}

/** Estimated size (the search's own measure) of a passes table, per component, per layer. */
std::vector<uint64_t> estimate(const Frame &f, const std::vector<uint16_t> &passes, uint32_t L, uint32_t layer,
                               const PcrdHeaderModel &m, uint32_t comps, uint32_t reserve_layers = 0)
{
    std::vector<uint64_t> body(comps, 0), bits(comps, 0);
    for (uint32_t b = 0; b < f.blocks(); ++b) {
        const uint32_t c = f.comp[b];
        bits[c] += uint64_t{reserve_layers} * m.empty_bits;
        uint32_t prev = 0;
        for (uint32_t l = 0; l <= layer; ++l) {
            const uint32_t p = passes[size_t{b} * L + l];
            const uint32_t bytes = p ? f.end[f.offset[b] + p - 1] : 0;
            const uint32_t prev_bytes = prev ? f.end[f.offset[b] + prev - 1] : 0;
            bits[c] += pcrd_header_bits(m, p - prev, bytes - prev_bytes, prev == 0);
            if (l == layer) body[c] += bytes;
            prev = p;
        }
    }
    std::vector<uint64_t> size(comps);
    for (uint32_t c = 0; c < comps; ++c) size[c] = body[c] + (bits[c] + 7) / 8;
    return size;
}

uint64_t sum(const std::vector<uint64_t> &v)
{
    uint64_t s = 0;
    for (uint64_t x : v) s += x;
    return s;
}

/**
 * A stand-in for Tier-2 that differs from the search's model: packets of 16
 * consecutive blocks of a component per layer, tag-tree-like first costs,
 * comma-coded pass counts, Lblock-style lengths, byte-aligned packets.
 */
PcrdSizes simulated_tier2(const Frame &f, const uint16_t *passes, uint32_t L, uint32_t comps)
{
    PcrdSizes s;
    s.component.assign(comps, 0);
    for (uint32_t l = 0; l < L; ++l) {
        uint64_t bits = 0;
        uint32_t in_packet = 0;
        for (uint32_t b = 0; b < f.blocks(); ++b) {
            const uint32_t c = f.comp[b];
            const uint32_t p = passes[size_t{b} * L + l];
            const uint32_t prev = l ? passes[size_t{b} * L + l - 1] : 0;
            const uint32_t bytes = p ? f.end[f.offset[b] + p - 1] : 0;
            const uint32_t prev_bytes = prev ? f.end[f.offset[b] + prev - 1] : 0;
            const uint32_t np = p - prev;
            s.component[c] += bytes - prev_bytes;
            if (!np) {
                bits += 1;
            } else {
                bits += prev == 0 ? 3 + (b * 7 % 9) : 1;
                bits += np == 1 ? 1 : np == 2 ? 2 : np <= 5 ? 4 : 9;
                bits += std::max<uint32_t>(3, pcrd_bit_width(bytes - prev_bytes)) + pcrd_bit_width(np) - 1;
            }
            const bool flush = ++in_packet == 16 || b + 1 == f.blocks() || f.comp[b + 1] != c;
            if (flush) {
                s.component[c] += 1 + (bits + 7) / 8;  // a byte of zero-length signalling slack
                bits = 0;
                in_packet = 0;
            }
        }
    }
    s.total = sum(s.component);
    return s;
}

/** Cumulative weighted distortion reduction of block b with p passes (long double). */
long double gain(const Frame &f, uint32_t b, uint32_t p)
{
    long double d = 0;
    for (uint32_t k = 0; k < p; ++k) d += static_cast<long double>(f.dist[f.offset[b] + k]);
    return d * f.weight[b];
}

struct Hull {
    std::vector<uint16_t> pass;
    std::vector<uint32_t> key;
    std::vector<uint32_t> count;
};

Hull ref_hull(const Frame &f)
{
    Hull h;
    h.pass.resize(f.end.size());
    h.key.resize(f.end.size());
    h.count.resize(f.blocks());
    pcrd_hull_ref(f.view(), h.pass.data(), h.key.data(), h.count.data());
    return h;
}

uint64_t body_at(const Frame &f, const Hull &h, uint32_t t)
{
    uint64_t bytes = 0;
    for (uint32_t b = 0; b < f.blocks(); ++b) {
        const uint32_t off = f.offset[b];
        const uint32_t p = pcrd_select_passes(h.pass.data() + off, h.key.data() + off, h.count[b], f.passes(b), t);
        bytes += p ? f.end[off + p - 1] : 0;
    }
    return bytes;
}

// ---------------------------------------------------------------- hull

TEST(PcrdHull, SlopesStrictlyDecreaseAndDominate)
{
    for (uint32_t seed = 1; seed <= 6; ++seed) {
        const Frame f = random_frame(seed, 257, 40, 3);
        const Hull h = ref_hull(f);
        for (uint32_t b = 0; b < f.blocks(); ++b) {
            const uint32_t off = f.offset[b], n = f.passes(b);
            ASSERT_LE(h.count[b], n);
            uint64_t total = 0;
            for (uint32_t k = 0; k < n; ++k) total += f.dist[off + k];
            // Cumulative D and R of pass count k.
            auto D = [&](uint32_t k) {
                uint64_t d = 0;
                for (uint32_t i = 0; i < k; ++i) d += f.dist[off + i];
                return d;
            };
            auto R = [&](uint32_t k) { return k ? f.end[off + k - 1] : 0u; };
            if (total == 0 || !(f.weight[b] > 0)) {
                EXPECT_EQ(h.count[b], 0u) << "block " << b;
                continue;
            }
            ASSERT_GT(h.count[b], 0u);
            uint32_t prev = 0;
            for (uint32_t i = 0; i < h.count[b]; ++i) {
                const uint32_t k = h.pass[off + i];
                ASSERT_GT(k, prev);
                ASSERT_LE(k, n);
                ASSERT_GE(h.key[off + i], 1u);
                ASSERT_LE(h.key[off + i], kPcrdKeyMax);
                if (i) {
                    ASSERT_LT(h.key[off + i], h.key[off + i - 1]) << "block " << b;
                }
                // Upper hull: from the previous hull point no later point is steeper.
                for (uint32_t q = prev + 1; q <= n; ++q) {
                    const uint32_t kq = pcrd_slope_key(D(q) - D(prev), R(q) - R(prev), f.weight[b]);
                    ASSERT_LE(kq, h.key[off + i]) << "block " << b << " pass " << q;
                }
                EXPECT_EQ(h.key[off + i], pcrd_slope_key(D(k) - D(prev), R(k) - R(prev), f.weight[b]));
                prev = k;
            }
            // Endpoint: the last hull point is the first pass reaching the full gain.
            uint32_t first_full = 1;
            while (D(first_full) != total) ++first_full;
            EXPECT_EQ(prev, first_full) << "block " << b;
        }
    }
}

TEST(PcrdHull, SlopeKeyOrderAndEdges)
{
    EXPECT_EQ(pcrd_slope_key(0, 10, 1.0), 0u);
    EXPECT_EQ(pcrd_slope_key(10, 10, 0.0), 0u);
    EXPECT_EQ(pcrd_slope_key(10, 10, -1.0), 0u);
    EXPECT_EQ(pcrd_slope_key(10, 0, 1.0), kPcrdKeyMax);
    EXPECT_EQ(pcrd_slope_key(~uint64_t{0}, 1, 1e300), kPcrdKeyMax);
    EXPECT_EQ(pcrd_slope_key(1, 0xFFFFFFFFu, 1e-300), 1u);
    std::mt19937 rng(7);
    for (int i = 0; i < 10000; ++i) {
        const uint64_t a = rng() % 100000 + 1, c = rng() % 100000 + 1;
        const uint32_t r1 = rng() % 1000 + 1, r2 = rng() % 1000 + 1;
        const double w = 0.001 + (rng() % 1000);
        const double s1 = double(a) * w / r1, s2 = double(c) * w / r2;
        const uint32_t k1 = pcrd_slope_key(a, r1, w), k2 = pcrd_slope_key(c, r2, w);
        if (float(s1) < float(s2)) {
            EXPECT_LT(k1, k2);
        }
        if (float(s1) == float(s2)) {
            EXPECT_EQ(k1, k2);
        }
    }
}

TEST(PcrdWindow, ConvergesWithinMaxIterations)
{
    std::mt19937 rng(3);
    for (int trial = 0; trial < 2000; ++trial) {
        // Any monotone feasibility: thresholds >= answer fit.
        const uint32_t answer = trial < 3 ? (trial == 0   ? 0
                                             : trial == 1 ? kPcrdKeyNone
                                                          : 1)
                                          : rng() % (kPcrdKeyNone + 1);
        PcrdWindow w = pcrd_window_start(true);
        int it = 0;
        while (!pcrd_window_converged(w)) {
            ASSERT_LT(it, kPcrdMaxIterations);
            uint32_t mask = 0;
            for (uint32_t i = 0; i < kPcrdProbes; ++i) {
                const uint32_t t = pcrd_window_probe(w, i);
                ASSERT_GT(static_cast<int64_t>(t), w.lo);
                ASSERT_LT(t, w.hi);
                if (t >= answer) mask |= 1u << i;
            }
            pcrd_window_update(w, mask);
            ++it;
        }
        EXPECT_EQ(w.hi, answer);
    }
    PcrdWindow closed = pcrd_window_start(false);
    EXPECT_TRUE(pcrd_window_converged(closed));
    EXPECT_EQ(closed.hi, kPcrdKeyAll);
}

// ---------------------------------------------------------------- optimality

TEST(PcrdSelect, LagrangianOptimalAgainstBruteForce)
{
    std::mt19937 rng(11);
    int checked = 0;
    for (uint32_t trial = 0; trial < 300; ++trial) {
        const uint32_t nb = 1 + rng() % 5;
        const Frame f = random_frame(1000 + trial, nb, 6, 1);
        const Hull h = ref_hull(f);
        uint64_t all = 0;
        for (uint32_t b = 0; b < nb; ++b) all += f.passes(b) ? f.end[f.offset[b + 1] - 1] : 0;
        PcrdParams params;
        params.header = zero_model();
        params.budget = 1 + rng() % (all + 50);
        const PcrdResult r = pcrd_select_ref(f.view(), params);
        uint64_t bytes = 0;
        long double g = 0;
        for (uint32_t b = 0; b < nb; ++b) {
            const uint32_t p = r.passes[b];
            bytes += p ? f.end[f.offset[b] + p - 1] : 0;
            g += gain(f, b, p);
        }
        ASSERT_EQ(bytes, r.body_bytes);
        ASSERT_LE(bytes, params.budget);
        const uint32_t t = r.layer_thresholds[0];
        // The smallest fitting threshold, by scanning every key where sizes change.
        std::vector<uint32_t> cands{0, 1, kPcrdKeyNone};
        for (uint32_t i = 0; i < h.key.size(); ++i)
            if (h.key[i] + 1 <= kPcrdKeyNone) cands.push_back(h.key[i] + 1);
        uint32_t best = kPcrdKeyNone;
        for (uint32_t c : cands)
            if (c < best && body_at(f, h, c) <= params.budget) best = c;
        ASSERT_EQ(t, best) << "trial " << trial;
        if (t == kPcrdKeyAll) continue;
        // Every combination of hull points with no more bytes gains no more.
        std::vector<uint32_t> choice(nb, 0);
        for (;;) {
            uint64_t cb = 0;
            long double cg = 0;
            for (uint32_t b = 0; b < nb; ++b) {
                const uint32_t p = choice[b] ? h.pass[f.offset[b] + choice[b] - 1] : 0;
                cb += p ? f.end[f.offset[b] + p - 1] : 0;
                cg += gain(f, b, p);
            }
            if (cb <= bytes) {
                ASSERT_LE(cg, g * (1 + 1e-6L) + 1e-12L) << "trial " << trial;
            }
            uint32_t b = 0;
            while (b < nb && ++choice[b] > h.count[b]) choice[b++] = 0;
            if (b == nb) break;
        }
        ++checked;
    }
    EXPECT_GT(checked, 100);
}

// ---------------------------------------------------------------- budgets

TEST(PcrdSelect, RealisticBudgetWithinTwoPercent)
{
    for (uint32_t seed = 21; seed < 25; ++seed) {
        const Frame f = realistic_frame(seed, 3001 + seed * 517, 3);
        PcrdParams params;
        params.num_components = 3;
        PcrdParams all_params = params;
        const PcrdResult all = pcrd_select_ref(f.view(), all_params);
        ASSERT_TRUE(all.all_included);
        for (double frac : {0.05, 0.2, 0.5, 0.9}) {
            params.budget = static_cast<uint64_t>(all.estimated_bytes * frac);
            const PcrdResult r = pcrd_select_ref(f.view(), params);
            EXPECT_EQ(r.rounds, 1u);
            EXPECT_LE(r.estimated_bytes, params.budget);
            EXPECT_GE(r.estimated_bytes, params.budget - params.budget / 50) << "seed " << seed << " frac " << frac;
            EXPECT_EQ(sum(estimate(f, r.passes, 1, 0, params.header, 3)), r.estimated_bytes);
        }
    }
}

TEST(PcrdSelect, ExactSizeLoopMeetsBudget)
{
    for (uint32_t seed = 31; seed < 34; ++seed) {
        const Frame f = realistic_frame(seed, 4000 + seed, 3);
        PcrdParams params;
        params.num_components = 3;
        const uint64_t everything = simulated_tier2(f, pcrd_select_ref(f.view(), params).passes.data(), 1, 3).total;
        for (double frac : {0.03, 0.3, 0.8}) {
            for (int bias = 0; bias < 3; ++bias) {
                // Models that under-, over- and roughly estimate the headers.
                params.header = PcrdHeaderModel{};
                if (bias == 0) params.header.first_bits = 1, params.header.length_bits = 0;
                if (bias == 1) params.header.first_bits = 40, params.header.pass_bits = 6;
                params.budget = static_cast<uint64_t>(everything * frac);
                std::vector<uint16_t> last;
                int calls = 0;
                const PcrdResult r = pcrd_select_ref(f.view(), params, [&](const uint16_t *p) {
                    ++calls;
                    last.assign(p, p + f.blocks());
                    return simulated_tier2(f, p, 1, 3);
                });
                EXPECT_LE(r.exact.total, params.budget);
                EXPECT_GE(r.exact.total, params.budget - params.budget / 50)
                    << "seed " << seed << " frac " << frac << " bias " << bias;
                EXPECT_EQ(last, r.passes) << "the last exact call was not on the result";
                EXPECT_EQ(simulated_tier2(f, r.passes.data(), 1, 3).total, r.exact.total);
                EXPECT_EQ(static_cast<uint32_t>(calls), r.rounds + r.fill_measures);
                EXPECT_LE(r.rounds, 6u);
                EXPECT_LE(r.fill_measures, 4u + 4u);
            }
        }
    }
}

/**
 * True when no single further hull segment of any block (alone, on top of
 * the selection) would still fit every limit by the exact size: then the
 * content, not the search, decides how far below the budget we are.
 */
bool no_segment_fits(const Frame &f, const std::vector<uint16_t> &passes, uint32_t L, uint32_t comps, uint64_t budget,
                     const std::vector<uint64_t> &caps)
{
    const Hull h = ref_hull(f);
    std::vector<uint16_t> trial = passes;
    for (uint32_t b = 0; b < f.blocks(); ++b) {
        const size_t at = size_t{b} * L + L - 1;
        uint32_t next = 0;
        for (uint32_t i = 0; i < h.count[b] && !next; ++i)
            if (h.pass[f.offset[b] + i] > passes[at]) next = h.pass[f.offset[b] + i];
        if (!next) continue;
        trial[at] = static_cast<uint16_t>(next);
        const PcrdSizes s = simulated_tier2(f, trial.data(), L, comps);
        trial[at] = passes[at];
        bool fits = s.total <= budget;
        for (size_t c = 0; c < caps.size(); ++c) fits &= caps[c] == 0 || s.component[c] <= caps[c];
        if (fits) return false;
    }
    return true;
}

// A byte budget is never exceeded and is met to within 2% below,
// from a few hundred bytes to most of the frame, by the slack filling after
// the threshold search.
TEST(PcrdSelect, SlackFillingMeetsTinyToLargeBudgets)
{
    for (uint32_t seed = 71; seed < 74; ++seed) {
        const Frame f = realistic_frame(seed, 700 + 91 * seed % 300, 3, seed == 72 ? 2.5 : 1.0);
        PcrdParams params;
        params.num_components = 3;
        const uint64_t everything = simulated_tier2(f, pcrd_select_ref(f.view(), params).passes.data(), 1, 3).total;
        const uint64_t header_floor = simulated_tier2(f, std::vector<uint16_t>(f.blocks(), 0).data(), 1, 3).total;
        for (double frac : {0.0, 0.004, 0.01, 0.03, 0.1, 0.4, 0.9}) {
            params.budget = header_floor + 40 + static_cast<uint64_t>(everything * frac);
            int calls = 0;
            std::vector<uint16_t> last;
            const PcrdResult r = pcrd_select_ref(f.view(), params, [&](const uint16_t *p) {
                ++calls;
                last.assign(p, p + f.blocks());
                return simulated_tier2(f, p, 1, 3);
            });
            SCOPED_TRACE(testing::Message() << "seed " << seed << " budget " << params.budget << " got "
                                            << r.exact.total << " filled " << r.fill_segments);
            EXPECT_EQ(last, r.passes);
            EXPECT_EQ(simulated_tier2(f, r.passes.data(), 1, 3).total, r.exact.total);
            EXPECT_EQ(static_cast<uint32_t>(calls), r.rounds + r.fill_measures);
            EXPECT_LE(r.exact.total, params.budget);
            if (r.exact.total < params.budget - params.budget / 50) {
                EXPECT_TRUE(no_segment_fits(f, r.passes, 1, 3, params.budget, {}))
                    << "below 98% although a segment would still fit";
            }
            // Within 2% wherever the budget is not tiny against the blocks' segments.
            if (frac >= 0.03) {
                EXPECT_GE(r.exact.total, params.budget - params.budget / 50);
            }
        }
    }
}

// The same with per-component caps (DCI: each component <= 0.8 x the frame cap).
TEST(PcrdSelect, SlackFillingWithComponentCaps)
{
    for (uint32_t seed = 81; seed < 84; ++seed) {
        const Frame f = realistic_frame(seed, 900 + seed, 3, seed == 82 ? 4.0 : 1.0);
        PcrdParams params;
        params.num_components = 3;
        const uint64_t everything = simulated_tier2(f, pcrd_select_ref(f.view(), params).passes.data(), 1, 3).total;
        for (double frac : {0.01, 0.05, 0.3, 0.7}) {
            params.budget = 200 + static_cast<uint64_t>(everything * frac);
            const uint64_t cap = params.budget * 4 / 10;  // binds for the expensive component
            params.component_budgets = {cap, cap, cap};
            const PcrdResult r =
                pcrd_select_ref(f.view(), params, [&](const uint16_t *p) { return simulated_tier2(f, p, 1, 3); });
            SCOPED_TRACE(testing::Message()
                         << "seed " << seed << " frac " << frac << " got " << r.exact.total << " of " << params.budget);
            EXPECT_LE(r.exact.total, params.budget);
            for (uint32_t c = 0; c < 3; ++c) EXPECT_LE(r.exact.component[c], cap);
            if (r.exact.total < params.budget - params.budget / 50) {
                EXPECT_TRUE(no_segment_fits(f, r.passes, 1, 3, params.budget, params.component_budgets));
            }
        }
    }
}

// Several layers: the filling tops up the last layer only, lower ones untouched.
TEST(PcrdSelect, SlackFillingLastLayerOnly)
{
    const Frame f = realistic_frame(91, 1200, 2);
    PcrdParams params;
    params.num_components = 2;
    params.num_layers = 3;
    const uint64_t everything = simulated_tier2(f, pcrd_select_ref(f.view(), params).passes.data(), 3, 2).total;
    for (double frac : {0.02, 0.2}) {
        params.budget = 300 + static_cast<uint64_t>(everything * frac);
        const PcrdResult r =
            pcrd_select_ref(f.view(), params, [&](const uint16_t *p) { return simulated_tier2(f, p, 3, 2); });
        EXPECT_LE(r.exact.total, params.budget);
        for (uint32_t b = 0; b < f.blocks(); ++b)
            for (uint32_t l = 1; l < 3; ++l) EXPECT_LE(r.passes[size_t{b} * 3 + l - 1], r.passes[size_t{b} * 3 + l]);
        if (r.exact.total < params.budget - params.budget / 50) {
            EXPECT_TRUE(no_segment_fits(f, r.passes, 3, 2, params.budget, {}));
        }
    }
}

TEST(PcrdSelect, ExactSizeLoopTerminatesOnHostileSizes)
{
    const Frame f = realistic_frame(41, 1500, 1);
    PcrdParams params;
    params.budget = 20000;
    // An exact size far above any estimate: must end in bounded rounds, fitting.
    int calls = 0;
    const PcrdResult r = pcrd_select_ref(f.view(), params, [&](const uint16_t *p) {
        ++calls;
        PcrdSizes s;
        s.total = 19000;
        for (uint32_t b = 0; b < f.blocks(); ++b) s.total += p[b] ? f.end[f.offset[b] + p[b] - 1] * 3ull : 0;
        return s;
    });
    EXPECT_LE(r.exact.total, params.budget);
    EXPECT_LT(calls, 20);
    // An exact size that can never fit: LIMIT, not a loop.
    calls = 0;
    try {
        pcrd_select_ref(f.view(), params, [&](const uint16_t *) {
            ++calls;
            PcrdSizes s;
            s.total = params.budget + 1;
            return s;
        });
        FAIL() << "no LIMIT error";
    } catch (const Error &e) {
        EXPECT_EQ(e.status(), J2KC_ERR_LIMIT);
    }
    EXPECT_LT(calls, 30);
}

TEST(PcrdSelect, HeadersAloneTooLargeIsLimit)
{
    const Frame f = realistic_frame(42, 800, 1);
    PcrdParams params;
    params.header.empty_bits = 8;
    params.header.later_bits = 8;
    params.budget = 700;  // < 800 empty blocks * 1 byte
    try {
        pcrd_select_ref(f.view(), params);
        FAIL() << "no LIMIT error";
    } catch (const Error &e) {
        EXPECT_EQ(e.status(), J2KC_ERR_LIMIT);
    }
    params.budget = 800;
    const PcrdResult r = pcrd_select_ref(f.view(), params);
    EXPECT_EQ(r.body_bytes, 0u);
    EXPECT_EQ(r.estimated_bytes, 800u);
    for (uint16_t p : r.passes) EXPECT_EQ(p, 0);
}

// ---------------------------------------------------------------- caps

TEST(PcrdSelect, ComponentCapsHonoured)
{
    for (uint32_t seed = 51; seed < 54; ++seed) {
        // Component 0 is three times as expensive: alone it exceeds its cap.
        const Frame f = realistic_frame(seed, 3600, 3, 3.0);
        PcrdParams params;
        params.num_components = 3;
        const PcrdResult all = pcrd_select_ref(f.view(), params);
        params.budget = all.estimated_bytes / 4;
        const uint64_t cap = params.budget * 4 / 10;
        params.component_budgets = {cap, cap, cap};
        const PcrdResult r = pcrd_select_ref(f.view(), params);
        const std::vector<uint64_t> sizes = estimate(f, r.passes, 1, 0, params.header, 3);
        EXPECT_EQ(sizes, r.group_estimated_bytes);
        for (uint32_t c = 0; c < 3; ++c) EXPECT_LE(sizes[c], cap) << "component " << c;
        EXPECT_LE(r.estimated_bytes, params.budget);
        EXPECT_GE(r.estimated_bytes, params.budget - params.budget / 50);
        // Component 0 is held back by its own threshold, the others use the frame's.
        EXPECT_GT(r.group_thresholds[0], r.layer_thresholds[0]);
        EXPECT_GE(sizes[0], cap - cap / 50);
        EXPECT_EQ(r.group_thresholds[1], r.layer_thresholds[0]);
        EXPECT_EQ(r.group_thresholds[2], r.layer_thresholds[0]);
        // Better than one global threshold meeting all constraints (OpenJPEG's way).
        const Hull h = ref_hull(f);
        PcrdParams global = params;
        global.component_budgets.clear();
        uint64_t worst = 0;
        for (uint32_t c = 0; c < 3; ++c) worst = std::max(worst, sizes[c]);
        EXPECT_GT(r.estimated_bytes, sizes[1] + sizes[2]);
        (void)h;
        // With the exact loop and per-component exact sizes.
        const PcrdResult e =
            pcrd_select_ref(f.view(), params, [&](const uint16_t *p) { return simulated_tier2(f, p, 1, 3); });
        for (uint32_t c = 0; c < 3; ++c) EXPECT_LE(e.exact.component[c], cap);
        EXPECT_LE(e.exact.total, params.budget);
        EXPECT_LE(e.rounds, 8u);
        // Caps so tight that the frame budget cannot be reached: few rounds still.
        PcrdParams tight = params;
        tight.component_budgets = {cap / 4, cap / 4, cap / 4};
        const PcrdResult t =
            pcrd_select_ref(f.view(), tight, [&](const uint16_t *p) { return simulated_tier2(f, p, 1, 3); });
        for (uint32_t c = 0; c < 3; ++c) EXPECT_LE(t.exact.component[c], cap / 4);
        EXPECT_LE(t.rounds, 5u);
    }
}

TEST(PcrdSelect, CapsWithoutFrameBudget)
{
    const Frame f = realistic_frame(61, 2000, 2);
    PcrdParams params;
    params.num_components = 2;
    const PcrdResult all = pcrd_select_ref(f.view(), params);
    params.component_budgets = {all.group_estimated_bytes[0] / 3, 0};
    const PcrdResult r = pcrd_select_ref(f.view(), params);
    EXPECT_LE(r.group_estimated_bytes[0], params.component_budgets[0]);
    EXPECT_GE(r.group_estimated_bytes[0], params.component_budgets[0] - params.component_budgets[0] / 50);
    EXPECT_EQ(r.group_estimated_bytes[1], all.group_estimated_bytes[1]);
    EXPECT_EQ(r.group_thresholds[1], kPcrdKeyAll);
}

// ---------------------------------------------------------------- layers

TEST(PcrdSelect, LayersNonDecreasingAndWithinBudgets)
{
    for (uint32_t L : {2u, 4u, 7u}) {
        const Frame f = realistic_frame(70 + L, 2500, 3);
        PcrdParams params;
        params.num_components = 3;
        params.num_layers = L;
        const PcrdResult all = pcrd_select_ref(f.view(), params_for(3));
        params.budget = all.estimated_bytes / 3;
        const PcrdResult r = pcrd_select_ref(f.view(), params);
        ASSERT_EQ(r.passes.size(), size_t{f.blocks()} * L);
        for (uint32_t b = 0; b < f.blocks(); ++b)
            for (uint32_t l = 1; l < L; ++l) ASSERT_LE(r.passes[size_t{b} * L + l - 1], r.passes[size_t{b} * L + l]);
        for (uint32_t l = 0; l < L; ++l) {
            const uint64_t size = sum(estimate(f, r.passes, L, l, params.header, 3));
            const uint64_t layer_budget = params.budget >> (L - 1 - l);
            if (l + 1 == L) {
                EXPECT_EQ(size, r.estimated_bytes);
            }
            // Layers fit their budgets with room kept for the empty layers above,
            // or, where even that cannot fit, add nothing.
            const uint64_t reserved = sum(estimate(f, r.passes, L, l, params.header, 3, L - 1 - l));
            if (reserved > layer_budget) {
                ASSERT_GT(l, 0u);
                for (uint32_t b = 0; b < f.blocks(); ++b)
                    ASSERT_EQ(r.passes[size_t{b} * L + l], r.passes[size_t{b} * L + l - 1]);
            } else if (l + 1 < L) {
                EXPECT_GE(reserved, layer_budget - layer_budget / 20) << "layer " << l;
            }
            if (l > 0) {
                EXPECT_LE(r.layer_thresholds[l], r.layer_thresholds[l - 1]);
            }
        }
        EXPECT_LE(r.estimated_bytes, params.budget);
        EXPECT_GE(r.estimated_bytes, params.budget - params.budget / 50);
    }
    // Explicit layer budgets, some unlimited (clamped to the frame budget).
    const Frame f = realistic_frame(79, 1800, 1);
    PcrdParams params;
    params.num_layers = 3;
    params.budget = 30000;
    params.layer_budgets = {5000, 0, 30000};
    const PcrdResult r = pcrd_select_ref(f.view(), params);
    EXPECT_LE(sum(estimate(f, r.passes, 3, 0, params.header, 1)), 5000u);
    // 1800 blocks keep 1 bit in each of the 2 layers above: 450 bytes.
    EXPECT_LE(sum(estimate(f, r.passes, 3, 0, params.header, 1)), 5000u - 450u);
    EXPECT_GE(sum(estimate(f, r.passes, 3, 0, params.header, 1)), 4900u - 450u);
    EXPECT_LE(r.estimated_bytes, 30000u);
}

// ---------------------------------------------------------------- edges

TEST(PcrdSelect, AllFitsAndLossless)
{
    const Frame f = realistic_frame(81, 1200, 2);
    PcrdParams params;
    params.num_components = 2;
    for (uint32_t L : {1u, 3u}) {
        params.num_layers = L;
        params.budget = kPcrdUnlimited;
        const PcrdResult r = pcrd_select_ref(f.view(), params);
        EXPECT_TRUE(r.all_included);
        for (uint32_t b = 0; b < f.blocks(); ++b)
            for (uint32_t l = 0; l < L; ++l) EXPECT_EQ(r.passes[size_t{b} * L + l], f.passes(b));
        // A budget that holds everything takes everything, trailing useless passes too.
        params.num_layers = 1;
        params.budget = kPcrdUnlimited;
        const PcrdResult one = pcrd_select_ref(f.view(), params);
        params.budget = std::max(one.estimated_bytes, simulated_tier2(f, one.passes.data(), 1, 2).total) + 5;
        const PcrdResult r2 = pcrd_select_ref(f.view(), params);
        EXPECT_TRUE(r2.all_included);
        EXPECT_EQ(r2.layer_thresholds[0], kPcrdKeyAll);
        const PcrdResult r3 =
            pcrd_select_ref(f.view(), params, [&](const uint16_t *p) { return simulated_tier2(f, p, 1, 2); });
        EXPECT_EQ(r3.rounds, 1u);
    }
}

TEST(PcrdSelect, ZeroPassBlocks)
{
    Frame f;
    f.add_block({}, {}, 1.0, 0);
    f.add_block({10, 20, 30}, {1000, 100, 10}, 1.0, 0);
    f.add_block({}, {}, 0.5, 0);
    f.add_block({0, 0}, {5, 0}, 1.0, 0);  // a bytes-free gain, then nothing
    PcrdParams params;
    params.header = zero_model();
    params.budget = 20;
    PcrdResult r = pcrd_select_ref(f.view(), params);
    EXPECT_EQ(r.passes, (std::vector<uint16_t>{0, 2, 0, 1}));
    EXPECT_EQ(r.body_bytes, 20u);
    params.budget = 1000;
    r = pcrd_select_ref(f.view(), params);
    EXPECT_EQ(r.passes, (std::vector<uint16_t>{0, 3, 0, 2}));
    EXPECT_TRUE(r.all_included);
    // Only empty blocks, and no blocks at all.
    Frame empty;
    empty.add_block({}, {}, 1.0, 0);
    params.budget = 1;
    r = pcrd_select_ref(empty.view(), params);
    EXPECT_EQ(r.passes, (std::vector<uint16_t>{0}));
    EXPECT_TRUE(r.all_included);
    Frame none;
    r = pcrd_select_ref(none.view(), params);
    EXPECT_TRUE(r.passes.empty());
    EXPECT_EQ(r.estimated_bytes, 0u);
}

TEST(PcrdSelect, BadInputsRejected)
{
    auto status_of = [](auto fn) {
        try {
            fn();
        } catch (const Error &e) {
            return e.status();
        }
        return J2KC_OK;
    };
    Frame f;
    f.add_block({10, 5}, {3, 3}, 1.0, 0);
    EXPECT_EQ(status_of([&] { pcrd_select_ref(f.view(), PcrdParams{}); }), J2KC_ERR_INVALID_ARG);
    Frame g;
    g.add_block({10}, {3}, 1.0, 2);
    EXPECT_EQ(status_of([&] { pcrd_select_ref(g.view(), params_for(2)); }), J2KC_ERR_INVALID_ARG);
    PcrdParams p;
    p.header.empty_bits = 50;
    EXPECT_EQ(status_of([&] { pcrd_select_ref(g.view(), p); }), J2KC_ERR_INVALID_ARG);
    PcrdParams many;
    many.num_components = 17;
    many.component_budgets.assign(17, 100);
    EXPECT_EQ(status_of([&] { pcrd_select_ref(g.view(), many); }), J2KC_ERR_UNSUPPORTED);
    many.component_budgets.clear();
    EXPECT_EQ(status_of([&] { pcrd_select_ref(g.view(), many); }), J2KC_OK);
}

// ---------------------------------------------------------------- GPU

/** Device copy of a Frame. */
struct DeviceFrame {
    std::vector<void *> ptrs;
    PcrdBlocks blocks;
    template <typename T>
    T *upload(const std::vector<T> &v)
    {
        void *p = nullptr;
        EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(1, v.size() * sizeof(T))), cudaSuccess);
        if (!v.empty()) cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
        ptrs.push_back(p);
        return static_cast<T *>(p);
    }
    explicit DeviceFrame(const Frame &f)
    {
        blocks = f.view();
        blocks.pass_offset = upload(f.offset);
        blocks.pass_end = upload(f.end);
        blocks.pass_distortion = upload(f.dist);
        blocks.weight = upload(f.weight);
        blocks.component = upload(f.comp);
    }
    ~DeviceFrame()
    {
        for (void *p : ptrs) cudaFree(p);
    }
};

#define SKIP_WITHOUT_GPU()                                            \
    do {                                                              \
        if (!pcrd_cuda_available()) GTEST_SKIP() << "no CUDA device"; \
    } while (0)

void expect_same(const PcrdResult &a, const PcrdResult &b)
{
    EXPECT_EQ(a.passes, b.passes);
    EXPECT_EQ(a.layer_thresholds, b.layer_thresholds);
    EXPECT_EQ(a.group_thresholds, b.group_thresholds);
    EXPECT_EQ(a.body_bytes, b.body_bytes);
    EXPECT_EQ(a.estimated_bytes, b.estimated_bytes);
    EXPECT_EQ(a.group_estimated_bytes, b.group_estimated_bytes);
    EXPECT_EQ(a.all_included, b.all_included);
    EXPECT_EQ(a.exact.total, b.exact.total);
    EXPECT_EQ(a.rounds, b.rounds);
    EXPECT_EQ(a.search_budget, b.search_budget);
    EXPECT_EQ(a.fill_segments, b.fill_segments);
    EXPECT_EQ(a.fill_measures, b.fill_measures);
    EXPECT_EQ(a.exact.component, b.exact.component);
}

TEST(GpuPcrd, HullMatchesReference)
{
    SKIP_WITHOUT_GPU();
    PcrdCuda cuda;
    for (uint32_t seed = 1; seed <= 4; ++seed) {
        const Frame f = random_frame(seed, 3000 + seed, 60, 3);
        const Hull h = ref_hull(f);
        DeviceFrame d(f);
        Hull g;
        cuda.hull(d.blocks, g.pass, g.key, g.count);
        ASSERT_EQ(g.count, h.count);
        for (uint32_t b = 0; b < f.blocks(); ++b)
            for (uint32_t i = 0; i < h.count[b]; ++i) {
                ASSERT_EQ(g.pass[f.offset[b] + i], h.pass[f.offset[b] + i]);
                ASSERT_EQ(g.key[f.offset[b] + i], h.key[f.offset[b] + i]);
            }
    }
}

TEST(GpuPcrd, SelectionMatchesReference)
{
    SKIP_WITHOUT_GPU();
    PcrdCuda cuda;
    for (uint32_t seed = 1; seed <= 3; ++seed) {
        const Frame f = realistic_frame(100 + seed, 5000 + 37 * seed, 3, seed == 2 ? 3.0 : 1.0);
        DeviceFrame d(f);
        const PcrdResult all = pcrd_select_ref(f.view(), params_for(3));
        for (int config = 0; config < 7; ++config) {
            PcrdParams p;
            p.num_components = 3;
            if (config == 0) p.budget = all.estimated_bytes / 5;
            if (config == 1) p.budget = all.estimated_bytes + 100;  // all fits
            if (config == 2) {
                p.budget = all.estimated_bytes / 3;
                p.component_budgets = {p.budget * 4 / 10, p.budget * 4 / 10, 0};
            }
            if (config == 3) p.num_layers = 5, p.budget = all.estimated_bytes / 2;
            if (config == 4) p.num_layers = 3;  // unlimited
            if (config == 5) {
                p.num_layers = 4;
                p.budget = all.estimated_bytes / 4;
                p.layer_budgets = {1000, 0, p.budget / 2, 0};
                p.component_budgets = {p.budget / 3, 0, p.budget / 3};
            }
            if (config == 6) p.budget = all.estimated_bytes / 50, p.header.first_bits = 30;
            SCOPED_TRACE(testing::Message() << "seed " << seed << " config " << config);
            const PcrdResult ref = pcrd_select_ref(f.view(), p);
            const PcrdResult gpu = cuda.select(d.blocks, p);
            expect_same(ref, gpu);
            // The exact-size loop, with the device table copied back for the stand-in Tier-2.
            const uint32_t L = p.num_layers;
            const PcrdResult ref_e =
                pcrd_select_ref(f.view(), p, [&](const uint16_t *x) { return simulated_tier2(f, x, L, 3); });
            const PcrdResult gpu_e = cuda.select(d.blocks, p, [&](const uint16_t *x) {
                std::vector<uint16_t> h(size_t{f.blocks()} * L);
                EXPECT_EQ(cudaMemcpy(h.data(), x, h.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
                return simulated_tier2(f, h.data(), L, 3);
            });
            expect_same(ref_e, gpu_e);
        }
    }
}

// Slack filling on the device takes the same segments as the reference, from
// tiny budgets to most of the frame, with caps and layers.
TEST(GpuPcrd, SlackFillingMatchesReference)
{
    SKIP_WITHOUT_GPU();
    PcrdCuda cuda;
    const Frame f = realistic_frame(211, 2500, 3, 2.0);
    DeviceFrame d(f);
    PcrdParams base;
    base.num_components = 3;
    const uint64_t everything = simulated_tier2(f, pcrd_select_ref(f.view(), base).passes.data(), 1, 3).total;
    uint32_t filled = 0;
    for (int config = 0; config < 8; ++config) {
        PcrdParams p = base;
        p.budget = 300 + everything * (config % 4 == 0 ? 1 : config % 4 == 1 ? 8 : config % 4 == 2 ? 120 : 700) / 1000;
        if (config >= 4) p.component_budgets = {p.budget * 4 / 10, p.budget / 2, 0};
        if (config == 7) p.num_layers = 3;
        const uint32_t L = p.num_layers;
        SCOPED_TRACE(testing::Message() << "config " << config << " budget " << p.budget);
        const PcrdResult ref =
            pcrd_select_ref(f.view(), p, [&](const uint16_t *x) { return simulated_tier2(f, x, L, 3); });
        const PcrdResult gpu = cuda.select(d.blocks, p, [&](const uint16_t *x) {
            std::vector<uint16_t> h(size_t{f.blocks()} * L);
            EXPECT_EQ(cudaMemcpy(h.data(), x, h.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
            return simulated_tier2(f, h.data(), L, 3);
        });
        expect_same(ref, gpu);
        EXPECT_LE(gpu.exact.total, p.budget);
        filled += gpu.fill_segments;
    }
    EXPECT_GT(filled, 0u) << "no configuration exercised the filling";
}

TEST(GpuPcrd, EdgeCasesMatchReference)
{
    SKIP_WITHOUT_GPU();
    PcrdCuda cuda;
    // Arbitrary data, a single component group of many components, zero-pass blocks.
    const Frame f = random_frame(5, 4097, 30, 20);
    DeviceFrame d(f);
    PcrdParams p;
    p.num_components = 20;
    p.budget = 50000;
    expect_same(pcrd_select_ref(f.view(), p), cuda.select(d.blocks, p));
    p.header = zero_model();
    p.num_layers = 2;
    expect_same(pcrd_select_ref(f.view(), p), cuda.select(d.blocks, p));
    // The device table without the copy.
    const PcrdResult ref = pcrd_select_ref(f.view(), p);
    const PcrdResult dev = cuda.select(d.blocks, p, nullptr, nullptr, false);
    EXPECT_TRUE(dev.passes.empty());
    std::vector<uint16_t> table(ref.passes.size());
    ASSERT_EQ(cudaMemcpy(table.data(), cuda.device_passes(), table.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(table, ref.passes);
    // Invalid data is reported, not read past.
    Frame bad;
    bad.add_block({10, 5}, {3, 3}, 1.0, 0);
    DeviceFrame db(bad);
    try {
        cuda.select(db.blocks, PcrdParams{});
        FAIL() << "no error";
    } catch (const Error &e) {
        EXPECT_EQ(e.status(), J2KC_ERR_INVALID_ARG);
    }
    // And the same object still works afterwards.
    expect_same(pcrd_select_ref(f.view(), p), cuda.select(d.blocks, p));
}

}  // namespace
}  // namespace j2kc
