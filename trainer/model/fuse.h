// BatchNorm folded into the convolution before it, for export (Ultralytics' fuse_conv_and_bn): one
// function computes the folded weights; ONNX and TorchScript export both use it, through Conv::Fuse.
//
//   FoldedConv f = FoldBatchNorm(conv->weight, conv->bias, *bn);  // conv(x) * gamma/std + (beta - mean*gamma/std)
//   int n = FuseConvBatchNorm(*model);  // every Conv of an eval-mode model, in place
#pragma once

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>

namespace yc::trainer {

struct FoldedConv {
  at::Tensor weight;  // (c2, c1/g, k, k), the conv weight's dtype and device
  at::Tensor bias;    // (c2)
};
// y = bn(conv(x)) in eval mode, as one conv: w' = w * gamma / sqrt(var + eps) per output channel,
// b' = (b - mean) * gamma / sqrt(var + eps) + beta. `conv_bias` may be undefined (no bias). Computed in
// float64, so folding adds no rounding beyond the final cast.
FoldedConv FoldBatchNorm(const at::Tensor& conv_weight, const at::Tensor& conv_bias,
                         const torch::nn::BatchNorm2dImpl& bn);

// Calls Fuse() on every Conv of `model` not yet fused; returns how many. The model is for inference
// from then on (see ConvImpl::Fuse).
int FuseConvBatchNorm(torch::nn::Module& model);

}  // namespace yc::trainer
