// Mosaic-4 placement (`ultralytics/data/augment.py` Mosaic._mosaic4) against hand-computed rectangles, boxes.
#include "loader/ops/mosaic.h"

#include <gtest/gtest.h>

namespace yc {
namespace {

void ExpectPlacement(const TilePlacement& p, cv::Rect canvas, cv::Rect tile, int padw, int padh) {
  EXPECT_EQ(p.canvas, canvas);
  EXPECT_EQ(p.tile, tile);
  EXPECT_EQ(p.padw, padw);
  EXPECT_EQ(p.padh, padh);
}

TEST(MosaicTest, EqualTilesAroundACentre) {
  const cv::Size t(640, 480);
  const auto p = MosaicPlacements(640, 700, 500, {t, t, t, t});
  ExpectPlacement(p[0], cv::Rect(60, 20, 640, 480), cv::Rect(0, 0, 640, 480), 60, 20);
  ExpectPlacement(p[1], cv::Rect(700, 20, 580, 480), cv::Rect(0, 0, 580, 480), 700, 20);
  ExpectPlacement(p[2], cv::Rect(60, 500, 640, 480), cv::Rect(0, 0, 640, 480), 60, 500);
  ExpectPlacement(p[3], cv::Rect(700, 500, 580, 480), cv::Rect(0, 0, 580, 480), 700, 500);
}

TEST(MosaicTest, MixedTilesAreCroppedAtTheCanvasAndCentre) {
  const auto p =
      MosaicPlacements(640, 400, 350, {cv::Size(500, 375), cv::Size(300, 600), cv::Size(640, 640), cv::Size(640, 100)});
  // TL: x1a = max(400-500, 0) = 0, y1a = max(350-375, 0) = 0; x1b = 500-400 = 100, y1b = 375-350 = 25.
  ExpectPlacement(p[0], cv::Rect(0, 0, 400, 350), cv::Rect(100, 25, 400, 350), -100, -25);
  // TR: x2a = min(400+300, 1280) = 700, y1a = 0; y1b = 600 - 350 = 250.
  ExpectPlacement(p[1], cv::Rect(400, 0, 300, 350), cv::Rect(0, 250, 300, 350), 400, -250);
  // BL: y2a = min(1280, 350+640) = 990; x1b = 640 - 400 = 240.
  ExpectPlacement(p[2], cv::Rect(0, 350, 400, 640), cv::Rect(240, 0, 400, 640), -240, 350);
  // BR: x2a = min(400+640, 1280) = 1040, y2a = 450.
  ExpectPlacement(p[3], cv::Rect(400, 350, 640, 100), cv::Rect(0, 0, 640, 100), 400, 350);
}

TEST(MosaicTest, CentreNearTheCanvasEdgeClipsPartners) {
  const cv::Size t(640, 640);
  const auto p = MosaicPlacements(640, 959, 320, {t, t, t, t});
  // TR: x2a = min(959 + 640, 1280) = 1280 -> only 321 columns of the partner are visible.
  ExpectPlacement(p[1], cv::Rect(959, 0, 321, 320), cv::Rect(0, 320, 321, 320), 959, -320);
  // BL: y2a = min(1280, 960) = 960.
  ExpectPlacement(p[2], cv::Rect(319, 320, 640, 640), cv::Rect(0, 0, 640, 640), 319, 320);
}

TEST(MosaicTest, CentreDrawsStayInTheMiddleHalf) {
  // int(uniform(320, 960)): 320 <= c < 960 for s = 640 (border = -640 // 2 = -320).
  Rng rng(1, 2, 3);
  int lo = 10000, hi = -1;
  for (int i = 0; i < 20000; ++i) {
    const MosaicCentre c = DrawMosaicCentre(rng, 640);
    lo = std::min({lo, c.xc, c.yc});
    hi = std::max({hi, c.xc, c.yc});
  }
  EXPECT_EQ(lo, 320);
  EXPECT_EQ(hi, 959);
}

TEST(MosaicTest, CentreDrawOrderIsYcThenXc) {
  Rng a(5, 0, 0), b(5, 0, 0);
  const MosaicCentre c = DrawMosaicCentre(a, 640);
  EXPECT_EQ(c.yc, static_cast<int>(b.Uniform(320, 960)));
  EXPECT_EQ(c.xc, static_cast<int>(b.Uniform(320, 960)));
}

TEST(MosaicTest, TileBoxesAreShiftedClippedAndZeroAreaDropped) {
  // Tile 500x375 with pad (-100, -25).
  const Box boxes[] = {{7, 0.1f, 0.1f, 0.1f, 0.1f},    // (25,18.75,75,56.25) -> (-75,-6.25,-25,31.25): off-canvas
                       {3, 0.5f, 0.5f, 0.2f, 0.2f},    // (200,150,300,225) -> (100,125,200,200)
                       {4, 0.99f, 0.5f, 0.1f, 0.1f}};  // x from 470 to 520 -> 370..420 (inside)
  std::vector<BoxXyxy> out;
  AppendTileBoxes(boxes, 3, cv::Size(500, 375), -100, -25, &out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_FLOAT_EQ(out[0].x1, -75);
  EXPECT_FLOAT_EQ(out[0].y2, 31.25f);
  ClipBoxes(1280, 1280, &out);
  EXPECT_FLOAT_EQ(out[0].x1, 0);
  EXPECT_FLOAT_EQ(out[0].x2, 0);
  RemoveZeroAreaBoxes(&out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].cls, 3);
  EXPECT_FLOAT_EQ(out[0].x1, 100);
  EXPECT_FLOAT_EQ(out[0].y1, 125);
  EXPECT_FLOAT_EQ(out[0].x2, 200);
  EXPECT_FLOAT_EQ(out[0].y2, 200);
  EXPECT_EQ(out[1].cls, 4);
  EXPECT_NEAR(out[1].x1, 370, 1e-3);
  EXPECT_NEAR(out[1].x2, 420, 1e-3);
}

TEST(MosaicTest, NonFiniteBoxesAreSkipped) {
  const Box boxes[] = {{1, NAN, 0.5f, 0.1f, 0.1f}, {2, 0.5f, 0.5f, INFINITY, 0.1f}, {3, 0.5f, 0.5f, 0.1f, 0.1f}};
  std::vector<BoxXyxy> out;
  AppendTileBoxes(boxes, 3, cv::Size(100, 100), 0, 0, &out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].cls, 3);
}

TEST(MosaicTest, CanvasHoldsTilesAndFill) {
  cv::Mat a(2, 3, CV_8UC3, cv::Scalar(1, 2, 3)), b(3, 2, CV_8UC3, cv::Scalar(4, 5, 6));
  const auto p = MosaicPlacements(4, 4, 4, {a.size(), b.size(), a.size(), b.size()});
  cv::Mat canvas;
  BuildMosaicCanvas(4, p, {a, b, a, b}, &canvas);
  ASSERT_EQ(canvas.size(), cv::Size(8, 8));
  EXPECT_EQ(canvas.at<cv::Vec3b>(0, 0), cv::Vec3b(114, 114, 114));  // TL tile covers x 1..3, y 2..3
  EXPECT_EQ(canvas.at<cv::Vec3b>(2, 1), cv::Vec3b(1, 2, 3));
  EXPECT_EQ(canvas.at<cv::Vec3b>(1, 4), cv::Vec3b(4, 5, 6));  // TR tile covers x 4..5, y 1..3
  EXPECT_EQ(canvas.at<cv::Vec3b>(7, 7), cv::Vec3b(114, 114, 114));
}

}  // namespace
}  // namespace yc
