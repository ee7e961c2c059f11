// Which CUDA kernel runs a depthwise convolution (groups == input channels: YOLO11's DWConvs in the
// Detect head and C2PSA's positional conv; YOLOv8 has none).
//
// cuDNN 9 builds an execution plan the first time a thread meets a conv shape, and for a depthwise conv
// that costs 0.2-2.1 s per shape, forward and backward (BENCHMARKS.md, "Where yolo11's warm-up goes":
// seven of yolo11n's shapes 6 s, nothing kept across processes). PyTorch's own depthwise kernel (what
// at::_convolution runs with cuDNN off) has no per-shape cost but runs ~1.5x slower on those shapes. So
// cuDNN pays off only for the one shape a run meets thousands of times, the steady train batch; every
// other shape (validation, prediction, the epoch's partial last batch, rect and multi-scale batches) is
// met a few times and goes to PyTorch's kernel, forward and backward (ConvWithoutCudnn). On the CPU and
// for every other conv nothing changes.
//
// The choice is thread-local, set by a scope around the forwards it applies to (plans are per thread
// too), so a model needs no flag of its own and clones (EMA, teacher) follow their caller:
//
//   DepthwiseKernelScope scope(policy.For(images));   // train step: cuDNN for the steady shape
//   out = model->forward(images);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/modules/conv.h>

#include "trainer/config/depthwise_kernel_mode.h"

namespace yc::trainer {

enum class DepthwiseKernel {
  kDirect,       // PyTorch's depthwise kernel (at::_convolution, cuDNN off): nothing to set up per shape
  kConvolution,  // at::conv2d as for any conv: cuDNN on CUDA, a plan per thread and shape
};

// This thread's kernel for CUDA depthwise convs: kDirect unless a DepthwiseKernelScope says otherwise.
DepthwiseKernel CurrentDepthwiseKernel();

// Sets this thread's kernel for its lifetime and restores the previous one (scopes nest).
class DepthwiseKernelScope {
 public:
  explicit DepthwiseKernelScope(DepthwiseKernel kernel);
  ~DepthwiseKernelScope();
  DepthwiseKernelScope(const DepthwiseKernelScope&) = delete;
  DepthwiseKernelScope& operator=(const DepthwiseKernelScope&) = delete;

 private:
  DepthwiseKernel previous_;
};

// A 2-d convolution's stride, padding, dilation and groups.
struct ConvGeometry {
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups = 1;
};

// at::_convolution with cuDNN off in the forward and in the backward (PyTorch's own kernels: on CUDA its
// depthwise kernel for a depthwise conv), differentiable in input, weight and bias. The backward needs
// its own switch: PyTorch picks the backward's kernel from the global cuDNN flag when it runs.
at::Tensor ConvWithoutCudnn(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                            const ConvGeometry& geometry);

// Whether `conv` on `input` is a depthwise conv PyTorch's kernel takes: CUDA, 4-d, groups == input
// channels > 1, output channels a multiple of them (PyTorch's own test, ConvParams::is_depthwise).
bool IsCudaDepthwise(const torch::nn::Conv2dImpl& conv, const at::Tensor& input);

// Whether `model` has a depthwise conv (groups == input channels > 1) anywhere.
bool HasDepthwiseConvs(const torch::nn::Module& model);

// conv.forward(input), or PyTorch's depthwise kernel where IsCudaDepthwise and this thread's kernel is
// kDirect: weight and bias cast to the input's dtype (under autocast the input is already in autocast's
// dtype), the output in the input's memory format. Differentiable. Should PyTorch's kernel refuse a conv's
// forward, the process warns once and uses cuDNN from then on (as under --depthwise-kernel cudnn).
at::Tensor Conv2dForward(torch::nn::Conv2dImpl& conv, const at::Tensor& input);

// Whether PyTorch's depthwise kernel has refused a conv in this process (Conv2dForward uses cuDNN since).
bool DirectDepthwiseKernelFailed();

// Which kernel a run's forwards use.
class DepthwisePolicy {
 public:
  DepthwisePolicy() = default;
  // `steady_input`: the (N, C, H, W) every full train batch has; empty where there is none (rect and
  // multi-scale batches change shape), so that auto uses the direct kernel throughout.
  DepthwisePolicy(DepthwiseKernelMode mode, std::vector<int64_t> steady_input)
      : mode_(mode), steady_input_(std::move(steady_input)) {}

  // For a train batch.
  DepthwiseKernel For(const at::Tensor& images) const { return For(images.sizes()); }
  DepthwiseKernel For(at::IntArrayRef image_sizes) const;
  // For everything else the run does (validation).
  DepthwiseKernel Otherwise() const;
  // "depthwise convs: cuDNN for the 64x3x640x640 train batch, PyTorch's depthwise kernel for other shapes".
  std::string Describe() const;

 private:
  DepthwiseKernelMode mode_ = DepthwiseKernelMode::kAuto;
  std::vector<int64_t> steady_input_;
};

}  // namespace yc::trainer
