// The train step's convolutions recorded and run ahead of the first batch (trainer/runtime/conv_warmup.h,
// trainer/engine/step_warmup.h). On the CPU the warm-up warms nothing, but it records and runs the same calls.
#include "trainer/runtime/conv_warmup.h"

#include <gtest/gtest.h>

#include <torch/cuda.h>
#include <torch/nn/modules/conv.h>

#include "trainer/engine/step_warmup.h"

namespace yc::trainer {
namespace {

namespace nn = torch::nn;

TEST(ConvWarmup, RecordsEachDistinctConvolutionOnceWithCudnnOff) {
  nn::Conv2d stem(nn::Conv2dOptions(3, 8, 3).stride(2).padding(1).bias(false));
  nn::Conv2d depthwise(nn::Conv2dOptions(8, 8, 3).padding(1).groups(8));
  const at::Tensor image = at::rand({1, 3, 32, 32});
  const bool cudnn_before = at::globalContext().userEnabledCuDNN();
  bool cudnn_inside = true;
  const std::vector<ConvCall> calls = RecordConvCalls([&] {
    cudnn_inside = at::globalContext().userEnabledCuDNN();
    depthwise->forward(stem->forward(image));
    stem->forward(image);  // the same call again
  });
  EXPECT_FALSE(cudnn_inside);
  EXPECT_EQ(at::globalContext().userEnabledCuDNN(), cudnn_before);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].input, (std::vector<int64_t>{1, 3, 32, 32}));
  EXPECT_EQ(calls[0].weight, (std::vector<int64_t>{8, 3, 3, 3}));
  EXPECT_EQ(calls[0].stride, (std::vector<int64_t>{2, 2}));
  EXPECT_FALSE(calls[0].bias);
  EXPECT_FALSE(calls[0].input_grad);  // the image: no gradient of its own
  EXPECT_TRUE(calls[0].weight_grad);
  EXPECT_EQ(calls[1].input, (std::vector<int64_t>{1, 8, 16, 16}));
  EXPECT_EQ(calls[1].groups, 8);
  EXPECT_TRUE(calls[1].bias);
  EXPECT_TRUE(calls[1].input_grad);
  EXPECT_EQ(calls[1].dtype, at::kFloat);
  // Nothing is recorded outside a recording.
  EXPECT_TRUE(RecordConvCalls([] {}).empty());
}

TEST(ConvWarmup, RunningACallMakesThatVeryCall) {
  nn::Conv2d stem(nn::Conv2dOptions(3, 8, 3).stride(2).padding(1).bias(false));
  nn::Conv2d pointwise(nn::Conv2dOptions(8, 4, 1));
  const at::Tensor image = at::rand({2, 3, 16, 16}).contiguous(at::MemoryFormat::ChannelsLast);
  const std::vector<ConvCall> calls = RecordConvCalls([&] { pointwise->forward(stem->forward(image)); });
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].memory_format, at::MemoryFormat::ChannelsLast);
  for (const ConvCall& call : calls) {
    const std::vector<ConvCall> again = RecordConvCalls([&] { RunConvCall(call, at::Device(at::kCPU)); });
    ASSERT_EQ(again.size(), 1u);  // the backward is no aten::convolution
    EXPECT_TRUE(again[0] == call);
  }
}

TEST(ConvWarmup, RecordingEndsWhenTheForwardThrows) {
  const bool cudnn_before = at::globalContext().userEnabledCuDNN();
  EXPECT_THROW(RecordConvCalls([] { throw std::runtime_error("forward failed"); }), std::runtime_error);
  EXPECT_EQ(at::globalContext().userEnabledCuDNN(), cudnn_before);
  nn::Conv2d conv(nn::Conv2dOptions(3, 4, 1));
  EXPECT_EQ(RecordConvCalls([&] { conv->forward(at::rand({1, 3, 4, 4})); }).size(), 1u);
}

TEST(ConvWarmup, AtBatchSizesSetsTheBatchAndDropsDuplicates) {
  nn::Conv2d a(nn::Conv2dOptions(3, 4, 3)), b(nn::Conv2dOptions(4, 4, 1));
  const std::vector<ConvCall> calls = RecordConvCalls([&] { b->forward(a->forward(at::rand({1, 3, 8, 8}))); });
  ASSERT_EQ(calls.size(), 2u);
  const std::vector<ConvCall> two = AtBatchSizes(calls, {4, 2, 4});
  ASSERT_EQ(two.size(), 4u);
  EXPECT_EQ(two[0].input[0], 4);
  EXPECT_EQ(two[1].input[0], 4);
  EXPECT_EQ(two[2].input[0], 2);
  EXPECT_EQ(two[3].input, (std::vector<int64_t>{2, 4, 6, 6}));
}

TEST(ConvWarmup, RunsEveryCallOnSeveralThreadsAndReportsAFailure) {
  nn::Conv2d a(nn::Conv2dOptions(3, 4, 3)), b(nn::Conv2dOptions(4, 4, 3).groups(4));
  const std::vector<ConvCall> calls =
      AtBatchSizes(RecordConvCalls([&] { b->forward(a->forward(at::rand({1, 3, 8, 8}))); }), {3, 2});
  const ConvWarmup ok = WarmConvCalls(calls, at::Device(at::kCPU), 3);
  EXPECT_EQ(ok.calls, 4);
  EXPECT_TRUE(ok.error.empty()) << ok.error;
  std::vector<ConvCall> bad = calls;
  bad[1].weight[1] = 5;  // channels that do not match the input's
  const ConvWarmup failed = WarmConvCalls(bad, at::Device(at::kCPU), 1);
  EXPECT_EQ(failed.calls, 1);  // the first call ran; the failure stopped the rest
  EXPECT_FALSE(failed.error.empty());
  EXPECT_EQ(failed.error.find('\n'), std::string::npos) << failed.error;  // one line, no backtrace
}

TrainOptions StackOptions(const std::string& model, int batch) {
  TrainOptions o;
  o.model = model;
  o.batch = batch;
  o.optimizer = "SGD";
  o.amp = AmpMode::kOff;
  return o;
}

// The run's stack on `device`, with the step built (training_stack.h).
void BuildStack(const TrainOptions& o, const at::Device& device, TrainingStack* stack) {
  Result<TrainDevice> target = PrepareDevice(o, device);
  ASSERT_TRUE(target.ok()) << target.status().ToString();
  stack->target = *target;
  stack->model = NewModel(ParseModelName(o.model).value(), 3, stack->target);
  stack->model->train();
  ASSERT_TRUE(BuildStackOptimizer(stack, o, 3, /*iterations=*/100).ok());
  ASSERT_TRUE(BuildStep(stack, o, 3).ok());
}

TEST(StepWarmup, RecordsTheModelsConvolutionsAndLeavesTheModelAsItWas) {
  TrainingStack stack;
  ASSERT_NO_FATAL_FAILURE(BuildStack(StackOptions("yolov8n", 2), at::Device(at::kCPU), &stack));
  const std::vector<BatchShape> shapes{{2, 64, 64}, {1, 64, 64}};
  EXPECT_EQ(ConvWarmupBlocker(stack, shapes, false), "not CUDA");

  std::vector<at::Tensor> before;
  for (const at::Tensor& t : stack.model->parameters()) before.push_back(t.clone());
  for (const at::Tensor& t : stack.model->buffers()) before.push_back(t.clone());
  const std::string line = WarmUpStepConvolutions(stack, shapes, 2);
  // Every distinct convolution of the forward at 64 x 64, at both batch sizes.
  std::vector<ConvCall> one_shape;
  {
    stack.model->eval();
    one_shape = RecordConvCalls([&] { stack.model->forward(at::zeros({1, 3, 64, 64})); });
    stack.model->train();
  }
  const std::string n = std::to_string(2 * one_shape.size());
  const std::string expected =
      "conv warm-up: " + n + " of " + n + " convolutions (2 batch shapes: 2, 1 images) on 2 threads, ";
  EXPECT_EQ(line.rfind(expected, 0), 0u) << line;
  EXPECT_TRUE(stack.model->is_training());
  size_t i = 0;
  for (const at::Tensor& t : stack.model->parameters()) EXPECT_TRUE(t.equal(before[i++]));
  // The buffers: BatchNorm's running statistics, which a train-mode forward would have moved.
  for (const at::Tensor& t : stack.model->buffers()) EXPECT_TRUE(t.equal(before[i++]));
}

TEST(StepWarmup, AFailedRecordingIsSaidAndLeavesTheModelTraining) {
  TrainingStack stack;
  ASSERT_NO_FATAL_FAILURE(BuildStack(StackOptions("yolov8n", 2), at::Device(at::kCPU), &stack));
  const std::string line = WarmUpStepConvolutions(stack, {{2, 0, 0}}, 2);  // no pixels: the first conv refuses
  EXPECT_EQ(line.rfind("conv warm-up: none (recording the step's convolutions failed: ", 0), 0u) << line;
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  EXPECT_TRUE(stack.model->is_training());
}

TEST(StepWarmup, WarmsYolo11nsStepOnCuda) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  TrainOptions o = StackOptions("yolo11n", 8);
  o.amp = AmpMode::kOn;
  o.amp_dtype = AmpDtype::kFloat16;
  TrainingStack stack;
  ASSERT_NO_FATAL_FAILURE(BuildStack(o, at::Device(at::kCUDA, 0), &stack));
  const std::vector<BatchShape> shapes{{8, 320, 320}, {5, 320, 320}};
  ASSERT_EQ(ConvWarmupBlocker(stack, shapes, false), "");
  EXPECT_NE(ConvWarmupBlocker(stack, shapes, true), "");
  const std::string line = WarmUpStepConvolutions(stack, shapes, 4);
  EXPECT_EQ(line.find("stopped"), std::string::npos) << line;
  // The step still runs, and in fp16 under autocast as before.
  const at::Tensor images = at::rand({8, 3, 320, 320}, at::kCUDA).contiguous(at::MemoryFormat::ChannelsLast);
  const at::Tensor labels = at::tensor({0.f, 1.f, 0.5f, 0.5f, 0.3f, 0.4f}, at::kCUDA).view({1, 6});
  Result<at::Tensor> items = stack.step->ForwardBackward(images, labels, 1, /*step_now=*/true);
  ASSERT_TRUE(items.ok()) << items.status().ToString();
  EXPECT_TRUE(items->isfinite().all().item<bool>());
}

}  // namespace
}  // namespace yc::trainer
