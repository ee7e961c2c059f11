#include "trainer/eval/metrics.h"
#include "trainer/eval/validator.h"

#include <gtest/gtest.h>

namespace yc::trainer {
namespace {

at::Tensor Rows(std::vector<std::vector<float>> rows, int64_t width) {
  auto t = at::zeros({static_cast<int64_t>(rows.size()), width});
  for (size_t i = 0; i < rows.size(); ++i) {
    for (int64_t j = 0; j < width; ++j) t[i][j] = rows[i][j];
  }
  return t;
}

TEST(Metrics, IouThresholds) {
  const auto& t = IouThresholds();
  ASSERT_EQ(t.size(), 10u);
  EXPECT_FLOAT_EQ(t[0], 0.5f);
  EXPECT_FLOAT_EQ(t[9], 0.95f);
  EXPECT_NEAR(t[3], 0.65f, 1e-6);
}

TEST(Metrics, InterpFollowsNumpy) {
  const std::vector<double> xp{0, 0.5, 0.5, 1}, fp{1, 0.8, 0.6, 0};
  EXPECT_DOUBLE_EQ(Interp(-1, xp, fp, 7, 9), 7);
  EXPECT_DOUBLE_EQ(Interp(2, xp, fp, 7, 9), 9);
  EXPECT_DOUBLE_EQ(Interp(0.25, xp, fp, 7, 9), 0.9);
  EXPECT_DOUBLE_EQ(Interp(0.5, xp, fp, 7, 9), 0.6);  // duplicates: the last equal knot wins
  EXPECT_DOUBLE_EQ(Interp(0.75, xp, fp, 7, 9), 0.3);
  EXPECT_DOUBLE_EQ(Interp(1, xp, fp, 7, 9), 0);
}

TEST(Metrics, ComputeApKnownCurves) {
  // Perfect detector: Ultralytics reports 0.995, because interp at recall 1.0 hits the appended
  // (1.0, 0.0) end point and the last trapezoid is halved.
  EXPECT_NEAR(ComputeAP({1.0}, {1.0}), 0.995, 1e-12);
  // Half the objects found at precision 1: envelope 1 up to recall 0.5, then linear to 0 at 1.
  EXPECT_NEAR(ComputeAP({0.5}, {1.0}), 0.75, 1e-12);
  // Found nothing: no area.
  EXPECT_NEAR(ComputeAP({0.0}, {0.0}), 0.0, 1e-12);
  // Two detections, the first a false positive: recall [0, 1], precision [0, 0.5]. The envelope is 0.5
  // from recall 0 (of the duplicate knots at 0, numpy takes the later one) and 0 at recall 1.
  EXPECT_NEAR(ComputeAP({0.0, 1.0}, {0.0, 0.5}), 0.5 * 0.99 + 0.01 * (0.5 + 0.0) / 2 + 0.0, 1e-9);
}

TEST(Metrics, MatchPredictionsReproducesUltralyticsOrder) {
  // One label, two same-class detections with IoU 0.8 (det 0) and 0.9 (det 1). Ultralytics keeps,
  // per label, the surviving pair with the smallest detection index (np.unique re-orders by detection),
  // so det 0 is the true positive at thresholds <= 0.8.
  auto iou = at::tensor({0.8f, 0.9f}).view({1, 2});
  auto correct = MatchPredictions(at::tensor({3, 3}), at::tensor({3}), iou);
  ASSERT_EQ(correct.sizes(), (at::IntArrayRef{2, 10}));
  EXPECT_TRUE(correct[0][0].item<bool>());
  EXPECT_FALSE(correct[1][0].item<bool>());
  EXPECT_TRUE(correct[0][6].item<bool>());    // 0.8 >= 0.8
  EXPECT_FALSE(correct[0][7].item<bool>());   // 0.8 < 0.85
  EXPECT_TRUE(correct[1][7].item<bool>());    // only det 1 reaches 0.85 and 0.9
  EXPECT_TRUE(correct[1][8].item<bool>());
  EXPECT_FALSE(correct[1][9].item<bool>());
  // Class mismatch never matches.
  auto none = MatchPredictions(at::tensor({1}), at::tensor({2}), at::tensor({1.0f}).view({1, 1}));
  EXPECT_FALSE(none.any().item<bool>());
  // Two labels, two detections, crossing IoUs: each detection takes its best label.
  auto cross = MatchPredictions(at::tensor({0, 0}), at::tensor({0, 0}), at::tensor({0.6f, 0.9f, 0.8f, 0.0f}).view({2, 2}));
  EXPECT_TRUE(cross[0][0].item<bool>());
  EXPECT_TRUE(cross[1][0].item<bool>());
}

TEST(Metrics, PerfectPredictions) {
  DetectionMetrics m;
  auto gt = Rows({{10, 10, 50, 50}, {60, 60, 90, 120}}, 4);
  auto cls = at::tensor({0, 1});
  auto det = Rows({{10, 10, 50, 50, 0.9f, 0}, {60, 60, 90, 120, 0.8f, 1}}, 6);
  m.Update(det, gt, cls);
  m.Update(det, gt, cls);
  auto s = m.Compute();
  EXPECT_NEAR(s.map50, 0.995, 1e-9);
  EXPECT_NEAR(s.map50_95, 0.995, 1e-9);
  EXPECT_NEAR(s.precision, 1.0, 1e-9);
  EXPECT_NEAR(s.recall, 1.0, 1e-9);
  EXPECT_NEAR(s.fitness, 0.995, 1e-9);
  EXPECT_EQ(s.images, 2);
  EXPECT_EQ(s.instances, 4);
  ASSERT_EQ(s.per_class.classes, (std::vector<int64_t>{0, 1}));
}

TEST(Metrics, HalfFoundAndLocalisationQuality) {
  DetectionMetrics m;
  // Image 1: two class-0 objects, one found exactly. Image 2: one class-0 object found with IoU 0.62
  // (true positive at 0.50, 0.55, 0.60 only), lower confidence.
  m.Update(Rows({{0, 0, 10, 10, 0.9f, 0}}, 6), Rows({{0, 0, 10, 10}, {20, 20, 30, 30}}, 4), at::tensor({0, 0}));
  m.Update(Rows({{0, 0, 10, 6.2f, 0.5f, 0}}, 6), Rows({{0, 0, 10, 10}}, 4), at::tensor({0}));
  auto s = m.Compute();
  // At IoU 0.5: recall [1/3, 2/3], precision [1, 1] -> envelope 1 to 2/3, then linear to 0 at 1.
  const double ap_hi = ComputeAP({1.0 / 3, 2.0 / 3}, {1.0, 1.0});
  const double ap_lo = ComputeAP({1.0 / 3, 1.0 / 3}, {1.0, 0.5});
  EXPECT_NEAR(s.map50, ap_hi, 1e-9);
  EXPECT_NEAR(s.map50_95, (3 * ap_hi + 7 * ap_lo) / 10, 1e-9);
  EXPECT_NEAR(ap_hi, 2.0 / 3 + 1.0 / 6, 0.01);  // ~0.833 before the 101-point discretisation
  EXPECT_NEAR(s.recall, 2.0 / 3, 1e-9);
  EXPECT_NEAR(s.precision, 1.0, 1e-9);
}

TEST(Metrics, EmptyCases) {
  DetectionMetrics none;
  EXPECT_EQ(none.Compute().map50, 0.0);
  // Ground truth but no detections; detections on an image without ground truth.
  DetectionMetrics m;
  m.Update(at::zeros({0, 6}), Rows({{0, 0, 10, 10}}, 4), at::tensor({0}));
  m.Update(Rows({{0, 0, 10, 10, 0.9f, 0}}, 6), at::zeros({0, 4}), at::zeros({0}, at::kLong));
  auto s = m.Compute();
  EXPECT_EQ(s.map50, 0.0);
  EXPECT_EQ(s.map50_95, 0.0);
  EXPECT_EQ(s.images, 2);
  EXPECT_EQ(s.instances, 1);
  // The false positive lowers precision once something is found.
  m.Update(Rows({{0, 0, 10, 10, 0.5f, 0}}, 6), Rows({{0, 0, 10, 10}}, 4), at::tensor({0}));
  auto s2 = m.Compute();
  // Sorted: fp (0.9), tp (0.5); 2 labels -> recall [0, 0.5], precision [0, 0.5].
  EXPECT_NEAR(s2.map50, ComputeAP({0.0, 0.5}, {0.0, 0.5}), 1e-9);
  EXPECT_GT(s2.map50, 0.0);
  m.Reset();
  EXPECT_EQ(m.Compute().images, 0);
}

// Boxes back to the original image: the host table's in-place loop gives the tensor ops' floats bit for bit
// (a strided view takes the tensor ops), clipping included.
TEST(Metrics, ScaleBoxesToOriginalHostLoopEqualsTensorOps) {
  at::manual_seed(3);
  const at::Tensor base = at::rand({200, 6}) * 700 - 30;  // some outside the image: clipped on both sides
  at::Tensor fast = base.clone();
  at::Tensor wide = at::zeros({200, 12});
  wide.index_copy_(1, at::arange(0, 12, 2), base);
  at::Tensor slow = wide.slice(1, 0, 12, 2);  // the same values, column stride 2
  ASSERT_NE(slow.stride(1), 1);
  ScaleBoxesToOriginal(fast, 0.6666667, 13.5, 80.25, 612, 418);
  ScaleBoxesToOriginal(slow, 0.6666667, 13.5, 80.25, 612, 418);
  EXPECT_TRUE(at::equal(fast, slow.contiguous()));
  EXPECT_TRUE(at::equal(fast.narrow(1, 4, 2), base.narrow(1, 4, 2)));  // score and class untouched
  EXPECT_GE(fast.narrow(1, 0, 4).min().item<float>(), 0.0f);
  EXPECT_LE(fast.select(1, 0).max().item<float>(), 612.0f);
  EXPECT_LE(fast.select(1, 3).max().item<float>(), 418.0f);
}

}  // namespace
}  // namespace yc::trainer
