#include "trainer/engine/grad_scaler.h"

#include <limits>

#include <gtest/gtest.h>
#include <torch/optim/sgd.h>

#include "trainer/runtime/autocast.h"
#include "trainer/model/blocks.h"

namespace yc::trainer {
namespace {

TEST(GradScaler, UnscaleFlagsNonFinite) {
  std::vector<at::Tensor> grads{at::full({3}, 8.0f), at::full({2, 2}, -4.0f)};
  auto found = at::zeros({1});
  auto inv = at::full({1}, 0.25f);
  GradScaler::UnscaleGrads(grads, found, inv);
  EXPECT_EQ(found.item<float>(), 0.0f);
  EXPECT_TRUE(at::allclose(grads[0], at::full({3}, 2.0f)));
  EXPECT_TRUE(at::allclose(grads[1], at::full({2, 2}, -1.0f)));
  grads[1][0][1] = std::numeric_limits<float>::infinity();
  grads[0][2] = std::numeric_limits<float>::quiet_NaN();
  GradScaler::UnscaleGrads(grads, found, inv);
  EXPECT_EQ(found.item<float>(), 1.0f);
}

TEST(GradScaler, UpdateScaleMirrorsTheKernel) {
  auto scale = at::full({1}, 1024.0f);
  auto tracker = at::zeros({1}, at::kInt);
  auto clean = at::zeros({1}), inf = at::ones({1});
  GradScaler::UpdateScale(scale, tracker, clean, 2.0, 0.5, 3);
  GradScaler::UpdateScale(scale, tracker, clean, 2.0, 0.5, 3);
  EXPECT_EQ(scale.item<float>(), 1024.0f);
  EXPECT_EQ(tracker.item<int>(), 2);
  GradScaler::UpdateScale(scale, tracker, clean, 2.0, 0.5, 3);  // third clean step: grow
  EXPECT_EQ(scale.item<float>(), 2048.0f);
  EXPECT_EQ(tracker.item<int>(), 0);
  GradScaler::UpdateScale(scale, tracker, clean, 2.0, 0.5, 3);
  GradScaler::UpdateScale(scale, tracker, inf, 2.0, 0.5, 3);  // overflow: back off, reset
  EXPECT_EQ(scale.item<float>(), 1024.0f);
  EXPECT_EQ(tracker.item<int>(), 0);
  // Growth that would overflow fp32 keeps the scale but still resets the counter.
  auto huge = at::full({1}, 3e38f);
  auto t1 = at::full({1}, 0, at::kInt);
  GradScaler::UpdateScale(huge, t1, clean, 2.0, 0.5, 1);
  EXPECT_EQ(huge.item<float>(), 3e38f);
  EXPECT_EQ(t1.item<int>(), 0);
}

TEST(GradScaler, SkipsStepsWithNonFiniteGradients) {
  at::manual_seed(0);
  auto w = at::randn({4}).set_requires_grad(true);
  torch::optim::SGD opt({w}, torch::optim::SGDOptions(0.1));
  GradScalerOptions o;
  o.init_scale = 256.0;
  o.growth_interval = 2;
  GradScaler scaler(o);

  // Clean step: gradient of sum(w * 3) is 3, unscaled back from 768.
  auto before = w.detach().clone();
  scaler.Scale((w * 3).sum()).backward();
  EXPECT_TRUE(at::allclose(w.grad(), at::full({4}, 768.0f)));
  ASSERT_TRUE(scaler.Unscale(opt).ok());
  EXPECT_TRUE(at::allclose(w.grad(), at::full({4}, 3.0f)));
  ASSERT_TRUE(scaler.Unscale(opt).ok());  // second call in the same step is a no-op
  EXPECT_TRUE(at::allclose(w.grad(), at::full({4}, 3.0f)));
  auto stepped = scaler.Step(opt);
  ASSERT_TRUE(stepped.ok());
  EXPECT_TRUE(stepped.value());
  EXPECT_TRUE(at::allclose(w.detach(), before - 0.3));
  scaler.Update();
  EXPECT_EQ(scaler.scale_value(), 256.0);
  opt.zero_grad();

  // Overflowing step: skipped, scale halves.
  before = w.detach().clone();
  scaler.Scale((w * std::numeric_limits<float>::infinity()).sum()).backward();
  stepped = scaler.Step(opt);  // unscales implicitly
  ASSERT_TRUE(stepped.ok());
  EXPECT_FALSE(stepped.value());
  EXPECT_TRUE(at::equal(w.detach(), before));
  scaler.Update();
  EXPECT_EQ(scaler.scale_value(), 128.0);
  opt.zero_grad();

  // Two clean steps grow it back.
  for (int i = 0; i < 2; ++i) {
    scaler.Scale(w.sum()).backward();
    ASSERT_TRUE(scaler.Step(opt).value());
    scaler.Update();
    opt.zero_grad();
  }
  EXPECT_EQ(scaler.scale_value(), 256.0);
}

TEST(GradScaler, RefusesHalfGradientsAndCanBeDisabled) {
  auto h = at::zeros({2}, at::kHalf).set_requires_grad(true);
  h.mutable_grad() = at::ones({2}, at::kHalf);
  torch::optim::SGD opt({h}, torch::optim::SGDOptions(0.1));
  GradScaler scaler;
  EXPECT_FALSE(scaler.Unscale(opt).ok());

  GradScalerOptions off;
  off.enabled = false;
  GradScaler identity(off);
  auto loss = at::tensor(3.0f);
  EXPECT_TRUE(at::equal(identity.Scale(loss), loss));
}

TEST(Autocast, GuardSetsAndRestoresCpuState) {
  at::manual_seed(0);
  Conv conv(3, 4, 3, 1);
  auto x = at::rand({1, 3, 8, 8});
  ASSERT_FALSE(AutocastGuard::IsEnabled(at::kCPU));
  {
    AutocastGuard amp(at::kCPU, true, at::kBFloat16);
    EXPECT_TRUE(AutocastGuard::IsEnabled(at::kCPU));
    EXPECT_EQ(conv->conv->forward(x).scalar_type(), at::kBFloat16);
    {
      AutocastGuard off(at::kCPU, false);
      EXPECT_FALSE(AutocastGuard::IsEnabled(at::kCPU));
      EXPECT_EQ(conv->conv->forward(x).scalar_type(), at::kFloat);
    }
    EXPECT_TRUE(AutocastGuard::IsEnabled(at::kCPU));
  }
  EXPECT_FALSE(AutocastGuard::IsEnabled(at::kCPU));
  EXPECT_EQ(conv->conv->forward(x).scalar_type(), at::kFloat);
}

}  // namespace
}  // namespace yc::trainer
