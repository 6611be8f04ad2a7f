/**
 * @file api.cpp
 * @brief The extern "C" boundary: checks arguments, turns exceptions into
 * status codes with one log line, and never lets anything escape.
 */
#include <cstddef>
#include <cstring>
#include <new>
#include <vector>

#include "common/log.h"
#include "common/status.h"
#include "pipeline/decoder.h"
#include "pipeline/encoder.h"
#include "pipeline/host_memory.h"

struct j2kc_encoder {
    j2kc::Logger log;
    std::unique_ptr<j2kc::Encoder> impl;
    std::vector<uint8_t> packet;  // backs the last j2kc_packet handed out
};

struct j2kc_decoder {
    j2kc::Logger log;
    std::unique_ptr<j2kc::Decoder> impl;
};

namespace {

/** Runs f, mapping every exception to a status and one log line. */
template <typename F>
int guarded(const j2kc::Logger &log, const char *what, F &&f)
{
    try {
        f();
        return J2KC_OK;
    } catch (const j2kc::Error &e) {
        if (e.status() != J2KC_ERR_AGAIN && e.status() != J2KC_ERR_EOF)
            log.log(J2KC_LOG_ERROR, "%s: %s", what, e.what());
        return e.status();
    } catch (const std::bad_alloc &) {
        log.log(J2KC_LOG_ERROR, "%s: out of memory", what);
        return J2KC_ERR_NOMEM;
    } catch (const std::exception &e) {
        log.log(J2KC_LOG_ERROR, "%s: internal error: %s", what, e.what());
        return J2KC_ERR_INTERNAL;
    } catch (...) {
        log.log(J2KC_LOG_ERROR, "%s: internal error", what);
        return J2KC_ERR_INTERNAL;
    }
}

bool struct_ok(size_t given, size_t ours) { return given >= sizeof(size_t) && given <= ours; }

}  // namespace

extern "C" {

unsigned j2kc_version(void) { return J2KC_VERSION_MAJOR << 16 | J2KC_VERSION_MINOR << 8 | J2KC_VERSION_PATCH; }

const char *j2kc_status_string(int status)
{
    switch (status) {
    case J2KC_OK: return "success";
    case J2KC_ERR_NOMEM: return "out of memory";
    case J2KC_ERR_INVALID_ARG: return "invalid argument";
    case J2KC_ERR_INVALID_DATA: return "invalid data";
    case J2KC_ERR_UNSUPPORTED: return "unsupported feature";
    case J2KC_ERR_CUDA: return "CUDA error";
    case J2KC_ERR_NO_DEVICE: return "no usable CUDA device";
    case J2KC_ERR_LIMIT: return "resource limit exceeded";
    case J2KC_ERR_AGAIN: return "try again";
    case J2KC_ERR_EOF: return "end of stream";
    case J2KC_ERR_INTERNAL: return "internal error";
    default: return "unknown status";
    }
}

void j2kc_image_fill_sizes(j2kc_image *image)
{
    if (!image || !image->components) return;
    for (uint32_t c = 0; c < image->num_components; ++c) {
        j2kc_component &k = image->components[c];
        const uint32_t dx = k.dx ? k.dx : 1, dy = k.dy ? k.dy : 1;
        k.width = (image->width + dx - 1) / dx;
        k.height = (image->height + dy - 1) / dy;
    }
}

void j2kc_encoder_config_default(j2kc_encoder_config *c)
{
    if (!c) return;
    std::memset(c, 0, sizeof(*c));
    c->struct_size = sizeof(*c);
    c->backend = J2KC_BACKEND_AUTO;
    c->levels = -1;
    c->cblk_width_log2 = c->cblk_height_log2 = 6;
    c->progression = J2KC_PROG_LRCP;
    c->layers = 1;
    c->mct = -1;
    c->guard_bits = -1;
    c->quality = 1.0;
}

int j2kc_encoder_create(j2kc_encoder **encoder, const j2kc_encoder_config *config, const j2kc_image *shape)
{
    if (!encoder) return J2KC_ERR_INVALID_ARG;
    *encoder = nullptr;
    if (!config || !shape || !struct_ok(config->struct_size, sizeof(*config))) return J2KC_ERR_INVALID_ARG;
    j2kc_encoder_config cfg;
    j2kc_encoder_config_default(&cfg);
    std::memcpy(&cfg, config, config->struct_size);  // older, shorter structs keep our defaults
    j2kc::Logger log{cfg.log, cfg.log_opaque};
    if (cfg.frames_in_flight < 0 || cfg.frames_in_flight > 16) {
        log.log(J2KC_LOG_ERROR, "encoder: frames_in_flight %d is outside 0..16", cfg.frames_in_flight);
        return J2KC_ERR_INVALID_ARG;
    }
    auto *e = new (std::nothrow) j2kc_encoder{log, nullptr, {}};
    if (!e) return J2KC_ERR_NOMEM;
    const int status = guarded(log, "encoder", [&] { e->impl = j2kc::create_encoder(cfg, *shape, log); });
    if (status != J2KC_OK) {
        delete e;
        return status;
    }
    *encoder = e;
    return J2KC_OK;
}

void j2kc_encoder_free(j2kc_encoder **encoder)
{
    if (!encoder || !*encoder) return;
    delete *encoder;
    *encoder = nullptr;
}

j2kc_backend j2kc_encoder_backend(const j2kc_encoder *encoder)
{
    return encoder && encoder->impl ? encoder->impl->backend() : J2KC_BACKEND_AUTO;
}

int j2kc_encoder_submit(j2kc_encoder *encoder, const j2kc_image *image, int64_t tag)
{
    if (!encoder || !image || !struct_ok(image->struct_size, sizeof(*image))) return J2KC_ERR_INVALID_ARG;
    return guarded(encoder->log, "encode", [&] {
        if (!encoder->impl->submit(*image, tag)) throw j2kc::Error(J2KC_ERR_AGAIN, "queue full");
    });
}

int j2kc_encoder_receive(j2kc_encoder *encoder, j2kc_packet *packet, int flush)
{
    if (!encoder || !packet) return J2KC_ERR_INVALID_ARG;
    return guarded(encoder->log, "encode", [&] {
        int64_t tag = 0;
        if (!encoder->impl->receive(encoder->packet, tag, flush != 0))
            throw j2kc::Error(flush ? J2KC_ERR_EOF : J2KC_ERR_AGAIN, "no packet");
        packet->data = encoder->packet.data();
        packet->size = encoder->packet.size();
        packet->tag = tag;
    });
}

int j2kc_encode(j2kc_encoder *encoder, const j2kc_image *image, j2kc_packet *packet)
{
    int status = j2kc_encoder_submit(encoder, image, 0);
    if (status != J2KC_OK) return status;
    status = j2kc_encoder_receive(encoder, packet, 1);
    return status == J2KC_ERR_EOF ? J2KC_ERR_INTERNAL : status;
}

int j2kc_encoder_stage_times(const j2kc_encoder *encoder, j2kc_stage_times *times)
{
    if (!encoder || !times) return J2KC_ERR_INVALID_ARG;
    *times = encoder->impl->stage_times();
    return J2KC_OK;
}

void j2kc_decoder_config_default(j2kc_decoder_config *c)
{
    if (!c) return;
    std::memset(c, 0, sizeof(*c));
    c->struct_size = sizeof(*c);
    c->backend = J2KC_BACKEND_AUTO;
    c->tier1_on_gpu = -1;
}

int j2kc_decoder_create(j2kc_decoder **decoder, const j2kc_decoder_config *config)
{
    if (!decoder) return J2KC_ERR_INVALID_ARG;
    *decoder = nullptr;
    if (!config || !struct_ok(config->struct_size, sizeof(*config))) return J2KC_ERR_INVALID_ARG;
    j2kc_decoder_config cfg;
    j2kc_decoder_config_default(&cfg);
    std::memcpy(&cfg, config, config->struct_size);
    j2kc::Logger log{cfg.log, cfg.log_opaque};
    auto *d = new (std::nothrow) j2kc_decoder{log, nullptr};
    if (!d) return J2KC_ERR_NOMEM;
    const int status = guarded(log, "decoder", [&] { d->impl = j2kc::create_decoder(cfg, log); });
    if (status != J2KC_OK) {
        delete d;
        return status;
    }
    *decoder = d;
    return J2KC_OK;
}

void j2kc_decoder_free(j2kc_decoder **decoder)
{
    if (!decoder || !*decoder) return;
    delete *decoder;
    *decoder = nullptr;
}

j2kc_backend j2kc_decoder_backend(const j2kc_decoder *decoder)
{
    return decoder && decoder->impl ? decoder->impl->backend() : J2KC_BACKEND_AUTO;
}

int j2kc_decoder_parse(j2kc_decoder *decoder, const uint8_t *data, size_t size, j2kc_stream_info *info)
{
    if (!decoder || !data || !info || !struct_ok(info->struct_size, sizeof(*info))) return J2KC_ERR_INVALID_ARG;
    // The description is built whole, and only the caller's struct_size bytes
    // of it go back: a caller built against an older, shorter struct gets the
    // fields it knows and nothing past its struct.
    j2kc_stream_info full;
    std::memset(&full, 0, sizeof(full));
    std::memcpy(&full, info, info->struct_size);
    if (info->struct_size < offsetof(j2kc_stream_info, components_capacity) + sizeof(full.components_capacity))
        full.components = nullptr;  // no capacity given: no component array either
    const int status = guarded(decoder->log, "decode", [&] { decoder->impl->parse(data, size, full); });
    if (status == J2KC_OK) {
        full.struct_size = info->struct_size;
        std::memcpy(info, &full, info->struct_size);
    }
    return status;
}

int j2kc_decode(j2kc_decoder *decoder, const uint8_t *data, size_t size, const j2kc_image *output)
{
    if (!decoder || !data || !output || !struct_ok(output->struct_size, sizeof(*output))) return J2KC_ERR_INVALID_ARG;
    return guarded(decoder->log, "decode", [&] { decoder->impl->decode(data, size, *output); });
}

int j2kc_decoder_submit(j2kc_decoder *decoder, const uint8_t *data, size_t size, int64_t tag)
{
    if (!decoder || !data || size == 0) return J2KC_ERR_INVALID_ARG;
    return guarded(decoder->log, "decode", [&] {
        if (!decoder->impl->submit(data, size, tag)) throw j2kc::Error(J2KC_ERR_AGAIN, "queue full");
    });
}

int j2kc_decoder_receive(j2kc_decoder *decoder, const j2kc_image *output, int64_t *tag, int flush)
{
    if (!decoder || !tag || (output && !struct_ok(output->struct_size, sizeof(*output)))) return J2KC_ERR_INVALID_ARG;
    return guarded(decoder->log, "decode", [&] {
        if (!decoder->impl->receive(output, *tag, flush != 0))
            throw j2kc::Error(flush ? J2KC_ERR_EOF : J2KC_ERR_AGAIN, "no frame");
    });
}

int j2kc_decoder_host_alloc(j2kc_decoder *decoder, size_t size, void **data)
{
    if (data) *data = nullptr;
    if (!decoder || !data || size == 0) return J2KC_ERR_INVALID_ARG;
    return guarded(decoder->log, "host memory",
                   [&] { *data = j2kc::host_memory_allocate(size, decoder->impl->download_device()); });
}

void j2kc_host_free(void *data) { j2kc::host_memory_free(data); }

int j2kc_decoder_reset(j2kc_decoder *decoder)
{
    if (!decoder) return J2KC_ERR_INVALID_ARG;
    return guarded(decoder->log, "decoder reset", [&] { decoder->impl->reset(); });
}

int j2kc_decoder_stage_times(const j2kc_decoder *decoder, j2kc_stage_times *times)
{
    if (!decoder || !times) return J2KC_ERR_INVALID_ARG;
    *times = decoder->impl->stage_times();
    return J2KC_OK;
}

}  // extern "C"
