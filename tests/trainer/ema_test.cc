#include "trainer/engine/ema.h"

#include <cmath>

#include <c10/core/GradMode.h>
#include <gtest/gtest.h>

#include "trainer/model/blocks.h"
#include "trainer/model/detection_model.h"

namespace yc::trainer {
namespace {

TEST(ModelEMA, DecayRamp) {
  EXPECT_DOUBLE_EQ(ModelEMA::DecayAt(0, 0.9999, 2000), 0.0);
  EXPECT_NEAR(ModelEMA::DecayAt(2000, 0.9999, 2000), 0.9999 * (1 - std::exp(-1.0)), 1e-12);
  EXPECT_NEAR(ModelEMA::DecayAt(1000000, 0.9999, 2000), 0.9999, 1e-9);
}

TEST(ModelEMA, AveragesParametersAndBatchNormStats) {
  at::manual_seed(0);
  Conv model(3, 4, 3, 1);
  ModelEMA ema(*model);
  auto ema_conv = ema.as<ConvImpl>();
  ASSERT_TRUE(ema_conv);
  EXPECT_FALSE(ema_conv->is_training());
  EXPECT_FALSE(ema_conv->conv->weight.requires_grad());
  auto w0 = ema_conv->conv->weight.clone();

  // Change the model: weights +1, BN stats from one training forward.
  {
    c10::NoGradGuard no_grad;
    model->conv->weight.add_(1.0);
  }
  model->train();
  model->forward(at::randn({2, 3, 8, 8}) * 3 + 1);
  ASSERT_TRUE(ema.Update(*model).ok());
  const double d = ModelEMA::DecayAt(1, 0.9999, 2000);
  EXPECT_EQ(ema.updates(), 1);
  EXPECT_TRUE(at::allclose(ema_conv->conv->weight, w0 * d + model->conv->weight * (1 - d), 1e-6, 1e-7));
  // Running mean started at 0 in both; the EMA's moves by (1 - d) of the model's.
  EXPECT_TRUE(at::allclose(ema_conv->bn->running_mean, model->bn->running_mean * (1 - d), 1e-6, 1e-7));
  // The integer batch counter is not averaged.
  EXPECT_EQ(ema_conv->bn->num_batches_tracked.item<int64_t>(), 0);

  // Second update uses the grown decay.
  auto before = ema_conv->conv->weight.clone();
  ASSERT_TRUE(ema.Update(*model).ok());
  const double d2 = ModelEMA::DecayAt(2, 0.9999, 2000);
  EXPECT_TRUE(at::allclose(ema_conv->conv->weight, before * d2 + model->conv->weight * (1 - d2), 1e-6, 1e-7));
}

// The captured step's update (graphed_step.h): the count in a device scalar, the decay computed there.
// Replayed as a graph it is the same work as run here; it must give what the host-side update gives.
TEST(ModelEMA, DeviceCountUpdateEqualsTheHostOne) {
  at::manual_seed(0);
  Conv model(3, 4, 3, 1);
  ModelEMA host(*model, 0.9999, 2000.0, /*updates=*/1500);
  ModelEMA device(*model, 0.9999, 2000.0, /*updates=*/1500);
  EXPECT_FALSE(device.UpdateOnDevice(*model).ok());  // LoadDeviceCount() first
  for (int k = 0; k < 3; ++k) {
    {
      c10::NoGradGuard no_grad;
      model->conv->weight.add_(0.5);
    }
    ASSERT_TRUE(host.Update(*model).ok());
    device.LoadDeviceCount();
    ASSERT_TRUE(device.UpdateOnDevice(*model).ok());
    device.CountDeviceUpdate();
  }
  EXPECT_EQ(device.updates(), host.updates());
  EXPECT_TRUE(at::allclose(device.as<ConvImpl>()->conv->weight, host.as<ConvImpl>()->conv->weight, 1e-6, 1e-6));
  EXPECT_TRUE(at::allclose(device.as<ConvImpl>()->bn->running_var, host.as<ConvImpl>()->bn->running_var, 1e-6, 1e-6));
}

TEST(ModelEMA, RejectsADifferentModel) {
  Conv model(3, 4, 3, 1);
  ModelEMA ema(*model);
  C2f other(3, 4, 1);
  EXPECT_FALSE(ema.Update(*other).ok());
  EXPECT_TRUE(ema.Update(*model).ok());
}

TEST(ModelEMA, WorksOnTheFullModel) {
  DetectionModel model(ModelOptions(ModelFamily::kV8, ModelScale::kN, 2));
  ModelEMA ema(*model, 0.9999, 2000, /*updates=*/100);
  auto copy = ema.as<DetectionModelImpl>();
  ASSERT_TRUE(copy);
  ASSERT_TRUE(ema.Update(*model).ok());
  EXPECT_EQ(ema.updates(), 101);
  c10::NoGradGuard no_grad;
  model->eval();
  auto x = at::rand({1, 3, 32, 32});
  // Identical weights in, identical weights out (d * w + (1 - d) * w = w).
  EXPECT_TRUE(at::allclose(copy->forward(x).pred, model->forward(x).pred, 1e-5, 1e-4));
}

}  // namespace
}  // namespace yc::trainer
