#include "trainer/model/depthwise_kernel.h"

#include <array>

#include "trainer/model/conv_padding.h"

namespace yc::trainer {

namespace {
thread_local DepthwiseKernel current_kernel = DepthwiseKernel::kDirect;

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string text;
  for (int64_t d : shape) text += (text.empty() ? "" : "x") + std::to_string(d);
  return text;
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
  if (current_kernel != DepthwiseKernel::kDirect || !IsCudaDepthwise(conv, input)) return conv.forward(input);
  const auto& o = conv.options;
  const at::Tensor weight = conv.weight.to(input.scalar_type());
  // An undefined bias converts to the op's optional as "none" (c10::optional in 1.x, std::optional in 2.x).
  const at::Tensor bias = conv.bias.defined() ? conv.bias.to(input.scalar_type()) : at::Tensor();
  const std::array<int64_t, 2> padding = ConvPadding(o);
  const at::Tensor out = at::_conv_depthwise2d(input, weight, *o.kernel_size(), bias, *o.stride(), padding,
                                               *o.dilation());
  // The kernel writes NCHW; the next conv's plan (and the graphs) expect the layout the input had.
  return out.contiguous(input.suggest_memory_format());
}

Result<DepthwiseKernelMode> ParseDepthwiseKernelMode(const std::string& text) {
  if (text == "auto") return DepthwiseKernelMode::kAuto;
  if (text == "cudnn") return DepthwiseKernelMode::kCudnn;
  if (text == "direct") return DepthwiseKernelMode::kDirect;
  return Status::InvalidArgument("--depthwise-kernel: expected auto, cudnn or direct, got '" + text + "'");
}

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
