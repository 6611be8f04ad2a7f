/**
 * @file image_io.cpp
 * @brief PGX, PNM (P5/P6/P7) and raw image files for the j2kc tool. See
 * image_io.h for the conventions (those of opj_decompress).
 */
#include "tools/image_io.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sys/stat.h>

#include "common/status.h"

namespace j2kc {
namespace tools {

namespace {

// Largest width or height accepted from a header: keeps every product of
// sizes below 2^64 before it is compared with the bytes actually present.
constexpr uint64_t kMaxDimension = (uint64_t{1} << 31) - 1;

std::string lower(std::string s)
{
    for (char &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string extension_of(const std::string &path)
{
    size_t slash = path.find_last_of('/');
    size_t dot = path.find_last_of('.');
    if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
    return lower(path.substr(dot + 1));
}

bool file_exists(const std::string &path)
{
    struct stat st;
    return ::stat(path.c_str(), &st) == 0;
}

/** Header tokens of PGX and PNM: bounded cursor over the file's bytes. */
class TextCursor {
public:
    TextCursor(const uint8_t *data, size_t size, const char *what) : data_(data), size_(size), what_(what) {}

    size_t position() const { return pos_; }
    bool at_end() const { return pos_ >= size_; }
    int peek() const { return pos_ < size_ ? data_[pos_] : -1; }
    int get() { return pos_ < size_ ? data_[pos_++] : -1; }

    static bool is_space(int c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

    /** Skips whitespace and, for PNM, '#' comments to the end of the line. */
    void skip_space(bool comments)
    {
        for (;;) {
            int c = peek();
            if (is_space(c)) {
                ++pos_;
            } else if (comments && c == '#') {
                while (!at_end() && peek() != '\n' && peek() != '\r') ++pos_;
            } else {
                return;
            }
        }
    }

    /** Skips blanks only (spaces and tabs), as PGX headers use them. */
    size_t skip_blanks()
    {
        size_t n = 0;
        while (peek() == ' ' || peek() == '\t') {
            ++pos_;
            ++n;
        }
        return n;
    }

    uint64_t number(const char *field, uint64_t max)
    {
        J2KC_CHECK_DATA(std::isdigit(peek()), "%s header: %s is missing or not a number", what_, field);
        uint64_t v = 0;
        while (std::isdigit(peek())) {
            v = v * 10 + static_cast<uint64_t>(get() - '0');
            J2KC_CHECK_DATA(v <= max, "%s header: %s is larger than %llu", what_, field,
                            static_cast<unsigned long long>(max));
        }
        return v;
    }

    std::string word()
    {
        std::string s;
        while (!at_end() && !is_space(peek()) && s.size() < 64) s.push_back(static_cast<char>(get()));
        return s;
    }

private:
    const uint8_t *data_;
    size_t size_;
    size_t pos_ = 0;
    const char *what_;
};

uint64_t checked_mul(uint64_t a, uint64_t b, const char *what)
{
    J2KC_CHECK_DATA(a == 0 || b <= UINT64_MAX / a, "%s: size overflows", what);
    return a * b;
}

int precision_of_maxval(uint32_t maxval)
{
    int p = 0;
    while ((uint64_t{1} << p) - 1 < maxval) ++p;
    return p;
}

int64_t min_value(const Plane &p) { return p.is_signed ? -(int64_t{1} << (p.precision - 1)) : 0; }
int64_t max_value(const Plane &p)
{
    return p.is_signed ? (int64_t{1} << (p.precision - 1)) - 1 : (int64_t{1} << p.precision) - 1;
}

void check_range(const Plane &p, const char *what)
{
    int64_t lo = min_value(p), hi = max_value(p);
    for (size_t i = 0; i < p.samples.size(); ++i) {
        int64_t v = p.samples[i];
        J2KC_CHECK_DATA(v >= lo && v <= hi, "%s: sample %lld at (%zu, %zu) is outside the %d-bit %s range", what,
                        static_cast<long long>(v), i % std::max<uint32_t>(p.width, 1),
                        i / std::max<uint32_t>(p.width, 1), p.precision, p.is_signed ? "signed" : "unsigned");
    }
}

/** Reads one sample of n bytes, sign-extending from n bytes when asked. */
int32_t load_sample(const uint8_t *s, unsigned n, bool little_endian, bool is_signed)
{
    uint32_t v = 0;
    for (unsigned i = 0; i < n; ++i) {
        unsigned byte = little_endian ? s[n - 1 - i] : s[i];
        v = v << 8 | byte;
    }
    if (is_signed && n < 4) {
        uint32_t sign = uint32_t{1} << (8 * n - 1);
        v = (v ^ sign) - sign;  // sign-extend the n-byte two's complement value
    }
    return static_cast<int32_t>(v);
}

void store_sample(uint8_t *d, unsigned n, bool little_endian, int32_t value)
{
    uint32_t v = static_cast<uint32_t>(value);
    for (unsigned i = 0; i < n; ++i) {
        uint8_t byte = static_cast<uint8_t>(v >> (8 * (n - 1 - i)));
        d[little_endian ? n - 1 - i : i] = byte;
    }
}

}  // namespace

FileFormat format_from_path(const std::string &path)
{
    std::string ext = extension_of(path);
    if (ext == "pgx") return FileFormat::pgx;
    if (ext == "pgm") return FileFormat::pgm;
    if (ext == "ppm") return FileFormat::ppm;
    if (ext == "pam" || ext == "pnm") return FileFormat::pam;
    if (ext == "raw") return FileFormat::raw;
    if (ext == "rawl" || ext == "yuv") return FileFormat::rawl;
    if (ext == "j2c" || ext == "j2k" || ext == "jpc" || ext == "jhc") return FileFormat::j2c;
    if (ext == "jp2" || ext == "jph") return FileFormat::jp2;
    return FileFormat::unknown;
}

unsigned sample_bytes(int precision) { return precision <= 8 ? 1 : precision <= 16 ? 2 : 4; }

std::string component_path(const std::string &path, size_t index)
{
    size_t slash = path.find_last_of('/');
    size_t dot = path.find_last_of('.');
    if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) {
        return path + "_" + std::to_string(index);
    }
    return path.substr(0, dot) + "_" + std::to_string(index) + path.substr(dot);
}

/* ----------------------------------------------------------------- raw */

RawLayout parse_raw_layout(const std::string &spec)
{
    RawLayout layout;
    std::string main = spec, sub;
    size_t at = spec.find('@');
    if (at != std::string::npos) {
        main = spec.substr(0, at);
        sub = spec.substr(at + 1);
    }
    unsigned long long w = 0, h = 0, c = 0, bits = 0;
    char sign = 'u';
    int consumed = 0;
    int n = std::sscanf(main.c_str(), "%llux%llux%llux%llu%n", &w, &h, &c, &bits, &consumed);
    J2KC_CHECK_ARG(n == 4, "--raw '%s': expected WxHxCxBITS[u|s][@SUB]", spec.c_str());
    std::string rest = main.substr(static_cast<size_t>(consumed));
    if (rest == "s" || rest == "u") {
        sign = rest[0];
    } else {
        J2KC_CHECK_ARG(rest.empty(), "--raw '%s': unexpected '%s' after the bit depth", spec.c_str(), rest.c_str());
    }
    J2KC_CHECK_ARG(w >= 1 && w <= kMaxDimension && h >= 1 && h <= kMaxDimension,
                   "--raw '%s': width and height must be 1..2^31-1", spec.c_str());
    J2KC_CHECK_ARG(c >= 1 && c <= 16384, "--raw '%s': components must be 1..16384", spec.c_str());
    J2KC_CHECK_ARG(bits >= 1 && bits <= 32, "--raw '%s': bits must be 1..32", spec.c_str());
    layout.width = static_cast<uint32_t>(w);
    layout.height = static_cast<uint32_t>(h);
    layout.components = static_cast<uint32_t>(c);
    layout.precision = static_cast<int>(bits);
    layout.is_signed = sign == 's';
    layout.dx.assign(layout.components, 1);
    layout.dy.assign(layout.components, 1);

    if (sub.empty() || sub == "4:4:4") return layout;
    int cdx = 0, cdy = 0;
    if (sub == "4:2:2") {
        cdx = 2;
        cdy = 1;
    } else if (sub == "4:2:0") {
        cdx = 2;
        cdy = 2;
    } else if (sub == "4:1:1") {
        cdx = 4;
        cdy = 1;
    } else if (sub == "4:4:0") {
        cdx = 1;
        cdy = 2;
    }
    if (cdx) {
        J2KC_CHECK_ARG(layout.components >= 3, "--raw '%s': %s needs at least 3 components", spec.c_str(), sub.c_str());
        for (int i = 1; i <= 2; ++i) {
            layout.dx[i] = static_cast<uint8_t>(cdx);
            layout.dy[i] = static_cast<uint8_t>(cdy);
        }
        return layout;
    }
    // Explicit list "DXxDY:DXxDY:..." as opj_compress -F takes it.
    size_t pos = 0;
    for (uint32_t i = 0; i < layout.components; ++i) {
        size_t end = sub.find(':', pos);
        std::string item = sub.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
        unsigned dx = 0, dy = 0;
        int used = 0;
        J2KC_CHECK_ARG(std::sscanf(item.c_str(), "%ux%u%n", &dx, &dy, &used) == 2 &&
                           static_cast<size_t>(used) == item.size() && dx >= 1 && dx <= 255 && dy >= 1 && dy <= 255,
                       "--raw '%s': subsampling '%s' is not DXxDY with 1..255", spec.c_str(), item.c_str());
        layout.dx[i] = static_cast<uint8_t>(dx);
        layout.dy[i] = static_cast<uint8_t>(dy);
        J2KC_CHECK_ARG((end == std::string::npos) == (i + 1 == layout.components),
                       "--raw '%s': give one DXxDY a component (%u)", spec.c_str(), layout.components);
        pos = end + 1;
    }
    return layout;
}

Image parse_raw(const uint8_t *data, size_t size, const RawLayout &layout)
{
    J2KC_CHECK_ARG(
        layout.components >= 1 && layout.dx.size() == layout.components && layout.dy.size() == layout.components,
        "raw layout is incomplete");
    Image image;
    image.width = layout.width;
    image.height = layout.height;
    unsigned n = sample_bytes(layout.precision);
    uint64_t total = 0;
    for (uint32_t c = 0; c < layout.components; ++c) {
        uint64_t w = (uint64_t{layout.width} + layout.dx[c] - 1) / layout.dx[c];
        uint64_t h = (uint64_t{layout.height} + layout.dy[c] - 1) / layout.dy[c];
        total += checked_mul(checked_mul(w, h, "raw"), n, "raw");
    }
    J2KC_CHECK_DATA(size >= total, "raw file holds %zu bytes, the layout needs %llu", size,
                    static_cast<unsigned long long>(total));
    J2KC_CHECK_DATA(size == total, "raw file holds %zu bytes, more than the %llu the layout needs", size,
                    static_cast<unsigned long long>(total));
    size_t offset = 0;
    image.planes.resize(layout.components);
    for (uint32_t c = 0; c < layout.components; ++c) {
        Plane &p = image.planes[c];
        p.dx = layout.dx[c];
        p.dy = layout.dy[c];
        p.width = (layout.width + p.dx - 1) / p.dx;
        p.height = (layout.height + p.dy - 1) / p.dy;
        p.precision = layout.precision;
        p.is_signed = layout.is_signed;
        size_t count = size_t{p.width} * p.height;
        p.samples.resize(count);
        for (size_t i = 0; i < count; ++i, offset += n) {
            p.samples[i] = load_sample(data + offset, n, layout.little_endian, p.is_signed);
        }
        check_range(p, "raw");
    }
    return image;
}

std::vector<uint8_t> format_raw(const Image &image, bool little_endian)
{
    validate_image(image);
    uint64_t total = 0;
    for (const Plane &p : image.planes) total += p.samples.size() * sample_bytes(p.precision);
    std::vector<uint8_t> out(total);
    size_t offset = 0;
    for (const Plane &p : image.planes) {
        unsigned n = sample_bytes(p.precision);
        for (int32_t v : p.samples) {
            store_sample(out.data() + offset, n, little_endian, v);
            offset += n;
        }
    }
    return out;
}

/* ----------------------------------------------------------------- PGX */

Plane parse_pgx(const uint8_t *data, size_t size)
{
    TextCursor in(data, size, "PGX");
    J2KC_CHECK_DATA(size >= 2 && data[0] == 'P' && data[1] == 'G', "not a PGX file (no 'PG' signature)");
    in.get();
    in.get();
    J2KC_CHECK_DATA(in.skip_blanks() > 0, "PGX header: expected a blank after 'PG'");
    int e1 = in.get(), e2 = in.get();
    bool little_endian;
    if (e1 == 'M' && e2 == 'L')
        little_endian = false;
    else if (e1 == 'L' && e2 == 'M')
        little_endian = true;
    else
        J2KC_CHECK_DATA(false, "PGX header: byte order must be ML or LM");
    // Between the byte order and the depth: blanks and an optional sign,
    // written "+ 8", "-12" or nothing at all by the tools in the wild.
    bool is_signed = false;
    size_t separator = 0;
    while (in.peek() == ' ' || in.peek() == '\t' || in.peek() == '+' || in.peek() == '-') {
        if (in.get() == '-') is_signed = true;
        ++separator;
    }
    J2KC_CHECK_DATA(separator > 0, "PGX header: expected a blank or sign before the depth");
    uint64_t depth = in.number("depth", 32);
    J2KC_CHECK_DATA(depth >= 1, "PGX header: depth must be 1..32");
    J2KC_CHECK_DATA(in.skip_blanks() > 0, "PGX header: expected a blank before the width");
    uint64_t width = in.number("width", kMaxDimension);
    J2KC_CHECK_DATA(in.skip_blanks() > 0, "PGX header: expected a blank before the height");
    uint64_t height = in.number("height", kMaxDimension);
    J2KC_CHECK_DATA(width >= 1 && height >= 1, "PGX header: width and height must be at least 1");
    while (in.peek() == ' ' || in.peek() == '\t' || in.peek() == '\r') in.get();
    J2KC_CHECK_DATA(in.get() == '\n', "PGX header: expected a newline after the height");

    Plane p;
    p.width = static_cast<uint32_t>(width);
    p.height = static_cast<uint32_t>(height);
    p.precision = static_cast<int>(depth);
    p.is_signed = is_signed;
    unsigned n = sample_bytes(p.precision);
    uint64_t need = checked_mul(checked_mul(width, height, "PGX"), n, "PGX");
    size_t have = size - in.position();
    J2KC_CHECK_DATA(have >= need, "PGX data truncated: %zu bytes for %llux%llu samples of %u bytes", have,
                    static_cast<unsigned long long>(width), static_cast<unsigned long long>(height), n);
    const uint8_t *s = data + in.position();
    p.samples.resize(size_t{p.width} * p.height);
    for (size_t i = 0; i < p.samples.size(); ++i) {
        p.samples[i] = load_sample(s + i * n, n, little_endian, is_signed);
    }
    check_range(p, "PGX");
    return p;
}

std::vector<uint8_t> format_pgx(const Plane &plane, bool little_endian)
{
    J2KC_CHECK_ARG(plane.precision >= 1 && plane.precision <= 32, "PGX: depth %d is not 1..32", plane.precision);
    J2KC_CHECK_ARG(plane.samples.size() == size_t{plane.width} * plane.height,
                   "PGX: plane holds %zu samples, not %ux%u", plane.samples.size(), plane.width, plane.height);
    char header[96];
    int len = std::snprintf(header, sizeof(header), "PG %s %c %d %u %u\n", little_endian ? "LM" : "ML",
                            plane.is_signed ? '-' : '+', plane.precision, plane.width, plane.height);
    unsigned n = sample_bytes(plane.precision);
    std::vector<uint8_t> out(static_cast<size_t>(len) + plane.samples.size() * n);
    std::memcpy(out.data(), header, static_cast<size_t>(len));
    uint8_t *d = out.data() + len;
    for (int32_t v : plane.samples) {
        store_sample(d, n, little_endian, v);
        d += n;
    }
    return out;
}

/* ----------------------------------------------------------------- PNM */

Image parse_pnm(const uint8_t *data, size_t size)
{
    J2KC_CHECK_DATA(size >= 2 && data[0] == 'P', "not a PNM file (no 'P' signature)");
    char kind = static_cast<char>(data[1]);
    J2KC_CHECK_DATA(kind == '5' || kind == '6' || kind == '7', "PNM type P%c is not supported (only P5, P6 and P7)",
                    std::isprint(static_cast<unsigned char>(kind)) ? kind : '?');
    TextCursor in(data, size, kind == '7' ? "PAM" : "PNM");
    in.get();
    in.get();
    uint64_t width = 0, height = 0, depth = 0, maxval = 0;
    std::string tupltype;
    if (kind != '7') {
        J2KC_CHECK_DATA(TextCursor::is_space(in.peek()) || in.peek() == '#',
                        "PNM header: expected whitespace after the magic number");
        in.skip_space(true);
        width = in.number("width", kMaxDimension);
        in.skip_space(true);
        height = in.number("height", kMaxDimension);
        in.skip_space(true);
        maxval = in.number("maxval", 65535);
        // Exactly one whitespace character separates the header from the samples.
        J2KC_CHECK_DATA(TextCursor::is_space(in.get()), "PNM header: expected whitespace after maxval");
        depth = kind == '5' ? 1 : 3;
    } else {
        J2KC_CHECK_DATA(in.get() == '\n', "PAM header: expected a newline after P7");
        bool have_w = false, have_h = false, have_d = false, have_m = false;
        for (;;) {
            in.skip_space(true);
            J2KC_CHECK_DATA(!in.at_end(), "PAM header: ENDHDR is missing");
            std::string key = in.word();
            if (key == "ENDHDR") {
                while (in.peek() == ' ' || in.peek() == '\t' || in.peek() == '\r') in.get();
                J2KC_CHECK_DATA(in.get() == '\n', "PAM header: expected a newline after ENDHDR");
                break;
            }
            in.skip_blanks();
            if (key == "WIDTH") {
                width = in.number("WIDTH", kMaxDimension);
                have_w = true;
            } else if (key == "HEIGHT") {
                height = in.number("HEIGHT", kMaxDimension);
                have_h = true;
            } else if (key == "DEPTH") {
                depth = in.number("DEPTH", 16384);
                have_d = true;
            } else if (key == "MAXVAL") {
                maxval = in.number("MAXVAL", 65535);
                have_m = true;
            } else if (key == "TUPLTYPE") {
                tupltype = in.word();
            } else
                J2KC_CHECK_DATA(false, "PAM header: unknown field '%s'", key.c_str());
        }
        J2KC_CHECK_DATA(have_w && have_h && have_d && have_m,
                        "PAM header: WIDTH, HEIGHT, DEPTH and MAXVAL are all required");
        int expected = tupltype == "GRAYSCALE" || tupltype == "BLACKANDWHITE"               ? 1
                       : tupltype == "GRAYSCALE_ALPHA" || tupltype == "BLACKANDWHITE_ALPHA" ? 2
                       : tupltype == "RGB"                                                  ? 3
                       : tupltype == "RGB_ALPHA"                                            ? 4
                                                                                            : 0;
        J2KC_CHECK_DATA(expected == 0 || static_cast<uint64_t>(expected) == depth,
                        "PAM header: TUPLTYPE %s needs DEPTH %d, not %llu", tupltype.c_str(), expected,
                        static_cast<unsigned long long>(depth));
    }
    J2KC_CHECK_DATA(width >= 1 && height >= 1, "PNM header: width and height must be at least 1");
    J2KC_CHECK_DATA(depth >= 1, "PAM header: DEPTH must be at least 1");
    J2KC_CHECK_DATA(maxval >= 1, "PNM header: maxval must be 1..65535");

    unsigned n = maxval < 256 ? 1 : 2;
    uint64_t need = checked_mul(checked_mul(checked_mul(width, height, "PNM"), depth, "PNM"), n, "PNM");
    size_t have = size - in.position();
    J2KC_CHECK_DATA(have >= need, "PNM data truncated: %zu bytes, %llu needed", have,
                    static_cast<unsigned long long>(need));
    Image image;
    image.width = static_cast<uint32_t>(width);
    image.height = static_cast<uint32_t>(height);
    image.planes.resize(depth);
    size_t count = size_t{image.width} * image.height;
    for (Plane &p : image.planes) {
        p.width = image.width;
        p.height = image.height;
        p.precision = precision_of_maxval(static_cast<uint32_t>(maxval));
        p.samples.resize(count);
    }
    const uint8_t *s = data + in.position();
    for (size_t i = 0; i < count; ++i) {
        for (size_t c = 0; c < depth; ++c, s += n) {
            int32_t v = n == 1 ? s[0] : (s[0] << 8 | s[1]);
            J2KC_CHECK_DATA(static_cast<uint64_t>(v) <= maxval, "PNM sample %d at (%zu, %zu) exceeds maxval %llu", v,
                            i % image.width, i / image.width, static_cast<unsigned long long>(maxval));
            image.planes[c].samples[i] = v;
        }
    }
    return image;
}

std::vector<uint8_t> format_pnm(const Image &image, FileFormat format)
{
    size_t depth = image.planes.size();
    const char *name = format == FileFormat::pgm ? "PGM" : format == FileFormat::ppm ? "PPM" : "PAM";
    J2KC_CHECK_ARG(format == FileFormat::pgm || format == FileFormat::ppm || format == FileFormat::pam,
                   "format_pnm: not a PNM format");
    J2KC_CHECK_ARG(depth >= 1, "%s: the image has no components", name);
    J2KC_CHECK_ARG(format != FileFormat::pgm || depth == 1, "PGM holds one component, the image has %zu", depth);
    J2KC_CHECK_ARG(format != FileFormat::ppm || depth == 3,
                   "PPM holds three components, the image has %zu (use .pam or .pgx)", depth);
    J2KC_CHECK_ARG(format != FileFormat::pam || depth <= 4,
                   "PAM holds 1 to 4 components, the image has %zu (use .pgx or .raw)", depth);
    const Plane &first = image.planes[0];
    for (const Plane &p : image.planes) {
        J2KC_CHECK_ARG(p.width == first.width && p.height == first.height,
                       "%s needs components of one size; they differ (subsampled: use .pgx or .raw)", name);
        J2KC_CHECK_ARG(p.precision == first.precision, "%s needs components of one precision; they differ (use .pgx)",
                       name);
        J2KC_CHECK_ARG(p.samples.size() == size_t{p.width} * p.height, "%s: plane size mismatch", name);
    }
    J2KC_CHECK_ARG(first.precision >= 1 && first.precision <= 16,
                   "%s holds at most 16 bits, the image has %d (use .pgx)", name, first.precision);
    uint32_t maxval = (uint32_t{1} << first.precision) - 1;
    unsigned n = maxval < 256 ? 1 : 2;

    std::string header;
    if (format == FileFormat::pam) {
        static const char *const types[] = {"GRAYSCALE", "GRAYSCALE_ALPHA", "RGB", "RGB_ALPHA"};
        header = "P7\nWIDTH " + std::to_string(first.width) + "\nHEIGHT " + std::to_string(first.height) + "\nDEPTH " +
                 std::to_string(depth) + "\nMAXVAL " + std::to_string(maxval) + "\nTUPLTYPE " + types[depth - 1] +
                 "\nENDHDR\n";
    } else {
        header = std::string(format == FileFormat::pgm ? "P5\n" : "P6\n") + std::to_string(first.width) + " " +
                 std::to_string(first.height) + "\n" + std::to_string(maxval) + "\n";
    }
    size_t count = size_t{first.width} * first.height;
    std::vector<uint8_t> out(header.size() + count * depth * n);
    std::memcpy(out.data(), header.data(), header.size());
    uint8_t *d = out.data() + header.size();
    for (size_t i = 0; i < count; ++i) {
        for (const Plane &p : image.planes) {
            // Signed samples are offset into the unsigned range, as opj_decompress does.
            int64_t v = int64_t{p.samples[i]} + (p.is_signed ? int64_t{1} << (p.precision - 1) : 0);
            v = std::min<int64_t>(std::max<int64_t>(v, 0), maxval);
            if (n == 2) *d++ = static_cast<uint8_t>(v >> 8);
            *d++ = static_cast<uint8_t>(v);
        }
    }
    return out;
}

/* ----------------------------------------------------------- whole images */

void derive_reference_grid(Image &image)
{
    J2KC_CHECK_ARG(!image.planes.empty(), "the image has no components");
    uint32_t w = 0, h = 0;
    for (const Plane &p : image.planes) {
        w = std::max(w, p.width);
        h = std::max(h, p.height);
    }
    image.width = w;
    image.height = h;
    for (size_t c = 0; c < image.planes.size(); ++c) {
        Plane &p = image.planes[c];
        auto factor = [&](uint32_t full, uint32_t part, const char *axis) {
            for (uint32_t f = 1; f <= 255; ++f) {
                if ((uint64_t{full} + f - 1) / f == part) return static_cast<uint8_t>(f);
            }
            fail(J2KC_ERR_INVALID_ARG, "component %zu: %s %u is no subsampling (1..255) of the image's %u", c, axis,
                 part, full);
        };
        p.dx = factor(w, p.width, "width");
        p.dy = factor(h, p.height, "height");
    }
}

void validate_image(const Image &image)
{
    J2KC_CHECK_ARG(!image.planes.empty(), "the image has no components");
    for (size_t c = 0; c < image.planes.size(); ++c) {
        const Plane &p = image.planes[c];
        J2KC_CHECK_ARG(p.precision >= 1 && p.precision <= 32, "component %zu: precision %d is not 1..32", c,
                       p.precision);
        J2KC_CHECK_ARG(p.samples.size() == size_t{p.width} * p.height, "component %zu holds %zu samples, not %ux%u", c,
                       p.samples.size(), p.width, p.height);
    }
}

std::vector<uint8_t> read_file(const std::string &path)
{
    std::ifstream f(path, std::ios::binary);
    if (!f) fail(J2KC_ERR_INVALID_ARG, "cannot open '%s': %s", path.c_str(), std::strerror(errno));
    f.seekg(0, std::ios::end);
    std::streamoff len = f.tellg();
    J2KC_CHECK_ARG(len >= 0, "cannot read '%s'", path.c_str());
    f.seekg(0, std::ios::beg);
    std::vector<uint8_t> bytes(static_cast<size_t>(len));
    if (len > 0) f.read(reinterpret_cast<char *>(bytes.data()), len);
    J2KC_CHECK_ARG(f.good() || f.eof(), "cannot read '%s'", path.c_str());
    return bytes;
}

void write_file(const std::string &path, const std::vector<uint8_t> &bytes)
{
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f) fail(J2KC_ERR_INVALID_ARG, "cannot create '%s': %s", path.c_str(), std::strerror(errno));
    f.write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    f.close();
    J2KC_CHECK_ARG(!f.fail(), "cannot write '%s'", path.c_str());
}

namespace {

/** Runs a parser and prefixes its message with the file's name. */
template <typename F>
auto with_name(const std::string &path, F &&parse) -> decltype(parse())
{
    try {
        return parse();
    } catch (const Error &e) {
        throw Error(e.status(), path + ": " + e.what());
    }
}

}  // namespace

Image read_image(const std::string &path, const RawLayout *raw)
{
    FileFormat format = format_from_path(path);
    Image image;
    switch (format) {
    case FileFormat::pgx: {
        std::vector<std::string> files;
        if (path.find(',') != std::string::npos) {
            size_t pos = 0;
            for (;;) {
                size_t end = path.find(',', pos);
                files.push_back(path.substr(pos, end == std::string::npos ? std::string::npos : end - pos));
                if (end == std::string::npos) break;
                pos = end + 1;
            }
        } else if (file_exists(path) || !file_exists(component_path(path, 0))) {
            files.push_back(path);
        } else {
            for (size_t i = 0; file_exists(component_path(path, i)) && i < 16384; ++i) {
                files.push_back(component_path(path, i));
            }
        }
        for (const std::string &f : files) {
            std::vector<uint8_t> bytes = read_file(f);
            image.planes.push_back(with_name(f, [&] { return parse_pgx(bytes.data(), bytes.size()); }));
        }
        derive_reference_grid(image);
        return image;
    }
    case FileFormat::pgm:
    case FileFormat::ppm:
    case FileFormat::pam: {
        std::vector<uint8_t> bytes = read_file(path);
        image = with_name(path, [&] { return parse_pnm(bytes.data(), bytes.size()); });
        return image;
    }
    case FileFormat::raw:
    case FileFormat::rawl: {
        J2KC_CHECK_ARG(raw, "%s: raw samples need --raw WxHxCxBITS[u|s][@SUB]", path.c_str());
        RawLayout layout = *raw;
        layout.little_endian = format == FileFormat::rawl;
        std::vector<uint8_t> bytes = read_file(path);
        return with_name(path, [&] { return parse_raw(bytes.data(), bytes.size(), layout); });
    }
    default:
        fail(J2KC_ERR_INVALID_ARG, "%s: unknown image format (use .pgx, .pgm, .ppm, .pam, .raw, .rawl)", path.c_str());
    }
}

std::vector<std::string> write_image(const std::string &path, const Image &image)
{
    validate_image(image);
    FileFormat format = format_from_path(path);
    std::vector<std::string> written;
    switch (format) {
    case FileFormat::pgx:
        for (size_t c = 0; c < image.planes.size(); ++c) {
            std::string name = component_path(path, c);
            write_file(name, format_pgx(image.planes[c]));
            written.push_back(name);
        }
        break;
    case FileFormat::pgm:
        if (image.planes.size() > 1) {
            for (size_t c = 0; c < image.planes.size(); ++c) {
                Image one;
                one.width = image.planes[c].width;
                one.height = image.planes[c].height;
                one.planes.push_back(image.planes[c]);
                std::string name = component_path(path, c);
                write_file(name, format_pnm(one, FileFormat::pgm));
                written.push_back(name);
            }
            break;
        }
        [[fallthrough]];  // one component, one file
    case FileFormat::ppm:
    case FileFormat::pam:
        write_file(path, format_pnm(image, format));
        written.push_back(path);
        break;
    case FileFormat::raw:
    case FileFormat::rawl:
        write_file(path, format_raw(image, format == FileFormat::rawl));
        written.push_back(path);
        break;
    default:
        fail(J2KC_ERR_INVALID_ARG, "%s: unknown image format (use .pgx, .pgm, .ppm, .pam, .raw, .rawl)", path.c_str());
    }
    return written;
}

}  // namespace tools
}  // namespace j2kc
