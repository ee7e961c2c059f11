#include "trainer/model/box_ops.h"

#include <cmath>

#include <gtest/gtest.h>

namespace yc::trainer {
namespace {

at::Tensor T(std::initializer_list<float> v) { return at::tensor(std::vector<float>(v)); }

TEST(BoxOps, XywhXyxyRoundTrip) {
  auto xywh = T({10, 20, 4, 6}).view({1, 4});
  auto xyxy = XywhToXyxy(xywh);
  EXPECT_TRUE(at::allclose(xyxy, T({8, 17, 12, 23}).view({1, 4})));
  EXPECT_TRUE(at::allclose(XyxyToXywh(xyxy), xywh));
}

TEST(BoxOps, IoUAndCIoUMatchHandComputedValues) {
  // Two 2x2 squares overlapping in a 1x1 corner: IoU 1/7; same aspect, so CIoU = IoU - rho^2/c^2
  // = 1/7 - 2/18.
  auto a = T({0, 0, 2, 2}), b = T({1, 1, 3, 3});
  EXPECT_NEAR(BboxIoU(a, b, IoUKind::kIoU).item<float>(), 1.0 / 7, 1e-6);
  EXPECT_NEAR(BboxIoU(a, b, IoUKind::kCIoU).item<float>(), 1.0 / 7 - 2.0 / 18, 1e-6);
  // 4x2 vs 2x4 crossing: IoU 4/12, centre distance^2 1, enclosing diagonal^2 32, aspect term
  // v = 4/pi^2 (atan(1/2) - atan(2))^2, alpha = v / (v - iou + 1).
  auto c = T({0, 0, 4, 2}), d = T({1, 0, 3, 4});
  const double iou = 1.0 / 3;
  const double v = 4 / (M_PI * M_PI) * std::pow(std::atan(0.5) - std::atan(2.0), 2);
  const double ciou = iou - (1.0 / 32 + v * v / (v - iou + 1));
  EXPECT_NEAR(BboxIoU(c, d, IoUKind::kIoU).item<float>(), iou, 1e-6);
  EXPECT_NEAR(BboxIoU(c, d, IoUKind::kCIoU).item<float>(), ciou, 1e-6);
  EXPECT_NEAR(ciou, 0.2683316, 1e-6);
  // Disjoint boxes: IoU 0, CIoU negative.
  auto e = T({10, 10, 12, 12});
  EXPECT_EQ(BboxIoU(a, e, IoUKind::kIoU).item<float>(), 0.0f);
  EXPECT_LT(BboxIoU(a, e, IoUKind::kCIoU).item<float>(), 0.0f);
}

TEST(BoxOps, CIoUAlphaIsDetached) {
  // d(CIoU)/d(x2) of box 1 through the aspect term must not include d(alpha): compare against the
  // analytic gradient of iou - rho2/c2 - v * alpha_const with alpha held fixed.
  auto b1 = T({0, 0, 4, 2}).set_requires_grad(true);
  auto b2 = T({1, 0, 3, 4});
  auto ciou = BboxIoU(b1, b2, IoUKind::kCIoU);
  ciou.backward();
  const double h = 1e-3;
  auto f = [&](double x2, double alpha) {
    auto p = T({0, 0, static_cast<float>(x2), 2});
    auto iou = BboxIoU(p, b2, IoUKind::kIoU).item<double>();
    const double w1 = x2, h1 = 2 + 1e-7, w2 = 2, h2 = 4 + 1e-7;
    const double cw = std::max(x2, 3.0), ch = 4;
    const double rho2 = (std::pow(1 + 3 - x2, 2) + std::pow(0 + 4 - 0 - 2, 2)) / 4;
    const double v = 4 / (M_PI * M_PI) * std::pow(std::atan(w2 / h2) - std::atan(w1 / h1), 2);
    return iou - (rho2 / (cw * cw + ch * ch + 1e-7) + v * alpha);
  };
  const double v0 = 4 / (M_PI * M_PI) * std::pow(std::atan(0.5) - std::atan(2.0), 2);
  const double alpha = v0 / (v0 - 1.0 / 3 + 1);
  const double numeric = (f(4 + h, alpha) - f(4 - h, alpha)) / (2 * h);
  EXPECT_NEAR(b1.grad()[2].item<double>(), numeric, 2e-3);
}

TEST(BoxOps, IoUMatrix) {
  auto a = T({0, 0, 2, 2, 0, 0, 1, 1}).view({2, 4});
  auto b = T({0, 0, 2, 2, 1, 1, 3, 3, 5, 5, 6, 6}).view({3, 4});
  auto m = BoxIoUMatrix(a, b);
  ASSERT_EQ(m.sizes(), (at::IntArrayRef{2, 3}));
  EXPECT_NEAR(m[0][0].item<float>(), 1.0, 1e-6);
  EXPECT_NEAR(m[0][1].item<float>(), 1.0 / 7, 1e-6);
  EXPECT_NEAR(m[0][2].item<float>(), 0.0, 1e-6);
  EXPECT_NEAR(m[1][0].item<float>(), 0.25, 1e-6);
}

TEST(BoxOps, AnchorsAreCellCentresRowMajor) {
  auto anchors = MakeAnchors({{2, 3}, {1, 1}}, {8.0, 16.0}, at::TensorOptions().dtype(at::kFloat));
  ASSERT_EQ(anchors.points.size(0), 7);
  auto pts = anchors.points;
  EXPECT_TRUE(at::allclose(pts[0], T({0.5, 0.5})));
  EXPECT_TRUE(at::allclose(pts[1], T({1.5, 0.5})));  // x varies fastest
  EXPECT_TRUE(at::allclose(pts[3], T({0.5, 1.5})));
  EXPECT_TRUE(at::allclose(pts[6], T({0.5, 0.5})));
  EXPECT_EQ(anchors.strides[5].item<float>(), 8.0f);
  EXPECT_EQ(anchors.strides[6].item<float>(), 16.0f);
}

TEST(BoxOps, DistBoxRoundTrip) {
  auto anchors = T({5, 5, 2, 3}).view({2, 2});
  auto dist = T({1, 2, 3, 4, 0.5, 0.5, 0.5, 0.5}).view({2, 4});
  auto box = Dist2Bbox(dist, anchors, /*xywh=*/false);
  EXPECT_TRUE(at::allclose(box[0], T({4, 3, 8, 9})));
  EXPECT_TRUE(at::allclose(Bbox2Dist(anchors, box, 15), dist));
  auto xywh = Dist2Bbox(dist, anchors, /*xywh=*/true);
  EXPECT_TRUE(at::allclose(xywh[0], T({6, 6, 4, 6})));
  // Distances beyond reg_max are clamped to reg_max - 0.01.
  auto far = Bbox2Dist(anchors, T({-100, 5, 6, 6, 2, 3, 2, 3}).view({2, 4}), 15);
  EXPECT_NEAR(far[0][0].item<float>(), 14.99, 1e-5);
  EXPECT_EQ(far[1][2].item<float>(), 0.0f);
}

}  // namespace
}  // namespace yc::trainer
