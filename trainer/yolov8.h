// YOLOv8 detection model (Ultralytics cfg/models/v8/yolov8.yaml) for scales n/s/m/l/x and any class
// count. Layers live in a ModuleList named "model" so parameter names equal Ultralytics' state_dict
// keys ("model.0.conv.weight", ..., "model.22.dfl.conv.weight").
//
//   auto model = yc::trainer::YOLOv8(yc::trainer::YOLOv8Options(ModelScale::kN, 80));
//   model->train(); auto out = model->forward(images);  // out.feats -> DetectionLoss
//   model->eval();  out = model->forward(images);       // out.pred (B, 4 + nc, A) -> NonMaxSuppression
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/pimpl.h>

#include "libcache/status.h"
#include "trainer/modules.h"

namespace yc::trainer {

enum class ModelScale { kN, kS, kM, kL, kX };

// Compound scaling constants [depth, width, max_channels] from yolov8.yaml.
struct ScaleSpec {
  double depth;
  double width;
  int64_t max_channels;
};
ScaleSpec SpecFor(ModelScale scale);
// Accepts "n".."x" or "yolov8n".."yolov8x" (case-insensitive).
Result<ModelScale> ParseModelScale(const std::string& name);
const char* ModelScaleName(ModelScale scale);  // "n".."x"

struct YOLOv8Options {
  YOLOv8Options(ModelScale scale_ = ModelScale::kN, int64_t nc_ = 80) : scale(scale_), nc(nc_) {}
  ModelScale scale;
  int64_t nc;
  int64_t in_channels = 3;
  int64_t reg_max = 16;
};

struct DetectOutput {
  std::vector<at::Tensor> feats;  // per level (B, 4 * reg_max + nc, H/s, W/s), always present
  at::Tensor pred;                // eval mode only: (B, 4 + nc, A) xywh pixels + sigmoid class scores
};

class YOLOv8Impl : public torch::nn::Cloneable<YOLOv8Impl> {
 public:
  explicit YOLOv8Impl(const YOLOv8Options& options = YOLOv8Options());
  // Builds the layers with PyTorch default conv init, BN eps 1e-3 / momentum 0.03 and the head's bias
  // init, which is what Ultralytics' DetectionModel ends up with.
  void reset() override;

  // Train mode: raw per-level outputs only. Eval mode: raw outputs and the decoded predictions.
  // Input height/width must be multiples of 32 (the largest stride); otherwise c10::Error is thrown, as
  // LibTorch modules do for bad shapes.
  DetectOutput forward(const at::Tensor& images);
  at::Tensor Decode(const std::vector<at::Tensor>& feats);

  const YOLOv8Options& options() const { return options_; }
  int64_t nc() const { return options_.nc; }
  int64_t reg_max() const { return options_.reg_max; }
  const std::vector<double>& strides() const { return strides_; }
  DetectImpl& detect();

  torch::nn::ModuleList model{nullptr};

 private:
  YOLOv8Options options_;
  std::vector<double> strides_{8.0, 16.0, 32.0};
};
TORCH_MODULE(YOLOv8);

// Total element count of all parameters (frozen DFL weights included, as Ultralytics reports).
int64_t CountParameters(const torch::nn::Module& module, bool trainable_only = false);

// Re-lays every 4-D parameter and buffer out as channels_last (LibTorch has no Module::to(MemoryFormat)).
// Feed channels_last inputs too; outputs stay numerically the same.
void ToChannelsLast(torch::nn::Module& module);

}  // namespace yc::trainer
