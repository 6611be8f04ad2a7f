/**
 * @file fuzz_decoder.cpp
 * @brief libFuzzer target for the whole decoder (ISO/IEC 15444-1 Annex A
 * codestream and Annex I JP2 parse, Tier-2, Tier-1, dequantisation, inverse
 * DWT and colour) through the public C API on the CPU backend.
 *
 * Input layout: byte 0 selects decoder options (so the fuzzer explores
 * reduce, layer limits and output packing too), the rest is the file.
 *   bits 0-2: reduce 0..7   bits 3-5: layers 0..7 (0 = all)
 *   bit 6: 16-bit output words instead of 32-bit   bit 7: decode fewer components
 * Limits are small so that one input costs milliseconds, not seconds: what
 * the fuzzer should find is memory errors, UB, leaks and hangs, not slowness
 * on images that the limits exist to refuse.
 */
#include <cstdint>
#include <cstring>
#include <vector>

#include "j2kc.h"

namespace {

void quiet(void *, int, const char *) {}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    const uint8_t options = data[0];
    ++data;
    --size;

    j2kc_decoder_config cfg;
    j2kc_decoder_config_default(&cfg);
    cfg.backend = J2KC_BACKEND_CPU;
    cfg.threads = 2;  // two, so that Tier-2's runs read at once (tile-parts, PLT) meet hostile headers too
    cfg.log = quiet;
    cfg.reduce = options & 7;
    cfg.layers = (options >> 3) & 7;
    cfg.max_pixels = 1u << 20;
    cfg.max_components = 16;
    cfg.max_tiles = 256;
    cfg.max_memory = 64u << 20;
    cfg.max_tile_components = 1024;
    j2kc_decoder *dec = nullptr;
    if (j2kc_decoder_create(&dec, &cfg) != J2KC_OK) __builtin_trap();

    std::vector<j2kc_component_info> ci(16);
    j2kc_stream_info info;
    std::memset(&info, 0, sizeof(info));
    info.struct_size = sizeof(info);
    info.components = ci.data();
    info.components_capacity = static_cast<uint32_t>(ci.size());
    if (j2kc_decoder_parse(dec, data, size, &info) == J2KC_OK) {
        // parse() promised these limits: a stream past them must have been refused.
        if (info.num_components == 0 || info.num_components > 16) __builtin_trap();
        if (uint64_t{info.width} * info.height > (1u << 20)) __builtin_trap();

        uint32_t n = info.num_components;
        if ((options & 0x80) && n > 1) n = 1;
        const uint8_t bytes = (options & 0x40) ? 2 : 4;
        std::vector<std::vector<uint8_t>> planes(n);
        std::vector<j2kc_component> comps(n);
        for (uint32_t c = 0; c < n; ++c) {
            const j2kc_component_info &k = ci[c];
            if (uint64_t{k.width} * k.height > (1u << 20)) __builtin_trap();
            j2kc_component &o = comps[c];
            std::memset(&o, 0, sizeof(o));
            planes[c].assign(size_t{k.width} * k.height * bytes + 1, 0);
            o.data = reinterpret_cast<uint64_t>(planes[c].data());
            o.row_stride = static_cast<ptrdiff_t>(size_t{k.width} * bytes);
            o.sample_stride = bytes;
            o.bytes_per_sample = bytes;
            o.precision = static_cast<uint8_t>(k.precision > 8u * bytes ? 8u * bytes : k.precision);
            o.is_signed = k.is_signed;
            o.dx = k.dx;
            o.dy = k.dy;
            o.width = k.width;
            o.height = k.height;
        }
        j2kc_image out;
        std::memset(&out, 0, sizeof(out));
        out.struct_size = sizeof(out);
        out.memory = J2KC_MEMORY_HOST;
        out.width = info.width;
        out.height = info.height;
        out.num_components = n;
        out.components = comps.data();
        const int status = j2kc_decode(dec, data, size, &out);
        // A stream that parsed may still be broken further in, but never an internal error.
        if (status == J2KC_ERR_INTERNAL) __builtin_trap();
    }
    j2kc_decoder_free(&dec);
    return 0;
}
