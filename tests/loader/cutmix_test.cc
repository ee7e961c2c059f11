// CutMix (`ultralytics/data/augment.py` CutMix): the candidate areas, which one is pasted, which partner
// boxes are kept and how they are clipped, and the flip the fast path applies to the areas.
#include "loader/ops/cutmix.h"

#include <gtest/gtest.h>

#include <opencv2/core.hpp>

namespace yc {
namespace {

CutMixDraw Draw(std::array<CutArea, 3> areas, double pick = 0) {
  CutMixDraw d;
  d.areas = areas;
  d.pick = pick;
  return d;
}

TEST(CutMixTest, AreasLieInTheImageAndFollowTheCutRatio) {
  int larger_than_half = 0;
  for (uint64_t i = 0; i < 2000; ++i) {
    Rng rng(7, 0, i, RngStream::kCutMix);
    const CutMixDraw d = DrawCutMix(rng, 320, 192);
    EXPECT_GE(d.pick, 0.0);
    EXPECT_LT(d.pick, 1.0);
    for (const CutArea& a : d.areas) {
      EXPECT_GE(a.x1, 0);
      EXPECT_LE(a.x1, a.x2);
      EXPECT_LE(a.x2, 320);
      EXPECT_GE(a.y1, 0);
      EXPECT_LE(a.y1, a.y2);
      EXPECT_LE(a.y2, 192);
      // cut = int(size * sqrt(1 - lam)): the span is at most cut // 2 * 2 <= size.
      EXPECT_LE(a.x2 - a.x1, 320);
      larger_than_half += a.x2 - a.x1 > 160;
    }
  }
  // cut > 160 for 3/4 of the 6000 areas (sqrt(1 - U) > 1/2); clipping at the border leaves ~56% above
  // half the width (a uniform centre near an edge loses up to half the cut).
  EXPECT_GT(larger_than_half, 3000);
  EXPECT_LT(larger_than_half, 3700);
  Rng a(7, 0, 3, RngStream::kCutMix), b(7, 0, 3, RngStream::kCutMix);
  const CutMixDraw da = DrawCutMix(a, 64, 64), db = DrawCutMix(b, 64, 64);
  EXPECT_EQ(da.areas[1].x1, db.areas[1].x1);  // a pure function of the key
  EXPECT_EQ(da.pick, db.pick);
}

TEST(CutMixTest, OnlyAreasClearOfEveryBoxArePicked) {
  const std::vector<BoxXyxy> boxes = {{10, 10, 30, 30, 0}};
  const CutArea over{20, 20, 40, 40}, touching{30, 0, 50, 10}, clear{50, 50, 60, 60};
  // The area sharing only an edge with the box has zero intersection: free, as bbox_ioa's sum <= 0.
  const CutMixDraw d = Draw({over, touching, clear}, 0.99);
  const CutArea* picked = PickCutArea(d, boxes);
  ASSERT_NE(picked, nullptr);
  EXPECT_EQ(picked, &d.areas[2]);  // pick 0.99 of two free areas: the second
  EXPECT_EQ(PickCutArea(Draw({over, touching, clear}, 0.0), boxes)->x1, 30);
  EXPECT_EQ(PickCutArea(Draw({over, over, over}), boxes), nullptr);
  EXPECT_NE(PickCutArea(Draw({over, over, over}), {}), nullptr);  // no boxes: every area is free
}

TEST(CutMixTest, PartnerBoxesNeedATenthInsideAndAreClippedToTheArea) {
  const CutArea area{40, 40, 80, 80};
  const std::vector<BoxXyxy> partner = {
      {50, 50, 60, 60, 1},  // inside: kept as it is
      {70, 30, 90, 50, 2},  // a quarter inside: kept, clipped to (70, 40, 80, 50)
      {0, 0, 41, 100, 3},   // 1/41 of it inside (< 0.1): dropped
      {0, 0, 20, 20, 4},    // outside
  };
  std::vector<BoxXyxy> boxes = {{0, 0, 5, 5, 9}};
  ASSERT_TRUE(AppendCutBoxes(area, partner, &boxes));
  ASSERT_EQ(boxes.size(), 3u);
  EXPECT_EQ(boxes[0].cls, 9);  // the sample's own boxes first, untouched
  EXPECT_EQ(boxes[1].cls, 1);
  EXPECT_FLOAT_EQ(boxes[1].x1, 50);
  EXPECT_FLOAT_EQ(boxes[1].y2, 60);
  EXPECT_EQ(boxes[2].cls, 2);
  EXPECT_FLOAT_EQ(boxes[2].x1, 70);
  EXPECT_FLOAT_EQ(boxes[2].y1, 40);
  EXPECT_FLOAT_EQ(boxes[2].x2, 80);
  EXPECT_FLOAT_EQ(boxes[2].y2, 50);
  for (const BoxXyxy& b : boxes) {
    if (b.cls == 9) continue;
    EXPECT_GE(b.x1, area.x1);
    EXPECT_LE(b.x2, area.x2);
    EXPECT_GE(b.y1, area.y1);
    EXPECT_LE(b.y2, area.y2);
  }
  std::vector<BoxXyxy> none;
  EXPECT_FALSE(AppendCutBoxes(area, {{0, 0, 41, 100, 3}}, &none));
  EXPECT_TRUE(none.empty());
}

// The pixels are pasted only when a partner box is kept, and the partner is rendered only once an area is free.
TEST(CutMixTest, PastesOnlyWithAFreeAreaAndAKeptPartnerBox) {
  cv::Mat image(64, 64, CV_8UC3, cv::Scalar::all(10)), partner;
  std::vector<BoxXyxy> partner_boxes, boxes = {{0, 0, 8, 8, 0}};
  int renders = 0;
  std::vector<BoxXyxy> drawn = {{20, 20, 30, 30, 5}};
  auto render = [&](cv::Mat* p, std::vector<BoxXyxy>* pb) {
    ++renders;
    p->create(64, 64, CV_8UC3);
    p->setTo(cv::Scalar::all(200));
    *pb = drawn;
    return Status::OK();
  };
  const CutArea covered{0, 0, 16, 16}, free{16, 16, 40, 40};
  ASSERT_TRUE(ApplyCutMix(Draw({covered, covered, covered}), render, &partner, &partner_boxes, &image, &boxes).ok());
  EXPECT_EQ(renders, 0);
  EXPECT_EQ(boxes.size(), 1u);

  drawn = {{50, 50, 60, 60, 5}};  // outside the free area: nothing to keep, nothing pasted
  ASSERT_TRUE(ApplyCutMix(Draw({covered, free, covered}), render, &partner, &partner_boxes, &image, &boxes).ok());
  EXPECT_EQ(renders, 1);
  EXPECT_EQ(boxes.size(), 1u);
  EXPECT_EQ(cv::countNonZero(image.reshape(1) != 10), 0);

  drawn = {{20, 20, 30, 30, 5}};
  ASSERT_TRUE(ApplyCutMix(Draw({covered, free, covered}), render, &partner, &partner_boxes, &image, &boxes).ok());
  ASSERT_EQ(boxes.size(), 2u);
  EXPECT_EQ(boxes[1].cls, 5);
  EXPECT_EQ(image.at<cv::Vec3b>(16, 16), cv::Vec3b(200, 200, 200));
  EXPECT_EQ(image.at<cv::Vec3b>(39, 39), cv::Vec3b(200, 200, 200));
  EXPECT_EQ(image.at<cv::Vec3b>(40, 40), cv::Vec3b(10, 10, 10));  // [x1, x2) x [y1, y2)
  EXPECT_EQ(image.at<cv::Vec3b>(15, 20), cv::Vec3b(10, 10, 10));
  EXPECT_EQ(cv::countNonZero(image.reshape(1) == 200), 24 * 24 * 3);
}

// Pasting into flipped images with the flipped areas equals pasting, then flipping (what the fast path relies on).
TEST(CutMixTest, FlippedAreasCommuteWithTheFlips) {
  cv::Mat base(48, 80, CV_8UC3), partner(48, 80, CV_8UC3);
  cv::randu(base, 0, 256);
  cv::randu(partner, 0, 256);
  const CutMixDraw d = Draw({CutArea{5, 7, 33, 30}, CutArea{0, 0, 80, 48}, CutArea{70, 40, 80, 48}});
  for (int f = 0; f < 4; ++f) {
    FlipDraw flip;
    flip.lr = f & 1;
    flip.ud = (f & 2) != 0;
    cv::Mat then_flip = base.clone();
    PasteCutArea(partner, d.areas[0], &then_flip);
    FlipImage(flip, &then_flip);
    cv::Mat flipped = base.clone(), flipped_partner = partner.clone();
    FlipImage(flip, &flipped);
    FlipImage(flip, &flipped_partner);
    const CutMixDraw fd = FlipCutMixDraw(d, flip, 80, 48);
    PasteCutArea(flipped_partner, fd.areas[0], &flipped);
    EXPECT_EQ(cv::norm(then_flip, flipped, cv::NORM_INF), 0.0) << "flip " << f;
    // Boxes: a box flipped stays inside the flipped area exactly when it was inside the area.
    std::vector<BoxXyxy> box = {{6, 8, 20, 25, 1}};
    FlipBoxes(flip, 80, 48, &box);
    EXPECT_GE(box[0].x1, fd.areas[0].x1);
    EXPECT_LE(box[0].x2, fd.areas[0].x2);
    EXPECT_GE(box[0].y1, fd.areas[0].y1);
    EXPECT_LE(box[0].y2, fd.areas[0].y2);
  }
}

}  // namespace
}  // namespace yc
