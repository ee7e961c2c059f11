// The fast path's tile warper against cv::warpAffine / warpPerspective of the real canvas.
#include "loader/kernels/canvas_warp.h"

#include <gtest/gtest.h>

#include <opencv2/imgproc.hpp>

#include "loader/base/rng.h"
#include "loader/ops/flip.h"
#include "loader/ops/mosaic.h"
#include "tests/loader/fake_source.h"
#include "tests/loader/test_util.h"

namespace yc {
namespace {

using testing::CompareImages;
using testing::FakeSource;

cv::Mat AsMat(const testing::FakeRecord& r) {
  return cv::Mat(r.height, r.width, CV_8UC3, const_cast<uint8_t*>(r.pixels.data()));
}

// The four records of `src` placed as a mosaic around a centre drawn from `rng` (image size s).
std::vector<CanvasTile> MosaicTiles(FakeSource& src, int s, Rng& rng) {
  std::array<cv::Size, 4> sizes;
  for (int i = 0; i < 4; ++i) sizes[i] = cv::Size(src.record(i).width, src.record(i).height);
  const MosaicCentre c = DrawMosaicCentre(rng, s);
  const auto placements = MosaicPlacements(s, c.xc, c.yc, sizes);
  std::vector<CanvasTile> tiles;
  for (int i = 0; i < 4; ++i) tiles.push_back({AsMat(src.record(i)), placements[i].tile, placements[i].canvas.tl()});
  return tiles;
}

// Builds the canvas explicitly, warps it with OpenCV, and compares with RenderCanvasWarp.
testing::ImageDiff Check(const std::vector<CanvasTile>& tiles, cv::Size canvas_size, const Mat3& M, bool perspective,
                         cv::Size out_size) {
  cv::Mat canvas(canvas_size, CV_8UC3, cv::Scalar::all(114));
  for (const CanvasTile& t : tiles) {
    const cv::Rect dst(t.origin, t.visible.size());
    t.image(t.visible).copyTo(canvas(dst));
  }
  cv::Mat expected;
  if (perspective) {
    const cv::Mat m(3, 3, CV_64F, const_cast<double*>(M.m.data()));
    cv::warpPerspective(canvas, expected, m, out_size, cv::INTER_LINEAR, cv::BORDER_CONSTANT, cv::Scalar::all(114));
  } else {
    const cv::Mat m(2, 3, CV_64F, const_cast<double*>(M.m.data()));
    cv::warpAffine(canvas, expected, m, out_size, cv::INTER_LINEAR, cv::BORDER_CONSTANT, cv::Scalar::all(114));
  }
  cv::Mat got(out_size, CV_8UC3), got_opencv(out_size, CV_8UC3);
  CanvasWarpScratch scratch;
  RenderCanvasWarp(tiles.data(), static_cast<int>(tiles.size()), M, perspective, &got, &scratch);
  RenderCanvasWarp(tiles.data(), static_cast<int>(tiles.size()), M, perspective, &got_opencv, &scratch,
                   WarpMethod::kOpenCV);
  // The separable resampler (axis-aligned maps) and OpenCV's per-tile warp differ at most by the
  // latter's band-relative fixed-point rounding.
  EXPECT_LE(CompareImages(got_opencv, got).mean_abs, 0.05);
  return CompareImages(expected, got);
}

TEST(CanvasWarpTest, IdentityIsExactCopy) {
  auto rec = FakeSource::MakeImage(60, 80, 3, 1, "a");
  std::vector<CanvasTile> tiles = {{AsMat(rec), cv::Rect(0, 0, 80, 60), cv::Point(10, 20)}};
  const auto d = Check(tiles, cv::Size(100, 100), Mat3::Identity(), false, cv::Size(100, 100));
  EXPECT_EQ(d.max_abs, 0);
}

TEST(CanvasWarpTest, IntegerTranslationAndFlipAreExact) {
  auto rec = FakeSource::MakeImage(60, 80, 3, 2, "a");
  std::vector<CanvasTile> tiles = {{AsMat(rec), cv::Rect(5, 7, 70, 50), cv::Point(3, 4)}};
  FlipDraw flip;
  flip.lr = flip.ud = true;
  const Mat3 M = FlipMatrix(flip, 89, 69) * Mat3::Translation(7, -2);
  const auto d = Check(tiles, cv::Size(100, 100), M, false, cv::Size(90, 70));
  EXPECT_EQ(d.max_abs, 0);
}

TEST(CanvasWarpTest, MosaicTilesUnderRandomAffinesMatchTheCanvasWarp) {
  const int s = 160;
  FakeSource src = FakeSource::Synthetic(4, s, 3);
  for (int trial = 0; trial < 40; ++trial) {
    Rng rng(7, 0, trial);
    const std::vector<CanvasTile> tiles = MosaicTiles(src, s, rng);
    // Scale, rotation (sometimes), shear (sometimes), translation.
    const double sc = rng.Uniform(0.5, 1.5), a = trial % 3 == 0 ? rng.Uniform(-30, 30) * M_PI / 180 : 0;
    const double sh = trial % 4 == 1 ? std::tan(rng.Uniform(-10, 10) * M_PI / 180) : 0;
    Mat3 R{{sc * std::cos(a), sc * std::sin(a), 0, -sc * std::sin(a), sc * std::cos(a), 0, 0, 0, 1}};
    Mat3 S{{1, sh, 0, 0, 1, 0, 0, 0, 1}};
    const Mat3 M =
        Mat3::Translation(rng.Uniform(0.4, 0.6) * s, rng.Uniform(0.4, 0.6) * s) * S * R * Mat3::Translation(-s, -s);
    FlipDraw flip;
    flip.lr = trial % 2 == 1;
    const Mat3 Mf = FlipMatrix(flip, s - 1, s - 1) * M;
    const auto d = Check(tiles, cv::Size(2 * s, 2 * s), Mf, false, cv::Size(s, s));
    EXPECT_LE(d.mean_abs, 0.05) << "trial " << trial;
    EXPECT_LE(d.frac_over_2, 0.001) << "trial " << trial;
  }
}

TEST(CanvasWarpTest, PerspectiveMatchesTheCanvasWarp) {
  const int s = 160;
  FakeSource src = FakeSource::Synthetic(4, s, 4);
  for (int trial = 0; trial < 10; ++trial) {
    Rng rng(9, 0, trial);
    const std::vector<CanvasTile> tiles = MosaicTiles(src, s, rng);
    Mat3 P;
    P(2, 0) = rng.Uniform(-0.0005, 0.0005);
    P(2, 1) = rng.Uniform(-0.0005, 0.0005);
    const Mat3 M = Mat3::Translation(s / 2.0, s / 2.0) * Mat3::Scaling(0.8, 0.8) * P * Mat3::Translation(-s, -s);
    const auto d = Check(tiles, cv::Size(2 * s, 2 * s), M, true, cv::Size(s, s));
    EXPECT_LE(d.mean_abs, 0.05) << "trial " << trial;
    EXPECT_LE(d.frac_over_2, 0.001) << "trial " << trial;
  }
}

TEST(CanvasWarpTest, TinyTilesAndZoomOut) {
  // 1-pixel-high and 10x10 tiles, shrunk: nearly every output pixel is a seam pixel.
  auto thin = FakeSource::MakeImage(1, 100, 0, 5, "thin");
  auto small = FakeSource::MakeImage(10, 10, 1, 6, "small");
  std::vector<CanvasTile> tiles = {{AsMat(thin), cv::Rect(0, 0, 100, 1), cv::Point(20, 30)},
                                   {AsMat(small), cv::Rect(0, 0, 10, 10), cv::Point(50, 50)}};
  const Mat3 M = Mat3::Translation(3.3, 1.7) * Mat3::Scaling(0.55, 0.6);
  const auto d = Check(tiles, cv::Size(160, 160), M, false, cv::Size(90, 90));
  EXPECT_LE(d.max_abs, 1);
}

TEST(CanvasWarpTest, SeparablePathIsBitExactWithWarpAffineForAxisAlignedMaps) {
  const int s = 160;
  FakeSource src = FakeSource::Synthetic(4, s, 8);
  for (int trial = 0; trial < 60; ++trial) {
    // Each resampler in turn: portable, AVX2/SSSE3, AVX-512 (where the CPU has them).
    const testing::ScopedSimdCap cap(testing::kAllSimdLevels[trial % 3]);
    FlipDraw flip;
    flip.lr = trial % 4 == 1, flip.ud = trial % 8 == 3 || trial % 8 == 5;
    Rng rng(13, 0, trial);
    const std::vector<CanvasTile> tiles = MosaicTiles(src, s, rng);
    const double sc = rng.Uniform(0.5, 1.5);
    const Mat3 M = FlipMatrix(flip, s - 1, s - 1) *
                   Mat3::Translation(rng.Uniform(0.4, 0.6) * s, rng.Uniform(0.4, 0.6) * s) * Mat3::Scaling(sc, sc) *
                   Mat3::Translation(-s, -s);
    const auto d = Check(tiles, cv::Size(2 * s, 2 * s), M, false, cv::Size(s, s));
    EXPECT_EQ(d.max_abs, 0) << "trial " << trial;
  }
}

TEST(CanvasWarpTest, CanvasPixelIsFillOutsideTiles) {
  auto rec = FakeSource::MakeImage(4, 4, 0, 7, "a");
  std::vector<CanvasTile> tiles = {{AsMat(rec), cv::Rect(1, 1, 2, 2), cv::Point(10, 10)}};
  uint8_t rgb[3];
  CanvasPixel(tiles.data(), 1, 9, 10, rgb);
  EXPECT_EQ(rgb[0], 114);
  CanvasPixel(tiles.data(), 1, 10, 10, rgb);
  EXPECT_EQ(rgb[0], rec.pixels[(1 * 4 + 1) * 3]);
  CanvasPixel(tiles.data(), 1, 12, 11, rgb);
  EXPECT_EQ(rgb[0], 114);
}

}  // namespace
}  // namespace yc
