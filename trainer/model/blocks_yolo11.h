// YOLO11's building blocks (Ultralytics nn/modules/block.py semantics): C3k, C3k2, Attention, PSABlock and
// C2PSA, as LibTorch modules whose submodule names equal Ultralytics' state_dict keys
// ("model.10.m.0.attn.qkv.conv.weight", "model.22.m.0.m.1.cv2.bn.bias", ...).
//
//   C3k2 c(c1, c2, /*n=*/1, /*c3k=*/false, /*e=*/0.25);  // as C2f, with C3k or e=0.5 Bottlenecks inside
//   C2PSA p(c, c, /*n=*/1);                               // attention on half the channels, c / 128 heads
#pragma once

#include <cstdint>

#include <ATen/ATen.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/pimpl.h>

#include "trainer/model/blocks.h"

namespace yc::trainer {

// C3 with k x k Bottlenecks: cv1 and cv2 each map c1 to c2*e, n Bottlenecks (e 1.0) chain on cv1's
// branch, cv3 fuses the concatenation.
class C3kImpl : public torch::nn::Cloneable<C3kImpl> {
 public:
  C3kImpl(int64_t c1, int64_t c2, int64_t n = 1, bool shortcut = true, int64_t g = 1, double e = 0.5, int64_t k = 3);
  void reset() override;
  at::Tensor forward(const at::Tensor& x);

  Conv cv1{nullptr}, cv2{nullptr}, cv3{nullptr};
  torch::nn::Sequential m{nullptr};

 private:
  int64_t c1_, c2_, n_, g_, k_;
  double e_;
  bool shortcut_;
};
TORCH_MODULE(C3k);

// C2f's split-and-chain layout, whose inner blocks are C3k(c, c, 2) when `c3k`, else Bottlenecks with
// e 0.5 (C2f's have e 1.0). Ultralytics forces c3k on for the m/l/x scales (parse_model).
class C3k2Impl : public torch::nn::Cloneable<C3k2Impl> {
 public:
  C3k2Impl(int64_t c1, int64_t c2, int64_t n = 1, bool c3k = false, double e = 0.5, int64_t g = 1,
           bool shortcut = true);
  void reset() override;
  at::Tensor forward(const at::Tensor& x);
  bool c3k() const { return c3k_; }  // m holds C3k blocks (else Bottlenecks)

  Conv cv1{nullptr}, cv2{nullptr};
  torch::nn::ModuleList m{nullptr};  // n C3k or Bottleneck blocks

 private:
  int64_t c1_, c2_, n_, g_, c_;
  double e_;
  bool c3k_, shortcut_;
};
TORCH_MODULE(C3k2);

// Multi-head self-attention over the H*W positions, 1x1 convs for qkv and proj, plus a depthwise 3x3
// positional encoding of v. key_dim = (dim / num_heads) * attn_ratio.
class AttentionImpl : public torch::nn::Cloneable<AttentionImpl> {
 public:
  AttentionImpl(int64_t dim, int64_t num_heads = 8, double attn_ratio = 0.5);
  void reset() override;
  at::Tensor forward(const at::Tensor& x);
  int64_t num_heads() const { return num_heads_; }
  int64_t key_dim() const { return key_dim_; }
  int64_t head_dim() const { return head_dim_; }
  double scale() const { return scale_; }

  Conv qkv{nullptr}, proj{nullptr}, pe{nullptr};

 private:
  int64_t dim_, num_heads_, head_dim_, key_dim_;
  double attn_ratio_, scale_;
};
TORCH_MODULE(Attention);

// Attention then a 2x-wide 1x1 feed-forward (ffn.0, ffn.1), each with a residual when `shortcut`.
class PSABlockImpl : public torch::nn::Cloneable<PSABlockImpl> {
 public:
  PSABlockImpl(int64_t c, double attn_ratio = 0.5, int64_t num_heads = 4, bool shortcut = true);
  void reset() override;
  at::Tensor forward(const at::Tensor& x);
  bool shortcut() const { return shortcut_; }

  Attention attn{nullptr};
  torch::nn::Sequential ffn{nullptr};

 private:
  int64_t c_, num_heads_;
  double attn_ratio_;
  bool shortcut_;
};
TORCH_MODULE(PSABlock);

// cv1 splits into halves a, b; n PSABlocks (c1 * e / 64 heads) run on b; cv2 fuses [a, b]. c1 == c2.
class C2PSAImpl : public torch::nn::Cloneable<C2PSAImpl> {
 public:
  C2PSAImpl(int64_t c1, int64_t c2, int64_t n = 1, double e = 0.5);
  void reset() override;
  at::Tensor forward(const at::Tensor& x);
  int64_t hidden() const { return c_; }  // the width of each half

  Conv cv1{nullptr}, cv2{nullptr};
  torch::nn::Sequential m{nullptr};

 private:
  int64_t c1_, n_, c_;
  double e_;
};
TORCH_MODULE(C2PSA);

}  // namespace yc::trainer
