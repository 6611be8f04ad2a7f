/**
 * @file decoder_cuda.cu
 * @brief The CUDA decoder (after Lee et al., "GPU-based JPEG2000 Decoding
 * Scheme for Digital Cinema"), pipelined over frames. Tier-2 and Tier-1 run
 * on the decoder's CPU workers, which take code-blocks from the oldest
 * unfinished frame first, so the blocks of the next frame fill the cores
 * while the last blocks of one frame finish, and several frames' Tier-2 run
 * at once. Each frame in flight owns a slot: a pinned buffer Tier-1 writes
 * the coefficients straight into, device planes and a stream, on which the
 * coefficients go up and the GPU dequantises and inverse transforms them
 * (Annex E, F) while the workers go on with the next frames. receive() then
 * applies the inverse MCT, clips and packs (Annex G) straight into the
 * caller's planes, in device memory (CUDA frames) or staged back to host
 * memory (HostOutputMirror, host_output_mirror.cuh: page-locked planes by
 * DMA, pageable ones through a pinned staging buffer and a host copy in
 * bands, which idle workers take ahead of any other work and the caller's
 * thread shares). The kernels are
 * the same stages' .cu twins of the CPU reference, so the pixels are
 * identical.
 *
 * With Tier-1 on the GPU (j2kc_decoder_config::tier1_on_gpu, the default),
 * the workers run Tier-2 only and gather each frame's code-block bytes,
 * segments and jobs (tile_decoder.h's Tier1JobTable) into the slot's pinned
 * buffer: about the codestream's size instead of 4 bytes a sample, which
 * goes up at once. Frames whose Tier-2 is done then wait for a Tier-1 batch:
 * tier1_decode_gpu_batch (tier1_decode.cu, the CPU's block decoder run a
 * thread per block) decodes the blocks of every frame of a batch in one
 * launch, the longest blocks of all of them first, into each slot's device
 * buffer, and each frame's reconstruction follows on its slot's stream. A
 * frame's time on the GPU is bound by its longest blocks (a few
 * milliseconds, one thread each); batched, the frames pay that wait once
 * together instead of once each. A frame whose batch runs alone would
 * still wait for its own largest blocks, so these (tier1_decode_host_ranks)
 * go to the idle workers instead, which decode them with the CPU's block
 * decoder beside the batch; their values go up and into the plane on the
 * slot's stream, and whoever queues the last part of a frame's Tier-1
 * (tier1_part_done) queues its reconstruction. No frame waits for a batch
 * to fill: a batch leaves as soon as one of the two batch streams is free,
 * with every frame ready by then, so a frame alone goes at once and under
 * load the frames that finish Tier-2 during a batch's run form the next.
 * Tier-1 runs at the lowest priority, the reconstruction and the pack at
 * the highest, so that a frame whose coefficients are ready is not held
 * behind the Tier-1 CTAs of the frames after it. Per-block statuses come
 * back for the corrupt-block count.
 *
 * The frames in flight are pipeline/frame_queue.h's, as the encoder's: its
 * entries are the slots, handed out in submit order, taken by the workers
 * for Tier-2 in that order and received in it.
 *
 * Ordering (what keeps the slots race-free): a slot is handed to a frame at
 * submit and taken back at the end of its receive, after the output stream,
 * which waited on the slot's "reconstructed" event, was synchronised; so the
 * next frame's submit and workers never write a pinned buffer an upload
 * still reads, nor does its reconstruction overwrite planes a pack still
 * reads. A batch stream is reused only once its last batch has run to its
 * end (a host callback marks it free), so its scratch is never grown under a
 * kernel. The host copy of a receive, and a submit's copy of a large
 * codestream into its slot, are over before the call returns (BandCopy waits
 * for every band a worker took): calls on a decoder never overlap, so one
 * copy runs at a time, and reset() and the destructor find none running.
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "color/color.h"
#include "common/cuda_util.cuh"
#include "common/status.h"
#include "pipeline/decoder_common.h"
#include "pipeline/frame_queue.h"
#include "pipeline/host_output_mirror.cuh"
#include "pipeline/reconstruct.h"
#include "pipeline/tile_decoder.h"
#include "tier1/ht_decode_cuda.h"
#include "tier1/tier1_decode_cuda.h"

namespace j2kc {
namespace {

/** The decoder's events time its stages. */
using Event = TimedEvent;

/** The device's stream priorities: the lowest (cudaStreamCreate's default) and the highest. */
struct StreamPriorities {
    int least = 0, greatest = 0;
    StreamPriorities() { check_cuda(cudaDeviceGetStreamPriorityRange(&least, &greatest), "stream priorities"); }
};

/** What one frame in flight holds on the GPU side: buffers sized by the largest geometry seen.
 *  Made with the decoder's context current. */
struct Slot {
    explicit Slot(const StreamPriorities &priority)
        : stream(cudaStreamNonBlocking, priority.greatest), tier1_stream(cudaStreamNonBlocking, priority.least),
          fork(cudaEventDisableTiming)
    {
        for (size_t k = 0; k < kLanes; ++k) {
            lanes[k].create(cudaStreamNonBlocking, priority.greatest);
            lower_done[k].create(cudaEventDisableTiming);
            upper_done[k].create(cudaEventDisableTiming);
        }
    }
    /// Uploads and reconstruction of this slot's frame, ahead of any frame's
    /// Tier-1: a Tier-1 launch fills every SM with small CTAs for
    /// milliseconds, and at equal priority the dequantisation and inverse
    /// DWT launches of a frame whose Tier-1 is done wait behind the Tier-1
    /// CTAs of the frames after it (docs/measurements.md).
    CudaStream stream;
    /// The upload of this slot's code-blocks for GPU Tier-1, at the lowest
    /// priority; the batch that decodes them waits on `uploaded`, and
    /// `stream` on tier1_done.
    CudaStream tier1_stream;
    /// The lower DWT levels of tile-components side by side (reconstruct.h),
    /// one lane each, with a lower scratch area a lane: a level of a few
    /// hundred samples across fills a handful of SMs for tens of
    /// microseconds, latency-bound, so three components' levels take about
    /// the time of one's. `stream` runs the upper levels, one component
    /// after the other, each once its lane's lower levels are done, and
    /// releases the lane's area when they have read it.
    static constexpr size_t kLanes = 3;
    CudaStream lanes[kLanes];
    CudaEvent fork, lower_done[kLanes], upper_done[kLanes];
    Event start, uploaded, reconstructed;
    Event tier1_start;          ///< the batch with this slot's frame starts (GPU Tier-1)
    Event tier1_done;           ///< GPU Tier-1 finished (right after `uploaded` with CPU Tier-1)
    PinnedBuffer pinned;        ///< Tier-1 output of every tile, tile after tile, component after component
    DeviceBuffer coefficients;  ///< Tier-1 output, dequantised and inverse transformed in place
    DeviceBuffer scratch;
    /// The submitted bytes (copy_in), kept for the next frame: a submit then
    /// copies into memory already touched instead of a fresh allocation,
    /// whose first touch of each page (a fault) costs more than the copy.
    /// Pinned, so that a tile's data goes up from where it lies in it
    /// (gather_jobs). Grown, never shrunk: its size is at least the frame's.
    PinnedBuffer codestream;
    // GPU Tier-1: the gathered inputs (host, then pinned as jobs | segments |
    // order, and the bytes after them or where they lie in `codestream`),
    // their device copy (jobs | segments | order | bytes) and per-job statuses.
    Tier1JobTable jobs;
    std::vector<uint32_t> order;  ///< the jobs by decreasing bytes (tier1_decode_order)
    /// Tier-2 per tile of the slot's frame; kept for the next frame, whose
    /// Tier-2 then reuses the grown arrays instead of touching new memory.
    std::vector<TileBlocks> blocks;
    PinnedBuffer t1_pinned, t1_status_host;
    DeviceBuffer t1_input, t1_status;
    size_t t1_segments_at = 0, t1_order_at = 0, t1_bytes_at = 0, t1_input_bytes = 0;
    const uint8_t *t1_bytes = nullptr;  ///< the jobs' bytes on the host: in t1_pinned, or in codestream
    // GPU Tier-1: the first ranks of `order` that the workers decode
    // (tier1_decode_host_ranks; none unless the frame's batch runs alone),
    // as T1HostBlock records then their values (pinned, then their device
    // copy), and their statuses.
    uint32_t host_ranks = 0;
    size_t host_values_at = 0, host_input_bytes = 0;
    PinnedBuffer host_pinned;
    DeviceBuffer host_input;
    std::vector<uint8_t> host_status;
};

/// Tier-1 batches on the GPU at once: while one runs, the next is launched
/// behind it and its blocks fill the SMs the first one's last blocks leave.
/// Each stream's scratch grows to its largest batch, so more streams cost
/// memory (docs/measurements.md: four gained DCI 2K a few per cent).
constexpr size_t kTier1BatchStreams = 2;

class CudaDecoder final : public Decoder {
public:
    CudaDecoder(const j2kc_decoder_config &config, const Logger &log)
        : config_(config), log_(log), depth_(decoder_queue_depth(config, kCudaDecoderDepth)),
          gpu_tier1_(config.tier1_on_gpu != 0),
          workers_(config.threads > 0 ? unsigned(config.threads) : std::max(1u, std::thread::hardware_concurrency())),
          queue_(depth_), frames_(depth_)
    {
        ContextScope scope(config_.cuda_context, config_.device);
        check_cuda(cudaGetDevice(&device_), "cudaGetDevice");  // a lent context's device
        gpu_ = std::make_unique<GpuState>(config_, depth_, this);
        scratch_.resize(workers_);
        threads_.reserve(workers_);
        try {
            for (unsigned w = 0; w < workers_; ++w) threads_.emplace_back([this, w] { worker_loop(w); });
        } catch (...) {
            stop_workers();
            gpu_.reset();
            throw;
        }
    }

    ~CudaDecoder() override
    {
        stop_workers();
        // Device memory goes back in the context it came from, once nothing runs on it.
        try {
            ContextScope scope(config_.cuda_context, config_.device);
            for (auto &slot : gpu_->slots) {
                cudaStreamSynchronize(slot->tier1_stream.get());
                cudaStreamSynchronize(slot->stream.get());
            }
            for (auto &batch : gpu_->batches) cudaStreamSynchronize(batch->stream.get());
            cudaStreamSynchronize(gpu_->out.get());
            gpu_.reset();
        } catch (...) {
            gpu_.reset();  // the context is gone: nothing runs on it any more
        }
    }

    j2kc_backend backend() const override { return J2KC_BACKEND_CUDA; }
    int download_device() const override { return device_; }

    void parse(const uint8_t *data, size_t size, j2kc_stream_info &info) override
    {
        describe_stream(parse_stream(data, size, config_), info);
    }

    bool submit(const uint8_t *data, size_t size, int64_t tag) override
    {
        return enqueue(data, size, tag, /*copy=*/true);
    }

    bool receive(const j2kc_image *output, int64_t &tag, bool flush) override
    {
        // Without flush, a receive waits only when no submit could go on:
        // neither for the oldest frame's workers nor for its GPU work.
        const bool wait = flush || queue_.full();
        const std::optional<size_t> entry = queue_.oldest(wait);
        if (!entry || (!wait && !gpu_done(*frames_[*entry]))) return false;
        const std::unique_ptr<Frame> frame = std::move(frames_[*entry]);
        tag = frame->tag;
        // The slot comes back however this ends, once its stream is idle.
        struct SlotReturn {
            CudaDecoder *self;
            Frame *frame;
            ~SlotReturn() { self->release_slot(*frame); }
        } slot_return{this, frame.get()};
        for (const std::string &w : frame->warnings) log_.log(J2KC_LOG_WARNING, "%s", w.c_str());
        if (frame->error) std::rethrow_exception(frame->error);
        if (gpu_tier1_) count_gpu_corrupt(*frame);
        for (size_t t = 0; t < frame->tiles.size(); ++t)
            report_corrupt_blocks(frame->stream, frame->tiles[t]->index, frame->corrupt[t].load(), log_);
        if (!output) return true;  // dropped
        write_output(*frame, *output);
        std::lock_guard<std::mutex> lock(mutex_);
        times_.total += ms_since(frame->submitted);
        times_.tier2 += frame->tier2_ms;
        if (!gpu_tier1_) times_.tier1 += double(frame->tier1_ns.load()) / 1e6;  // else GPU time, write_output
        return true;
    }

    void reset() override
    {
        // Cancelled frames skip what is left of their work; each is dropped once done.
        for (auto &f : frames_)
            if (f) f->cancelled.store(true);
        work_.notify_all();
        while (const std::optional<size_t> entry = queue_.oldest(/*wait=*/true)) {
            const std::unique_ptr<Frame> frame = std::move(frames_[*entry]);
            release_slot(*frame);
        }
        std::lock_guard<std::mutex> lock(mutex_);
        times_ = {};
    }

    void decode(const uint8_t *data, size_t size, const j2kc_image &output) override
    {
        const size_t queued = queue_.in_flight();
        J2KC_CHECK_ARG(queued == 0, "%zu frames are queued: receive them before a synchronous decode", queued);
        // The bytes outlive the call, so the frame borrows them.
        enqueue(data, size, 0, /*copy=*/false);
        int64_t tag;
        receive(&output, tag, true);
    }

    j2kc_stage_times stage_times() const override
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return times_;
    }

private:
    using Clock = std::chrono::steady_clock;
    static double ms_since(Clock::time_point t)
    {
        return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
    }

    /** A stream GPU Tier-1 batches run on, at the lowest priority, with their kernels' scratch. */
    struct BatchStream {
        BatchStream(const StreamPriorities &priority, CudaDecoder *owner)
            : stream(cudaStreamNonBlocking, priority.least), owner(owner)
        {}
        CudaStream stream;
        DeviceBuffer scratch;
        CudaDecoder *owner;  ///< whom batch_ran tells
        bool busy = false;   ///< a batch was launched and has not run to its end (owner's mutex)
    };

    /** One codestream on its way through the pipeline; its place in the queue is its slot's. */
    struct Frame {
        const uint8_t *data = nullptr;  ///< the slot's copy of the bytes, or the synchronous path's own
        size_t size = 0;
        int64_t tag = 0;
        size_t entry = 0;  ///< the queue's entry, the index of its slot
        Slot *slot = nullptr;
        Clock::time_point submitted;

        size_t next_block = 0;             ///< first code-block not yet handed out (mutex)
        std::atomic<size_t> remaining{0};  ///< code-blocks handed out or not, not yet finished
        std::atomic<bool> cancelled{false};
        std::atomic<bool> failed{false};
        std::exception_ptr error;  ///< first error; written once, before `failed`
        std::mutex error_mutex;

        ParsedStream stream;
        std::deque<Tile> absent;                  ///< tiles the codestream lacks (zero coefficients)
        std::vector<const Tile *> tiles;          ///< every tile of the grid, in index order
        std::vector<TileCoefficients> planes;     ///< per tile; data points into the slot's pinned buffer
        std::vector<std::vector<size_t>> offset;  ///< [tile][component] element offset in the slot's buffers
        /// [tile][component] where reconstruct() leaves the samples: in the
        /// slot's scratch or coefficient buffer, rows `stride` elements apart
        struct Samples {
            int32_t *data = nullptr;
            size_t stride = 0;
        };
        std::vector<std::vector<Samples>> reconstructed;
        std::vector<size_t> block_start;                   ///< first flat code-block index of each tile, then the total
                                                           ///< (all zero with GPU Tier-1: the workers decode no block)
        std::vector<size_t> job_start;                     ///< GPU Tier-1: first job of each tile, then the total
        std::unique_ptr<std::atomic<uint32_t>[]> corrupt;  ///< per tile
        size_t samples = 0;
        std::vector<std::string> warnings;
        double tier2_ms = 0;
        std::atomic<int64_t> tier1_ns{0};
        size_t batch_frames = 1;             ///< frames of its GPU Tier-1 batch, which share the batch's time
        size_t next_host_rank = 0;           ///< GPU Tier-1: first host rank not yet handed out (mutex)
        std::atomic<uint32_t> host_left{0};  ///< GPU Tier-1: host ranks not yet decoded
        std::atomic<int> tier1_parts{1};     ///< GPU Tier-1: its batch, and its host ranks if any, not yet queued

        void fail_with(std::exception_ptr e)
        {
            std::lock_guard<std::mutex> lock(error_mutex);
            if (!error) error = e;
            failed.store(true);
        }
    };

    struct Task {
        Frame *frame = nullptr;
        bool tier2 = false;
        size_t begin = 0, end = 0;            ///< flat code-block range
        const CopyBand *band = nullptr;       ///< else a band of the host copy in progress
        std::vector<Frame *> batch;           ///< else frames whose GPU Tier-1 to launch together,
        BatchStream *batch_stream = nullptr;  ///< on this stream
        bool host_rank = false;               ///< else rank `begin` of the frame's host ranks (GPU Tier-1)
        bool tier2_runs = false;              ///< else Tier-2 runs of the frame that shares them (SharedRuns)
    };

    /**
     * Tier-2 runs of packets (decode_tile_packets) that one frame's worker
     * shares with the workers that find nothing more urgent to do, under
     * mutex_ but for `next`. The frame's worker takes runs too and returns
     * once every run is done, so that a frame alone uses idle workers while
     * frames in flight together keep a worker each: the decoder's threads
     * are never more than its workers. One frame's runs at a time; another
     * frame meanwhile reads its runs alone.
     */
    struct SharedRuns {
        const std::function<void(size_t, unsigned)> *fn = nullptr;  ///< null: none shared
        size_t n = 0;
        std::atomic<size_t> next{0};
        unsigned helpers = 0;  ///< workers given runs and not yet back
        std::exception_ptr error;
    };

    /** The ParallelRunner a frame's Tier-2 reads its runs on: its worker, and the idle ones. */
    class IdleWorkers final : public ParallelRunner {
    public:
        IdleWorkers(CudaDecoder &decoder, unsigned worker) : decoder_(decoder), worker_(worker) {}
        unsigned size() const override { return decoder_.workers_; }
        void parallel_for(size_t n, const std::function<void(size_t, unsigned)> &fn) override
        {
            decoder_.share_runs(n, fn, worker_);
        }

    private:
        CudaDecoder &decoder_;
        unsigned worker_;
    };

    /**
     * A host copy (CopyBand list) shared by the caller's thread and the
     * workers. The caller publishes bands as they become ready, copies bands
     * itself, and does not leave before every band taken is done: bands are
     * taken and counted under mutex_, so once the counts meet (the
     * destructor waits for that, also when an exception unwinds) no worker
     * holds a band, and the list, the staging buffer and the caller's planes
     * may go.
     */
    class BandCopy {
    public:
        BandCopy(CudaDecoder &d, const std::vector<CopyBand> &bands) : d_(d)
        {
            std::lock_guard<std::mutex> lock(d_.mutex_);
            d_.copy_bands_ = &bands;
            d_.copy_published_ = d_.copy_next_ = d_.copy_done_ = 0;
        }
        ~BandCopy()
        {
            std::unique_lock<std::mutex> lock(d_.mutex_);
            d_.copy_published_ = d_.copy_next_;  // nothing more is taken
            d_.copied_.wait(lock, [&] { return d_.copy_done_ == d_.copy_next_; });
            d_.copy_bands_ = nullptr;
        }
        BandCopy(const BandCopy &) = delete;
        BandCopy &operator=(const BandCopy &) = delete;

        /** Bands [0, end) may be copied; idle workers are woken for all but one, which the caller takes. */
        void publish(size_t end)
        {
            bool wake;
            {
                std::lock_guard<std::mutex> lock(d_.mutex_);
                d_.copy_published_ = end;
                wake = end - d_.copy_next_ > 1;
            }
            if (wake) d_.work_.notify_all();
        }

        /** Copies one published band on the caller's thread; false when none is left to take. */
        bool help()
        {
            const CopyBand *band;
            {
                std::lock_guard<std::mutex> lock(d_.mutex_);
                band = d_.take_band();
            }
            if (!band) return false;
            copy_band(*band);
            d_.band_copied();
            return true;
        }

        /** Publishes bands [0, end) and copies with the workers until none is left to take. */
        void run_all(size_t end)
        {
            publish(end);
            while (help()) {}
        }

    private:
        CudaDecoder &d_;
    };

    /** The next published band of the host copy in progress, or nullptr (mutex held). */
    const CopyBand *take_band()
    {
        if (!copy_bands_ || copy_next_ >= copy_published_) return nullptr;
        return &(*copy_bands_)[copy_next_++];
    }

    /** A band taken from the host copy in progress is done (caller's thread or a worker). */
    void band_copied()
    {
        bool all;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            all = ++copy_done_ == copy_next_;
        }
        if (all) copied_.notify_all();
    }

    bool enqueue(const uint8_t *data, size_t size, int64_t tag, bool copy)
    {
        const std::optional<size_t> entry = queue_.reserve();
        if (!entry) return false;
        // The entry stays ours until published: no worker or receive looks at it.
        auto frame = std::make_unique<Frame>();
        if (copy) {
            frame->data = copy_in(*gpu_->slots[*entry], data, size);
        } else {
            frame->data = data;
        }
        frame->size = size;
        frame->tag = tag;
        frame->entry = *entry;
        frame->slot = gpu_->slots[*entry].get();
        frame->submitted = Clock::now();
        frames_[*entry] = std::move(frame);
        {
            // Under the workers' mutex, so that none misses the frame between its look and its wait.
            std::lock_guard<std::mutex> lock(mutex_);
            queue_.publish(*entry);
        }
        work_.notify_one();
        return true;
    }

    /**
     * Copies a submitted codestream into the slot's buffer and returns the
     * copy. One thread copies about 7 GB/s, so an 8 MB HT frame would hold
     * the caller's thread over a millisecond, more than the rest of its
     * submit and receive together; a large codestream is therefore copied in
     * bands that idle workers share with the caller's thread (BandCopy), as
     * a receive's host output is.
     */
    const uint8_t *copy_in(Slot &slot, const uint8_t *data, size_t size)
    {
        constexpr size_t kBandBytes = size_t{1} << 20;
        if (slot.codestream.size() < size) {
            ContextScope scope(config_.cuda_context, config_.device);
            slot.codestream.reserve(size);
        }
        auto *bytes = slot.codestream.as<uint8_t>();
        if (size < 2 * kBandBytes) {
            if (size) std::memcpy(bytes, data, size);
            return bytes;
        }
        submit_bands_.clear();
        for (size_t at = 0; at < size; at += kBandBytes) {
            const size_t n = std::min(kBandBytes, size - at);
            submit_bands_.push_back(CopyBand{bytes + at, data + at, n, n, n, 1});
        }
        BandCopy copy(*this, submit_bands_);
        copy.run_all(submit_bands_.size());
        return bytes;
    }

    /** Waits for the slot's streams (the upload's too, should the frame have
     *  failed before its batch), then lets the next frame have it. */
    void release_slot(Frame &frame) noexcept
    {
        try {
            ContextScope scope(config_.cuda_context, config_.device);
            cudaStreamSynchronize(frame.slot->tier1_stream.get());
            cudaEventSynchronize(frame.slot->tier1_done.get());  // its batch, on a stream of its own
            cudaStreamSynchronize(frame.slot->stream.get());
        } catch (...) {
            // The context is gone: nothing can still run on the stream.
        }
        queue_.release();
    }

    void stop_workers()
    {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
        }
        work_.notify_all();
        for (std::thread &t : threads_) t.join();
        threads_.clear();
    }

    /**
     * The next piece of work (mutex held). Bands of the host copy in
     * progress come first: the caller's thread is waiting for them, and a
     * band is a fraction of a millisecond. Then a GPU Tier-1 batch of the
     * frames ready for one, when a batch stream is free: every frame ready
     * for the GPU waits for nothing else. Then a host rank of a frame whose
     * batch runs alone: its reconstruction waits for them. Then Tier-2 of a newly queued frame: it is one
     * worker's sequential job, and started early it overlaps the Tier-1 of
     * the frames before it instead of leaving the workers idle when their
     * blocks run out. Then code-blocks (CPU Tier-1), oldest frame first, in
     * runs that shrink as a frame's blocks run out, so that its last blocks
     * spread over the workers and the next frame's fill the rest.
     */
    bool next_task(Task &task)
    {
        task = {};
        if (const CopyBand *band = take_band()) {
            task.band = band;
            return true;
        }
        if (take_batch(task)) return true;
        if (!host_tier1_.empty()) {
            Frame &frame = *host_tier1_.front();
            task.frame = &frame;
            task.host_rank = true;
            task.begin = frame.next_host_rank++;
            if (frame.next_host_rank == frame.slot->host_ranks) host_tier1_.pop_front();
            return true;
        }
        if (const std::optional<size_t> entry = queue_.try_take()) {
            task.frame = frames_[*entry].get();
            task.tier2 = true;
            return true;
        }
        if (shared_runs_.fn && shared_runs_.next.load(std::memory_order_relaxed) < shared_runs_.n) {
            ++shared_runs_.helpers;
            task.tier2_runs = true;
            return true;
        }
        if (!cpu_tier1_.empty()) {
            Frame &frame = *cpu_tier1_.front();
            const size_t total = frame.block_start.back();
            const size_t left = total - frame.next_block;
            const size_t run = frame.cancelled.load() || frame.failed.load()
                                   ? left
                                   : std::clamp<size_t>(left / (4 * size_t{workers_}), 1, 32);
            task.frame = &frame;
            task.begin = frame.next_block;
            task.end = frame.next_block += run;
            if (frame.next_block == total) cpu_tier1_.pop_front();
            return true;
        }
        return false;
    }

    /**
     * A GPU Tier-1 batch (mutex held): every frame ready for one, as many as
     * a launch takes, when a batch stream is free and no other worker is
     * launching (so that frames leave in batches, not one a worker).
     */
    bool take_batch(Task &task)
    {
        if (tier1_ready_.empty() || launching_) return false;
        for (auto &b : gpu_->batches)
            if (!b->busy) {
                task.batch_stream = b.get();
                break;
            }
        if (!task.batch_stream) return false;
        size_t longest = 0, n = 0;
        for (; n < tier1_ready_.size() && n < kT1DecodeMaxTables; ++n) {
            longest = std::max(longest, tier1_ready_[n]->slot->jobs.jobs.size());
            if (longest * (n + 1) > UINT32_MAX) break;  // tier1_decode_batch_positions' bound
        }
        n = std::max<size_t>(n, 1);  // a frame alone over the bound fails in its launch
        task.batch.assign(tier1_ready_.begin(), tier1_ready_.begin() + n);
        tier1_ready_.erase(tier1_ready_.begin(), tier1_ready_.begin() + n);
        task.batch_stream->busy = true;
        launching_ = true;
        return true;
    }

    /** Whether a frame ready for GPU Tier-1 now goes in a batch alone (mutex held): none waits, none runs. */
    bool batch_alone() const
    {
        if (!tier1_ready_.empty() || launching_) return false;
        for (const auto &b : gpu_->batches)
            if (b->busy) return false;
        return true;
    }

    void worker_loop(unsigned worker)
    {
        for (;;) {
            Task task;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                work_.wait(lock, [&] { return stop_ || next_task(task); });
                if (stop_) return;
            }
            if (task.band) {
                copy_band(*task.band);
                band_copied();
            } else if (task.batch_stream) {
                launch_batch(task.batch, *task.batch_stream);
            } else if (task.host_rank) {
                run_host_rank(*task.frame, task.begin, worker);
            } else if (task.tier2) {
                run_tier2(*task.frame, worker);
            } else if (task.tier2_runs) {
                take_runs(worker);
                std::lock_guard<std::mutex> lock(mutex_);
                if (--shared_runs_.helpers == 0) runs_done_.notify_all();
            } else {
                run_blocks(*task.frame, task.begin, task.end, worker);
            }
        }
    }

    /** Runs of the shared Tier-2 until none is left (SharedRuns). */
    void take_runs(unsigned worker)
    {
        for (;;) {
            const size_t i = shared_runs_.next.fetch_add(1, std::memory_order_relaxed);
            if (i >= shared_runs_.n) return;
            try {
                (*shared_runs_.fn)(i, worker);
            } catch (...) {
                std::lock_guard<std::mutex> lock(mutex_);
                if (!shared_runs_.error) shared_runs_.error = std::current_exception();
                shared_runs_.next.store(shared_runs_.n, std::memory_order_relaxed);
            }
        }
    }

    /** IdleWorkers::parallel_for: fn's runs shared with idle workers, or alone while another frame shares. */
    void share_runs(size_t n, const std::function<void(size_t, unsigned)> &fn, unsigned worker)
    {
        {
            std::unique_lock<std::mutex> lock(mutex_);
            if (shared_runs_.fn) {
                lock.unlock();
                for (size_t i = 0; i < n; ++i) fn(i, worker);
                return;
            }
            shared_runs_.fn = &fn;
            shared_runs_.n = n;
            shared_runs_.next.store(0, std::memory_order_relaxed);
            shared_runs_.error = nullptr;
        }
        work_.notify_all();
        take_runs(worker);
        std::exception_ptr error;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            runs_done_.wait(lock, [&] { return shared_runs_.helpers == 0; });
            shared_runs_.fn = nullptr;
            error = shared_runs_.error;
        }
        if (error) std::rethrow_exception(error);
    }

    /** Headers, Tier-2 of every tile, and the frame's place in its slot's pinned buffer. */
    void run_tier2(Frame &frame, unsigned worker)
    {
        const auto t0 = Clock::now();
        try {
            if (!frame.cancelled.load()) prepare_frame(frame, worker);
        } catch (...) {
            frame.fail_with(std::current_exception());
        }
        frame.tier2_ms = ms_since(t0);
        const bool nothing = frame.failed.load() || frame.cancelled.load() || frame.block_start.empty();
        if (gpu_tier1_ && !nothing) {
            // This worker launches the batch itself when it may (no wake-up
            // of another on the frame's path); else a batch stream's end or
            // the launch in progress wakes one for it. The host ranks go to
            // the workers at once, to run beside the batch, but only for a
            // frame whose batch runs alone: batched with others, its largest
            // blocks overlap theirs, and the workers are busy with their
            // Tier-2 and host copies (docs/measurements.md).
            Task task;
            uint32_t host = 0;
            {
                std::lock_guard<std::mutex> lock(mutex_);
                if (!batch_alone()) frame.slot->host_ranks = 0;
                host = frame.slot->host_ranks;
                frame.tier1_parts.store(host ? 2 : 1);
                frame.host_left.store(host);
                if (host) {
                    frame.next_host_rank = 0;
                    host_tier1_.push_back(&frame);
                }
                tier1_ready_.push_back(&frame);
                take_batch(task);
            }
            if (host) work_.notify_all();
            if (task.batch_stream) launch_batch(task.batch, *task.batch_stream);
            return;
        }
        if (nothing) frame.block_start.assign(1, 0);
        const size_t total = frame.block_start.back();
        frame.remaining.store(total);
        if (total == 0) {
            finish_frame(frame);
            return;
        }
        {
            std::lock_guard<std::mutex> lock(mutex_);
            frame.next_block = 0;
            cpu_tier1_.push_back(&frame);
        }
        work_.notify_all();
    }

    void prepare_frame(Frame &frame, unsigned worker)
    {
        frame.stream = parse_stream(frame.data, frame.size, config_);
        const ParsedStream &s = frame.stream;
        // create_decoder routes palettes (I.5.3.4) to the CPU backend, which maps them on host planes.
        J2KC_CHECK_SUPPORTED(!(s.jp2 && s.jp2->palette), "JP2 palettes (pclr/cmap) are mapped by the CPU backend");
        check_intact(s);
        frame.warnings = stream_warnings(s);
        for_each_tile(s, [&](const Tile &tile) {
            if (&tile >= s.cs.tiles.data() && &tile < s.cs.tiles.data() + s.cs.tiles.size()) {
                frame.tiles.push_back(&tile);
            } else {
                frame.absent.push_back(tile);
                frame.tiles.push_back(&frame.absent.back());
            }
        });
        const size_t n = frame.tiles.size();
        const TileDecodeOptions options{s.reduce, s.max_layers, s.strict};
        frame.slot->blocks.resize(n);
        frame.planes.resize(n);
        frame.offset.resize(n);
        frame.block_start.assign(n + 1, 0);
        frame.corrupt = std::make_unique<std::atomic<uint32_t>[]>(n);
        size_t samples = 0;
        IdleWorkers idle(*this, worker);
        for (size_t t = 0; t < n; ++t) {
            prepare_tile(s.cs, *frame.tiles[t], options, frame.slot->blocks[t], frame.planes[t], &idle);
            frame.block_start[t + 1] = frame.block_start[t] + frame.slot->blocks[t].layout->code_blocks.size();
            for (const ComponentPlane &p : frame.planes[t].components) {
                frame.offset[t].push_back(samples);
                samples += p.samples();
            }
        }
        // The parser bounds the samples by max_memory already; all of them sit in one buffer.
        frame.samples = samples;
        if (gpu_tier1_) {
            gather_jobs(frame, options, idle);
            return;
        }
        {
            ContextScope scope(config_.cuda_context, config_.device);
            auto *pinned = static_cast<int32_t *>(frame.slot->pinned.reserve(std::max<size_t>(samples, 1) * 4));
            for (size_t t = 0; t < n; ++t)
                for (size_t c = 0; c < frame.planes[t].components.size(); ++c)
                    frame.planes[t].components[c].data = pinned + frame.offset[t][c];
        }
    }

    /** GPU Tier-1: every tile's jobs into the slot's table, then into its pinned buffer. */
    void gather_jobs(Frame &frame, const TileDecodeOptions &options, IdleWorkers &idle)
    {
        const ParsedStream &s = frame.stream;
        Slot &slot = *frame.slot;
        Tier1JobTable &table = slot.jobs;
        table.clear();
        const size_t n = frame.tiles.size();
        frame.job_start.assign(n + 1, 0);
        for (size_t t = 0; t < n; ++t) {
            append_tier1_jobs(s.cs, *frame.tiles[t], options, frame.slot->blocks[t], frame.planes[t],
                              frame.offset[t].data(), table);
            frame.job_start[t + 1] = table.jobs.size();
        }
        J2KC_CHECK_LIMIT(table.jobs.size() <= UINT32_MAX, "%zu code-blocks in a frame", table.jobs.size());
        frame.block_start.assign(n + 1, 0);  // nothing left for the workers' Tier-1 phase
        const auto align = [](size_t v) { return (v + 15) & ~size_t{15}; };
        const size_t jobs_bytes = table.jobs.size() * sizeof(T1DecodeJob);
        slot.order.resize(table.jobs.size());
        tier1_decode_order(table.jobs.data(), static_cast<uint32_t>(table.jobs.size()), slot.order.data());
        slot.host_ranks =
            tier1_decode_host_ranks(table.jobs.data(), slot.order.data(), static_cast<uint32_t>(table.jobs.size()));
        slot.t1_segments_at = align(jobs_bytes);
        slot.t1_order_at = align(slot.t1_segments_at + table.segments.size() * sizeof(CodewordSegment));
        slot.t1_bytes_at = align(slot.t1_order_at + slot.order.size() * sizeof(uint32_t));
        slot.t1_input_bytes = slot.t1_bytes_at + table.num_bytes;
        const uint8_t *in_place = bytes_in_place(frame);
        ContextScope scope(config_.cuda_context, config_.device);
        auto *pinned = static_cast<uint8_t *>(
            slot.t1_pinned.reserve(std::max<size_t>(in_place ? slot.t1_bytes_at : slot.t1_input_bytes, 16)));
        if (jobs_bytes) std::memcpy(pinned, table.jobs.data(), jobs_bytes);
        if (!table.segments.empty())
            std::memcpy(pinned + slot.t1_segments_at, table.segments.data(),
                        table.segments.size() * sizeof(CodewordSegment));
        if (!slot.order.empty())
            std::memcpy(pinned + slot.t1_order_at, slot.order.data(), slot.order.size() * sizeof(uint32_t));
        slot.t1_bytes = in_place ? in_place : pinned + slot.t1_bytes_at;
        if (!in_place) table.copy_bytes(pinned + slot.t1_bytes_at, &idle);
        slot.t1_status_host.reserve(std::max<size_t>(table.jobs.size(), 1));
        plan_host_ranks(slot);
        upload_tier1_input(frame);
    }

    /**
     * The jobs' bytes where they lie in the slot's pinned copy of the
     * codestream, or nullptr: a tile of one tile-part whose data goes up
     * whole (append_tier1_jobs) is the table's one run, read in place from
     * the frame's bytes, so it goes up from there rather than through a copy
     * into t1_pinned, as much memory traffic as the submit's own copy.
     */
    static const uint8_t *bytes_in_place(const Frame &frame)
    {
        const Tier1JobTable &table = frame.slot->jobs;
        if (table.byte_runs.size() != 1) return nullptr;
        const uint8_t *first = frame.slot->codestream.as<uint8_t>();
        if (frame.data != first) return nullptr;  // the synchronous path's own bytes, pageable
        const CodeBlockChunk &run = table.byte_runs[0];
        const uintptr_t at = reinterpret_cast<uintptr_t>(run.data) - reinterpret_cast<uintptr_t>(first);
        return at <= frame.size && run.length <= frame.size - at ? run.data : nullptr;
    }

    /** GPU Tier-1: the host ranks' T1HostBlock records and value areas in the slot's pinned buffer. */
    static void plan_host_ranks(Slot &slot)
    {
        const uint32_t n = slot.host_ranks;
        slot.host_status.assign(n, kT1JobOk);
        if (n == 0) return;
        slot.host_values_at = (size_t{n} * sizeof(T1HostBlock) + 15) & ~size_t{15};
        size_t values = 0;
        for (uint32_t r = 0; r < n; ++r) {
            const T1DecodeJob &job = slot.jobs.jobs[slot.order[r]];
            values += size_t{job.width} * job.height;
        }
        slot.host_input_bytes = slot.host_values_at + values * 4;
        auto *blocks = static_cast<T1HostBlock *>(slot.host_pinned.reserve(slot.host_input_bytes));
        slot.host_input.reserve(slot.host_input_bytes);  // grow-only; the slot's last frame is done with it
        uint64_t at = 0;
        for (uint32_t r = 0; r < n; ++r) {
            const T1DecodeJob &job = slot.jobs.jobs[slot.order[r]];
            blocks[r] = {at, job.out_offset, job.out_stride, job.width, job.height};
            at += uint32_t{job.width} * job.height;
        }
    }

    /** GPU Tier-1: a worker decodes a host rank into the slot's pinned values; the last one sends them up. */
    void run_host_rank(Frame &frame, size_t rank, unsigned worker)
    {
        Slot &slot = *frame.slot;
        if (!frame.cancelled.load() && !frame.failed.load()) {
            const T1HostBlock &block = slot.host_pinned.as<T1HostBlock>()[rank];
            T1DecodeJob job = slot.jobs.jobs[slot.order[rank]];
            job.out_offset = block.values_offset;  // its values row after row in the staging area
            job.out_stride = job.width;
            auto *values = reinterpret_cast<int32_t *>(slot.host_pinned.as<uint8_t>() + slot.host_values_at);
            try {
                slot.host_status[rank] =
                    t1_decode_job_cpu(job, slot.t1_bytes, slot.jobs.segments.data(), values, scratch_[worker].tier1);
            } catch (...) {
                frame.fail_with(std::current_exception());
            }
        }
        if (frame.host_left.fetch_sub(1) == 1) place_host_ranks(frame);
    }

    /**
     * GPU Tier-1: the host ranks' values up and into the plane on the slot's
     * stream, where the reconstruction follows them; the batch's kernels
     * never touch these blocks, so nothing orders the two.
     */
    void place_host_ranks(Frame &frame)
    {
        if (!frame.cancelled.load() && !frame.failed.load()) {
            try {
                ContextScope scope(config_.cuda_context, config_.device);
                Slot &slot = *frame.slot;
                cudaStream_t st = slot.stream.get();
                uint8_t *input = slot.host_input.as<uint8_t>();
                check_cuda(cudaMemcpyAsync(input, slot.host_pinned.as<uint8_t>(), slot.host_input_bytes,
                                           cudaMemcpyHostToDevice, st),
                           "host Tier-1 upload");
                tier1_place_host_blocks_gpu(reinterpret_cast<const T1HostBlock *>(input), slot.host_ranks,
                                            reinterpret_cast<const int32_t *>(input + slot.host_values_at),
                                            slot.coefficients.as<int32_t>(), st);
            } catch (...) {
                frame.fail_with(std::current_exception());
            }
        }
        tier1_part_done(frame);
    }

    /**
     * GPU Tier-1: one part of a frame's Tier-1 (its batch, or its host
     * ranks) is queued on the GPU. Whoever queues the last one queues the
     * reconstruction behind both (the batch's tier1_done event, the host
     * ranks' placement on the same stream) and lets the frame be received.
     */
    void tier1_part_done(Frame &frame)
    {
        if (frame.tier1_parts.fetch_sub(1) != 1) return;
        if (!frame.failed.load() && !frame.cancelled.load()) {
            try {
                ContextScope scope(config_.cuda_context, config_.device);
                reconstruct(frame);
            } catch (...) {
                frame.fail_with(std::current_exception());
            }
        }
        queue_.finish(frame.entry);
    }

    /** Whether a finished frame's reconstruction has run on the GPU (or it failed, and has none to run). */
    bool gpu_done(const Frame &frame) const
    {
        if (frame.error) return true;
        ContextScope scope(config_.cuda_context, config_.device);
        return cudaEventQuery(frame.slot->reconstructed.get()) != cudaErrorNotReady;
    }

    /** GPU Tier-1: the per-job statuses (back once tier1_done is) into the per-tile corrupt counts. */
    void count_gpu_corrupt(Frame &frame)
    {
        if (frame.job_start.empty() || frame.job_start.back() == 0) return;
        ContextScope scope(config_.cuda_context, config_.device);
        check_cuda(cudaEventSynchronize(frame.slot->tier1_done.get()), "cudaEventSynchronize");
        Slot &slot = *frame.slot;
        uint8_t *status = slot.t1_status_host.as<uint8_t>();
        // The download brought the kernels' untouched bytes for the host ranks.
        for (uint32_t r = 0; r < slot.host_ranks; ++r) status[slot.order[r]] = slot.host_status[r];
        for (size_t t = 0; t + 1 < frame.job_start.size(); ++t) {
            uint32_t bad = 0;
            for (size_t j = frame.job_start[t]; j < frame.job_start[t + 1]; ++j) bad += status[j] != kT1JobOk;
            frame.corrupt[t].store(bad);
        }
    }

    void run_blocks(Frame &frame, size_t begin, size_t end, unsigned worker)
    {
        const auto t0 = Clock::now();
        if (!frame.cancelled.load() && !frame.failed.load()) {
            const ParsedStream &s = frame.stream;
            const TileDecodeOptions options{s.reduce, s.max_layers, s.strict};
            size_t t = std::upper_bound(frame.block_start.begin(), frame.block_start.end(), begin) -
                       frame.block_start.begin() - 1;
            try {
                for (size_t i = begin; i < end && !frame.failed.load(); ++i) {
                    while (i >= frame.block_start[t + 1]) ++t;
                    if (!decode_code_block(s.cs, *frame.tiles[t], options, frame.slot->blocks[t],
                                           i - frame.block_start[t], frame.planes[t], scratch_[worker]))
                        frame.corrupt[t].fetch_add(1, std::memory_order_relaxed);
                }
            } catch (...) {
                frame.fail_with(std::current_exception());
            }
            frame.tier1_ns.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
        }
        const size_t count = end - begin;
        if (frame.remaining.fetch_sub(count) == count) finish_frame(frame);
    }

    /** CPU Tier-1: the frame's last code-block is done; up go the coefficients, and the GPU reconstructs. */
    void finish_frame(Frame &frame)
    {
        if (!frame.failed.load() && !frame.cancelled.load()) {
            try {
                ContextScope scope(config_.cuda_context, config_.device);
                upload_coefficients(frame);
                reconstruct(frame);
            } catch (...) {
                frame.fail_with(std::current_exception());
            }
        }
        queue_.finish(frame.entry);
    }

    /** CPU Tier-1: the coefficients up on the slot's stream. */
    void upload_coefficients(Frame &frame)
    {
        Slot &slot = *frame.slot;
        cudaStream_t st = slot.stream.get();
        auto *coefficients = static_cast<int32_t *>(slot.coefficients.reserve(std::max<size_t>(frame.samples, 1) * 4));
        check_cuda(cudaEventRecord(slot.start.get(), st), "cudaEventRecord");
        if (frame.samples)
            check_cuda(
                cudaMemcpyAsync(coefficients, slot.pinned.as<int32_t>(), frame.samples * 4, cudaMemcpyHostToDevice, st),
                "coefficient upload");
        check_cuda(cudaEventRecord(slot.uploaded.get(), st), "cudaEventRecord");
        check_cuda(cudaEventRecord(slot.tier1_done.get(), st), "cudaEventRecord");
    }

    /** GPU Tier-1 (Tier-2 worker): the slot's gathered code-blocks up on its Tier-1 stream, its device buffers sized. */
    void upload_tier1_input(Frame &frame)
    {
        Slot &slot = *frame.slot;
        cudaStream_t t1 = slot.tier1_stream.get();
        // Grow-only: allocation happens when the geometry grows, not per frame.
        slot.coefficients.reserve(std::max<size_t>(frame.samples, 1) * 4);
        slot.t1_status.reserve(std::max<size_t>(slot.jobs.jobs.size(), 1));
        auto *input = static_cast<uint8_t *>(slot.t1_input.reserve(std::max<size_t>(slot.t1_input_bytes, 16)));
        check_cuda(cudaEventRecord(slot.start.get(), t1), "cudaEventRecord");
        if (slot.t1_bytes_at)
            check_cuda(
                cudaMemcpyAsync(input, slot.t1_pinned.as<uint8_t>(), slot.t1_bytes_at, cudaMemcpyHostToDevice, t1),
                "job table upload");
        if (slot.jobs.num_bytes)
            check_cuda(cudaMemcpyAsync(input + slot.t1_bytes_at, slot.t1_bytes, slot.jobs.num_bytes,
                                       cudaMemcpyHostToDevice, t1),
                       "code-block upload");
        check_cuda(cudaEventRecord(slot.uploaded.get(), t1), "cudaEventRecord");
    }

    /** The slot's job table as the Tier-1 kernels take it, in its device copy. */
    static T1DecodeTable tier1_table(Slot &slot)
    {
        const uint8_t *input = slot.t1_input.as<uint8_t>();
        T1DecodeTable t;
        t.jobs = reinterpret_cast<const T1DecodeJob *>(input);
        t.bytes = input + slot.t1_bytes_at;
        t.segments = reinterpret_cast<const CodewordSegment *>(input + slot.t1_segments_at);
        t.order = reinterpret_cast<const uint32_t *>(input + slot.t1_order_at);
        t.out = slot.coefficients.as<int32_t>();
        t.status = slot.t1_status.as<uint8_t>();
        t.num_jobs = static_cast<uint32_t>(slot.jobs.jobs.size());
        t.first_rank = slot.host_ranks;
        return t;
    }

    /**
     * GPU Tier-1 of the frames of a batch in one launch on `batch_stream`
     * (each frame's statuses back to its slot), then each frame's
     * reconstruction on its slot's stream. Frames cancelled or failed
     * meanwhile stay out. The stream is free again when the batch has run
     * to its end (batch_ran), or at once if nothing went on it.
     */
    void launch_batch(const std::vector<Frame *> &frames, BatchStream &batch_stream)
    {
        std::vector<Frame *> batch;
        for (Frame *f : frames)
            if (!f->failed.load() && !f->cancelled.load()) batch.push_back(f);
        bool launched = false;
        try {
            ContextScope scope(config_.cuda_context, config_.device);
            try {
                if (!batch.empty()) launch_tier1(batch, batch_stream);
                launched = !batch.empty();
            } catch (...) {
                cudaStreamSynchronize(batch_stream.stream.get());  // no kernel left behind on failed frames
                throw;
            }
        } catch (...) {
            for (Frame *f : batch) f->fail_with(std::current_exception());
        }
        for (Frame *f : batch) f->batch_frames = batch.size();
        for (Frame *f : frames) tier1_part_done(*f);
        {
            std::lock_guard<std::mutex> lock(mutex_);
            launching_ = false;
            if (!launched) batch_stream.busy = false;
        }
        work_.notify_one();  // frames that became ready meanwhile
    }

    void launch_tier1(const std::vector<Frame *> &frames, BatchStream &batch_stream)
    {
        cudaStream_t st = batch_stream.stream.get();
        T1DecodeBatch batch;
        size_t scratch_words = 1;
        bool ht = false, part1 = false;
        uint32_t ht_max_quads = 0;
        for (Frame *f : frames) {
            Slot &slot = *f->slot;
            check_cuda(cudaStreamWaitEvent(st, slot.uploaded.get(), 0), "cudaStreamWaitEvent");
            batch.tables[batch.num_tables++] = tier1_table(slot);
            scratch_words = std::max(scratch_words, slot.jobs.max_scratch_words);
            ht = ht || slot.jobs.ht_jobs;
            ht_max_quads = std::max(ht_max_quads, slot.jobs.ht_max_quads);
            part1 = part1 || slot.jobs.jobs.size() > slot.jobs.ht_jobs;
        }
        for (Frame *f : frames) check_cuda(cudaEventRecord(f->slot->tier1_start.get(), st), "cudaEventRecord");
        if (part1) {
            const uint32_t positions = tier1_decode_batch_positions(batch);
            // Grow-only; the stream is free, so no kernel uses the scratch now.
            auto *scratch = static_cast<uint32_t *>(
                batch_stream.scratch.reserve(size_t{tier1_decode_gpu_threads(positions)} * scratch_words * 4));
            tier1_decode_gpu_batch(batch, scratch, scratch_words, st);
        }
        // HT code-blocks (ISO/IEC 15444-15): their own kernel, after the
        // Part-1 one (which zeroes them) where there is one, on the same stream.
        if (ht) ht_decode_gpu_batch(batch, st, ht_max_quads);
        for (Frame *f : frames) {
            Slot &slot = *f->slot;
            if (!slot.jobs.jobs.empty())
                check_cuda(cudaMemcpyAsync(slot.t1_status_host.as<uint8_t>(), slot.t1_status.as<uint8_t>(),
                                           slot.jobs.jobs.size(), cudaMemcpyDeviceToHost, st),
                           "Tier-1 status download");
            check_cuda(cudaEventRecord(slot.tier1_done.get(), st), "cudaEventRecord");
        }
        check_cuda(cudaLaunchHostFunc(st, batch_ran, &batch_stream), "cudaLaunchHostFunc");
    }

    /** Host callback at the end of a batch's work on its stream: the stream is free for the next batch. */
    static void CUDART_CB batch_ran(void *arg)
    {
        auto &batch_stream = *static_cast<BatchStream *>(arg);
        CudaDecoder &self = *batch_stream.owner;
        {
            std::lock_guard<std::mutex> lock(self.mutex_);
            batch_stream.busy = false;
        }
        self.work_.notify_one();
    }

    /**
     * Enqueues on the slot's streams, once Tier-1 is done: dequantisation and
     * inverse DWT of every tile-component (reconstruct.h), which reads its
     * plane and writes its samples elsewhere. The first goes to the front of
     * the slot's scratch, sized for the largest; each one after it to the
     * plane of the one before, whose upper levels (on `stream`, in this
     * order) have read it by then. Taken from the largest plane down, each
     * fits where it goes. The lower levels run on the slot's lanes in turn.
     */
    void reconstruct(Frame &frame)
    {
        Slot &slot = *frame.slot;
        cudaStream_t st = slot.stream.get();
        std::vector<std::pair<size_t, size_t>> order;  // (tile, component), largest plane first
        size_t first_bytes = 4, upper_bytes = 4, lower_bytes = 4;
        for (size_t t = 0; t < frame.planes.size(); ++t)
            for (size_t c = 0; c < frame.planes[t].components.size(); ++c) {
                const ComponentPlane &p = frame.planes[t].components[c];
                if (p.out_rect.empty()) continue;
                order.emplace_back(t, c);
                first_bytes = std::max(first_bytes, p.samples() * 4);
                upper_bytes = std::max(upper_bytes, reconstruct_gpu_upper_bytes(p));
                lower_bytes = std::max(lower_bytes, reconstruct_gpu_lower_bytes(p));
            }
        auto plane = [&](const std::pair<size_t, size_t> &tc) -> const ComponentPlane & {
            return frame.planes[tc.first].components[tc.second];
        };
        std::stable_sort(order.begin(), order.end(),
                         [&](const auto &a, const auto &b) { return plane(a).samples() > plane(b).samples(); });
        auto *coefficients = slot.coefficients.as<int32_t>();
        auto *scratch =
            static_cast<unsigned char *>(slot.scratch.reserve(first_bytes + upper_bytes + Slot::kLanes * lower_bytes));
        void *upper = scratch + first_bytes;
        int32_t *free_area = reinterpret_cast<int32_t *>(scratch);
        frame.reconstructed.assign(frame.planes.size(), {});
        for (size_t t = 0; t < frame.planes.size(); ++t)
            frame.reconstructed[t].resize(frame.planes[t].components.size());
        check_cuda(cudaStreamWaitEvent(st, slot.tier1_done.get(), 0), "cudaStreamWaitEvent");
        slot.fork.record(st);
        size_t lanes_used = 0;
        for (const auto &tc : order) {
            const ComponentPlane &p = plane(tc);
            int32_t *in = coefficients + frame.offset[tc.first][tc.second];
            void *lower = nullptr;
            if (reconstruct_has_lower_levels(p)) {
                const size_t k = lanes_used % Slot::kLanes;
                cudaStream_t lane = slot.lanes[k].get();
                const CudaEvent &free = lanes_used < Slot::kLanes ? slot.fork : slot.upper_done[k];
                check_cuda(cudaStreamWaitEvent(lane, free.get(), 0), "cudaStreamWaitEvent");
                lower = scratch + first_bytes + upper_bytes + k * lower_bytes;
                reconstruct_lower_gpu(p, in, lower, lane);
                slot.lower_done[k].record(lane);
                check_cuda(cudaStreamWaitEvent(st, slot.lower_done[k].get(), 0), "cudaStreamWaitEvent");
                reconstruct_upper_gpu(p, in, free_area, upper, lower, st);
                slot.upper_done[k].record(st);
                ++lanes_used;
            } else {
                reconstruct_upper_gpu(p, in, free_area, upper, lower, st);
            }
            if (reconstructs_in_place(p)) {
                frame.reconstructed[tc.first][tc.second] = {in, p.stride};
            } else {
                frame.reconstructed[tc.first][tc.second] = {free_area, p.out_rect.width()};
                free_area = in;
            }
        }
        check_cuda(cudaEventRecord(slot.reconstructed.get(), st), "cudaEventRecord");
    }

    /** Inverse MCT, clip and pack of a reconstructed frame into the caller's planes (caller's thread). */
    void write_output(Frame &frame, const j2kc_image &output)
    {
        ContextScope scope(config_.cuda_context, config_.device);
        const ParsedStream &s = frame.stream;
        OutputPlacement placement = check_output(s, output);
        const uint32_t n = output.num_components;
        std::vector<bool> mct(frame.planes.size());
        for (size_t t = 0; t < frame.planes.size(); ++t) mct[t] = tile_uses_mct(frame.planes[t], n);

        Slot &slot = *frame.slot;
        cudaStream_t os = gpu_->out.get();
        // Whatever is enqueued on `os` is waited for if this throws, so that
        // no DMA still runs into the caller's planes or our buffers after.
        struct SyncOnThrow {
            cudaStream_t stream;
            int exceptions = std::uncaught_exceptions();
            ~SyncOnThrow()
            {
                if (std::uncaught_exceptions() > exceptions) cudaStreamSynchronize(stream);
            }
        } sync_on_throw{os};
        j2kc_image device_image = output;
        const bool host = output.memory == J2KC_MEMORY_HOST;
        HostOutputMirror &mirror = gpu_->mirror;
        if (host) {
            // Before the wait for the reconstruction: the mirrors of groups
            // with gaps go up while the GPU may still reconstruct.
            mirror.prepare(output, workers_ + 1);
            if (!mirror.upload_bands().empty()) {  // the bytes between our samples, into the staging buffer
                BandCopy copy(*this, mirror.upload_bands());
                copy.run_all(mirror.upload_bands().size());
            }
            mirror.upload(os);
            device_image.components = const_cast<j2kc_component *>(mirror.components());
            device_image.memory = J2KC_MEMORY_CUDA;
        }
        check_cuda(cudaStreamWaitEvent(os, slot.reconstructed.get(), 0), "cudaStreamWaitEvent");
        check_cuda(cudaEventRecord(gpu_->pack_start.get(), os), "cudaEventRecord");
        placement.image = &device_image;
        for (size_t t = 0; t < frame.planes.size(); ++t) {
            const TileCoefficients &tile = frame.planes[t];
            auto emit = [&](uint32_t first, uint32_t count, bool with_mct) {
                const ComponentPlane &p0 = tile.components[first];
                if (p0.out_rect.empty()) return;
                std::vector<j2kc_component> outs;
                std::vector<size_t> strides;
                std::vector<SampleFormat> formats;
                std::vector<int32_t *> ptrs;
                for (uint32_t c = first; c < first + count; ++c) {
                    const ComponentPlane &p = tile.components[c];
                    outs.push_back(tile_view(device_image.components[c], p.out_rect, placement.origin_x[c],
                                             placement.origin_y[c]));
                    strides.push_back(frame.reconstructed[t][c].stride);
                    formats.push_back({p.precision, p.is_signed});
                    ptrs.push_back(frame.reconstructed[t][c].data);
                }
                if (p0.wavelet == Wavelet::kReversible53) {
                    std::vector<const int32_t *> in(ptrs.begin(), ptrs.end());
                    color_inverse_gpu(in.data(), strides.data(), formats.data(), count, with_mct, outs.data(), os);
                } else {
                    std::vector<const float *> in;
                    for (int32_t *q : ptrs) in.push_back(reinterpret_cast<const float *>(q));
                    color_inverse_gpu(in.data(), strides.data(), formats.data(), count, with_mct, outs.data(), os);
                }
            };
            uint32_t c = 0;
            if (mct[t]) {
                emit(0, 3, true);
                c = 3;
            }
            for (; c < n; ++c) emit(c, 1, false);
        }
        check_cuda(cudaEventRecord(gpu_->packed.get(), os), "cudaEventRecord");
        if (host) mirror.download(os);
        check_cuda(cudaEventRecord(gpu_->downloaded.get(), os), "cudaEventRecord");
        // Staged groups: each piece's bands are copied into the caller's
        // planes (by this thread and idle workers) once the piece is down,
        // while the next pieces come down.
        const size_t pieces = host ? mirror.pieces().size() : 0;
        Clock::time_point first_piece{};
        if (pieces) {
            BandCopy copy(*this, mirror.download_bands());
            for (size_t p = 0; p < pieces; ++p) {
                while (!mirror.piece_ready(p))
                    if (!copy.help()) {
                        mirror.piece_event(p).sync();
                        break;
                    }
                if (p == 0) first_piece = Clock::now();
                copy.publish(mirror.pieces()[p].bands_end);
            }
            copy.run_all(mirror.download_bands().size());
        }  // every band is copied here
        gpu_->out.sync();
        // Download: GPU time from the end of the pack, plus (staged) the wall
        // time from the first piece down to the last byte in the caller's planes.
        const double download_ms = pieces ? elapsed_ms(gpu_->packed, mirror.piece_event(0)) + ms_since(first_piece)
                                          : elapsed_ms(gpu_->packed, gpu_->downloaded);

        std::lock_guard<std::mutex> lock(mutex_);
        times_.upload += elapsed_ms(slot.start, slot.uploaded);
        times_.dwt += elapsed_ms(slot.tier1_done, slot.reconstructed);
        // A batch's frames share its time.
        if (gpu_tier1_) times_.tier1 += elapsed_ms(slot.tier1_start, slot.tier1_done) / double(frame.batch_frames);
        times_.color += elapsed_ms(gpu_->pack_start, gpu_->packed);
        times_.download += download_ms;
    }

    /** Everything that lives in the GPU's context. */
    struct GpuState {
        GpuState(const j2kc_decoder_config &c, size_t slots, CudaDecoder *owner)
            : own_out(c.cuda_stream ? CudaStream() : CudaStream(cudaStreamNonBlocking, priority.greatest)),
              out(c.cuda_stream ? c.cuda_stream : own_out.get(), c.cuda_context, c.device)
        {
            for (size_t i = 0; i < slots; ++i) this->slots.push_back(std::make_unique<Slot>(priority));
            for (size_t i = 0; i < kTier1BatchStreams; ++i)
                batches.push_back(std::make_unique<BatchStream>(priority, owner));
        }
        StreamPriorities priority;
        CudaStream own_out;  ///< without a caller's stream: ours, as high as the reconstruction
        StreamHolder out;    ///< the caller's stream (or own_out): packing into the caller's planes
        Event pack_start, packed, downloaded;
        HostOutputMirror mirror;
        std::vector<std::unique_ptr<Slot>> slots;  ///< one a queue entry
        std::vector<std::unique_ptr<BatchStream>> batches;
    };

    j2kc_decoder_config config_;
    Logger log_;
    int device_ = 0;  ///< the device of the context the decoder runs in
    size_t depth_;
    bool gpu_tier1_;  ///< Tier-1 on the GPU (tier1_on_gpu), else on the workers
    unsigned workers_;
    std::unique_ptr<GpuState> gpu_;
    std::vector<Tier1Scratch> scratch_;  ///< per worker

    FrameQueue queue_;  ///< the frames in flight; its entries index slots and frames_
    /// The frame of each entry, from submit to receive (the caller's thread
    /// alone sets and clears them; workers reach a frame through a task).
    std::vector<std::unique_ptr<Frame>> frames_;

    mutable std::mutex mutex_;
    std::condition_variable work_;       ///< workers: new work (a frame, code-blocks, a band, a batch stream free)
    std::condition_variable copied_;     ///< write_output: the bands taken are all copied
    std::condition_variable runs_done_;  ///< share_runs: the workers given runs are all back
    SharedRuns shared_runs_;
    // The host copy in progress (BandCopy), under mutex_: bands [0, published)
    // may be taken, [0, next) are taken, `done` of them are copied.
    const std::vector<CopyBand> *copy_bands_ = nullptr;
    size_t copy_published_ = 0, copy_next_ = 0, copy_done_ = 0;
    std::vector<CopyBand> submit_bands_;  ///< copy_in's bands (the caller's thread alone)
    std::deque<Frame *> cpu_tier1_;       ///< CPU Tier-1: frames with code-blocks not handed out, oldest first
    std::vector<Frame *> tier1_ready_;    ///< GPU Tier-1: frames uploaded, waiting for a batch
    std::deque<Frame *> host_tier1_;      ///< GPU Tier-1: frames with host ranks not handed out, oldest first
    bool launching_ = false;              ///< a worker is launching a batch
    bool stop_ = false;
    std::vector<std::thread> threads_;
    j2kc_stage_times times_{};
};

}  // namespace

std::unique_ptr<Decoder> create_cuda_decoder(const j2kc_decoder_config &config, const Logger &log)
{
    return std::make_unique<CudaDecoder>(config, log);
}

}  // namespace j2kc
