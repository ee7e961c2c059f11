// Internal to trainer/model: the per-family layer graphs DetectionModel dispatches to, and parse_model's
// scaling rules they share. Each Build* appends every layer, head included, to `model` in Ultralytics'
// yaml order; each *Neck runs the layers up to the head and returns the head's three inputs (P3, P4, P5),
// handing every layer's output to `observe` (when given) with the layer's index.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/modules/container/modulelist.h>

#include "trainer/model/detection_model.h"

namespace yc::trainer::model_graph {

// parse_model's channel rule: make_divisible(min(c, max_channels) * width, 8).
inline int64_t Width(int64_t c, const ScaleSpec& spec) {
  const double x = static_cast<double>(std::min(c, spec.max_channels)) * spec.width;
  return static_cast<int64_t>(std::ceil(x / 8.0)) * 8;
}

// parse_model's depth rule: max(round(n * depth), 1) for n > 1. Python's round is half-to-even, as is
// nearbyint under the default rounding mode.
inline int64_t Depth(int64_t n, const ScaleSpec& spec) {
  if (n <= 1) return n;
  return std::max<int64_t>(static_cast<int64_t>(std::nearbyint(static_cast<double>(n) * spec.depth)), 1);
}

// The layer's output, after `observe` (when there is one) has seen it: one pointer test per layer when
// there is none, so the normal forward costs nothing more.
inline at::Tensor Observed(const LayerObserver* observe, size_t layer, at::Tensor output) {
  if (observe != nullptr) (*observe)(layer, output);
  return output;
}

void BuildYOLOv8(torch::nn::ModuleListImpl& model, const ModelOptions& options, const std::vector<double>& strides);
std::vector<at::Tensor> YOLOv8Neck(torch::nn::ModuleListImpl& model, const at::Tensor& images,
                                   const LayerObserver* observe = nullptr);
inline constexpr size_t kYOLOv8HeadIndex = 22;

void BuildYOLO11(torch::nn::ModuleListImpl& model, const ModelOptions& options, const std::vector<double>& strides);
std::vector<at::Tensor> YOLO11Neck(torch::nn::ModuleListImpl& model, const at::Tensor& images,
                                   const LayerObserver* observe = nullptr);
inline constexpr size_t kYOLO11HeadIndex = 23;

}  // namespace yc::trainer::model_graph
