// Detection models of the YOLOv8 (Ultralytics cfg/models/v8/yolov8.yaml) and YOLO11 (cfg/models/11/
// yolo11.yaml) families, scales n/s/m/l/x, any class count. Layers live in a ModuleList named "model" so
// parameter names equal Ultralytics' state_dict keys ("model.0.conv.weight", ..., "model.22.dfl.conv.weight"
// for YOLOv8, "model.23.dfl.conv.weight" for YOLO11). The layer graphs are in trainer/model/yolov8.cc and
// trainer/model/yolo11.cc; both end in the same Detect head and train with the same loss.
//
//   Result<ModelName> name = ParseModelName("yolo11n");
//   auto model = yc::trainer::DetectionModel(yc::trainer::ModelOptions(name->family, name->scale, 80));
//   model->train(); auto out = model->forward(images);  // out.feats -> DetectionLoss
//   model->eval();  out = model->forward(images);       // out.pred (B, 4 + nc, A) -> NonMaxSuppression
//   out = model->ForwardObserved(images, [](size_t i, const at::Tensor& y) { ... });  // each layer's output
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/pimpl.h>

#include "base/status.h"
#include "trainer/model/detect.h"

namespace yc::trainer {

enum class ModelFamily { kV8, k11 };
enum class ModelScale { kN, kS, kM, kL, kX };

// A model as users name it: "yolov8n" is {kV8, kN}, "yolo11x" is {k11, kX}.
struct ModelName {
  ModelFamily family = ModelFamily::kV8;
  ModelScale scale = ModelScale::kN;
};
// Accepts "yolov8n".."yolov8x", "yolo11n".."yolo11x" and, for checkpoints and scripts written before
// YOLO11 existed, a bare "n".."x" meaning YOLOv8 (case-insensitive).
Result<ModelName> ParseModelName(const std::string& name);
std::string ModelNameString(ModelName name);  // "yolov8n", "yolo11s", ...

// Accepts "n".."x" (case-insensitive).
Result<ModelScale> ParseModelScale(const std::string& name);
const char* ModelScaleName(ModelScale scale);  // "n".."x"
// Accepts "v8" and "11" (what checkpoints record).
Result<ModelFamily> ParseModelFamily(const std::string& name);
const char* ModelFamilyName(ModelFamily family);  // "v8", "11"

// Compound scaling constants [depth, width, max_channels] from the family's yaml.
struct ScaleSpec {
  double depth;
  double width;
  int64_t max_channels;
};
ScaleSpec SpecFor(ModelFamily family, ModelScale scale);

struct ModelOptions {
  ModelOptions(ModelFamily family_ = ModelFamily::kV8, ModelScale scale_ = ModelScale::kN, int64_t nc_ = 80)
      : family(family_), scale(scale_), nc(nc_) {}
  ModelOptions(ModelName name, int64_t nc_) : family(name.family), scale(name.scale), nc(nc_) {}
  ModelFamily family;
  ModelScale scale;
  int64_t nc;
  int64_t in_channels = 3;
  int64_t reg_max = 16;
  // A pruned architecture (yolocache-train prune, trainer/model/prune/): the output width of each
  // convolution that lost channels, by path ("model.2.m.0.cv1" -> 9); the model is built at the scale's
  // widths, then cut to these (the kept channels' weights come from the checkpoint). Empty: unpruned.
  std::map<std::string, int64_t> channels;

  ModelName name() const { return {family, scale}; }
};

struct DetectOutput {
  std::vector<at::Tensor> feats;  // per level (B, 4 * reg_max + nc, H/s, W/s), always present
  at::Tensor pred;                // eval mode only: (B, 4 + nc, A) xywh pixels + sigmoid class scores
};

// Sees one layer's output during a forward: the layer's index in `model` (Ultralytics' m.i) and its output
// (B, C, H, W), to be read, not changed.
using LayerObserver = std::function<void(size_t layer, const at::Tensor& output)>;

class DetectionModelImpl : public torch::nn::Cloneable<DetectionModelImpl> {
 public:
  explicit DetectionModelImpl(const ModelOptions& options = ModelOptions());
  // Builds the layers with PyTorch default conv init, BN eps 1e-3 / momentum 0.03 and the head's bias
  // init, which is what Ultralytics' DetectionModel ends up with.
  void reset() override;

  // Train mode: raw per-level outputs only. Eval mode: raw outputs and the decoded predictions.
  // Input height/width must be multiples of 32 (the largest stride); otherwise c10::Error is thrown, as
  // LibTorch modules do for bad shapes.
  DetectOutput forward(const at::Tensor& images);
  // forward, handing each layer's output before the head's to `observe` in order, as Ultralytics'
  // BaseModel._predict_once visits them (what predict --visualize draws).
  DetectOutput ForwardObserved(const at::Tensor& images, const LayerObserver& observe);
  // Layer i's class name as Ultralytics' m.type ends: "Conv", "C2f", "C3k2", "SPPF", "C2PSA", "Upsample",
  // "Concat", "Detect".
  std::string LayerType(size_t i) const;
  at::Tensor Decode(const std::vector<at::Tensor>& feats);

  const ModelOptions& options() const { return options_; }
  ModelFamily family() const { return options_.family; }
  int64_t nc() const { return options_.nc; }
  int64_t reg_max() const { return options_.reg_max; }
  const std::vector<double>& strides() const { return strides_; }
  // The head: the last layer (22 for YOLOv8, 23 for YOLO11).
  DetectImpl& detect();

  torch::nn::ModuleList model{nullptr};

 private:
  DetectOutput Forward(const at::Tensor& images, const LayerObserver* observe);

  ModelOptions options_;
  std::vector<double> strides_{8.0, 16.0, 32.0};
};
TORCH_MODULE(DetectionModel);

// Total element count of all parameters (frozen DFL weights included, as Ultralytics reports).
int64_t CountParameters(const torch::nn::Module& module, bool trainable_only = false);

// Re-lays every 4-D parameter and buffer out as channels_last (LibTorch has no Module::to(MemoryFormat)).
// Feed channels_last inputs too; outputs stay numerically the same.
void ToChannelsLast(torch::nn::Module& module);

}  // namespace yc::trainer
