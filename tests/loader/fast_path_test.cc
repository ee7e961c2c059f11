// The fast train path against the reference path (Ultralytics' operations on a real canvas) over
// many random plans: boxes within 0.5 px, pixels within a mean absolute difference of 1 level.
#include "loader/render/fast_path.h"

#include <gtest/gtest.h>

#include "loader/ops/hsv.h"
#include "loader/render/plan.h"
#include "loader/render/reference_path.h"
#include "tests/loader/fake_source.h"
#include "tests/loader/test_util.h"

namespace yc {
namespace {

using testing::FakeSource;

struct Stats {
  double worst_mad = 0;
  size_t boxes = 0;
  int cutmix = 0;  // samples whose CutMix fired
};

Stats Compare(const FakeSource& src, const LoaderOptions& o, int samples, uint64_t seed) {
  Stats st;
  RenderScratch fast_scratch, ref_scratch;
  std::vector<BoxXyxy> fast_boxes, ref_boxes;
  std::vector<uint8_t> hsv(kHsvChunkPixels * 3);
  for (int i = 0; i < samples; ++i) {
    Rng rng(seed, 0, i);
    TrainPlan plan = DrawTrainPlan(rng, i % src.size(), src.size(), o.hyp, false, o.imgsz);
    if (o.hyp.cutmix > 0) {
      Rng cut(seed, 0, i, RngStream::kCutMix);
      DrawCutMixPlan(cut, src.size(), o.hyp, false, o.imgsz, &plan);
      st.cutmix += plan.cutmix;
    }
    cv::Mat fast(o.imgsz, o.imgsz, CV_8UC3), ref;
    EXPECT_TRUE(RenderTrainFast(plan, src, o, &fast_scratch, &fast, &fast_boxes).ok());
    EXPECT_TRUE(RenderTrainReference(plan, src, o, fast.size(), &ref_scratch, &ref, &ref_boxes).ok());
    if (plan.hsv.enabled) {
      const HsvLut lut = MakeHsvLut(plan.hsv);
      ApplyHsv(lut, fast.data, fast.data, fast.total(), hsv.data());
    }
    const auto d = testing::CompareImages(ref, fast);
    EXPECT_LE(d.mean_abs, 1.0) << "sample " << i;
    st.worst_mad = std::max(st.worst_mad, d.mean_abs);
    EXPECT_EQ(fast_boxes.size(), ref_boxes.size()) << "sample " << i;
    for (size_t k = 0; k < std::min(fast_boxes.size(), ref_boxes.size()); ++k) {
      EXPECT_EQ(fast_boxes[k].cls, ref_boxes[k].cls);
      EXPECT_NEAR(fast_boxes[k].x1, ref_boxes[k].x1, 0.5) << "sample " << i << " box " << k;
      EXPECT_NEAR(fast_boxes[k].y1, ref_boxes[k].y1, 0.5) << "sample " << i << " box " << k;
      EXPECT_NEAR(fast_boxes[k].x2, ref_boxes[k].x2, 0.5) << "sample " << i << " box " << k;
      EXPECT_NEAR(fast_boxes[k].y2, ref_boxes[k].y2, 0.5) << "sample " << i << " box " << k;
    }
    st.boxes += ref_boxes.size();
  }
  return st;
}

LoaderOptions Small(int imgsz) {
  LoaderOptions o;
  o.imgsz = imgsz;
  return o;
}

TEST(FastPathTest, DefaultHypsMosaic) {
  const FakeSource src = FakeSource::Synthetic(12, 256, 1);
  const Stats st = Compare(src, Small(256), 40, 1);
  EXPECT_GT(st.boxes, 40u);  // the comparison saw boxes
  EXPECT_LE(st.worst_mad, 1.0);
}

TEST(FastPathTest, PortableKernels) {
  const testing::ScopedNoSimd no_simd;
  const FakeSource src = FakeSource::Synthetic(6, 256, 5);
  Compare(src, Small(256), 12, 7);
}

TEST(FastPathTest, RotationShearPerspectiveAndFlips) {
  const FakeSource src = FakeSource::Synthetic(12, 256, 2);
  LoaderOptions o = Small(256);
  o.hyp.degrees = 20, o.hyp.shear = 5, o.hyp.flipud = 0.5, o.hyp.scale = 0.9;
  Compare(src, o, 30, 2);
  o.hyp.perspective = 0.0005;
  Compare(src, o, 20, 3);
}

TEST(FastPathTest, LetterboxPathAndMixup) {
  const FakeSource src = FakeSource::Synthetic(12, 256, 3);
  LoaderOptions o = Small(256);
  o.hyp.mosaic = 0.5, o.hyp.mixup = 0.5, o.hyp.degrees = 5;
  Compare(src, o, 40, 4);
}

// CutMix pastes before the flips in the reference path and into the already flipped output in the
// fast path: the same pixels and boxes either way, with MixUp before it.
TEST(FastPathTest, CutMixWithMixupAndFlips) {
  const FakeSource src = FakeSource::Synthetic(12, 256, 7);
  LoaderOptions o = Small(256);
  o.hyp.mosaic = 0.5, o.hyp.mixup = 0.3, o.hyp.cutmix = 0.8, o.hyp.flipud = 0.5;
  const Stats st = Compare(src, o, 40, 8);
  EXPECT_GT(st.cutmix, 20);
}

TEST(FastPathTest, RecordsAtAnotherSizeAreResizedLikeLoadImage) {
  // Cache built at 200, loader at 256: load_image upsizes every tile.
  const FakeSource src = FakeSource::Synthetic(8, 200, 4);
  LoaderOptions o = Small(256);
  o.hyp.mosaic = 0.7;
  Compare(src, o, 20, 5);
}

TEST(FastPathTest, OddImages) {
  FakeSource src;
  src.Add(FakeSource::MakeImage(10, 10, 1, 1, "ten"));
  src.Add(FakeSource::MakeImage(1, 1000, 1, 2, "thin"));
  src.Add(FakeSource::MakeImage(1000, 1, 0, 3, "tall"));
  src.Add(FakeSource::MakeImage(256, 256, 0, 4, "empty"));
  auto edge = FakeSource::MakeImage(180, 256, 0, 5, "edges");
  edge.boxes = {{1, 0.05f, 0.5f, 0.1f, 0.2f}, {2, 0.95f, 0.05f, 0.1f, 0.1f}, {3, 0.5f, 0.5f, 1.0f, 1.0f}};
  src.Add(edge);
  LoaderOptions o = Small(256);
  o.hyp.mosaic = 0.6;
  Compare(src, o, 40, 6);
}

}  // namespace
}  // namespace yc
