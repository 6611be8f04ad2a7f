// Annex B partitions: band and code-block rectangles on odd offsets and sizes.
#include <gtest/gtest.h>

#include "geometry/partition.h"

namespace j2kc {
namespace {

ImageSize one_tile(uint32_t w, uint32_t h, uint32_t x0 = 0, uint32_t y0 = 0)
{
    ImageSize siz;
    siz.width = x0 + w;
    siz.height = y0 + h;
    siz.x0 = x0;
    siz.y0 = y0;
    siz.tile_width = siz.width;
    siz.tile_height = siz.height;
    siz.components.push_back(ComponentSize{});
    return siz;
}

TEST(Partition, BandRectsFollowB15)
{
    // tcx0 = 3, tcx1 = 20 at nb = 1: LL covers ceil(3/2)..ceil(20/2) = 2..10,
    // HL covers ceil((3-1)/2)..ceil((20-1)/2) = 1..10.
    const Rect tc{3, 5, 20, 6};
    const Rect ll = band_rect(tc, kLL, 1), hl = band_rect(tc, kHL, 1), lh = band_rect(tc, kLH, 1);
    EXPECT_EQ(ll.x0, 2u);
    EXPECT_EQ(ll.x1, 10u);
    EXPECT_EQ(hl.x0, 1u);
    EXPECT_EQ(hl.x1, 10u);
    EXPECT_EQ(lh.y0, 2u);  // ceil((5-1)/2)
    EXPECT_EQ(lh.y1, 3u);  // ceil((6-1)/2)
    EXPECT_EQ(ll.width() + hl.width(), tc.width());
}

TEST(Partition, CodeBlocksTileEveryBandExactly)
{
    for (uint32_t w : {1u, 17u, 64u, 97u}) {
        for (uint32_t x0 : {0u, 3u}) {
            ImageSize siz = one_tile(w, 9, x0, 1);
            ComponentCoding coding;
            coding.levels = 3;
            coding.cblk_width_log2 = 4;
            coding.cblk_height_log2 = 2;
            coding.precincts_defined = true;
            coding.precinct_width_log2.fill(5);
            coding.precinct_height_log2.fill(4);
            const TileLayout t = build_partition(siz, 0, {coding});
            uint64_t band_area = 0, cblk_area = 0;
            for (const Resolution &res : t.components[0].resolutions)
                for (const Band &b : res.bands) band_area += b.rect.area();
            for (const CodeBlock &cb : t.code_blocks) {
                EXPECT_FALSE(cb.rect.empty());
                EXPECT_LE(cb.rect.width(), 16u);
                EXPECT_LE(cb.rect.height(), 4u);
                cblk_area += cb.rect.area();
            }
            EXPECT_EQ(band_area, uint64_t{w} * 9) << "w=" << w;
            EXPECT_EQ(cblk_area, band_area) << "w=" << w << " x0=" << x0;
        }
    }
}

/** Two tile layouts with the same records (rectangles, counts, code-blocks). */
void expect_same_layout(const TileLayout &a, const TileLayout &b)
{
    ASSERT_EQ(a.components.size(), b.components.size());
    ASSERT_EQ(a.code_blocks.size(), b.code_blocks.size());
    for (size_t i = 0; i < a.code_blocks.size(); ++i) {
        const CodeBlock &x = a.code_blocks[i], &y = b.code_blocks[i];
        EXPECT_TRUE(x.rect.x0 == y.rect.x0 && x.rect.y0 == y.rect.y0 && x.rect.x1 == y.rect.x1 &&
                    x.rect.y1 == y.rect.y1 && x.component == y.component && x.resolution == y.resolution &&
                    x.band == y.band && x.precinct == y.precinct)
            << "code-block " << i;
    }
    for (size_t c = 0; c < a.components.size(); ++c) {
        ASSERT_EQ(a.components[c].resolutions.size(), b.components[c].resolutions.size());
        for (size_t r = 0; r < a.components[c].resolutions.size(); ++r)
            EXPECT_EQ(a.components[c].resolutions[r].precincts.size(), b.components[c].resolutions[r].precincts.size());
    }
}

TEST(Partition, SharedPartitionIsBuiltOncePerGeometry)
{
    Codestream cs;
    cs.siz = one_tile(97, 9, 3, 1);
    CodingStyle cod;
    cod.component.levels = 3;
    cod.component.cblk_width_log2 = 4;
    cod.component.cblk_height_log2 = 2;
    cs.main.cod = cod;
    Tile tile;
    const std::shared_ptr<const TileLayout> first = shared_partition(cs.siz, cs, tile);
    expect_same_layout(*first, build_partition(cs.siz, cs, tile));
    EXPECT_EQ(shared_partition(cs.siz, cs, tile), first);  // the same frame shape again

    // Another code-block size, then another image size: layouts of their own.
    cs.main.cod->component.cblk_width_log2 = 3;
    const std::shared_ptr<const TileLayout> narrower = shared_partition(cs.siz, cs, tile);
    EXPECT_NE(narrower, first);
    expect_same_layout(*narrower, build_partition(cs.siz, cs, tile));
    cs.siz = one_tile(64, 9, 3, 1);
    const std::shared_ptr<const TileLayout> smaller = shared_partition(cs.siz, cs, tile);
    EXPECT_NE(smaller, narrower);
    expect_same_layout(*smaller, build_partition(cs.siz, cs, tile));

    // Back to the first geometry: still kept.
    cs.siz = one_tile(97, 9, 3, 1);
    cs.main.cod->component.cblk_width_log2 = 4;
    EXPECT_EQ(shared_partition(cs.siz, cs, tile), first);
}

TEST(Partition, PrecinctCountsMatchGrid)
{
    ImageSize siz = one_tile(4096, 2160);
    ComponentCoding coding;
    coding.levels = 6;
    coding.cblk_width_log2 = coding.cblk_height_log2 = 5;
    coding.precincts_defined = true;
    coding.precinct_width_log2.fill(8);
    coding.precinct_height_log2.fill(8);
    coding.precinct_width_log2[0] = coding.precinct_height_log2[0] = 7;
    const TileLayout t = build_partition(siz, 0, {coding});
    const auto &res = t.components[0].resolutions;
    EXPECT_EQ(res[0].num_precincts(), 1u);  // 64 x 34 in one 128 x 128 precinct
    EXPECT_EQ(res[6].precincts_x, 16u);     // 4096 / 256
    EXPECT_EQ(res[6].precincts_y, 9u);      // ceil(2160 / 256)
    EXPECT_EQ(res[6].cblk_width_log2, 5u);
}

}  // namespace
}  // namespace j2kc
