#include "trainer/engine/step_warmup.h"

#include <utility>

#include "base/format.h"
#include "trainer/model/depthwise_kernel.h"
#include "trainer/runtime/autocast.h"
#include "trainer/runtime/conv_warmup.h"
#include "trainer/runtime/exception_text.h"

namespace yc::trainer {

std::string ConvWarmupBlocker(const TrainingStack& stack, const std::vector<BatchShape>& shapes, bool multi_scale) {
  if (!stack.target.device.is_cuda()) return "not CUDA";
  if (!at::globalContext().userEnabledCuDNN() || !at::globalContext().hasCuDNN()) return "cuDNN off";
  if (multi_scale) return "multi-scale batches change shape every batch";
  if (shapes.empty() || shapes.size() > kMaxWarmedShapes)
    return std::to_string(shapes.size()) + " batch shapes (rect batches)";
  return "";
}

namespace {

// The convolutions of a train forward on a batch of `shape`, recorded from one image of that size.
std::vector<ConvCall> RecordStepConvolutions(TrainingStack& stack, const BatchShape& shape) {
  const TrainDevice& t = stack.target;
  at::Tensor image = at::zeros({1, 3, shape.height, shape.width}, at::TensorOptions().device(t.device));
  if (t.channels_last) image = image.contiguous(at::MemoryFormat::ChannelsLast);
  return RecordConvCalls([&] {
    AutocastGuard autocast(t.device.type(), t.amp.enabled, t.amp.dtype);
    DepthwiseKernelScope depthwise(stack.step->depthwise_policy().For({shape.size, 3, shape.height, shape.width}));
    stack.model->forward(image);
    if (stack.teacher) stack.teacher->Forward(image);  // --teacher: its forwards, without gradients
  });
}

}  // namespace

std::string WarmUpStepConvolutions(TrainingStack& stack, const std::vector<BatchShape>& shapes, int threads) {
  const bool was_training = stack.model->is_training();
  std::vector<ConvCall> calls;
  std::string sizes;
  try {
    stack.model->eval();
    for (const BatchShape& shape : shapes) {
      for (ConvCall& c : AtBatchSizes(RecordStepConvolutions(stack, shape), {shape.size}))
        calls.push_back(std::move(c));
      sizes += (sizes.empty() ? "" : ", ") + std::to_string(shape.size);
    }
    stack.model->train(was_training);
  } catch (const std::exception& e) {
    stack.model->train(was_training);
    return "conv warm-up: none (recording the step's convolutions failed: " + ExceptionLine(e) + ")";
  }
  const ConvWarmup w = WarmConvCalls(calls, stack.target.device, threads);
  std::string line = "conv warm-up: " + std::to_string(w.calls) + " of " + std::to_string(calls.size()) +
                     " convolutions (" + std::to_string(shapes.size()) + " batch shapes: " + sizes + " images) on " +
                     std::to_string(threads) + " threads, " + FormatNumber("%.2f", w.seconds) + " s";
  if (!w.error.empty()) line += "; stopped: " + w.error;
  return line;
}

std::string WarmUpWhereItApplies(TrainingStack& stack, const std::vector<BatchShape>& shapes, bool multi_scale,
                                 int threads) {
  const std::string blocker = ConvWarmupBlocker(stack, shapes, multi_scale);
  return blocker.empty() ? WarmUpStepConvolutions(stack, shapes, threads) : "conv warm-up: none (" + blocker + ")";
}

}  // namespace yc::trainer
