// `j2kc decode`'s delivery step (cuda/tools/delivery.cpp) on hand-made
// components: sYCC to RGB with chroma replicated at 4:2:0 and 4:2:2, odd
// sizes and an odd origin, the raw-codestream YCbCr guess, CMYK, and the
// layouts and profiles it leaves as coded with a warning, and the channel
// order of a JP2 cdef box, taken before the colour steps. Built without
// lcms2, so the ICC and CIELab steps are the warning; with lcms2 the
// interoperability tests (tests/interop, deliver) compare them with
// opj_decompress.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "tools/delivery.h"

namespace {

using j2kc::tools::Image;
using j2kc::tools::Plane;
using j2kc::tools::StreamColour;

Plane plane(uint32_t w, uint32_t h, uint8_t dx, uint8_t dy, int32_t value, int precision = 8)
{
    Plane p;
    p.width = (w + dx - 1) / dx;
    p.height = (h + dy - 1) / dy;
    p.dx = dx;
    p.dy = dy;
    p.precision = precision;
    p.samples.assign(size_t{p.width} * p.height, value);
    return p;
}

/** Luma 100 everywhere; chroma sample k of component 1 is 128 + k (blue-ish), component 2 neutral. */
Image ycc(uint32_t w, uint32_t h, uint8_t dx, uint8_t dy)
{
    Image image;
    image.width = w;
    image.height = h;
    image.planes = {plane(w, h, 1, 1, 100), plane(w, h, dx, dy, 128), plane(w, h, dx, dy, 128)};
    for (size_t k = 0; k < image.planes[1].samples.size(); ++k) image.planes[1].samples[k] = int32_t(128 + k);
    return image;
}

/** The blue of luma 100 with Cb - 128 = u (Cr neutral): 100 + trunc(1.772 u), the sYCC matrix's. */
int32_t blue(int32_t u) { return 100 + static_cast<int32_t>(1.772 * u); }

TEST(Delivery, Sycc420ReplicatesChromaAtOddSizes)
{
    Image image = ycc(5, 3, 2, 2);  // chroma 3 x 2
    StreamColour colour;
    colour.space = J2KC_COLOR_SYCC;
    EXPECT_TRUE(j2kc::tools::deliver_image(image, colour).empty());
    ASSERT_EQ(image.planes.size(), 3u);
    for (const Plane &p : image.planes) {
        EXPECT_EQ(p.width, 5u);
        EXPECT_EQ(p.height, 3u);
        EXPECT_EQ(p.dx, 1);
    }
    const Plane &b = image.planes[2], &r = image.planes[0];
    for (uint32_t y = 0; y < 3; ++y)
        for (uint32_t x = 0; x < 5; ++x) {
            const int32_t k = int32_t((y / 2) * 3 + x / 2);
            EXPECT_EQ(b.samples[y * 5 + x], blue(k)) << x << "," << y;
            EXPECT_EQ(r.samples[y * 5 + x], 100);  // Cr neutral: red is the luma
        }
    EXPECT_EQ(blue(5), 108);  // 1.772 * 5 = 8.86, truncated
}

TEST(Delivery, Sycc422AndAnOddOrigin)
{
    Image image = ycc(4, 2, 2, 1);  // chroma 2 x 2
    StreamColour colour;
    colour.space = J2KC_COLOR_SYCC;
    colour.x0 = 1;  // luma starts at x = 1, chroma at x = 2 (ceil(1 / 2) = 1)
    EXPECT_TRUE(j2kc::tools::deliver_image(image, colour).empty());
    const Plane &b = image.planes[2];
    // Luma x = 1 has no chroma at or before it: the first one stands in. Then
    // luma 2, 3 take chroma 2 (k = 0), luma 4 chroma 4 (k = 1).
    const int32_t want[2][4] = {{blue(0), blue(0), blue(0), blue(1)}, {blue(2), blue(2), blue(2), blue(3)}};
    for (uint32_t y = 0; y < 2; ++y)
        for (uint32_t x = 0; x < 4; ++x) EXPECT_EQ(b.samples[y * 4 + x], want[y][x]) << x << "," << y;
}

TEST(Delivery, RawCodestreamChromaIsGuessedAsYcc)
{
    // No colour declared: subsampled chroma means YCbCr; full-size components stay as coded.
    Image sub = ycc(4, 4, 2, 1);
    EXPECT_TRUE(j2kc::tools::deliver_image(sub, StreamColour{}).empty());
    EXPECT_EQ(sub.planes[1].width, 4u);
    EXPECT_EQ(sub.planes[2].samples[0], blue(0));
    Image full = ycc(4, 4, 1, 1);
    const Image before = full;
    EXPECT_TRUE(j2kc::tools::deliver_image(full, StreamColour{}).empty());
    EXPECT_EQ(full.planes[1].samples, before.planes[1].samples);
    EXPECT_EQ(full.planes[2].samples, before.planes[2].samples);
}

TEST(Delivery, Sycc12BitClipsToItsRange)
{
    Image image;
    image.width = image.height = 1;
    image.planes = {plane(1, 1, 1, 1, 4000, 12), plane(1, 1, 1, 1, 4095, 12), plane(1, 1, 1, 1, 0, 12)};
    StreamColour colour;
    colour.space = J2KC_COLOR_SYCC;
    EXPECT_TRUE(j2kc::tools::deliver_image(image, colour).empty());
    // Cb - 2048 = 2047, Cr - 2048 = -2048: red 4000 + trunc(1.402 * -2048) = 1129; green and blue overflow.
    EXPECT_EQ(image.planes[0].samples[0], 1129);
    EXPECT_EQ(image.planes[1].samples[0], 4095);
    EXPECT_EQ(image.planes[2].samples[0], 4095);
    for (const Plane &p : image.planes) EXPECT_EQ(p.precision, 12);
}

TEST(Delivery, UnhandledLayoutsAndProfilesStayAsCoded)
{
    Image image = ycc(8, 2, 4, 1);  // 4:1:1
    const Image before = image;
    StreamColour colour;
    colour.space = J2KC_COLOR_SYCC;
    const auto w = j2kc::tools::deliver_image(image, colour);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_NE(w[0].find("4:2:0"), std::string::npos) << w[0];
    EXPECT_EQ(image.planes[1].samples, before.planes[1].samples);
    EXPECT_EQ(image.planes[1].width, 2u);

    // Built without lcms2 (as this test is): one warning, samples untouched.
    Image rgb = ycc(3, 3, 1, 1);
    const Image rgb_before = rgb;
    const uint8_t profile[200] = {};
    colour.space = J2KC_COLOR_UNKNOWN;
    colour.icc = profile;
    colour.icc_size = sizeof(profile);
    const auto w2 = j2kc::tools::deliver_image(rgb, colour);
    ASSERT_EQ(w2.size(), 1u);
    EXPECT_NE(w2[0].find("lcms2"), std::string::npos) << w2[0];
    EXPECT_EQ(rgb.planes[0].samples, rgb_before.planes[0].samples);
    EXPECT_TRUE(j2kc::tools::colour_management().empty());
}

TEST(Delivery, CmykBecomesEightBitRgb)
{
    Image image;
    image.width = 2;
    image.height = 1;
    image.planes = {plane(2, 1, 1, 1, 0), plane(2, 1, 1, 1, 255), plane(2, 1, 1, 1, 0), plane(2, 1, 1, 1, 0),
                    plane(2, 1, 1, 1, 77)};
    image.planes[3].samples[1] = 255;  // full black in the second pixel
    StreamColour colour;
    colour.space = J2KC_COLOR_CMYK;
    EXPECT_TRUE(j2kc::tools::deliver_image(image, colour).empty());
    ASSERT_EQ(image.planes.size(), 4u);  // K gone, the fifth component after RGB
    EXPECT_EQ(image.planes[0].samples, (std::vector<int32_t>{255, 0}));
    EXPECT_EQ(image.planes[1].samples, (std::vector<int32_t>{0, 0}));
    EXPECT_EQ(image.planes[2].samples, (std::vector<int32_t>{255, 0}));
    EXPECT_EQ(image.planes[3].samples, (std::vector<int32_t>{77, 77}));
    EXPECT_EQ(image.planes[0].precision, 8);
}

TEST(Delivery, ChannelsTakeTheCdefOrderBeforeTheColour)
{
    // sYCC 4:2:0 coded Cb, Y, Cr: luma goes first, then the chroma is
    // upsampled and converted (in the coded order it would not be: its first
    // component is subsampled).
    Image image = ycc(5, 3, 2, 2);
    std::swap(image.planes[0], image.planes[1]);
    StreamColour colour;
    colour.space = J2KC_COLOR_SYCC;
    colour.channel_order = {1, 0, 2};
    EXPECT_TRUE(j2kc::tools::deliver_image(image, colour).empty());
    ASSERT_EQ(image.planes.size(), 3u);
    for (const Plane &p : image.planes) EXPECT_EQ(p.width, 5u);
    EXPECT_EQ(image.planes[0].samples[0], 100);
    EXPECT_EQ(image.planes[2].samples[4], blue(2));

    // RGBA coded A, B, G, R (each plane a constant, precision by place):
    // delivered R, G, B, A with each plane's own precision and sign.
    Image rgba;
    rgba.width = 2;
    rgba.height = 2;
    for (int c = 0; c < 4; ++c) rgba.planes.push_back(plane(2, 2, 1, 1, 10 + c, 8 + c));
    rgba.planes[0].is_signed = true;
    colour = StreamColour{};
    colour.space = J2KC_COLOR_SRGB;
    colour.channel_order = {3, 2, 1, 0};
    EXPECT_TRUE(j2kc::tools::deliver_image(rgba, colour).empty());
    for (int k = 0; k < 4; ++k) {
        EXPECT_EQ(rgba.planes[k].samples, std::vector<int32_t>(4, 13 - k)) << k;
        EXPECT_EQ(rgba.planes[k].precision, 11 - k);
        EXPECT_EQ(rgba.planes[k].is_signed, k == 3);
    }
}

TEST(Delivery, UnusableChannelDefinitionsLeaveTheCodedOrder)
{
    Image image;
    image.width = image.height = 1;
    image.planes = {plane(1, 1, 1, 1, 1), plane(1, 1, 1, 1, 2), plane(1, 1, 1, 1, 3)};
    auto order = [](const Image &i) {
        std::vector<int32_t> v;
        for (const Plane &p : i.planes) v.push_back(p.samples[0]);
        return v;
    };
    const std::vector<int32_t> coded = {1, 2, 3};
    // The file's cdef was dropped as malformed: its reason in the warning.
    StreamColour colour;
    colour.space = J2KC_COLOR_SRGB;
    colour.channels_ignored = "it names channel 0 twice";
    auto w = j2kc::tools::deliver_image(image, colour);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_NE(w[0].find("channel 0 twice"), std::string::npos) << w[0];
    EXPECT_EQ(order(image), coded);
    // An order that is no permutation of the components: never applied.
    for (const std::vector<uint16_t> &bad : {std::vector<uint16_t>{2, 1}, std::vector<uint16_t>{2, 2, 0},
                                             std::vector<uint16_t>{0, 1, 3}, std::vector<uint16_t>{1, 0, 2, 3}}) {
        colour = StreamColour{};
        colour.space = J2KC_COLOR_SRGB;
        colour.channel_order = bad;
        w = j2kc::tools::deliver_image(image, colour);
        ASSERT_EQ(w.size(), 1u);
        EXPECT_NE(w[0].find("coded order"), std::string::npos) << w[0];
        EXPECT_EQ(order(image), coded);
    }
}

}  // namespace
