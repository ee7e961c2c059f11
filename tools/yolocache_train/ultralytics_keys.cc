#include "tools/yolocache_train/ultralytics_keys.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace yc::cli {
namespace {

constexpr KeyUse O = KeyUse::kOption, G = KeyUse::kGrammar, I = KeyUse::kIgnored;

// Why a key of another task, a display or an export backend has no effect here.
constexpr std::string_view kSegment = "a segmentation setting (yolocache-train trains detection models)";
constexpr std::string_view kPose = "a pose setting (yolocache-train trains detection models)";
constexpr std::string_view kClassify = "a classification setting (yolocache-train trains detection models)";
constexpr std::string_view kNoDisplay = "yolocache-train opens no windows";
constexpr std::string_view kOtherExport = "an export setting of a format yolocache-train does not write (onnx, torchscript)";

}  // namespace

const std::vector<UltralyticsKey>& UltralyticsKeys() {
  // ultralytics/cfg/default.yaml (8.3.166), key by key in its order.
  static const std::vector<UltralyticsKey> keys = {
      {"task", "detect", G, ""},
      {"mode", "train", G, ""},
      {"model", "", G, ""},
      {"data", "", O, ""},
      {"epochs", "100", O, ""},
      {"time", "", O, ""},
      {"patience", "100", O, ""},
      {"batch", "16", G, ""},
      {"imgsz", "640", G, ""},
      {"save", "True", I, "yolocache-train always saves its weights and results"},
      {"save_period", "-1", G, ""},
      {"cache", "False", I, "yolocache always reads decoded images from its cache (the cache is always on)"},
      {"device", "", G, ""},
      {"workers", "8", O, "threads"},
      {"project", "", O, ""},
      {"name", "", O, ""},
      {"exist_ok", "False", O, "exist-ok"},
      {"pretrained", "True", G, ""},
      {"optimizer", "auto", O, ""},
      {"verbose", "True", I, "yolocache-train prints the same lines either way"},
      {"seed", "0", O, ""},
      {"deterministic", "True", I, "yolocache-train is always deterministic (the same seed gives the same run)"},
      {"single_cls", "False", O, ""},
      {"rect", "False", G, ""},
      {"cos_lr", "False", O, "cos-lr"},
      {"close_mosaic", "10", O, "close-mosaic"},
      {"resume", "False", G, ""},
      {"amp", "True", O, ""},
      {"fraction", "1.0", O, ""},
      {"profile", "False", I, "ONNX/TensorRT speed profiling during training is Ultralytics' own"},
      {"freeze", "", G, ""},
      {"multi_scale", "False", O, "multi-scale"},
      {"overlap_mask", "True", I, kSegment},
      {"mask_ratio", "4", I, kSegment},
      {"dropout", "0.0", I, kClassify},
      {"val", "True", O, ""},
      {"split", "val", O, ""},
      {"save_json", "False", O, "save-json"},
      {"conf", "", O, ""},
      {"iou", "0.7", O, ""},
      {"max_det", "300", O, "max-det"},
      {"half", "False", G, ""},
      {"dnn", "False", I, "OpenCV DNN inference of ONNX files is not used: LibTorch runs the model"},
      {"plots", "True", O, ""},
      {"source", "", G, ""},
      {"vid_stride", "1", O, ""},
      {"stream_buffer", "False", I, "yolocache-train reads files, not live streams"},
      {"visualize", "False", O, ""},
      {"augment", "False", O, ""},
      {"agnostic_nms", "False", O, "agnostic-nms"},
      {"classes", "", O, ""},  // train/val: labels kept; predict: detections kept
      {"retina_masks", "False", I, kSegment},
      {"embed", "", I, "embedding extraction is Ultralytics' own predict mode"},
      {"show", "False", I, kNoDisplay},
      {"save_frames", "False", O, "save-frames"},
      {"save_txt", "False", O, "save-txt"},
      {"save_conf", "False", O, "save-conf"},
      {"save_crop", "False", O, "save-crop"},
      {"show_labels", "True", O, "show-labels"},
      {"show_conf", "True", O, "show-conf"},
      {"show_boxes", "True", O, "show-boxes"},
      {"line_width", "", O, "line-width"},
      {"format", "torchscript", O, ""},
      {"keras", "False", O, ""},
      {"optimize", "False", I, "TorchScript mobile optimisation is not applied"},
      {"int8", "False", O, ""},
      {"dynamic", "False", O, ""},
      {"simplify", "True", I, "the ONNX file is written as traced (no onnxslim pass)"},
      {"opset", "", O, ""},
      {"workspace", "", I, kOtherExport},
      {"nms", "False", O, ""},
      {"lr0", "0.01", O, ""},
      {"lrf", "0.01", O, ""},
      {"momentum", "0.937", O, ""},
      {"weight_decay", "0.0005", O, "weight-decay"},
      {"warmup_epochs", "3.0", O, "warmup-epochs"},
      {"warmup_momentum", "0.8", O, "warmup-momentum"},
      {"warmup_bias_lr", "0.1", O, "warmup-bias-lr"},
      {"box", "7.5", O, ""},
      {"cls", "0.5", O, ""},
      {"dfl", "1.5", O, ""},
      {"pose", "12.0", I, kPose},
      {"kobj", "1.0", I, kPose},
      {"nbs", "64", O, ""},
      {"hsv_h", "0.015", O, "hsv-h"},
      {"hsv_s", "0.7", O, "hsv-s"},
      {"hsv_v", "0.4", O, "hsv-v"},
      {"degrees", "0.0", O, ""},
      {"translate", "0.1", O, ""},
      {"scale", "0.5", O, ""},
      {"shear", "0.0", O, ""},
      {"perspective", "0.0", O, ""},
      {"flipud", "0.0", O, ""},
      {"fliplr", "0.5", O, ""},
      {"bgr", "0.0", O, ""},
      {"mosaic", "1.0", O, ""},
      {"mixup", "0.0", O, ""},
      {"cutmix", "0.0", O, ""},
      {"copy_paste", "0.0", O, "copy-paste"},
      {"copy_paste_mode", "flip", O, "copy-paste-mode"},
      {"auto_augment", "randaugment", I, kClassify},
      {"erasing", "0.4", I, kClassify},
      {"cfg", "", G, ""},
      {"tracker", "botsort.yaml", I, "tracking (Ultralytics' track mode) is not a yolocache-train command"},
  };
  return keys;
}

const UltralyticsKey* FindUltralyticsKey(std::string_view key) {
  const std::vector<UltralyticsKey>& keys = UltralyticsKeys();
  auto it = std::find_if(keys.begin(), keys.end(), [key](const UltralyticsKey& k) { return k.key == key; });
  return it == keys.end() ? nullptr : &*it;
}

std::string OptionForKey(const UltralyticsKey& k) {
  std::string name(k.use == KeyUse::kOption && !k.detail.empty() ? k.detail : k.key);
  std::replace(name.begin(), name.end(), '_', '-');
  return "--" + name;
}

std::string BoolWord(std::string_view value) {
  std::string v(value);
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (v == "true" || v == "1" || v == "yes") return "true";
  if (v == "false" || v == "0" || v == "no") return "false";
  return "";
}

bool IsNullWord(std::string_view v) { return v.empty() || v == "None" || v == "null" || v == "Null" || v == "~"; }

namespace {

// The number `text` holds entirely, as Python's float() reads it; false when it holds none.
bool AsNumber(std::string_view text, double* out) {
  const std::string s(text);
  if (s.empty()) return false;
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

std::string Unquoted(std::string_view v) {
  if (v.size() >= 2 && (v.front() == '\'' || v.front() == '"') && v.back() == v.front()) v = v.substr(1, v.size() - 2);
  return std::string(v);
}

}  // namespace

bool IsDefaultValue(const UltralyticsKey& k, std::string_view raw) {
  const std::string value = Unquoted(raw);
  if (IsNullWord(k.default_value)) return IsNullWord(value);
  const std::string want = BoolWord(k.default_value);
  if (!want.empty() && !std::isdigit(static_cast<unsigned char>(k.default_value[0]))) return BoolWord(value) == want;
  double a = 0, b = 0;
  if (AsNumber(k.default_value, &a) && AsNumber(value, &b)) return a == b;
  return value == k.default_value;
}

}  // namespace yc::cli
