#include "trainer/model/detection_model.h"

#include <c10/core/GradMode.h>

#include "base/ascii.h"
#include "trainer/model/layer_graphs.h"
#include "trainer/model/prune/channel_widths.h"

namespace yc::trainer {

Result<ModelScale> ParseModelScale(const std::string& name) {
  const std::string s = AsciiLower(name);
  if (s == "n") return ModelScale::kN;
  if (s == "s") return ModelScale::kS;
  if (s == "m") return ModelScale::kM;
  if (s == "l") return ModelScale::kL;
  if (s == "x") return ModelScale::kX;
  return Status::InvalidArgument("model scale '" + name + "': expected one of n, s, m, l, x");
}

const char* ModelScaleName(ModelScale scale) {
  switch (scale) {
    case ModelScale::kN: return "n";
    case ModelScale::kS: return "s";
    case ModelScale::kM: return "m";
    case ModelScale::kL: return "l";
    case ModelScale::kX: return "x";
  }
  return "?";
}

Result<ModelFamily> ParseModelFamily(const std::string& name) {
  if (name == "v8") return ModelFamily::kV8;
  if (name == "11") return ModelFamily::k11;
  return Status::InvalidArgument("model family '" + name + "': expected v8 or 11");
}

const char* ModelFamilyName(ModelFamily family) { return family == ModelFamily::k11 ? "11" : "v8"; }

Result<ModelName> ParseModelName(const std::string& name) {
  const std::string s = AsciiLower(name);
  ModelName out;
  std::string scale = s;
  if (s.rfind("yolov8", 0) == 0) {
    out.family = ModelFamily::kV8;
    scale = s.substr(6);
  } else if (s.rfind("yolo11", 0) == 0) {
    out.family = ModelFamily::k11;
    scale = s.substr(6);
  }
  // A bare "yolov8" or "yolo11" names no scale; Ultralytics would guess n, we ask.
  Result<ModelScale> sc = scale.size() == 1 ? ParseModelScale(scale) : Result<ModelScale>(Status::InvalidArgument(""));
  if (!sc.ok()) {
    return Status::InvalidArgument("model '" + name + "': expected one of yolov8n, yolov8s, yolov8m, yolov8l, yolov8x, "
                                   "yolo11n, yolo11s, yolo11m, yolo11l, yolo11x");
  }
  out.scale = *sc;
  return out;
}

std::string ModelNameString(ModelName name) {
  return std::string(name.family == ModelFamily::k11 ? "yolo11" : "yolov8") + ModelScaleName(name.scale);
}

ScaleSpec SpecFor(ModelFamily family, ModelScale scale) {
  if (family == ModelFamily::k11) {
    switch (scale) {
      case ModelScale::kN: return {0.50, 0.25, 1024};
      case ModelScale::kS: return {0.50, 0.50, 1024};
      case ModelScale::kM: return {0.50, 1.00, 512};
      case ModelScale::kL: return {1.00, 1.00, 512};
      case ModelScale::kX: return {1.00, 1.50, 512};
    }
  }
  switch (scale) {
    case ModelScale::kN: return {0.33, 0.25, 1024};
    case ModelScale::kS: return {0.33, 0.50, 1024};
    case ModelScale::kM: return {0.67, 0.75, 768};
    case ModelScale::kL: return {1.00, 1.00, 512};
    case ModelScale::kX: return {1.00, 1.25, 512};
  }
  return {0.33, 0.25, 1024};
}

DetectionModelImpl::DetectionModelImpl(const ModelOptions& options) : options_(options) { reset(); }

void DetectionModelImpl::reset() {
  model = register_module("model", torch::nn::ModuleList());
  if (options_.family == ModelFamily::k11) {
    model_graph::BuildYOLO11(*model, options_, strides_);
  } else {
    model_graph::BuildYOLOv8(*model, options_, strides_);
  }
  detect().BiasInit();
  // A pruned architecture: built at the scale's widths, then cut (clone() for the EMA lands here too, and
  // then copies the source's cut tensors over).
  if (!options_.channels.empty()) CutToWidths(*this, options_.channels);
}

DetectImpl& DetectionModelImpl::detect() { return *model->ptr(model->size() - 1)->as<DetectImpl>(); }

DetectOutput DetectionModelImpl::forward(const at::Tensor& images) { return Forward(images, nullptr); }

DetectOutput DetectionModelImpl::ForwardObserved(const at::Tensor& images, const LayerObserver& observe) {
  return Forward(images, &observe);
}

DetectOutput DetectionModelImpl::Forward(const at::Tensor& images, const LayerObserver* observe) {
  // The PAN concatenations need every level to halve exactly; say so instead of a shape error deep inside.
  TORCH_CHECK(images.dim() == 4 && images.size(1) == options_.in_channels && images.size(2) % 32 == 0 &&
                  images.size(3) % 32 == 0 && images.size(2) > 0 && images.size(3) > 0,
              ModelNameString(options_.name()), ": expected (B, ", options_.in_channels,
              ", H, W) with H and W multiples of 32, got ", images.sizes());
  DetectOutput out;
  const std::vector<at::Tensor> levels = options_.family == ModelFamily::k11
                                             ? model_graph::YOLO11Neck(*model, images, observe)
                                             : model_graph::YOLOv8Neck(*model, images, observe);
  out.feats = detect().forward(levels);
  if (!is_training()) out.pred = detect().Decode(out.feats);
  return out;
}

std::string DetectionModelImpl::LayerType(size_t i) const {
  // Module::name() is the demangled class, "yc::trainer::C2fImpl" or "torch::nn::UpsampleImpl".
  std::string name = model->ptr(i)->name();
  if (const size_t colon = name.rfind("::"); colon != std::string::npos) name = name.substr(colon + 2);
  if (name.size() > 4 && name.compare(name.size() - 4, 4, "Impl") == 0) name.resize(name.size() - 4);
  return name;
}

at::Tensor DetectionModelImpl::Decode(const std::vector<at::Tensor>& feats) { return detect().Decode(feats); }

int64_t CountParameters(const torch::nn::Module& module, bool trainable_only) {
  int64_t n = 0;
  for (const auto& p : module.parameters(/*recurse=*/true)) {
    if (!trainable_only || p.requires_grad()) n += p.numel();
  }
  return n;
}

void ToChannelsLast(torch::nn::Module& module) {
  c10::NoGradGuard no_grad;
  for (auto& p : module.parameters(true)) {
    if (p.dim() == 4) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));
  }
  for (auto& b : module.buffers(true)) {
    if (b.dim() == 4) b.set_data(b.contiguous(at::MemoryFormat::ChannelsLast));
  }
}

}  // namespace yc::trainer
