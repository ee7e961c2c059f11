// cuDNN's first call of a convolution shape is slow (yolo11n's first step: 4.9 s of 6 on the GPU host,
// BENCHMARKS.md "Where yolo11n's first step goes"), and most of that work is kept for the whole process:
// a later thread meeting the same shape builds its own plan in well under a millisecond (PyTorch keeps
// plans per thread, aten/src/ATen/native/cudnn/Conv_v8.cpp; the measurement is in
// https://github.com/pytorch/pytorch/issues/191617). So the trainer records the convolutions its step makes,
// once, at batch 1 and with cuDNN off, and runs each of them forward and backward at the batch sizes the epoch
// has on several threads at once before its first batch, for the training thread to find that work done.
// Measured on an H100 with PyTorch 2.11 it saved less than it cost (BENCHMARKS.md, "Lease of 2026-12-07,
// second machine"), so it is opt-in (--conv-warmup).
//
//   std::vector<ConvCall> calls = RecordConvCalls([&] { model->forward(one_image); });
//   ConvWarmup w = WarmConvCalls(AtBatchSizes(calls, {64, 56}), device, /*threads=*/8);
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <ATen/ATen.h>

namespace yc::trainer {

// One convolution as cuDNN keys its plans: sizes, layout, dtype and geometry, and which gradients the
// backward computes.
struct ConvCall {
  std::vector<int64_t> input, weight;  // sizes; input[0] is the batch
  bool bias = false;
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups = 1;
  at::ScalarType dtype = at::kFloat;
  at::MemoryFormat memory_format = at::MemoryFormat::Contiguous;
  bool input_grad = false, weight_grad = false;

  bool operator==(const ConvCall& o) const;
};

// The distinct convolutions (aten::convolution) that `forward` makes on this thread, in order of first
// call. cuDNN is off while it runs, so that recording builds no plan of its own; convolutions that do not
// reach aten::convolution (the direct depthwise kernel calls at::_convolution with cuDNN off) are not met.
std::vector<ConvCall> RecordConvCalls(const std::function<void()>& forward);

// One call, forward and backward on zero tensors of its sizes, dtype and layout. The backward goes through
// autograd, as a train step's does: on CUDA it runs on autograd's thread for the device, the thread whose
// plans the training's backward then finds.
void RunConvCall(const ConvCall& call, const at::Device& device);

// `calls` with their batch set to each of `batch_sizes` in turn (duplicates dropped).
std::vector<ConvCall> AtBatchSizes(const std::vector<ConvCall>& calls, const std::vector<int64_t>& batch_sizes);

struct ConvWarmup {
  int calls = 0;      // run forward and backward
  double seconds = 0;
  std::string error;  // the first failure (e.g. out of memory); the calls after it were skipped
};

// RunConvCall for each call, spread over `threads` threads (each on its current stream of the device, the
// default one), and waits for them. A failure is reported, not thrown: the training that follows only loses
// the head start.
ConvWarmup WarmConvCalls(const std::vector<ConvCall>& calls, const at::Device& device, int threads);

}  // namespace yc::trainer
