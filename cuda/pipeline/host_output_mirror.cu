/**
 * @file host_output_mirror.cu
 * @brief HostOutputMirror (host_output_mirror.cuh): the layout of the
 * caller's planes into mirror groups, the bands and pieces of the staged
 * copies, and the DMAs of a frame's output.
 */
#include "pipeline/host_output_mirror.cuh"

#include <algorithm>
#include <cstring>

#include "common/status.h"
#include "pipeline/reconstruct.h"

namespace j2kc {

void copy_band(const CopyBand &b)
{
    if (b.rows == 1 || (b.dst_pitch == b.row_bytes && b.src_pitch == b.row_bytes)) {
        std::memcpy(b.dst, b.src, b.row_bytes * b.rows);
        return;
    }
    for (size_t r = 0; r < b.rows; ++r) std::memcpy(b.dst + r * b.dst_pitch, b.src + r * b.src_pitch, b.row_bytes);
}

void HostOutputMirror::prepare(const j2kc_image &host, unsigned threads)
{
    const uint32_t n = host.num_components;
    groups_.clear();
    upload_bands_.clear();
    download_bands_.clear();
    copies_.clear();
    pieces_.clear();
    device_components_.assign(host.components, host.components + n);
    std::vector<uint32_t> order(n);
    for (uint32_t c = 0; c < n; ++c) order[c] = c;
    std::sort(order.begin(), order.end(),
              [&](uint32_t a, uint32_t b) { return host.components[a].data < host.components[b].data; });
    for (uint32_t c : order) {
        const uint64_t begin = host.components[c].data, end = begin + component_span(host.components[c]);
        if (!groups_.empty() && begin < groups_.back().end) {
            groups_.back().end = std::max(groups_.back().end, end);
            groups_.back().members.push_back(c);
        } else {
            Group g{};
            g.begin = begin;
            g.end = end;
            g.members = {c};
            groups_.push_back(std::move(g));
        }
    }
    if (buffers_.size() < groups_.size()) buffers_.resize(groups_.size());
    size_t staged_bytes = 0;
    for (size_t g = 0; g < groups_.size(); ++g) {
        Group &grp = groups_[g];
        describe_rows(host, grp);
        const size_t bytes = grp.end - grp.begin;
        grp.device = static_cast<uint8_t *>(buffers_[g].reserve(std::max<size_t>(bytes, 1)));
        for (uint32_t c : grp.members)
            device_components_[c].data = reinterpret_cast<uint64_t>(grp.device) + (host.components[c].data - grp.begin);
        grp.staged = bytes && !page_locked(grp.begin, grp.end);
        if (grp.staged) {
            grp.staged_at = staged_bytes;
            staged_bytes += align_up(grp.two_d() ? grp.row_bytes * grp.rows : bytes);
        }
    }
    if (!staged_bytes) return;
    auto *staging = static_cast<uint8_t *>(staging_.reserve(staged_bytes));
    // Bands: about four a thread, within [64 KiB, 4 MiB]; pieces: about 8 a frame.
    const size_t band =
        std::clamp<size_t>(staged_bytes / (4 * size_t{std::max(threads, 1u)}), size_t{64} << 10, size_t{4} << 20);
    const size_t piece = std::max(band, staged_bytes / 8);
    size_t in_piece = 0;
    for (Group &grp : groups_) {
        if (!grp.staged) continue;
        uint8_t *host_bytes = reinterpret_cast<uint8_t *>(grp.begin);
        uint8_t *stage = staging + grp.staged_at;
        // Units are rows of a dense group with padded rows, else bytes of the whole range.
        const size_t units = grp.two_d() ? grp.rows : grp.end - grp.begin;
        const size_t unit_bytes = grp.two_d() ? grp.row_bytes : 1;
        const size_t host_pitch = grp.two_d() ? grp.pitch : 0;
        const size_t per_band = std::max<size_t>(1, band / unit_bytes);
        auto band_at = [&](size_t u0, size_t u1, bool down) {
            uint8_t *h = host_bytes + u0 * (grp.two_d() ? host_pitch : 1);
            uint8_t *s = stage + u0 * unit_bytes;
            const size_t row = grp.two_d() ? grp.row_bytes : u1 - u0;
            const size_t rows = grp.two_d() ? u1 - u0 : 1;
            return down ? CopyBand{h, s, host_pitch, row, row, rows} : CopyBand{s, h, row, host_pitch, row, rows};
        };
        size_t copy_from = 0;  // first unit of the piece's DMA still open in this group
        for (size_t u0 = 0; u0 < units; u0 += per_band) {
            const size_t u1 = std::min(units, u0 + per_band);
            if (!grp.dense) upload_bands_.push_back(band_at(u0, u1, false));
            download_bands_.push_back(band_at(u0, u1, true));
            in_piece += (u1 - u0) * unit_bytes;
            const bool close_piece = in_piece >= piece;
            if (close_piece || u1 == units) {
                if (grp.two_d())
                    copies_.push_back({stage + copy_from * unit_bytes, grp.device + copy_from * grp.pitch,
                                       grp.row_bytes, grp.pitch, grp.row_bytes, u1 - copy_from});
                else
                    copies_.push_back(
                        {stage + copy_from, grp.device + copy_from, u1 - copy_from, u1 - copy_from, u1 - copy_from, 1});
                copy_from = u1;
            }
            if (close_piece) {
                pieces_.push_back({copies_.size(), download_bands_.size()});
                in_piece = 0;
            }
        }
    }
    if (pieces_.empty() || pieces_.back().bands_end != download_bands_.size())
        pieces_.push_back({copies_.size(), download_bands_.size()});
    while (events_.size() < pieces_.size()) events_.emplace_back(std::make_unique<TimedEvent>());
}

void HostOutputMirror::upload(cudaStream_t stream)
{
    for (const Group &grp : groups_) {
        if (grp.dense || grp.end == grp.begin) continue;
        const void *src = grp.staged ? static_cast<const void *>(staging_.as<uint8_t>() + grp.staged_at)
                                     : reinterpret_cast<const void *>(grp.begin);
        check_cuda(cudaMemcpyAsync(grp.device, src, grp.end - grp.begin, cudaMemcpyHostToDevice, stream),
                   "upload of the output planes");
    }
}

void HostOutputMirror::download(cudaStream_t stream)
{
    size_t c = 0;
    for (size_t p = 0; p < pieces_.size(); ++p) {
        for (; c < pieces_[p].copies_end; ++c) {
            const Copy2D &k = copies_[c];
            check_cuda(cudaMemcpy2DAsync(k.dst, k.dst_pitch, k.src, k.src_pitch, k.width, k.height,
                                         cudaMemcpyDeviceToHost, stream),
                       "download of the output planes");
        }
        check_cuda(cudaEventRecord(events_[p]->get(), stream), "cudaEventRecord");
    }
    for (const Group &grp : groups_) {
        if (grp.staged || grp.end == grp.begin) continue;
        if (grp.two_d())
            check_cuda(cudaMemcpy2DAsync(reinterpret_cast<void *>(grp.begin), grp.pitch, grp.device, grp.pitch,
                                         grp.row_bytes, grp.rows, cudaMemcpyDeviceToHost, stream),
                       "download of the output planes");
        else
            check_cuda(cudaMemcpyAsync(reinterpret_cast<void *>(grp.begin), grp.device, grp.end - grp.begin,
                                       cudaMemcpyDeviceToHost, stream),
                       "download of the output planes");
    }
}

bool HostOutputMirror::piece_ready(size_t p) const
{
    const cudaError_t e = cudaEventQuery(events_[p]->get());
    if (e == cudaErrorNotReady) return false;
    check_cuda(e, "cudaEventQuery");
    return true;
}

bool HostOutputMirror::page_locked(uint64_t begin, uint64_t end)
{
    for (uint64_t at : {begin, end - 1}) {
        cudaPointerAttributes a{};
        if (cudaPointerGetAttributes(&a, reinterpret_cast<const void *>(at)) != cudaSuccess) {
            cudaGetLastError();  // older runtimes: "invalid value" for pageable memory
            return false;
        }
        if (a.type != cudaMemoryTypeHost) return false;
    }
    return true;
}

void HostOutputMirror::describe_rows(const j2kc_image &host, Group &grp)
{
    grp.dense = false;
    const j2kc_component &k0 = host.components[grp.members[0]];
    if (k0.row_stride <= 0 || k0.width == 0 || k0.height == 0) return;
    uint64_t covered = 0;
    for (uint32_t c : grp.members) {  // members are sorted by address
        const j2kc_component &k = host.components[c];
        if (k.row_stride != k0.row_stride || k.sample_stride != k0.sample_stride || k.width != k0.width ||
            k.height != k0.height || k.data - grp.begin != covered)
            return;
        covered += k.bytes_per_sample;
    }
    if (covered != k0.sample_stride) return;
    const uint64_t row_bytes = uint64_t{k0.width} * k0.sample_stride;
    if (row_bytes > uint64_t(k0.row_stride)) return;
    grp.dense = true;
    grp.pitch = size_t(k0.row_stride);
    grp.row_bytes = size_t(row_bytes);
    grp.rows = k0.height;
}

}  // namespace j2kc
