// Internal to trainer/model: the PAN neck YOLOv8 and YOLO11 share (the `head:` section of Ultralytics'
// cfg/models/v8/yolov8.yaml and cfg/models/11/yolo11.yaml, Detect excluded). From the backbone's P3, P4
// and P5 outputs: two top-down merges (Upsample x2, Concat, block) and two bottom-up ones (Conv 3x3
// stride 2, Concat, block), twelve layers in the yaml's order. The families differ only in their block
// (C2f without shortcuts, C3k2) and in the backbone widths feeding it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>

#include "trainer/model/detection_model.h"

namespace yc::trainer::model_graph {

// Output widths of the backbone layers the PAN reads (in) and of its three outputs, the head's inputs (out).
struct PanWidths {
  int64_t in_p3 = 0, in_p4 = 0, in_p5 = 0;
  int64_t out_p3 = 0, out_p4 = 0, out_p5 = 0;
};

// The family's merging block for model layer `layer`, from `in` to `out` channels.
using MakePanBlock = std::function<std::shared_ptr<torch::nn::Module>(size_t layer, int64_t in, int64_t out)>;
// That block's forward.
using RunPanBlock = std::function<at::Tensor(size_t layer, const at::Tensor& x)>;

// Appends the twelve PAN layers; the first is model layer model.size().
void AppendPan(torch::nn::ModuleListImpl& model, const PanWidths& widths, const MakePanBlock& block);

// Runs the PAN whose first layer is `first` on the backbone's outputs; returns the head's inputs (P3, P4,
// P5 outputs), handing every layer's output to `observe` (when given).
std::vector<at::Tensor> RunPan(torch::nn::ModuleListImpl& model, size_t first, const at::Tensor& p3,
                               const at::Tensor& p4, const at::Tensor& p5, const RunPanBlock& block,
                               const LayerObserver* observe);

}  // namespace yc::trainer::model_graph
