/**
 * @file host_output_mirror.cuh
 * @brief The CUDA decoder's way to host output planes: device mirrors of
 * the caller's planes, which the GPU packs into, and the copies that bring
 * them down (DMA into page-locked planes, or into a pinned staging buffer
 * and from there by CPU copies in bands that several threads share).
 */
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/cuda_util.cuh"
#include "j2kc.h"

namespace j2kc {

/**
 * One band of a CPU copy between the caller's host planes and the pinned
 * staging buffer: `rows` rows of `row_bytes`, each pitch apart on its side.
 * Bands are 64 KiB to 4 MiB, about four a thread (some 800 KB of a DCI 4K
 * frame with 17 threads), so that the caller's thread and the idle workers
 * share a frame's copy.
 */
struct CopyBand {
    uint8_t *dst;
    const uint8_t *src;
    size_t dst_pitch, src_pitch, row_bytes, rows;
};

/** Copies the band (on the calling thread). */
void copy_band(const CopyBand &b);

/** A CudaEvent with timing on, made when its owner is, in the decoder's context. */
struct TimedEvent : CudaEvent {
    TimedEvent() : CudaEvent(cudaEventDefault) {}
};

/**
 * Host output planes mirrored in device memory. Components whose byte ranges
 * overlap (packed formats) share one mirror (a group). When a group's samples
 * fill its rows without gaps (planar planes, xyz12 and the like) only those
 * row bytes come back and nothing goes up first; otherwise the mirror starts
 * as a copy of the host bytes and the whole range comes back, so that
 * whatever lies between our samples survives.
 *
 * A group in page-locked memory (cudaMallocHost, cudaHostRegister) goes up
 * and down by DMA straight from and into the caller's bytes. A pageable one
 * goes through a pinned staging buffer: a DMA from pageable memory is a
 * staged copy the driver makes on the caller's thread, slow, and it holds up
 * the other frames' work on the GPU. The CPU copies between the caller's
 * bytes and the staging buffer are cut into bands (upload_bands,
 * download_bands) that the decoder spreads over threads; the download is cut
 * into pieces, each with an event, so that the bands of the first pieces are
 * copied while the later ones still come down.
 */
class HostOutputMirror {
public:
    /** A DMA of a piece of the download: device mirror to staging. */
    struct Copy2D {
        void *dst;
        const void *src;
        size_t dst_pitch, src_pitch, width, height;
    };
    /** Pieces of the download, in stream order; a piece's bands may be copied once its event is done. */
    struct Piece {
        size_t copies_end;  ///< its DMAs end here in copies_
        size_t bands_end;   ///< its bands end here in download_bands()
    };

    /**
     * Lays out the groups, sizes the device mirrors and the staging buffer
     * (grow-only), and cuts the staged groups into bands fit for `threads`
     * threads. Enqueues nothing: the caller first runs upload_bands() (the
     * bytes between our samples into the staging buffer), then upload().
     */
    void prepare(const j2kc_image &host, unsigned threads);

    /** Bands that copy the host bytes of the staged groups with gaps into the staging buffer (before upload()). */
    const std::vector<CopyBand> &upload_bands() const { return upload_bands_; }

    /** The host bytes of the groups with gaps go up (from the staging buffer, or straight when page-locked). */
    void upload(cudaStream_t stream);

    const j2kc_component *components() const { return device_components_.data(); }

    /**
     * Enqueues the download: the staged groups' pieces into the staging
     * buffer, each followed by its event, then the page-locked groups
     * straight into the caller's bytes.
     */
    void download(cudaStream_t stream);

    /** Bands that copy the staging buffer into the caller's bytes, piece after piece. */
    const std::vector<CopyBand> &download_bands() const { return download_bands_; }
    const std::vector<Piece> &pieces() const { return pieces_; }
    const TimedEvent &piece_event(size_t p) const { return *events_[p]; }

    /** Whether piece p is in the staging buffer (without waiting). */
    bool piece_ready(size_t p) const;

private:
    struct Group {
        uint64_t begin, end;  ///< the caller's bytes
        std::vector<uint32_t> members;
        bool dense;        ///< samples fill each row span: no upload, rows only back
        size_t pitch;      ///< row stride of the members
        size_t row_bytes;  ///< bytes of samples in a row
        size_t rows;
        uint8_t *device;   ///< the mirror
        bool staged;       ///< pageable: through the staging buffer, at staged_at
        size_t staged_at;  ///< rows are row_bytes apart there (two_d), else the range as it is
        /** Dense with padded rows: only the row spans move. */
        bool two_d() const { return dense && pitch != row_bytes; }
    };

    static size_t align_up(size_t v) { return (v + 4095) & ~size_t{4095}; }

    /** Whether the caller's range is page-locked (a DMA can reach it without the driver's staging). */
    static bool page_locked(uint64_t begin, uint64_t end);

    /** Whether the group's samples cover its rows contiguously, as one interleaved or planar plane. */
    static void describe_rows(const j2kc_image &host, Group &grp);

    std::vector<Group> groups_;
    std::vector<DeviceBuffer> buffers_;
    std::vector<j2kc_component> device_components_;
    PinnedBuffer staging_;  ///< the staged groups, one after the other
    std::vector<CopyBand> upload_bands_, download_bands_;
    std::vector<Copy2D> copies_;
    std::vector<Piece> pieces_;
    std::vector<std::unique_ptr<TimedEvent>> events_;  ///< one a piece, made as pieces grow in number
};

}  // namespace j2kc
