/**
 * @file container.cpp
 * @brief Minimal JP2 boxes (ISO/IEC 15444-1 Annex I.5 .. I.7) for the j2kc tool.
 */
#include "tools/container.h"

#include <cstring>
#include <string>

#include "common/status.h"

namespace j2kc {
namespace tools {

namespace {

constexpr uint8_t kSignature[12] = {0x00, 0x00, 0x00, 0x0C, 'j', 'P', ' ', ' ', 0x0D, 0x0A, 0x87, 0x0A};

void put_u32(std::vector<uint8_t> &out, uint32_t v)
{
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
}

void put_u16(std::vector<uint8_t> &out, uint16_t v)
{
    out.push_back(static_cast<uint8_t>(v >> 8));
    out.push_back(static_cast<uint8_t>(v));
}

void put_box(std::vector<uint8_t> &out, const char type[4], const std::vector<uint8_t> &payload)
{
    uint64_t length = 8 + uint64_t{payload.size()};
    if (length <= 0xFFFFFFFFu) {
        put_u32(out, static_cast<uint32_t>(length));
        out.insert(out.end(), type, type + 4);
    } else {
        // XLBox: a length of 1 followed by the 64-bit length (I.4).
        put_u32(out, 1);
        out.insert(out.end(), type, type + 4);
        length += 8;
        put_u32(out, static_cast<uint32_t>(length >> 32));
        put_u32(out, static_cast<uint32_t>(length));
    }
    out.insert(out.end(), payload.begin(), payload.end());
}

uint32_t get_u32(const uint8_t *p)
{
    return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}

}  // namespace

bool is_jp2(const uint8_t *data, size_t size)
{
    return size >= sizeof(kSignature) && std::memcmp(data, kSignature, sizeof(kSignature)) == 0;
}

std::vector<uint8_t> wrap_jp2(const std::vector<uint8_t> &codestream, const Image &image)
{
    validate_image(image);
    J2KC_CHECK_ARG(image.planes.size() <= 16384, "JP2: too many components");
    std::vector<uint8_t> out(kSignature, kSignature + sizeof(kSignature));

    std::vector<uint8_t> ftyp;
    ftyp.insert(ftyp.end(), {'j', 'p', '2', ' '});
    put_u32(ftyp, 0);
    ftyp.insert(ftyp.end(), {'j', 'p', '2', ' '});
    put_box(out, "ftyp", ftyp);

    // BPC is 255 when the components differ; bpcc then lists each one (I.5.3.2).
    bool uniform = true;
    for (const Plane &p : image.planes) {
        uniform = uniform && p.precision == image.planes[0].precision &&
                  p.is_signed == image.planes[0].is_signed;
    }
    auto bpc = [](const Plane &p) {
        return static_cast<uint8_t>((p.precision - 1) | (p.is_signed ? 0x80 : 0));
    };
    std::vector<uint8_t> ihdr;
    put_u32(ihdr, image.height);
    put_u32(ihdr, image.width);
    put_u16(ihdr, static_cast<uint16_t>(image.planes.size()));
    ihdr.push_back(uniform ? bpc(image.planes[0]) : 0xFF);
    ihdr.push_back(7);  // C: the only compression type of Part 1
    ihdr.push_back(0);  // UnkC: colour space is known
    ihdr.push_back(0);  // IPR: no intellectual-property box

    std::vector<uint8_t> jp2h;
    put_box(jp2h, "ihdr", ihdr);
    if (!uniform) {
        std::vector<uint8_t> bpcc;
        for (const Plane &p : image.planes) bpcc.push_back(bpc(p));
        put_box(jp2h, "bpcc", bpcc);
    }
    size_t n = image.planes.size();
    bool equal = true;
    for (const Plane &p : image.planes) equal = equal && p.dx == 1 && p.dy == 1;
    uint32_t enumcs = 17;  // greyscale
    if (n >= 3) enumcs = equal ? 16 : 18;  // sRGB, or sYCC for subsampled chroma
    std::vector<uint8_t> colr = {1, 0, 0};  // METH enumerated, PREC, APPROX
    put_u32(colr, enumcs);
    put_box(jp2h, "colr", colr);
    put_box(out, "jp2h", jp2h);

    put_box(out, "jp2c", codestream);
    return out;
}

void find_jp2_codestream(const uint8_t *data, size_t size, size_t *offset, size_t *length)
{
    size_t pos = 0;
    while (pos < size) {
        J2KC_CHECK_DATA(size - pos >= 8, "JP2: truncated box header at offset %zu", pos);
        uint64_t box_length = get_u32(data + pos);
        std::string type(reinterpret_cast<const char *>(data + pos + 4), 4);
        size_t header = 8;
        if (box_length == 1) {
            J2KC_CHECK_DATA(size - pos >= 16, "JP2: truncated XLBox at offset %zu", pos);
            box_length = uint64_t{get_u32(data + pos + 8)} << 32 | get_u32(data + pos + 12);
            header = 16;
        } else if (box_length == 0) {
            box_length = size - pos;  // the last box runs to the end of the file
        }
        J2KC_CHECK_DATA(box_length >= header && box_length <= size - pos,
                        "JP2: box '%s' at offset %zu has a bad length", type.c_str(), pos);
        if (type == "jp2c") {
            *offset = pos + header;
            *length = static_cast<size_t>(box_length) - header;
            return;
        }
        pos += static_cast<size_t>(box_length);
    }
    fail(J2KC_ERR_INVALID_DATA, "JP2: no codestream box (jp2c)");
}

}  // namespace tools
}  // namespace j2kc
