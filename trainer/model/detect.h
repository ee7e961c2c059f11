// The detection head shared by YOLOv8 and YOLO11 (Ultralytics nn/modules/head.py Detect, block.py DFL):
// per level a box branch (4 * reg_max DFL bins) and a class branch (nc logits); eval mode decodes them
// into (B, 4 + nc, A) xywh pixel boxes and sigmoid scores. The two families differ only in the class
// branch (ClassBranch below). Names match Ultralytics' state_dict ("cv2.0.0.conv.weight", "dfl.conv.weight").
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/pimpl.h>

#include "trainer/model/blocks.h"

namespace yc::trainer {

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

// YOLO11's class-branch stage: DWConv(c1, c1, 3) then Conv(c1, c2, 1), registered as "0" and "1" like the
// nn.Sequential it mirrors (LibTorch's Sequential cannot hold a Sequential: its forward is a template).
class DWConvStageImpl : public torch::nn::Cloneable<DWConvStageImpl> {
 public:
  DWConvStageImpl(int64_t c1, int64_t c2);
  void reset() override;
  at::Tensor forward(const at::Tensor& x);

  Conv dw{nullptr}, pw{nullptr};

 private:
  int64_t c1_, c2_;
};
TORCH_MODULE(DWConvStage);

// Which class branch the head builds. kLegacy (YOLOv8): Conv 3x3, Conv 3x3, Conv2d 1x1 per level.
// kDepthwise (YOLO11, Ultralytics' Detect with legacy = False): DWConvStage(x, c3), DWConvStage(c3, c3),
// Conv2d 1x1 -- far fewer parameters for the same width.
enum class ClassBranch { kLegacy, kDepthwise };

// Decoupled anchor-free head: per level a box branch cv2 (4 * reg_max) and a class branch cv3 (nc).
// Both are nn::Sequential per level, whose last element is the biased 1x1 Conv2d.
class DetectImpl : public torch::nn::Cloneable<DetectImpl> {
 public:
  DetectImpl(int64_t nc, std::vector<int64_t> ch, std::vector<double> strides, int64_t reg_max = 16,
             ClassBranch class_branch = ClassBranch::kLegacy);
  void reset() override;

  // Raw per-level outputs (B, 4 * reg_max + nc, H_i, W_i): what the loss consumes.
  std::vector<at::Tensor> forward(const std::vector<at::Tensor>& xs);
  // Inference decode of raw outputs -> (B, 4 + nc, A): xywh boxes in input pixels, sigmoid scores.
  // Anchors are rebuilt only when the level shapes, dtype or device change.
  at::Tensor Decode(const std::vector<at::Tensor>& feats);
  // Ultralytics Detect.bias_init: box bias 1.0, class bias log(5 / nc / (640 / s)^2).
  void BiasInit();
  // Decode's boxes as x1y1x2y2 instead of xywh: Ultralytics' Detect.xyxy, which its exporter sets for an
  // nms=True export (the embedded NMS takes corners). Off by default.
  void set_xyxy(bool xyxy) { xyxy_ = xyxy; }
  bool xyxy() const { return xyxy_; }

  int64_t nc() const { return nc_; }
  int64_t reg_max() const { return reg_max_; }
  int64_t no() const { return nc_ + 4 * reg_max_; }
  const std::vector<double>& strides() const { return strides_; }

  torch::nn::ModuleList cv2{nullptr}, cv3{nullptr};
  DFL dfl{nullptr};

 private:
  int64_t nc_, reg_max_;
  ClassBranch class_branch_;
  bool xyxy_ = false;
  std::vector<int64_t> ch_;
  std::vector<double> strides_;
  // Decode cache.
  std::vector<int64_t> anchor_key_;
  at::Tensor anchors_;        // (2, A) grid units
  at::Tensor anchor_strides_;  // (1, A)
};
TORCH_MODULE(Detect);

}  // namespace yc::trainer
