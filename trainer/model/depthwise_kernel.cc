#include "trainer/model/depthwise_kernel.h"

#include <array>
#include <atomic>
#include <cstdio>

#include <torch/autograd.h>

#include "trainer/model/conv_padding.h"
#include "trainer/runtime/cudnn_off.h"

namespace yc::trainer {

namespace {
thread_local DepthwiseKernel current_kernel = DepthwiseKernel::kDirect;
// Set once PyTorch's depthwise kernel has refused a conv: every later one goes to cuDNN (a run that
// would otherwise fail keeps going as under --depthwise-kernel cudnn, and says so once).
std::atomic<bool> direct_kernel_failed{false};

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string text;
  for (int64_t d : shape) text += (text.empty() ? "" : "x") + std::to_string(d);
  return text;
}

// A convolution whose forward and backward both run without cuDNN (PyTorch's depthwise kernel on CUDA).
// PyTorch picks a conv's backward kernel from the global cuDNN flag when the backward runs
// (convolution_backward has no flag of its own), so the flag that the forward passed to at::_convolution
// does not reach it: the backward holds a CudnnOff. The backward engine runs one node at a time, so no other
// training conv sees it; a validation beside training (--val-overlap) that starts a conv in that window
// runs it without cuDNN too: the same result up to rounding, a little slower.
struct ConvWithoutCudnnFunction : torch::autograd::Function<ConvWithoutCudnnFunction> {
  // The bias as an optional: autograd's bookkeeping takes an undefined tensor argument for a variable and
  // fails on it, an empty optional it skips.
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight,
                            const c10::optional<at::Tensor>& bias, const ConvGeometry& g) {
    ctx->save_for_backward({input, weight});
    ctx->saved_data["stride"] = g.stride;
    ctx->saved_data["padding"] = g.padding;
    ctx->saved_data["dilation"] = g.dilation;
    ctx->saved_data["groups"] = g.groups;
    ctx->saved_data["bias"] = bias.has_value() ? bias->size(0) : int64_t{-1};
    const std::vector<int64_t> no_output_padding = {0, 0};
    // PyTorch's own backend choice with cuDNN off picks its depthwise kernel (at::_conv_depthwise2d called
    // directly failed on LibTorch 2.11: "Given groups=1"). benchmark, deterministic and allow_tf32 are read
    // by cuDNN only.
    return at::_convolution(input, weight, bias, g.stride, g.padding, g.dilation, /*transposed=*/false,
                            no_output_padding, g.groups, /*benchmark=*/false, /*deterministic=*/false,
                            /*cudnn_enabled=*/false, /*allow_tf32=*/false);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const std::vector<int64_t> stride = ctx->saved_data["stride"].toIntVector();
    const std::vector<int64_t> padding = ctx->saved_data["padding"].toIntVector();
    const std::vector<int64_t> dilation = ctx->saved_data["dilation"].toIntVector();
    const int64_t groups = ctx->saved_data["groups"].toInt();
    const int64_t bias = ctx->saved_data["bias"].toInt();
    const std::vector<int64_t> bias_sizes = {bias};
    const std::vector<int64_t> no_output_padding = {0, 0};
    at::OptionalIntArrayRef bias_shape;  // none: the conv has no bias
    if (bias >= 0) bias_shape = bias_sizes;
    CudnnOff cudnn_off;
    auto [grad_input, grad_weight, grad_bias] =
        at::convolution_backward(grads[0].contiguous(), saved[0], saved[1], bias_shape, stride, padding, dilation,
                                 /*transposed=*/false, no_output_padding, groups, {true, true, bias >= 0});
    return {grad_input, grad_weight, grad_bias, at::Tensor()};
  }
};

at::Tensor DirectDepthwiseForward(torch::nn::Conv2dImpl& conv, const at::Tensor& input) {
  const auto& o = conv.options;
  const at::Tensor weight = conv.weight.to(input.scalar_type());
  const at::Tensor bias = conv.bias.defined() ? conv.bias.to(input.scalar_type()) : at::Tensor();
  const std::array<int64_t, 2> padding = ConvPadding(o);
  const auto& stride = *o.stride();
  const auto& dilation = *o.dilation();
  const ConvGeometry g{{stride[0], stride[1]}, {padding[0], padding[1]}, {dilation[0], dilation[1]}, o.groups()};
  // The kernel writes NCHW; the next conv's plan (and the graphs) expect the layout the input had.
  return ConvWithoutCudnn(input, weight, bias, g).contiguous(input.suggest_memory_format());
}
}  // namespace

at::Tensor ConvWithoutCudnn(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                            const ConvGeometry& geometry) {
  c10::optional<at::Tensor> optional_bias;
  if (bias.defined()) optional_bias = bias;
  return ConvWithoutCudnnFunction::apply(input, weight, optional_bias, geometry);
}

DepthwiseKernel CurrentDepthwiseKernel() { return current_kernel; }

DepthwiseKernelScope::DepthwiseKernelScope(DepthwiseKernel kernel) : previous_(current_kernel) {
  current_kernel = kernel;
}

DepthwiseKernelScope::~DepthwiseKernelScope() { current_kernel = previous_; }

bool IsCudaDepthwise(const torch::nn::Conv2dImpl& conv, const at::Tensor& input) {
  const int64_t groups = conv.options.groups();
  return input.is_cuda() && input.dim() == 4 && groups > 1 && input.size(1) == groups &&
         conv.weight.size(0) % groups == 0;
}

bool HasDepthwiseConvs(const torch::nn::Module& model) {
  for (const auto& m : model.modules()) {
    const auto* conv = m->as<torch::nn::Conv2dImpl>();
    if (conv != nullptr && conv->options.groups() > 1 && conv->options.groups() == conv->options.in_channels()) return true;
  }
  return false;
}

at::Tensor Conv2dForward(torch::nn::Conv2dImpl& conv, const at::Tensor& input) {
  if (current_kernel != DepthwiseKernel::kDirect || direct_kernel_failed.load(std::memory_order_relaxed) ||
      !IsCudaDepthwise(conv, input)) {
    return conv.forward(input);
  }
  try {
    return DirectDepthwiseForward(conv, input);
  } catch (const c10::Error& e) {
    if (!direct_kernel_failed.exchange(true)) {
      std::fprintf(stderr, "warning: depthwise convs: PyTorch's depthwise kernel failed on input %s (%s); cuDNN "
                   "from here on, as under --depthwise-kernel cudnn\n",
                   ShapeText(input.sizes().vec()).c_str(), e.what_without_backtrace());
    }
    return conv.forward(input);
  }
}

bool DirectDepthwiseKernelFailed() { return direct_kernel_failed.load(); }

DepthwiseKernel DepthwisePolicy::For(at::IntArrayRef image_sizes) const {
  switch (mode_) {
    case DepthwiseKernelMode::kCudnn: return DepthwiseKernel::kConvolution;
    case DepthwiseKernelMode::kDirect: return DepthwiseKernel::kDirect;
    case DepthwiseKernelMode::kAuto: break;
  }
  return !steady_input_.empty() && image_sizes == at::IntArrayRef(steady_input_) ? DepthwiseKernel::kConvolution
                                                                                     : DepthwiseKernel::kDirect;
}

DepthwiseKernel DepthwisePolicy::Otherwise() const {
  return mode_ == DepthwiseKernelMode::kCudnn ? DepthwiseKernel::kConvolution : DepthwiseKernel::kDirect;
}

std::string DepthwisePolicy::Describe() const {
  const std::string head = "depthwise convs: ";
  switch (mode_) {
    case DepthwiseKernelMode::kCudnn: return head + "cuDNN for every shape (--depthwise-kernel cudnn)";
    case DepthwiseKernelMode::kDirect: return head + "PyTorch's depthwise kernel for every shape (--depthwise-kernel direct)";
    case DepthwiseKernelMode::kAuto: break;
  }
  if (steady_input_.empty()) {
    return head + "PyTorch's depthwise kernel for every shape (batches change shape: no cuDNN plan to amortise)";
  }
  return head + "cuDNN for the " + ShapeText(steady_input_) +
         " train batch, PyTorch's depthwise kernel for the shapes met a few times (validation, the partial last "
         "batch): no cuDNN plan built for those";
}

}  // namespace yc::trainer
