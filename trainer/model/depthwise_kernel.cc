#include "trainer/model/depthwise_kernel.h"

#include <array>
#include <atomic>
#include <cstdio>

#include "trainer/model/conv_padding.h"

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

at::Tensor DirectDepthwiseForward(torch::nn::Conv2dImpl& conv, const at::Tensor& input) {
  const auto& o = conv.options;
  const at::Tensor weight = conv.weight.to(input.scalar_type());
  // An undefined bias converts to the op's optional as "none" (c10::optional in 1.x, std::optional in 2.x).
  const at::Tensor bias = conv.bias.defined() ? conv.bias.to(input.scalar_type()) : at::Tensor();
  const std::array<int64_t, 2> padding = ConvPadding(o);
  const std::array<int64_t, 2> no_output_padding = {0, 0};
  // at::_convolution with cudnn_enabled false: PyTorch's own backend choice, as under Python's
  // torch.backends.cudnn.flags(enabled=False), picks its depthwise kernel, and autograd differentiates it
  // with the conv's groups. (at::_conv_depthwise2d called directly failed on LibTorch 2.11: "Given groups=1".)
  // benchmark, deterministic and allow_tf32 are read by cuDNN only.
  const at::Tensor out = at::_convolution(input, weight, bias, *o.stride(), padding, *o.dilation(),
                                          /*transposed=*/false, no_output_padding, o.groups(),
                                          /*benchmark=*/false, /*deterministic=*/false,
                                          /*cudnn_enabled=*/false, /*allow_tf32=*/false);
  // The kernel writes NCHW; the next conv's plan (and the graphs) expect the layout the input had.
  return out.contiguous(input.suggest_memory_format());
}
}  // namespace

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

DepthwiseKernel DepthwisePolicy::For(const at::Tensor& images) const {
  switch (mode_) {
    case DepthwiseKernelMode::kCudnn: return DepthwiseKernel::kConvolution;
    case DepthwiseKernelMode::kDirect: return DepthwiseKernel::kDirect;
    case DepthwiseKernelMode::kAuto: break;
  }
  return !steady_input_.empty() && images.sizes() == at::IntArrayRef(steady_input_) ? DepthwiseKernel::kConvolution
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
