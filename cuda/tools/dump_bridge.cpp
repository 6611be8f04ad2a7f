/**
 * @file dump_bridge.cpp
 * @brief `j2kc dump` text: the stream summary the C API gives
 * (j2kc_decoder_parse), then the core's marker dump and profile checks
 * (codestream/dump.h, internal C++ that the C API does not offer).
 */
#include "tools/dump_bridge.h"

#include <cstring>
#include <string>
#include <vector>

#include "codestream/dump.h"
#include "codestream/jp2.h"
#include "codestream/reader.h"
#include "common/status.h"
#include "j2kc.h"

namespace j2kc {
namespace tools {

namespace {

struct LastError {
    std::string message;
    static void callback(void *opaque, int level, const char *message)
    {
        if (level <= J2KC_LOG_ERROR && message) static_cast<LastError *>(opaque)->message = message;
    }
};

std::string profile_name_part1(uint16_t rsiz);

/** The profile Rsiz names; bit 14 (ISO/IEC 15444-15) adds HTJ2K to it. */
std::string profile_name(uint16_t rsiz)
{
    if (!(rsiz & 0x4000)) return profile_name_part1(rsiz);
    const uint16_t rest = rsiz & ~uint16_t{0x4000};
    return rest == 0 ? "HTJ2K (Part 15, no further restrictions)" : profile_name_part1(rest) + ", HTJ2K (Part 15)";
}

std::string profile_name_part1(uint16_t rsiz)
{
    if (rsiz == 0) return "none (Part 1, no restrictions)";
    if (rsiz == 1) return "Profile 0";
    if (rsiz == 2) return "Profile 1";
    if (rsiz == 3) return "DCI 2K (Cinema2K)";
    if (rsiz == 4) return "DCI 4K (Cinema4K)";
    if (rsiz == 5) return "Scalable DCI 2K";
    if (rsiz == 6) return "Scalable DCI 4K";
    if ((rsiz & 0xFF00) == 0x0100) return "broadcast contribution";
    if ((rsiz & 0xFF00) == 0x0400) return "IMF";
    if (rsiz & 0x8000) return "Part 2 extensions";
    return "unknown";
}

const char *color_name(j2kc_color_space c)
{
    switch (c) {
    case J2KC_COLOR_SRGB: return "sRGB";
    case J2KC_COLOR_GRAY: return "greyscale";
    case J2KC_COLOR_SYCC: return "sYCC";
    case J2KC_COLOR_XYZ: return "X'Y'Z'";
    default: return "unknown";
    }
}

/** The summary of the C API: what the decoder's header parse reports. */
std::string api_summary(const uint8_t *data, size_t size)
{
    LastError last;
    j2kc_decoder_config config;
    j2kc_decoder_config_default(&config);
    config.backend = J2KC_BACKEND_CPU;
    config.log = &LastError::callback;
    config.log_opaque = &last;
    j2kc_decoder *decoder = nullptr;
    int status = j2kc_decoder_create(&decoder, &config);
    if (status < 0) fail(static_cast<j2kc_status>(status), "cannot create a decoder: %s", j2kc_status_string(status));
    std::vector<j2kc_component_info> infos(J2KC_MAX_INFO_COMPONENTS);
    j2kc_stream_info info;
    std::memset(&info, 0, sizeof(info));
    info.struct_size = sizeof(info);
    info.components = infos.data();
    info.components_capacity = static_cast<uint32_t>(infos.size());
    status = j2kc_decoder_parse(decoder, data, size, &info);
    j2kc_decoder_free(&decoder);
    if (status < 0) {
        fail(static_cast<j2kc_status>(status), "%s (%s)",
             last.message.empty() ? "cannot parse the headers" : last.message.c_str(), j2kc_status_string(status));
    }
    std::string s;
    appendf(s, "%s\n", info.is_jp2 ? "JP2 file" : "raw codestream");
    appendf(s, "image: %u x %u, %u component%s, %u tile%s\n", info.width, info.height, info.num_components,
            info.num_components == 1 ? "" : "s", info.num_tiles, info.num_tiles == 1 ? "" : "s");
    appendf(s, "profile: Rsiz 0x%04x, %s\n", info.rsiz, profile_name(info.rsiz).c_str());
    appendf(s, "coding: %u decomposition level%s, %s, MCT %s, %u layer%s, colour %s\n", info.levels,
            info.levels == 1 ? "" : "s", info.reversible ? "reversible 5/3" : "irreversible 9/7",
            info.mct ? "on" : "off", info.layers, info.layers == 1 ? "" : "s", color_name(info.color_space));
    uint32_t shown = info.num_components < infos.size() ? info.num_components : static_cast<uint32_t>(infos.size());
    for (uint32_t c = 0; c < shown; ++c) {
        const j2kc_component_info &ci = infos[c];
        appendf(s, "  component %u: %u x %u, %u-bit %s, subsampling %u x %u\n", c, ci.width, ci.height, ci.precision,
                ci.is_signed ? "signed" : "unsigned", ci.dx, ci.dy);
    }
    return s;
}

}  // namespace

std::string dump_stream(const uint8_t *data, size_t size, bool *profile_ok)
{
    *profile_ok = true;
    std::string text = api_summary(data, size);
    const uint8_t *cs_data = data;
    size_t cs_size = size;
    if (is_jp2(data, size)) {
        Jp2File jp2 = parse_jp2(data, size);
        cs_data = jp2.codestream;
        cs_size = jp2.codestream_size;
        for (const std::string &w : jp2.warnings) text += "JP2 warning: " + w + "\n";
    }
    Codestream cs = parse_codestream(cs_data, cs_size);
    text += "\n";
    text += dump_codestream(cs);
    std::vector<std::string> broken = check_profile(cs, cs_data, cs_size);
    if (cs.siz.rsiz != 0) {
        text += broken.empty() ? "profile checks: all pass\n" : "profile checks: FAILED\n";
        for (const std::string &b : broken) text += "  " + b + "\n";
    }
    *profile_ok = broken.empty();
    return text;
}

}  // namespace tools
}  // namespace j2kc
