/**
 * @file j2kc.cpp
 * @brief The j2kc command-line tool: decode, encode and dump through the
 * public C API (j2kc.h), for conformance work (ISO/IEC 15444-4 compares every
 * component at its own size and precision) and scripts. File formats and
 * arguments: every codec decision lives in the library. What decode makes of
 * the decoded components by default (RGB from YCbCr, sRGB from a profile) is
 * delivery.cpp's, as opj_decompress delivers images.
 */
#include <cerrno>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <string>
#include <vector>

#include "codestream/jp2.h"
#include "common/status.h"
#include "j2kc.h"
#include "tools/delivery.h"
#include "tools/dump_bridge.h"
#include "tools/image_io.h"

using j2kc::Error;
using j2kc::tools::FileFormat;
using j2kc::tools::Image;
using j2kc::tools::Plane;

namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;  // the input or the codec failed
constexpr int kExitUsage = 2;   // the command line is wrong

const char *const kMainHelp =
    "usage: j2kc <command> [options]\n"
    "\n"
    "JPEG 2000 (ISO/IEC 15444-1) decoder and encoder of libj2kcuda; the decoder also\n"
    "reads HTJ2K (ISO/IEC 15444-15) codestreams and JPH files.\n"
    "\n"
    "commands:\n"
    "  decode   codestream (.j2c/.j2k/.jph/.jp2) -> image (.pgx/.pgm/.ppm/.pam/.raw/.rawl)\n"
    "  encode   image -> codestream (.j2c/.j2k), JP2 file (.jp2) or, with --ht, JPH file (.jph)\n"
    "  dump     main header, tile-parts, marker segments and profile checks\n"
    "\n"
    "`j2kc <command> --help` lists a command's options. Exit status: 0 on success,\n"
    "1 when the input or the codec fails (one line on stderr says why), 2 on a bad\n"
    "command line.\n";

const char *const kDecodeHelp =
    "usage: j2kc decode -i IN.{j2c,j2k,jp2,jph} -o OUT.{pgx,pgm,ppm,pam,raw,rawl} [options]\n"
    "\n"
    "  -i, --input FILE     raw codestream (Part 1 or HTJ2K) or JP2/JPH file\n"
    "  -o, --output FILE    image; the extension picks the format:\n"
    "                         .pgx   one file a component (OUT_0.pgx, OUT_1.pgx, ...) at\n"
    "                                the component's own size, precision and signedness,\n"
    "                                as opj_decompress writes them\n"
    "                         .pgm   one component (more: OUT_N.pgm, one a component)\n"
    "                         .ppm   three components of one size and precision\n"
    "                         .pam   one to four components of one size and precision\n"
    "                                (two and four: GRAYSCALE_ALPHA, RGB_ALPHA)\n"
    "                         .raw   components one after another, big-endian samples\n"
    "                                (1, 2 or 4 bytes by precision); .rawl little-endian\n"
    "  -r, --reduce N       discard the N highest resolution levels\n"
    "  -l, --layers N       decode the first N quality layers (0 = all)\n"
    "      --raw-components write the components as coded (YCbCr, subsampled, no\n"
    "                       colour profile applied) instead of the image they code\n"
    "      --strict         fail on any damage (truncation, missing tile-parts or EOC,\n"
    "                       corrupt code-blocks) instead of decoding what is there\n"
    "      --backend B      auto (default), cpu or cuda\n"
    "      --threads N      Tier-1 worker threads (0 = one a core)\n"
    "  -v, --verbose        print the library's messages\n"
    "\n"
    "By default the image is delivered as opj_decompress delivers it: sYCC and\n"
    "e-sYCC become RGB (chroma upsampled), as do three components with subsampled\n"
    "chroma in a raw codestream; CMYK becomes 8-bit RGB; an ICC profile or CIELab\n"
    "is converted to sRGB (with lcms2: see j2kc --version). Palettes are applied,\n"
    "and a JP2's channel definitions (cdef) order the channels: colours 1, 2, 3,\n"
    "then opacity (a malformed cdef: the coded order, with a warning).\n";

const char *const kEncodeHelp =
    "usage: j2kc encode -i IN -o OUT.{j2c,j2k,jp2,jph} [options]\n"
    "\n"
    "  -i, --input FILE     .pgx (a,b,c.pgx lists one file a component; X.pgx reads\n"
    "                       X_0.pgx, X_1.pgx, ... when X.pgx itself is absent),\n"
    "                       .pgm, .ppm, .pam, or .raw/.rawl/.yuv with --raw\n"
    "      --raw SPEC       WxHxCxBITS[u|s][@SUB]; SUB is 4:4:4, 4:2:2, 4:2:0, 4:1:1,\n"
    "                       4:4:0 or DXxDY:DXxDY:... (one a component);\n"
    "                       .raw is big-endian, .rawl/.yuv little-endian\n"
    "  -o, --output FILE    .j2c/.j2k: raw codestream; .jp2: JP2 file (colour: sYCC for\n"
    "                       subsampled chroma, else sRGB, or greyscale below 3 components);\n"
    "                       .jph: JPH file (with --ht; JP2's boxes under the brand 'jph ')\n"
    "      --icc FILE       JP2/JPH: embed this ICC profile as the colour specification\n"
    "      --profile P      none (default), dci_2k, dci_4k, imf, broadcast\n"
    "      --lossless       5/3 wavelet and RCT, every pass kept\n"
    "      --ht             HTJ2K block coder (ISO/IEC 15444-15); profile none or imf (APP2.HT)\n"
    "      --bytes N        byte budget for the whole codestream\n"
    "      --component-bytes N  byte budget for each component\n"
    "      --rate MBPS      budget as a bit rate in megabits per second (needs --fps)\n"
    "      --step-phases N  under a budget (9/7): code a frame at N phases of the step,\n"
    "                       then 6 more around the best, and keep the nearest decode\n"
    "                       (1..8; 1 = off): each frame with profile none, the first\n"
    "                       with dci_2k/dci_4k/imf; without the option, 4 phases on the\n"
    "                       first frame, kept for the sequence\n"
    "      --fps N[/D]      frame rate (profiles' rate caps; --rate)\n"
    "      --levels N       decomposition levels, 0..32\n"
    "      --cblk WxH       code-block size, powers of two 4..1024, area <= 4096\n"
    "      --precincts WxH[,WxH]  precinct size, powers of two 2..32768; the second applies to\n"
    "                       resolution 0\n"
    "      --progression P  LRCP, RLCP, RPCL, PCRL or CPRL\n"
    "      --layers N       quality layers, 1..64\n"
    "      --tile WxH       tile size (default: one tile)\n"
    "      --tile-parts T   none, R (a tile-part a resolution), C (a component), dci_4k\n"
    "      --tlm, --plt, --sop, --eph   write those markers\n"
    "      --mct 0|1        multiple component transform (default: auto)\n"
    "      --guard-bits N   guard bits, 0..7\n"
    "      --quality Q      base step scale when no budget is given (1.0 = visually lossless)\n"
    "      --comment TEXT   COM marker\n"
    "      --backend B      auto (default), cpu or cuda\n"
    "      --threads N      CPU worker threads (0 = one a core)\n"
    "  -v, --verbose        print the library's messages\n";

const char *const kDumpHelp =
    "usage: j2kc dump -i IN.{j2c,j2k,jp2,jph}\n"
    "\n"
    "Prints the main header, the tile-parts, every marker segment and whether the\n"
    "constraints of the profile the stream claims (DCI, IMF, broadcast) hold.\n"
    "  -i, --input FILE     raw codestream or JP2 file\n"
    "      --strict         exit with status 1 when a profile check fails\n"
    "  -v, --verbose        print the library's messages\n";

/** A failure of the tool itself, already worded for the user. */
struct ToolError {
    int exit_code;
    std::string message;
};

[[noreturn]] void usage_error(const std::string &message) { throw ToolError{kExitUsage, message}; }

/** Collects the library's log; errors become the one line printed on failure. */
struct LogSink {
    bool verbose = false;
    std::string last_error;

    static void callback(void *opaque, int level, const char *message)
    {
        LogSink *sink = static_cast<LogSink *>(opaque);
        std::string line = message ? message : "";
        for (char &c : line) {
            if (c == '\n' || c == '\r') c = ' ';
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        if (level <= J2KC_LOG_ERROR && !line.empty()) sink->last_error = line;
        if (sink->verbose) std::fprintf(stderr, "[j2kc %d] %s\n", level, line.c_str());
    }

    /** The reason for a failed call: the library's own words, else the status name. */
    std::string reason(int status) const
    {
        std::string s = last_error.empty() ? std::string(j2kc_status_string(status)) : last_error;
        if (!last_error.empty()) s += std::string(" (") + j2kc_status_string(status) + ")";
        return s;
    }
};

/**
 * Command-line arguments of one subcommand. `options` maps every option the
 * subcommand knows to whether it takes a value; accepts "--name value",
 * "--name=value" and "-x value".
 */
class Args {
public:
    Args(int argc, char **argv, const std::map<std::string, bool> &options)
    {
        for (int i = 2; i < argc; ++i) {
            std::string arg = argv[i];
            if (arg.size() < 2 || arg[0] != '-') usage_error("unexpected argument '" + arg + "'");
            std::string name = arg, value;
            bool has_value = false;
            size_t eq = arg.find('=');
            if (arg.compare(0, 2, "--") == 0 && eq != std::string::npos) {
                name = arg.substr(0, eq);
                value = arg.substr(eq + 1);
                has_value = true;
            }
            auto known = options.find(name);
            if (known == options.end()) usage_error("unknown option '" + name + "'");
            if (known->second) {
                if (!has_value) {
                    if (i + 1 >= argc) usage_error("option '" + name + "' needs a value");
                    value = argv[++i];
                }
                values_[name] = value;
            } else {
                if (has_value) usage_error("option '" + name + "' takes no value");
                values_[name] = "1";
            }
        }
    }

    bool has(const std::string &name) const { return values_.count(name) != 0; }
    std::string get(const std::string &name, const std::string &fallback = "") const
    {
        auto it = values_.find(name);
        return it == values_.end() ? fallback : it->second;
    }
    bool help() const { return has("-h") || has("--help"); }

private:
    std::map<std::string, std::string> values_;
};

long long parse_int(const std::string &name, const std::string &text, long long lo, long long hi)
{
    errno = 0;
    char *end = nullptr;
    long long v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0 || v < lo || v > hi) {
        usage_error("option '" + name + "': '" + text + "' is not an integer in " + std::to_string(lo) + ".." +
                    std::to_string(hi));
    }
    return v;
}

unsigned long long parse_u64(const std::string &name, const std::string &text)
{
    errno = 0;
    char *end = nullptr;
    if (text.empty() || text[0] == '-') usage_error("option '" + name + "': '" + text + "' is not a count");
    unsigned long long v = std::strtoull(text.c_str(), &end, 10);
    if (*end != '\0' || errno != 0) usage_error("option '" + name + "': '" + text + "' is not a count");
    return v;
}

double parse_double(const std::string &name, const std::string &text)
{
    errno = 0;
    char *end = nullptr;
    double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || errno != 0 || !(v > 0) || v > 1e12) {
        usage_error("option '" + name + "': '" + text + "' is not a positive number");
    }
    return v;
}

/** "WxH" with both parts in lo..hi. */
void parse_size(const std::string &name, const std::string &text, long long lo, long long hi, long long *w,
                long long *h)
{
    size_t x = text.find('x');
    if (x == std::string::npos) usage_error("option '" + name + "': '" + text + "' is not WxH");
    *w = parse_int(name, text.substr(0, x), lo, hi);
    *h = parse_int(name, text.substr(x + 1), lo, hi);
}

int log2_exact(const std::string &name, long long v)
{
    int l = 0;
    while ((1LL << l) < v) ++l;
    if ((1LL << l) != v) usage_error("option '" + name + "': " + std::to_string(v) + " is not a power of two");
    return l;
}

j2kc_backend parse_backend(const std::string &text)
{
    if (text == "auto") return J2KC_BACKEND_AUTO;
    if (text == "cpu") return J2KC_BACKEND_CPU;
    if (text == "cuda" || text == "gpu") return J2KC_BACKEND_CUDA;
    usage_error("option '--backend': '" + text + "' is not auto, cpu or cuda");
}

/* ------------------------------------------------------------------ decode */

/** The options decode and encode share: logging, backend and threads. */
template <class Config>
void apply_common_options(const Args &args, LogSink *sink, Config *config)
{
    sink->verbose = args.has("-v") || args.has("--verbose");
    config->log = &LogSink::callback;
    config->log_opaque = sink;
    config->backend = parse_backend(args.get("--backend", "auto"));
    config->threads = static_cast<int>(parse_int("--threads", args.get("--threads", "0"), 0, 4096));
}

/**
 * What the delivery needs of the stream: its colour as the library reports
 * it, and from the boxes and SIZ what j2kc_stream_info does not carry
 * (CIELab parameters, the channel order of cdef, the image origin that
 * places subsampled chroma).
 */
j2kc::tools::StreamColour stream_colour(const std::vector<uint8_t> &bytes, const j2kc_stream_info &info, int reduce)
{
    j2kc::tools::StreamColour colour;
    colour.space = info.color_space;
    colour.icc = info.icc_profile;
    colour.icc_size = info.icc_profile_size;
    const bool jp2 = j2kc::is_jp2(bytes.data(), bytes.size());
    // The decoder has read the file: it parses.
    const j2kc::Jp2File file = jp2 ? j2kc::parse_jp2(bytes.data(), bytes.size()) : j2kc::Jp2File{};
    const uint8_t *cs = jp2 ? file.codestream : bytes.data();
    const size_t size = jp2 ? file.codestream_size : bytes.size();
    // A.5: SIZ follows SOC; XOsiz and YOsiz are bytes 16..23 of the codestream, Csiz bytes 40..41.
    auto u32 = [&](size_t at) {
        return uint32_t{cs[at]} << 24 | uint32_t{cs[at + 1]} << 16 | uint32_t{cs[at + 2]} << 8 | cs[at + 3];
    };
    if (size >= 24) {
        const uint64_t d = uint64_t{1} << reduce;
        colour.x0 = static_cast<uint32_t>((u32(16) + d - 1) / d);
        colour.y0 = static_cast<uint32_t>((u32(20) + d - 1) / d);
    }
    if (!jp2) return colour;
    if (const j2kc::Jp2Colour *colr = file.colour()) colour.lab_parameters = colr->lab_parameters;
    colour.channels_ignored = file.channel_definitions_ignored;
    if (!file.channel_definitions.empty() && size >= 42) {
        try {
            for (const j2kc::Jp2Channel &c : j2kc::jp2_channels(file, uint32_t{cs[40]} << 8 | cs[41]))
                colour.channel_order.push_back(c.channel);
        } catch (const Error &e) {
            // An ihdr with more components than the codestream: cdef's
            // channel numbers cannot be trusted to name decoded components.
            colour.channel_order.clear();
            colour.channels_ignored = e.what();
        }
    }
    return colour;
}

int run_decode(int argc, char **argv)
{
    static const std::map<std::string, bool> options = {
        {"-i", true},        {"--input", true},   {"-o", true},        {"--output", true},
        {"-r", true},        {"--reduce", true},  {"-l", true},        {"--layers", true},
        {"--backend", true}, {"--threads", true}, {"-v", false},       {"--verbose", false},
        {"-h", false},       {"--help", false},   {"--strict", false}, {"--raw-components", false}};
    Args args(argc, argv, options);
    if (args.help()) {
        std::fputs(kDecodeHelp, stdout);
        return kExitOk;
    }
    std::string in = args.get("-i", args.get("--input"));
    std::string out = args.get("-o", args.get("--output"));
    if (in.empty() || out.empty()) usage_error("decode needs -i IN and -o OUT (see j2kc decode --help)");
    FileFormat out_format = j2kc::tools::format_from_path(out);
    if (out_format == FileFormat::unknown || out_format == FileFormat::j2c || out_format == FileFormat::jp2) {
        usage_error("decode: output '" + out + "' must end in .pgx, .pgm, .ppm, .pam, .raw or .rawl");
    }

    LogSink sink;
    j2kc_decoder_config config;
    j2kc_decoder_config_default(&config);
    apply_common_options(args, &sink, &config);
    config.reduce = static_cast<int>(parse_int("--reduce", args.get("-r", args.get("--reduce", "0")), 0, 32));
    config.layers = static_cast<int>(parse_int("--layers", args.get("-l", args.get("--layers", "0")), 0, 65535));
    config.strict = args.has("--strict") ? 1 : 0;

    std::vector<uint8_t> bytes = j2kc::tools::read_file(in);

    j2kc_decoder *decoder = nullptr;
    int status = j2kc_decoder_create(&decoder, &config);
    if (status < 0) throw ToolError{kExitFailed, "cannot create the decoder: " + sink.reason(status)};
    struct Guard {
        j2kc_decoder **d;
        ~Guard() { j2kc_decoder_free(d); }
    } guard{&decoder};

    std::vector<j2kc_component_info> infos(J2KC_MAX_INFO_COMPONENTS);
    j2kc_stream_info info;
    std::memset(&info, 0, sizeof(info));
    info.struct_size = sizeof(info);
    info.components = infos.data();
    info.components_capacity = static_cast<uint32_t>(infos.size());
    status = j2kc_decoder_parse(decoder, bytes.data(), bytes.size(), &info);
    if (status < 0) throw ToolError{kExitFailed, in + ": " + sink.reason(status)};
    if (info.num_components == 0 || info.num_components > infos.size()) {
        throw ToolError{kExitFailed,
                        in + ": the decoder reported " + std::to_string(info.num_components) + " components"};
    }

    // Every component as 32-bit samples at its own precision (clamped to the
    // 32 bits a sample of the files can hold), so nothing is rescaled.
    Image image;
    image.width = info.width;
    image.height = info.height;
    image.planes.resize(info.num_components);
    std::vector<j2kc_component> components(info.num_components);
    for (uint32_t c = 0; c < info.num_components; ++c) {
        const j2kc_component_info &ci = infos[c];
        Plane &p = image.planes[c];
        p.width = ci.width;
        p.height = ci.height;
        p.dx = ci.dx;
        p.dy = ci.dy;
        p.is_signed = ci.is_signed != 0;
        p.precision = ci.precision > 32 ? 32 : ci.precision;
        if (p.precision == 32 && !p.is_signed) p.precision = 31;
        uint64_t count = uint64_t{ci.width} * ci.height;
        if (count > (uint64_t{1} << 34)) throw ToolError{kExitFailed, in + ": component too large"};
        p.samples.assign(static_cast<size_t>(count), 0);
        j2kc_component &oc = components[c];
        std::memset(&oc, 0, sizeof(oc));
        oc.data = reinterpret_cast<uint64_t>(p.samples.data());
        oc.row_stride = static_cast<ptrdiff_t>(ci.width) * 4;
        oc.sample_stride = 4;
        oc.bytes_per_sample = 4;
        oc.shift = 0;
        oc.precision = static_cast<uint8_t>(p.precision);
        oc.is_signed = ci.is_signed;
        oc.dx = ci.dx;
        oc.dy = ci.dy;
        oc.width = ci.width;
        oc.height = ci.height;
    }
    j2kc_image output;
    std::memset(&output, 0, sizeof(output));
    output.struct_size = sizeof(output);
    output.memory = J2KC_MEMORY_HOST;
    output.width = info.width;
    output.height = info.height;
    output.num_components = info.num_components;
    output.components = components.data();
    status = j2kc_decode(decoder, bytes.data(), bytes.size(), &output);
    if (status < 0) throw ToolError{kExitFailed, in + ": " + sink.reason(status)};
    // j2kc.h defines a sample as the integer masked to `precision` bits and
    // sign-extended when signed: the bits above the precision carry nothing.
    for (Plane &p : image.planes) {
        if (p.precision >= 32) continue;
        const uint32_t mask = (uint32_t{1} << p.precision) - 1;
        const uint32_t sign = uint32_t{1} << (p.precision - 1);
        for (int32_t &v : p.samples) {
            uint32_t u = static_cast<uint32_t>(v) & mask;
            if (p.is_signed) u = (u ^ sign) - sign;
            v = static_cast<int32_t>(u);
        }
    }

    if (!args.has("--raw-components")) {
        for (const std::string &w : j2kc::tools::deliver_image(image, stream_colour(bytes, info, config.reduce)))
            std::fprintf(stderr, "j2kc decode: %s: %s\n", in.c_str(), w.c_str());
    }

    std::vector<std::string> written = j2kc::tools::write_image(out, image);
    if (sink.verbose) {
        for (const std::string &f : written) std::fprintf(stderr, "wrote %s\n", f.c_str());
    }
    return kExitOk;
}

/* ------------------------------------------------------------------ encode */

/**
 * The colour a JP2 file of these planes declares: sYCC when chroma is
 * subsampled (RGB never is), sRGB for three or more components, else greyscale.
 */
j2kc_color_space jp2_colour_of(const Image &image)
{
    bool subsampled = false;
    for (const Plane &p : image.planes) subsampled = subsampled || p.dx != 1 || p.dy != 1;
    if (image.planes.size() < 3) return J2KC_COLOR_GRAY;
    return subsampled ? J2KC_COLOR_SYCC : J2KC_COLOR_SRGB;
}

/** The JPH file format (ISO/IEC 15444-15 Annex D) is named by its extension, .jph. */
bool is_jph_path(const std::string &path)
{
    const size_t n = path.size();
    return n >= 4 && path[n - 4] == '.' && std::tolower(static_cast<unsigned char>(path[n - 3])) == 'j' &&
           std::tolower(static_cast<unsigned char>(path[n - 2])) == 'p' &&
           std::tolower(static_cast<unsigned char>(path[n - 1])) == 'h';
}

int run_encode(int argc, char **argv)
{
    static const std::map<std::string, bool> options = {
        {"-i", true},          {"--input", true},      {"-o", true},
        {"--output", true},    {"--raw", true},        {"--profile", true},
        {"--lossless", false}, {"--bytes", true},      {"--component-bytes", true},
        {"--rate", true},      {"--fps", true},        {"--levels", true},
        {"--cblk", true},      {"--precincts", true},  {"--progression", true},
        {"--layers", true},    {"--tile", true},       {"--tile-parts", true},
        {"--tlm", false},      {"--plt", false},       {"--sop", false},
        {"--eph", false},      {"--mct", true},        {"--guard-bits", true},
        {"--quality", true},   {"--comment", true},    {"--backend", true},
        {"--threads", true},   {"--icc", true},        {"-v", false},
        {"--verbose", false},  {"-h", false},          {"--help", false},
        {"--ht", false},       {"--step-phases", true}};
    Args args(argc, argv, options);
    if (args.help()) {
        std::fputs(kEncodeHelp, stdout);
        return kExitOk;
    }
    std::string in = args.get("-i", args.get("--input"));
    std::string out = args.get("-o", args.get("--output"));
    if (in.empty() || out.empty()) usage_error("encode needs -i IN and -o OUT (see j2kc encode --help)");
    FileFormat out_format = j2kc::tools::format_from_path(out);
    if (out_format != FileFormat::j2c && out_format != FileFormat::jp2) {
        usage_error("encode: output '" + out + "' must end in .j2c, .j2k, .jp2 or .jph");
    }
    if (out_format == FileFormat::jp2 && is_jph_path(out) != args.has("--ht"))
        usage_error("HT codestreams go in .jph files, Part-1 ones in .jp2 files");
    if (args.has("--icc") && out_format != FileFormat::jp2) usage_error("option '--icc' needs a .jp2 or .jph output");

    LogSink sink;
    j2kc_encoder_config config;
    j2kc_encoder_config_default(&config);
    apply_common_options(args, &sink, &config);

    if (args.has("--profile")) {
        static const std::map<std::string, j2kc_profile> profiles = {{"none", J2KC_PROFILE_NONE},
                                                                     {"dci_2k", J2KC_PROFILE_DCI_2K},
                                                                     {"dci_4k", J2KC_PROFILE_DCI_4K},
                                                                     {"imf", J2KC_PROFILE_IMF},
                                                                     {"broadcast", J2KC_PROFILE_BROADCAST}};
        auto it = profiles.find(args.get("--profile"));
        if (it == profiles.end()) usage_error("option '--profile': '" + args.get("--profile") + "' is unknown");
        config.profile = it->second;
    }
    if (args.has("--lossless")) config.lossless = 1;
    if (args.has("--ht")) config.block_coder = J2KC_BLOCK_CODER_HT;
    if (args.has("--bytes")) config.frame_bytes = parse_u64("--bytes", args.get("--bytes"));
    if (args.has("--step-phases"))
        config.step_phases = static_cast<int>(parse_int("--step-phases", args.get("--step-phases"), 1, 8));
    if (args.has("--component-bytes")) {
        config.component_bytes = parse_u64("--component-bytes", args.get("--component-bytes"));
    }
    if (args.has("--fps")) {
        std::string fps = args.get("--fps");
        size_t slash = fps.find('/');
        config.frame_rate_num = static_cast<int>(parse_int("--fps", fps.substr(0, slash), 1, 1000000));
        config.frame_rate_den =
            slash == std::string::npos ? 1 : static_cast<int>(parse_int("--fps", fps.substr(slash + 1), 1, 1000000));
    }
    if (args.has("--rate")) {
        if (!args.has("--fps")) usage_error("option '--rate' needs --fps");
        double mbps = parse_double("--rate", args.get("--rate"));
        double bytes = mbps * 1e6 / 8.0 * config.frame_rate_den / config.frame_rate_num;
        if (bytes < 1) usage_error("option '--rate': less than one byte a frame");
        config.frame_bytes = static_cast<uint64_t>(bytes);
    }
    if (args.has("--levels")) config.levels = static_cast<int>(parse_int("--levels", args.get("--levels"), 0, 32));
    if (args.has("--cblk")) {
        long long w, h;
        parse_size("--cblk", args.get("--cblk"), 4, 1024, &w, &h);
        config.cblk_width_log2 = log2_exact("--cblk", w);
        config.cblk_height_log2 = log2_exact("--cblk", h);
    }
    if (args.has("--precincts")) {
        std::string spec = args.get("--precincts");
        size_t comma = spec.find(',');
        long long w, h;
        parse_size("--precincts", spec.substr(0, comma), 2, 32768, &w, &h);
        config.precinct_width_log2 = log2_exact("--precincts", w);
        config.precinct_height_log2 = log2_exact("--precincts", h);
        if (comma != std::string::npos) {
            parse_size("--precincts", spec.substr(comma + 1), 2, 32768, &w, &h);
            config.precinct_r0_width_log2 = log2_exact("--precincts", w);
            config.precinct_r0_height_log2 = log2_exact("--precincts", h);
        }
    }
    if (args.has("--progression")) {
        static const std::map<std::string, j2kc_progression> orders = {{"LRCP", J2KC_PROG_LRCP},
                                                                       {"RLCP", J2KC_PROG_RLCP},
                                                                       {"RPCL", J2KC_PROG_RPCL},
                                                                       {"PCRL", J2KC_PROG_PCRL},
                                                                       {"CPRL", J2KC_PROG_CPRL}};
        auto it = orders.find(args.get("--progression"));
        if (it == orders.end()) usage_error("option '--progression': '" + args.get("--progression") + "' is unknown");
        config.progression = it->second;
    }
    if (args.has("--layers")) {
        config.layers = static_cast<int>(parse_int("--layers", args.get("--layers"), 1, J2KC_MAX_LAYERS));
    }
    if (args.has("--tile")) {
        long long w, h;
        parse_size("--tile", args.get("--tile"), 1, 0xFFFFFFFFLL, &w, &h);
        config.tile_width = static_cast<uint32_t>(w);
        config.tile_height = static_cast<uint32_t>(h);
    }
    if (args.has("--tile-parts")) {
        std::string t = args.get("--tile-parts");
        if (t == "none")
            config.tile_parts = J2KC_TILE_PARTS_NONE;
        else if (t == "R" || t == "r")
            config.tile_parts = J2KC_TILE_PARTS_RESOLUTION;
        else if (t == "C" || t == "c")
            config.tile_parts = J2KC_TILE_PARTS_COMPONENT;
        else if (t == "dci_4k")
            config.tile_parts = J2KC_TILE_PARTS_DCI_4K;
        else
            usage_error("option '--tile-parts': '" + t + "' is not none, R, C or dci_4k");
    }
    if (args.has("--tlm")) config.tlm = 1;
    if (args.has("--plt")) config.plt = 1;
    if (args.has("--sop")) config.sop = 1;
    if (args.has("--eph")) config.eph = 1;
    if (args.has("--mct")) config.mct = static_cast<int>(parse_int("--mct", args.get("--mct"), 0, 1));
    if (args.has("--guard-bits")) {
        config.guard_bits = static_cast<int>(parse_int("--guard-bits", args.get("--guard-bits"), 0, 7));
    }
    if (args.has("--quality")) config.quality = parse_double("--quality", args.get("--quality"));
    std::string comment = args.get("--comment");
    if (args.has("--comment")) config.comment = comment.c_str();

    j2kc::tools::RawLayout layout;
    const j2kc::tools::RawLayout *raw = nullptr;
    if (args.has("--raw")) {
        layout = j2kc::tools::parse_raw_layout(args.get("--raw"));
        raw = &layout;
    }
    Image image = j2kc::tools::read_image(in, raw);
    j2kc::tools::validate_image(image);

    std::vector<uint8_t> icc;
    if (args.has("--icc")) {
        icc = j2kc::tools::read_file(args.get("--icc"));
        config.icc_profile = icc.data();
        config.icc_profile_size = icc.size();
    }
    if (out_format == FileFormat::jp2) {
        config.container = J2KC_CONTAINER_JP2;
        config.color_space = jp2_colour_of(image);
    }

    std::vector<j2kc_component> components(image.planes.size());
    for (size_t c = 0; c < image.planes.size(); ++c) {
        const Plane &p = image.planes[c];
        j2kc_component &ic = components[c];
        std::memset(&ic, 0, sizeof(ic));
        ic.data = reinterpret_cast<uint64_t>(p.samples.data());
        ic.row_stride = static_cast<ptrdiff_t>(p.width) * 4;
        ic.sample_stride = 4;
        ic.bytes_per_sample = 4;
        ic.shift = 0;
        ic.precision = static_cast<uint8_t>(p.precision);
        ic.is_signed = p.is_signed ? 1 : 0;
        ic.dx = p.dx;
        ic.dy = p.dy;
        ic.width = p.width;
        ic.height = p.height;
    }
    j2kc_image input;
    std::memset(&input, 0, sizeof(input));
    input.struct_size = sizeof(input);
    input.memory = J2KC_MEMORY_HOST;
    input.width = image.width;
    input.height = image.height;
    input.num_components = static_cast<uint32_t>(components.size());
    input.components = components.data();

    j2kc_encoder *encoder = nullptr;
    int status = j2kc_encoder_create(&encoder, &config, &input);
    if (status < 0) throw ToolError{kExitFailed, in + ": " + sink.reason(status)};
    struct Guard {
        j2kc_encoder **e;
        ~Guard() { j2kc_encoder_free(e); }
    } guard{&encoder};
    j2kc_packet packet;
    std::memset(&packet, 0, sizeof(packet));
    status = j2kc_encode(encoder, &input, &packet);
    if (status < 0) throw ToolError{kExitFailed, in + ": " + sink.reason(status)};
    if (!packet.data || packet.size == 0) throw ToolError{kExitFailed, in + ": the encoder returned no data"};
    const std::vector<uint8_t> file(packet.data, packet.data + packet.size);
    j2kc::tools::write_file(out, file);
    if (sink.verbose) std::fprintf(stderr, "wrote %s (%zu bytes)\n", out.c_str(), file.size());
    return kExitOk;
}

/* -------------------------------------------------------------------- dump */

int run_dump(int argc, char **argv)
{
    static const std::map<std::string, bool> options = {{"-i", true},     {"--input", true},    {"--strict", false},
                                                        {"-v", false},    {"--verbose", false}, {"-h", false},
                                                        {"--help", false}};
    Args args(argc, argv, options);
    if (args.help()) {
        std::fputs(kDumpHelp, stdout);
        return kExitOk;
    }
    std::string in = args.get("-i", args.get("--input"));
    if (in.empty()) usage_error("dump needs -i IN (see j2kc dump --help)");
    std::vector<uint8_t> bytes = j2kc::tools::read_file(in);
    std::string text;
    bool profile_ok = true;
    try {
        text = j2kc::tools::dump_stream(bytes.data(), bytes.size(), &profile_ok);
    } catch (const Error &e) {
        throw ToolError{kExitFailed, in + ": " + e.what()};
    }
    std::fputs(text.c_str(), stdout);
    if (!profile_ok && args.has("--strict")) {
        throw ToolError{kExitFailed, in + ": the stream breaks its profile's constraints (see above)"};
    }
    return kExitOk;
}

}  // namespace

int main(int argc, char **argv)
{
    if (argc < 2) {
        std::fputs(kMainHelp, stderr);
        return kExitUsage;
    }
    std::string command = argv[1];
    try {
        if (command == "-h" || command == "--help" || command == "help") {
            std::fputs(kMainHelp, stdout);
            return kExitOk;
        }
        if (command == "--version") {
            unsigned v = j2kc_version();
            const std::string cms = j2kc::tools::colour_management();
            std::printf("j2kc %u.%u.%u (ICC profiles: %s)\n", v >> 16, (v >> 8) & 0xFF, v & 0xFF,
                        cms.empty() ? "not applied, built without lcms2" : cms.c_str());
            return kExitOk;
        }
        if (command == "decode") return run_decode(argc, argv);
        if (command == "encode") return run_encode(argc, argv);
        if (command == "dump") return run_dump(argc, argv);
        usage_error("unknown command '" + command + "' (decode, encode, dump; see j2kc --help)");
    } catch (const ToolError &e) {
        std::fprintf(stderr, "j2kc %s: %s\n", command.c_str(), e.message.c_str());
        return e.exit_code;
    } catch (const Error &e) {
        std::fprintf(stderr, "j2kc %s: %s\n", command.c_str(), e.what());
        return kExitFailed;
    } catch (const std::bad_alloc &) {
        std::fprintf(stderr, "j2kc %s: out of memory\n", command.c_str());
        return kExitFailed;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "j2kc %s: %s\n", command.c_str(), e.what());
        return kExitFailed;
    }
}
