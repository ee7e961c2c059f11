// YOLOv8 building blocks (Ultralytics nn/modules conv.py, block.py, head.py semantics), written as
// LibTorch modules in the torch/csrc/api style: `*Impl` + TORCH_MODULE holder, Cloneable so that a
// whole model can be deep-copied (EMA). Submodule names match Ultralytics' state_dict keys
// (conv/bn, cv1/cv2/m, cv2/cv3/dfl) so converted weights line up.
//
// Submodules are reached through their registered containers (ModuleList / Sequential) at forward
// time instead of cached typed handles: Cloneable::clone() replaces container contents, and a cached
// handle would keep pointing at the pre-clone objects.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/pooling.h>
#include <torch/nn/pimpl.h>

namespace yc::trainer {

class StatsReducer;

// Ultralytics overrides every BatchNorm2d after building: eps 1e-3, momentum 0.03 (initialize_weights).
inline constexpr double kBnEps = 1e-3;
inline constexpr double kBnMomentum = 0.03;

// Conv2d(k, s, pad k/2, groups g, no bias) -> BatchNorm2d -> SiLU (or identity when act is false).
class ConvImpl : public torch::nn::Cloneable<ConvImpl> {
 public:
  ConvImpl(int64_t c1, int64_t c2, int64_t k = 1, int64_t s = 1, int64_t g = 1, bool act = true);
  void reset() override;
  at::Tensor forward(const at::Tensor& x);

  torch::nn::Conv2d conv{nullptr};
  torch::nn::BatchNorm2d bn{nullptr};

  // Training-mode BatchNorm over the global batch of all data-parallel ranks (sync_batch_norm.h); null:
  // this rank's batch.
  void set_sync_bn(std::shared_ptr<StatsReducer> reducer) { sync_bn_ = std::move(reducer); }

 private:
  int64_t c1_, c2_, k_, s_, g_;
  bool act_;
  std::shared_ptr<StatsReducer> sync_bn_;
};
TORCH_MODULE(Conv);

// Two 3x3 Convs (hidden c2*e) with an optional residual when shapes allow.
class BottleneckImpl : public torch::nn::Cloneable<BottleneckImpl> {
 public:
  BottleneckImpl(int64_t c1, int64_t c2, bool shortcut = true, int64_t g = 1, double e = 0.5);
  void reset() override;
  at::Tensor forward(const at::Tensor& x);

  Conv cv1{nullptr}, cv2{nullptr};

 private:
  int64_t c1_, c2_, g_;
  double e_;
  bool add_;
};
TORCH_MODULE(Bottleneck);

// CSP bottleneck with two convolutions: split cv1's output in halves, chain n Bottlenecks on the second
// half, concatenate every intermediate and fuse with cv2.
class C2fImpl : public torch::nn::Cloneable<C2fImpl> {
 public:
  C2fImpl(int64_t c1, int64_t c2, int64_t n = 1, bool shortcut = false, int64_t g = 1, double e = 0.5);
  void reset() override;
  at::Tensor forward(const at::Tensor& x);

  Conv cv1{nullptr}, cv2{nullptr};
  torch::nn::ModuleList m{nullptr};  // n Bottlenecks

 private:
  int64_t c1_, c2_, n_, g_, c_;
  double e_;
  bool shortcut_;
};
TORCH_MODULE(C2f);

// Spatial pyramid pooling, fast: three chained k x k max-pools (== SPP(5, 9, 13) for k = 5).
class SPPFImpl : public torch::nn::Cloneable<SPPFImpl> {
 public:
  SPPFImpl(int64_t c1, int64_t c2, int64_t k = 5);
  void reset() override;
  at::Tensor forward(const at::Tensor& x);

  Conv cv1{nullptr}, cv2{nullptr};
  torch::nn::MaxPool2d m{nullptr};

 private:
  int64_t c1_, c2_, k_;
};
TORCH_MODULE(SPPF);

// Channel concatenation; no parameters (a placeholder that keeps layer indices equal to Ultralytics').
class ConcatImpl : public torch::nn::Cloneable<ConcatImpl> {
 public:
  explicit ConcatImpl(int64_t dim = 1) : dim_(dim) {}
  void reset() override {}
  at::Tensor forward(const std::vector<at::Tensor>& xs) { return at::cat(xs, dim_); }

 private:
  int64_t dim_;
};
TORCH_MODULE(Concat);

// Distribution Focal Loss integral: softmax over reg_max bins per side, expectation with the fixed
// weights arange(reg_max) (a frozen 1x1 conv, counted as a parameter as in Ultralytics).
// (B, 4 * reg_max, A) -> (B, 4, A) distances in grid units.
class DFLImpl : public torch::nn::Cloneable<DFLImpl> {
 public:
  explicit DFLImpl(int64_t c1 = 16);
  void reset() override;
  at::Tensor forward(const at::Tensor& x);

  torch::nn::Conv2d conv{nullptr};

 private:
  int64_t c1_;
};
TORCH_MODULE(DFL);

// Decoupled anchor-free head: per level a box branch cv2 (4 * reg_max) and a class branch cv3 (nc).
class DetectImpl : public torch::nn::Cloneable<DetectImpl> {
 public:
  DetectImpl(int64_t nc, std::vector<int64_t> ch, std::vector<double> strides, int64_t reg_max = 16);
  void reset() override;

  // Raw per-level outputs (B, 4 * reg_max + nc, H_i, W_i): what the loss consumes.
  std::vector<at::Tensor> forward(const std::vector<at::Tensor>& xs);
  // Inference decode of raw outputs -> (B, 4 + nc, A): xywh boxes in input pixels, sigmoid scores.
  // Anchors are rebuilt only when the level shapes, dtype or device change.
  at::Tensor Decode(const std::vector<at::Tensor>& feats);
  // Ultralytics Detect.bias_init: box bias 1.0, class bias log(5 / nc / (640 / s)^2).
  void BiasInit();

  int64_t nc() const { return nc_; }
  int64_t reg_max() const { return reg_max_; }
  int64_t no() const { return nc_ + 4 * reg_max_; }
  const std::vector<double>& strides() const { return strides_; }

  torch::nn::ModuleList cv2{nullptr}, cv3{nullptr};
  DFL dfl{nullptr};

 private:
  int64_t nc_, reg_max_;
  std::vector<int64_t> ch_;
  std::vector<double> strides_;
  // Decode cache.
  std::vector<int64_t> anchor_key_;
  at::Tensor anchors_;        // (2, A) grid units
  at::Tensor anchor_strides_;  // (1, A)
};
TORCH_MODULE(Detect);

}  // namespace yc::trainer
