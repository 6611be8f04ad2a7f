/**
 * @file fuzz_jp2.cpp
 * @brief libFuzzer target for the JP2 box parser (ISO/IEC 15444-1 Annex I):
 * signature, ftyp, jp2h and its boxes (ihdr, bpcc, colr, pclr, cmap, cdef,
 * res), jp2c; then the channel mapping that the decoder derives from them.
 */
#include <cstdint>

#include "codestream/jp2.h"
#include "common/status.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!j2kc::is_jp2(data, size)) return 0;
    try {
        const j2kc::Jp2File file = j2kc::parse_jp2(data, size);
        // The codestream view must lie inside the input.
        if (file.codestream < data || file.codestream_size > size ||
            file.codestream + file.codestream_size > data + size)
            __builtin_trap();
        for (uint32_t n : {1u, 3u, 4u, 257u}) {
            try {
                (void)j2kc::jp2_channels(file, n);
            } catch (const j2kc::Error &) {}
        }
        for (uint16_t c = 0; c < 5; ++c) {
            (void)file.component_precision(c);
            (void)file.component_signed(c);
        }
    } catch (const j2kc::Error &) {}
    return 0;
}
