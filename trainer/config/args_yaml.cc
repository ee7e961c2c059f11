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
#include "loader/option_table.h"

namespace yc::trainer {

namespace {

constexpr const char* kRunIdPrefix = "# yolocache run_id: ";

// Ultralytics' model argument: the weights file it started from, else the architecture's YAML name.
std::string ModelArg(const TrainOptions& o) { return o.weights.empty() ? o.model + ".yaml" : o.weights; }

// Ultralytics' device argument: None (auto), "cpu", or CUDA indices ("0", "0,1").
nlohmann::ordered_json UltralyticsDevice(const std::string& device) {
  if (device.empty() || device == "auto") return nullptr;
  if (device == "cuda") return "0";
  if (device.rfind("cuda:", 0) == 0) return device.substr(5);
  return device;
}

// One value as PyYAML writes it.
std::string YamlValue(const nlohmann::ordered_json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) return YamlFloat(v.get<double>());
  if (v.is_array()) return "[]";  // only an empty one: ArgsYaml writes the others as blocks
  return YamlString(v.get<std::string>());
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

nlohmann::ordered_json UltralyticsArgs(const TrainOptions& o) {
  using J = nlohmann::ordered_json;
  const AugmentHyp& h = o.hyp;
  const std::string data = o.data_source.empty() ? o.data : o.data_source;
  const std::string name = o.out.empty() ? o.name : std::filesystem::path(o.out).filename().string();
  const J null = nullptr;
  // ultralytics/cfg/default.yaml, key by key in its order.
  J a = J::object();
  a["task"] = "detect";
  a["mode"] = "train";
  a["model"] = ModelArg(o);
  a["data"] = data;
  a["epochs"] = o.epochs;
  a["time"] = o.time > 0 ? J(o.time) : null;
  a["patience"] = o.patience;
  a["batch"] = o.autobatch > 0 ? J(-1) : J(o.batch);  // before AutoBatch chose one, as Ultralytics writes it
  a["imgsz"] = o.imgsz;
  a["save"] = true;
  a["save_period"] = o.save_every > 0 ? o.save_every : -1;
  a["cache"] = false;
  a["device"] = UltralyticsDevice(o.device);
  a["workers"] = o.threads > 0 ? o.threads : 8;  // Ultralytics' default where ours is "all cores"
  a["project"] = o.project;
  a["name"] = name;
  a["exist_ok"] = o.exist_ok;
  a["pretrained"] = o.weights.empty() ? J(true) : J(o.weights);
  a["optimizer"] = o.optimizer;
  a["verbose"] = true;
  a["seed"] = static_cast<int64_t>(o.seed);
  a["deterministic"] = true;
  a["single_cls"] = o.single_cls;
  a["rect"] = o.rect;
  a["cos_lr"] = o.cos_lr;
  a["close_mosaic"] = h.close_mosaic;
  a["resume"] = false;
  a["amp"] = o.amp != AmpMode::kOff;
  a["fraction"] = o.fraction;
  a["profile"] = false;
  // freeze=N as N, freeze=[0, 3] as that list (PyYAML writes it in block style).
  a["freeze"] = !o.freeze_layers.empty() ? J(o.freeze_layers) : o.freeze > 0 ? J(o.freeze) : null;
  a["multi_scale"] = o.multi_scale;
  a["overlap_mask"] = true;
  a["mask_ratio"] = 4;
  a["dropout"] = 0.0;
  a["val"] = o.val;
  a["split"] = o.val_split;
  a["save_json"] = false;
  a["conf"] = null;
  a["iou"] = o.val_iou;
  a["max_det"] = o.max_det;
  a["half"] = false;
  a["dnn"] = false;
  a["plots"] = o.plots;
  a["source"] = null;
  a["vid_stride"] = 1;
  a["stream_buffer"] = false;
  a["visualize"] = false;
  a["augment"] = false;
  a["agnostic_nms"] = false;
  a["classes"] = o.classes.empty() ? null : J(o.classes);
  a["retina_masks"] = false;
  a["embed"] = null;
  a["show"] = false;
  a["save_frames"] = false;
  a["save_txt"] = false;
  a["save_conf"] = false;
  a["save_crop"] = false;
  a["show_labels"] = true;
  a["show_conf"] = true;
  a["show_boxes"] = true;
  a["line_width"] = null;
  a["format"] = "torchscript";
  a["keras"] = false;
  a["optimize"] = false;
  a["int8"] = false;
  a["dynamic"] = false;
  a["simplify"] = true;
  a["opset"] = null;
  a["workspace"] = null;
  a["nms"] = false;
  a["lr0"] = o.lr0;
  a["lrf"] = o.lrf;
  a["momentum"] = o.momentum;
  a["weight_decay"] = o.weight_decay;
  a["warmup_epochs"] = o.warmup_epochs;
  a["warmup_momentum"] = o.warmup_momentum;
  a["warmup_bias_lr"] = o.warmup_bias_lr;
  a["box"] = o.box;
  a["cls"] = o.cls;
  a["dfl"] = o.dfl;
  a["pose"] = 12.0;
  a["kobj"] = 1.0;
  a["nbs"] = o.nbs;
  a["hsv_h"] = h.hsv_h;
  a["hsv_s"] = h.hsv_s;
  a["hsv_v"] = h.hsv_v;
  a["degrees"] = h.degrees;
  a["translate"] = h.translate;
  a["scale"] = h.scale;
  a["shear"] = h.shear;
  a["perspective"] = h.perspective;
  a["flipud"] = h.flipud;
  a["fliplr"] = h.fliplr;
  a["bgr"] = h.bgr;
  a["mosaic"] = h.mosaic;
  a["mixup"] = h.mixup;
  a["cutmix"] = h.cutmix;
  a["copy_paste"] = h.copy_paste;
  a["copy_paste_mode"] = CopyPasteModeName(h.copy_paste_mode);
  a["auto_augment"] = "randaugment";
  a["erasing"] = 0.4;
  a["cfg"] = null;
  a["tracker"] = "botsort.yaml";
  a["save_dir"] = o.out;
  // Not a default.yaml key: written only for a sparsity run (Ultralytics' cfg check refuses unknown keys),
  // under the YOLOv5 pruning forks' name, which `cfg=args.yaml` reads back as --sr.
  if (o.sparsity > 0) a["sr"] = o.sparsity;
  if (o.prune_at > 0) {  // likewise: read back as --prune-at / --prune-ratio / --prune-gflops
    a["prune_at"] = o.prune_at;
    if (o.prune_ratio > 0) a["prune_ratio"] = o.prune_ratio;
    if (o.prune_gflops > 0) a["prune_gflops"] = o.prune_gflops;
  }
  // Likewise only for a distillation run; `cfg=args.yaml` reads them back as --teacher, --distill (the
  // weight) and --distill-temp.
  if (!o.teacher.empty()) {
    a["teacher"] = o.teacher;
    a["distill"] = o.distill;
    a["distill_temp"] = o.distill_temp;
  }
  return a;
}

std::string ArgsYaml(const TrainOptions& o, const std::string& run_id) {
  std::ostringstream s;
  if (!run_id.empty()) s << kRunIdPrefix << run_id << "\n";
  const nlohmann::ordered_json args = UltralyticsArgs(o);
  for (auto it = args.begin(); it != args.end(); ++it) {
    if (!it.value().is_array() || it.value().empty()) {
      s << it.key() << ": " << (it.value().is_array() ? "[]" : YamlValue(it.value())) << "\n";
      continue;
    }
    s << it.key() << ":\n";  // a list, as yaml.safe_dump writes one: "- item" per line
    for (const auto& item : it.value()) s << "- " << YamlValue(item) << "\n";
  }
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
