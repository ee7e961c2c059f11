#include "trainer/config/args_yaml.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <sstream>
#include <utility>
#include <vector>

#include "libcache/base/path_text.h"

namespace yc::trainer {

namespace {

constexpr const char* kRunIdPrefix = "# yolocache run_id: ";

std::string Int(long long v) { return std::to_string(v); }
std::string Bool(bool v) { return v ? "true" : "false"; }
const std::string kNull = "null";

// Ultralytics' model argument: the weights file it started from, else the architecture's YAML name.
std::string ModelArg(const TrainOptions& o) {
  if (!o.weights.empty()) return YamlString(o.weights);
  return YamlString(o.model + ".yaml");
}

}  // namespace

std::string YamlFloat(double v) {
  if (std::isnan(v)) return ".nan";
  if (std::isinf(v)) return v > 0 ? ".inf" : "-.inf";
  char buf[40];
  for (int precision = 1; precision <= 17; ++precision) {  // shortest that reads back, as repr()
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";  // 3 -> 3.0
  // PyYAML writes exponents as 1.0e-05.
  if (const size_t e = s.find('e'); e != std::string::npos && s.find('.') == std::string::npos) s.insert(e, ".0");
  return s;
}

std::string YamlString(const std::string& raw) {
  const std::string text = PrintableText(raw);
  static const std::regex special(
      "^$|^[-?:,\\[\\]{}#&*!|>'\"%@`~ ]|: |\\s#|:$|\\s$|"
      "^(null|Null|NULL|true|True|TRUE|false|False|FALSE|yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF|~)$|"
      "^[-+]?(\\.?[0-9]|\\.(inf|Inf|INF|nan|NaN|NAN)$)");
  if (!std::regex_search(text, special)) return text;
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("''") : std::string(1, c);
  return quoted + "'";
}

std::string ArgsYaml(const TrainOptions& o, const std::string& run_id) {
  const AugmentHyp& h = o.hyp;
  const std::string data = o.data_source.empty() ? o.data : o.data_source;
  const std::string name = o.out.empty() ? o.name : std::filesystem::path(o.out).filename().string();
  // ultralytics/cfg/default.yaml, key by key in its order.
  const std::vector<std::pair<const char*, std::string>> keys = {
      {"task", "detect"},
      {"mode", "train"},
      {"model", ModelArg(o)},
      {"data", YamlString(data)},
      {"epochs", Int(o.epochs)},
      {"time", kNull},
      {"patience", Int(o.patience)},
      {"batch", Int(o.batch)},
      {"imgsz", Int(o.imgsz)},
      {"save", "true"},
      {"save_period", Int(o.save_every > 0 ? o.save_every : -1)},
      {"cache", "false"},
      {"device", o.device.empty() || o.device == "auto" ? kNull : YamlString(o.device)},
      {"workers", Int(o.threads)},
      {"project", YamlString(o.project)},
      {"name", YamlString(name)},
      {"exist_ok", Bool(o.exist_ok)},
      {"pretrained", o.weights.empty() ? "true" : YamlString(o.weights)},
      {"optimizer", YamlString(o.optimizer)},
      {"verbose", "true"},
      {"seed", Int(static_cast<long long>(o.seed))},
      {"deterministic", "true"},
      {"single_cls", "false"},
      {"rect", "false"},
      {"cos_lr", Bool(o.cos_lr)},
      {"close_mosaic", Int(h.close_mosaic)},
      {"resume", "false"},
      {"amp", Bool(o.amp != AmpMode::kOff)},
      {"fraction", "1.0"},
      {"profile", "false"},
      {"freeze", o.freeze > 0 ? Int(o.freeze) : kNull},
      {"multi_scale", "false"},
      {"overlap_mask", "true"},
      {"mask_ratio", "4"},
      {"dropout", "0.0"},
      {"val", Bool(o.val)},
      {"split", YamlString(o.val_split)},
      {"save_json", "false"},
      {"conf", kNull},
      {"iou", YamlFloat(o.val_iou)},
      {"max_det", Int(o.max_det)},
      {"half", "false"},
      {"dnn", "false"},
      {"plots", Bool(o.plots)},
      {"source", kNull},
      {"vid_stride", "1"},
      {"stream_buffer", "false"},
      {"visualize", "false"},
      {"augment", "false"},
      {"agnostic_nms", "false"},
      {"classes", kNull},
      {"retina_masks", "false"},
      {"embed", kNull},
      {"show", "false"},
      {"save_frames", "false"},
      {"save_txt", "false"},
      {"save_conf", "false"},
      {"save_crop", "false"},
      {"show_labels", "true"},
      {"show_conf", "true"},
      {"show_boxes", "true"},
      {"line_width", kNull},
      {"format", "torchscript"},
      {"keras", "false"},
      {"optimize", "false"},
      {"int8", "false"},
      {"dynamic", "false"},
      {"simplify", "true"},
      {"opset", kNull},
      {"workspace", kNull},
      {"nms", "false"},
      {"lr0", YamlFloat(o.lr0)},
      {"lrf", YamlFloat(o.lrf)},
      {"momentum", YamlFloat(o.momentum)},
      {"weight_decay", YamlFloat(o.weight_decay)},
      {"warmup_epochs", YamlFloat(o.warmup_epochs)},
      {"warmup_momentum", YamlFloat(o.warmup_momentum)},
      {"warmup_bias_lr", YamlFloat(o.warmup_bias_lr)},
      {"box", YamlFloat(o.box)},
      {"cls", YamlFloat(o.cls)},
      {"dfl", YamlFloat(o.dfl)},
      {"pose", "12.0"},
      {"kobj", "1.0"},
      {"nbs", Int(o.nbs)},
      {"hsv_h", YamlFloat(h.hsv_h)},
      {"hsv_s", YamlFloat(h.hsv_s)},
      {"hsv_v", YamlFloat(h.hsv_v)},
      {"degrees", YamlFloat(h.degrees)},
      {"translate", YamlFloat(h.translate)},
      {"scale", YamlFloat(h.scale)},
      {"shear", YamlFloat(h.shear)},
      {"perspective", YamlFloat(h.perspective)},
      {"flipud", YamlFloat(h.flipud)},
      {"fliplr", YamlFloat(h.fliplr)},
      {"bgr", "0.0"},
      {"mosaic", YamlFloat(h.mosaic)},
      {"mixup", YamlFloat(h.mixup)},
      {"cutmix", "0.0"},
      {"copy_paste", "0.0"},
      {"copy_paste_mode", "flip"},
      {"auto_augment", "randaugment"},
      {"erasing", "0.4"},
      {"cfg", kNull},
      {"tracker", "botsort.yaml"},
      {"save_dir", YamlString(o.out)},
  };
  std::ostringstream s;
  if (!run_id.empty()) s << kRunIdPrefix << run_id << "\n";
  for (const auto& [key, value] : keys) s << key << ": " << value << "\n";
  return s.str();
}

std::string RunIdFromArgsYaml(const std::string& text) {
  const std::string prefix = kRunIdPrefix;
  if (text.compare(0, prefix.size(), prefix) != 0) return "";
  const size_t end = text.find('\n');
  std::string id = text.substr(prefix.size(), end == std::string::npos ? std::string::npos : end - prefix.size());
  while (!id.empty() && (id.back() == '\r' || id.back() == ' ')) id.pop_back();
  return id;
}

}  // namespace yc::trainer
