/**
 * @file tier1_job_table_check.h
 * @brief Test helper: decodes a tile's code-blocks twice, through the CPU's
 * decode_code_block (pipeline/tile_decoder.h) and through the decode job
 * table on the host, each into its own plane with a sentinel after it, so a
 * test can hold the job decoders (the code the GPU kernels run) to the CPU's
 * values, corrupt blocks included.
 */
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "codestream/markers.h"
#include "common/status.h"
#include "pipeline/tile_decoder.h"
#include "tier1/tier1.h"
#include "tier1/tier1_decode_job.h"

namespace j2kc {

/** What the two decodes of a tile gave. */
struct JobTableRun {
    static constexpr int32_t kSentinel = 0x1234567;  ///< fills both planes first, and stays after them
    std::vector<int32_t> cpu, jobs;                  ///< the tile's coefficients, then the sentinel
    uint32_t corrupt_cpu = 0, corrupt_jobs = 0;      ///< blocks each decoder rejected
    size_t ht_jobs = 0;                              ///< HT code-blocks in the job table
};

/**
 * Runs both decodes of `tile`; `decode_job` is t1_decode_job or
 * t1_decode_any_job. Returns false when prepare_tile rejects the tile (bad
 * packet headers, a reduce beyond the levels).
 */
template <class DecodeJob>
bool decode_tile_both_ways(const Codestream &cs, const Tile &tile, const TileDecodeOptions &options,
                           DecodeJob decode_job, JobTableRun &run)
{
    TileBlocks blocks;
    TileCoefficients cpu, jobs;
    try {
        prepare_tile(cs, tile, options, blocks, cpu);
    } catch (const Error &) {
        return false;
    }
    jobs = cpu;
    std::vector<size_t> offset;
    size_t total = 0;
    for (const ComponentPlane &p : cpu.components) {
        offset.push_back(total);
        total += p.samples();
    }
    run.cpu.assign(total + 1, JobTableRun::kSentinel);
    run.jobs.assign(total + 1, JobTableRun::kSentinel);
    for (size_t c = 0; c < cpu.components.size(); ++c) cpu.components[c].data = run.cpu.data() + offset[c];
    Tier1Scratch scratch;
    run.corrupt_cpu = 0;
    for (size_t i = 0; i < blocks.layout->code_blocks.size(); ++i)
        if (!decode_code_block(cs, tile, options, blocks, i, cpu, scratch)) ++run.corrupt_cpu;
    Tier1JobTable table;
    append_tier1_jobs(cs, tile, options, blocks, jobs, offset.data(), table);
    std::vector<uint8_t> bytes(table.num_bytes);
    table.copy_bytes(bytes.data());
    std::vector<uint32_t> words(std::max<size_t>(table.max_scratch_words, 1));
    run.corrupt_jobs = 0;
    for (const T1DecodeJob &job : table.jobs)
        run.corrupt_jobs += decode_job(job, bytes.data(), table.segments.data(), run.jobs.data(), words.data(),
                                       words.size()) != kT1JobOk;
    run.ht_jobs = table.ht_jobs;
    return true;
}

}  // namespace j2kc
