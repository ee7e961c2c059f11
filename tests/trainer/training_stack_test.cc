// The training stack (trainer/engine/training_stack.h): what the run and the ceiling probe step with,
// built in one place.
#include "trainer/engine/training_stack.h"

#include <gtest/gtest.h>

namespace yc::trainer {
namespace {

TrainOptions CpuOptions() {
  TrainOptions o;
  o.device = "cpu";
  o.model = "yolov8n";
  o.batch = 2;
  o.nbs = 4;  // two batches per optimizer step
  o.optimizer = "SGD";
  o.amp = AmpMode::kOff;
  return o;
}

TEST(TrainingStack, BuildsTheStepTheRunTakes) {
  const TrainOptions o = CpuOptions();
  TrainingStack stack;
  Result<TrainDevice> target = PrepareDevice(o, at::Device(at::kCPU));
  ASSERT_TRUE(target.ok()) << target.status().ToString();
  stack.target = *target;
  EXPECT_FALSE(stack.target.amp.enabled);
  EXPECT_FALSE(stack.target.channels_last);  // CUDA only
  stack.model = NewModel(ParseModelName(o.model).value(), 3, stack.target);
  stack.model->train();
  ASSERT_TRUE(BuildStackOptimizer(&stack, o, 3, /*iterations=*/1000).ok());
  ASSERT_TRUE(BuildStep(&stack, o, 3).ok());
  EXPECT_EQ(stack.accumulate, 2);
  EXPECT_EQ(stack.spec.kind, OptimizerKind::kSGD);
  EXPECT_DOUBLE_EQ(stack.weight_decay, ScaledWeightDecay(o.weight_decay, o.batch, 2, o.nbs));
  ASSERT_NE(stack.optimizer, nullptr);
  ASSERT_NE(stack.ema, nullptr);
  ASSERT_NE(stack.scaler, nullptr);
  ASSERT_NE(stack.loss, nullptr);
  ASSERT_NE(stack.step, nullptr);
  EXPECT_EQ(stack.ema->updates(), 0);
  EXPECT_EQ(DescribeOptimizer(stack).rfind("optimizer: SGD(lr=0.01, momentum=0.937) with parameter groups ", 0), 0u)
      << DescribeOptimizer(stack);

  at::manual_seed(0);
  const at::Tensor images = at::rand({2, 3, 64, 64});
  const at::Tensor labels = at::tensor({0.f, 1.f, 0.5f, 0.5f, 0.3f, 0.4f, 1.f, 2.f, 0.4f, 0.6f, 0.2f, 0.2f}).view({2, 6});
  Result<at::Tensor> items = stack.step->ForwardBackward(images, labels, 1, /*step_now=*/true);
  ASSERT_TRUE(items.ok()) << items.status().ToString();
  EXPECT_EQ(items->numel(), 3);
  ASSERT_TRUE(stack.step->OptimizerStep().ok());
  EXPECT_EQ(stack.ema->updates(), 1);  // the step updates the EMA it was built with
}

TEST(TrainingStack, RefusesHalfPrecisionOnTheCpu) {
  TrainOptions o = CpuOptions();
  o.amp = AmpMode::kOn;
  o.amp_dtype = AmpDtype::kFloat16;
  Result<TrainDevice> target = PrepareDevice(o, at::Device(at::kCPU));
  ASSERT_FALSE(target.ok());
  EXPECT_NE(target.status().message().find("fp16"), std::string::npos) << target.status().ToString();
}

}  // namespace
}  // namespace yc::trainer
