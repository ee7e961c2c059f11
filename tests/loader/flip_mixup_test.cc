// RandomFlip and MixUp (`ultralytics/data/augment.py`).
#include <gtest/gtest.h>

#include <opencv2/core.hpp>

#include "loader/ops/flip.h"
#include "loader/ops/mixup.h"

namespace yc {
namespace {

TEST(FlipTest, BoxesUseContinuousCoordinates) {
  std::vector<BoxXyxy> boxes = {{0, 10, 20, 30, 1}};
  FlipDraw f;
  f.lr = true;
  FlipBoxes(f, 640, 480, &boxes);
  EXPECT_FLOAT_EQ(boxes[0].x1, 620);  // 640 - 20
  EXPECT_FLOAT_EQ(boxes[0].x2, 640);  // 640 - 0: an edge box stays on the edge
  EXPECT_FLOAT_EQ(boxes[0].y1, 10);
  f = FlipDraw();
  f.ud = true;
  FlipBoxes(f, 640, 480, &boxes);
  EXPECT_FLOAT_EQ(boxes[0].y1, 450);
  EXPECT_FLOAT_EQ(boxes[0].y2, 470);
}

TEST(FlipTest, PixelMatrixMatchesNpFlip) {
  FlipDraw f;
  f.lr = true;
  const Mat3 F = FlipMatrix(f, 639, 479);  // pixel centres: column x -> 639 - x
  double x, y;
  F.Apply(0, 5, false, &x, &y);
  EXPECT_DOUBLE_EQ(x, 639);
  EXPECT_DOUBLE_EQ(y, 5);
  cv::Mat img(1, 3, CV_8UC3);
  img.at<cv::Vec3b>(0, 0) = cv::Vec3b(1, 1, 1);
  FlipImage(f, &img);
  EXPECT_EQ(img.at<cv::Vec3b>(0, 2), cv::Vec3b(1, 1, 1));
}

TEST(FlipTest, BothFlipsDrawOnceEachEvenAtZeroProbability) {
  Rng a(2, 0, 0), b(2, 0, 0);
  const FlipDraw f = DrawFlips(a, 0.0, 1.0);
  EXPECT_FALSE(f.ud);
  EXPECT_TRUE(f.lr);
  b.Random();
  b.Random();
  EXPECT_EQ(a.NextU64(), b.NextU64());
}

TEST(FlipTest, FlipRateFollowsProbability) {
  int lr = 0;
  for (int i = 0; i < 4000; ++i) {
    Rng rng(3, 0, i);
    lr += DrawFlips(rng, 0.0, 0.5).lr;
  }
  EXPECT_NEAR(lr / 4000.0, 0.5, 0.04);
}

TEST(MixupTest, BlendTruncates) {
  const uint8_t a[] = {255, 100, 0, 3}, b[] = {0, 101, 255, 4};
  uint8_t out[4];
  MixupBlend(a, b, 0.5, out, 4);
  EXPECT_EQ(out[0], 127);  // 127.5 -> 127
  EXPECT_EQ(out[1], 100);  // 100.5 -> 100
  EXPECT_EQ(out[2], 127);
  EXPECT_EQ(out[3], 3);  // 3.5 -> 3
  MixupBlend(a, b, 1.0, out, 4);
  EXPECT_EQ(out[0], 255);
  EXPECT_EQ(out[3], 3);
}

TEST(MixupTest, BetaRatioIsConcentratedAroundHalf) {
  double sum = 0, lo = 1, hi = 0;
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    Rng rng(4, 0, i);
    const double r = DrawMixupRatio(rng);
    sum += r, lo = std::min(lo, r), hi = std::max(hi, r);
  }
  EXPECT_NEAR(sum / n, 0.5, 0.01);  // Beta(32,32): mean 0.5, sd ~0.062
  EXPECT_GT(lo, 0.2);
  EXPECT_LT(hi, 0.8);
}

}  // namespace
}  // namespace yc
