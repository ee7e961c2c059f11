// Building blocks shared by the YOLOv8 and YOLO11 graphs (Ultralytics nn/modules conv.py and block.py
// semantics: Conv, Bottleneck, C2f, SPPF, Concat), written as LibTorch modules in the torch/csrc/api
// style: `*Impl` + TORCH_MODULE holder, Cloneable so that a whole model can be deep-copied (EMA).
// Submodule names match Ultralytics' state_dict keys (conv/bn, cv1/cv2/m) so converted weights line up.
// YOLO11's own blocks are in trainer/model/blocks_yolo11.h, the head in trainer/model/detect.h.
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

  // Export only (Ultralytics' Conv.forward_fuse): folds bn into conv (trainer/model/fuse.h), which gains a
  // bias; forward then skips bn. One-way, and the module no longer clones (its parameter set changed).
  void Fuse();
  bool fused() const { return fused_; }
  bool act() const { return act_; }

  torch::nn::Conv2d conv{nullptr};
  torch::nn::BatchNorm2d bn{nullptr};

  // Training-mode BatchNorm over the global batch of all data-parallel ranks (sync_batch_norm.h); null:
  // this rank's batch.
  void set_sync_bn(std::shared_ptr<StatsReducer> reducer) { sync_bn_ = std::move(reducer); }

 private:
  int64_t c1_, c2_, k_, s_, g_;
  bool act_;
  bool fused_ = false;
  std::shared_ptr<StatsReducer> sync_bn_;
};
TORCH_MODULE(Conv);

// Ultralytics' DWConv: a Conv whose groups are gcd(c1, c2) (depthwise when c1 == c2). It is a plain Conv
// in the state_dict (conv/bn), so it needs no class of its own.
Conv DWConv(int64_t c1, int64_t c2, int64_t k = 1, int64_t s = 1, bool act = true);

// Two Convs, k1 x k1 then k2 x k2 (hidden c2*e), with a residual when `shortcut` and shapes allow.
// C2f uses 3/3 with e 1.0, C3 (and so C3k) 1/3 with e 1.0, C3k2's plain branch 3/3 with e 0.5.
class BottleneckImpl : public torch::nn::Cloneable<BottleneckImpl> {
 public:
  BottleneckImpl(int64_t c1, int64_t c2, bool shortcut = true, int64_t g = 1, double e = 0.5, int64_t k1 = 3,
                 int64_t k2 = 3);
  void reset() override;
  at::Tensor forward(const at::Tensor& x);
  bool residual() const { return add_; }  // x + cv2(cv1(x))

  Conv cv1{nullptr}, cv2{nullptr};

 private:
  int64_t c1_, c2_, g_, k1_, k2_;
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

}  // namespace yc::trainer
