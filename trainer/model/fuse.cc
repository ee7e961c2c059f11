#include "trainer/model/fuse.h"

#include <c10/core/GradMode.h>

#include "trainer/model/blocks.h"

namespace yc::trainer {

FoldedConv FoldBatchNorm(const at::Tensor& conv_weight, const at::Tensor& conv_bias,
                         const torch::nn::BatchNorm2dImpl& bn) {
  c10::NoGradGuard no_grad;
  const auto f64 = conv_weight.options().dtype(at::kDouble);
  const int64_t c2 = conv_weight.size(0);
  auto gamma = bn.weight.defined() ? bn.weight.to(at::kDouble) : at::ones({c2}, f64);
  auto beta = bn.bias.defined() ? bn.bias.to(at::kDouble) : at::zeros({c2}, f64);
  auto scale = gamma / (bn.running_var.to(at::kDouble) + bn.options.eps()).sqrt();
  auto b = conv_bias.defined() ? conv_bias.to(at::kDouble) : at::zeros({c2}, f64);
  FoldedConv out;
  out.weight = (conv_weight.to(at::kDouble) * scale.view({c2, 1, 1, 1})).to(conv_weight.scalar_type());
  out.bias = ((b - bn.running_mean.to(at::kDouble)) * scale + beta).to(conv_weight.scalar_type());
  return out;
}

int FuseConvBatchNorm(torch::nn::Module& model) {
  int n = 0;
  for (const auto& m : model.modules(/*include_self=*/true)) {
    if (auto* conv = m->as<ConvImpl>(); conv != nullptr && !conv->fused()) {
      conv->Fuse();
      ++n;
    }
  }
  return n;
}

}  // namespace yc::trainer
