// RandomPerspective (`ultralytics/data/augment.py`): matrix, corner box transform, clip and box_candidates.
#include "loader/ops/random_perspective.h"

#include <gtest/gtest.h>

namespace yc {
namespace {

void ExpectMat(const Mat3& m, std::array<double, 9> want) {
  for (int i = 0; i < 9; ++i) EXPECT_NEAR(m.m[i], want[i], 1e-9) << "element " << i;
}

TEST(RandomPerspectiveTest, NeutralDrawOnAMosaicIsACentreCrop) {
  PerspectiveDraw d;  // angle 0, scale 1, shear 0, translate 0.5
  const AffineTransform t = BuildAffine(d, false, 1280, 1280, -320, -320);
  EXPECT_EQ(t.out_w, 640);
  EXPECT_EQ(t.out_h, 640);
  // T(320, 320) * C(-640, -640)
  ExpectMat(t.M, {1, 0, -320, 0, 1, -320, 0, 0, 1});
  EXPECT_TRUE(t.warp);
}

TEST(RandomPerspectiveTest, RotationScaleAndTranslation) {
  PerspectiveDraw d;
  d.angle = 90, d.scale = 0.5, d.translate_x = 0.6, d.translate_y = 0.4;
  const AffineTransform t = BuildAffine(d, false, 1280, 1280, -320, -320);
  // (x, y) -> R (x - 640, y - 640) + (384, 256), R = [[0, .5], [-.5, 0]] (getRotationMatrix2D, +90 = CCW)
  ExpectMat(t.M, {0, 0.5, 64, -0.5, 0, 576, 0, 0, 1});
  EXPECT_DOUBLE_EQ(t.scale, 0.5);
}

TEST(RandomPerspectiveTest, ShearXAndYOrder) {
  PerspectiveDraw d;
  d.shear_x = 45;  // S[0,1] = tan(45 deg) = 1
  const AffineTransform t = BuildAffine(d, false, 100, 100, 0, 0);
  // T(50,50) * S * C(-50,-50): x' = (x-50) + (y-50) + 50
  ExpectMat(t.M, {1, 1, -50, 0, 1, 0, 0, 0, 1});
  d = PerspectiveDraw();
  d.shear_y = 45;
  ExpectMat(BuildAffine(d, false, 100, 100, 0, 0).M, {1, 0, 0, 1, 1, -50, 0, 0, 1});
}

TEST(RandomPerspectiveTest, IdentityWithoutBorderSkipsTheWarp) {
  PerspectiveDraw d;
  EXPECT_FALSE(BuildAffine(d, false, 640, 640, 0, 0).warp);
  d.scale = 1.01;
  EXPECT_TRUE(BuildAffine(d, false, 640, 640, 0, 0).warp);
}

TEST(RandomPerspectiveTest, DrawOrderAndRanges) {
  AugmentHyp h;
  h.degrees = 10, h.shear = 2, h.perspective = 0.001;
  Rng a(3, 1, 4), b(3, 1, 4);
  const PerspectiveDraw d = DrawPerspective(a, h);
  EXPECT_DOUBLE_EQ(d.persp_x, b.Uniform(-0.001, 0.001));
  EXPECT_DOUBLE_EQ(d.persp_y, b.Uniform(-0.001, 0.001));
  EXPECT_DOUBLE_EQ(d.angle, b.Uniform(-10, 10));
  EXPECT_DOUBLE_EQ(d.scale, b.Uniform(0.5, 1.5));
  EXPECT_DOUBLE_EQ(d.shear_x, b.Uniform(-2, 2));
  EXPECT_DOUBLE_EQ(d.shear_y, b.Uniform(-2, 2));
  EXPECT_DOUBLE_EQ(d.translate_x, b.Uniform(0.4, 0.6));
  EXPECT_DOUBLE_EQ(d.translate_y, b.Uniform(0.4, 0.6));
  // Zero hyps still consume draws (Python random.uniform does).
  Rng c(3, 1, 4), e(3, 1, 4);
  DrawPerspective(c, AugmentHyp{});
  for (int i = 0; i < 8; ++i) e.Random();
  EXPECT_EQ(c.NextU64(), e.NextU64());
}

TEST(RandomPerspectiveTest, BoxesMapByTheirCorners) {
  // 90 degree rotation about the origin: (x, y) -> (y, -x) + (0, 100).
  const Mat3 M{{0, 1, 0, -1, 0, 100, 0, 0, 1}};
  std::vector<BoxXyxy> boxes = {{10, 20, 30, 60, 1}};
  TransformBoxes(M, false, &boxes);
  EXPECT_FLOAT_EQ(boxes[0].x1, 20);
  EXPECT_FLOAT_EQ(boxes[0].x2, 60);
  EXPECT_FLOAT_EQ(boxes[0].y1, 70);
  EXPECT_FLOAT_EQ(boxes[0].y2, 90);
}

TEST(RandomPerspectiveTest, PerspectiveBoxesDivideByZ) {
  Mat3 M;
  M(2, 0) = 0.001;
  std::vector<BoxXyxy> boxes = {{100, 50, 200, 150, 0}};
  TransformBoxes(M, true, &boxes);
  // corners: (100,50)/1.1, (200,150)/1.2, (100,150)/1.1, (200,50)/1.2
  EXPECT_NEAR(boxes[0].x1, 100 / 1.1, 1e-4);
  EXPECT_NEAR(boxes[0].y1, 50 / 1.2, 1e-4);
  EXPECT_NEAR(boxes[0].x2, 200 / 1.2, 1e-4);
  EXPECT_NEAR(boxes[0].y2, 150 / 1.1, 1e-4);
  // Without the perspective flag the third row is ignored (Ultralytics divides only if perspective).
  boxes = {{100, 50, 200, 150, 0}};
  TransformBoxes(M, false, &boxes);
  EXPECT_FLOAT_EQ(boxes[0].x1, 100);
}

TEST(RandomPerspectiveTest, BoxCandidateThresholdsAreStrict) {
  const BoxXyxy ref{0, 0, 10, 10, 0};
  EXPECT_FALSE(BoxCandidate(ref, {0, 0, 2, 10, 0}));     // w2 == 2 is not > 2
  EXPECT_TRUE(BoxCandidate(ref, {0, 0, 2.01f, 10, 0}));  // 20.1 / 100 > 0.1
  EXPECT_FALSE(BoxCandidate(ref, {0, 0, 10, 2, 0}));     // h2 == 2
  const BoxXyxy big{0, 0, 100, 100, 0};
  EXPECT_FALSE(BoxCandidate(big, {0, 0, 10, 100, 0}));  // area ratio exactly 0.1 is not > 0.1
  EXPECT_TRUE(BoxCandidate(big, {0, 0, 10.01f, 100, 0}));
  const BoxXyxy tall{0, 0, 3, 400, 0};
  EXPECT_FALSE(BoxCandidate(tall, {0, 0, 3, 300.1f, 0}));  // aspect 100.03 is not < 100
  EXPECT_TRUE(BoxCandidate(tall, {0, 0, 3, 299, 0}));
  // Degenerate reference (zero area) keeps a visible box: eps avoids the division by zero.
  EXPECT_TRUE(BoxCandidate({5, 5, 5, 5, 0}, {0, 0, 10, 10, 0}));
}

TEST(RandomPerspectiveTest, WarpBoxesClipsThenFiltersAgainstScaledOriginals) {
  // Shift left by 95 px, scale 1: a 100 px box keeps 5 px (5% of its area, not > 10%): dropped;
  // a box moved but still inside is kept; a box pushed out entirely clips to zero width: dropped.
  const Mat3 M = Mat3::Translation(-95, 0);
  std::vector<BoxXyxy> boxes = {{0, 0, 100, 100, 1}, {100, 0, 200, 100, 2}, {0, 0, 10, 10, 3}};
  std::vector<BoxXyxy> scratch;
  WarpBoxes(M, false, 1.0, 640, 640, &boxes, &scratch);
  ASSERT_EQ(boxes.size(), 1u);
  EXPECT_EQ(boxes[0].cls, 2);
  EXPECT_FLOAT_EQ(boxes[0].x1, 5);
  EXPECT_FLOAT_EQ(boxes[0].x2, 105);
  // The reference box is scaled by the drawn scale too, so halving the image keeps a whole box.
  boxes = {{0, 0, 100, 100, 1}};
  WarpBoxes(Mat3::Scaling(0.5, 0.5), false, 0.5, 640, 640, &boxes, &scratch);
  EXPECT_EQ(boxes.size(), 1u);
}

}  // namespace
}  // namespace yc
