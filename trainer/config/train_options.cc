#include "trainer/config/train_options.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <variant>
#include <vector>

#include "base/format.h"
#include "libcache/source/decode.h"  // kMaxImgsz: the bound every command shares
#include "libcache/base/path_json.h"
#include "libcache/base/thread_limit.h"
#include "libcache/remote/object_location.h"
#include "loader/option_table.h"
#include "trainer/config/depthwise_kernel_mode.h"
#include "trainer/config/optimizer_name.h"

namespace yc::trainer {

namespace {

using Json = nlohmann::json;

// One table drives both directions so a new option cannot be saved but not loaded (or vice versa).
struct Field {
  const char* key;
  std::function<Json(const TrainOptions&)> get;
  std::function<bool(const Json&, TrainOptions*)> set;  // false: wrong type
  // A string (paths above all): written and read with path_json.h, so a name that is not UTF-8 (kept
  // byte-exact by the data side) neither breaks the checkpoint meta nor changes on --resume.
  std::string TrainOptions::*text = nullptr;
};

template <typename T>
Field Num(const char* key, T TrainOptions::*member) {
  return {key, [member](const TrainOptions& o) { return Json(o.*member); },
          [member](const Json& j, TrainOptions* o) {
            if (!j.is_number()) return false;
            if constexpr (std::is_integral_v<T>) {
              if (!j.is_number_integer() && !j.is_number_unsigned()) return false;
            }
            o->*member = j.get<T>();
            return true;
          }};
}

// An augmentation hyperparameter: the loader's own entry (loader/option_table.h) read and written on o.hyp.
Field Hyp(const OptionSpec& spec) {
  return {spec.name.c_str(),
          [&spec](const TrainOptions& o) {
            LoaderOptions lo;
            lo.hyp = o.hyp;
            return std::visit([](const auto& v) { return Json(v); }, spec.get(lo));
          },
          [&spec](const Json& j, TrainOptions* o) {
            LoaderOptions lo;
            lo.hyp = o->hyp;
            OptionValue value;
            if (j.is_number_integer()) value = j.get<int64_t>();
            else if (j.is_number()) value = j.get<double>();
            else if (j.is_string()) value = j.get<std::string>();  // copy_paste_mode
            else return false;
            if (!spec.set(value, &lo).ok()) return false;
            o->hyp = lo.hyp;
            return true;
          }};
}

Field Str(const char* key, std::string TrainOptions::*member) {
  return {key, [member](const TrainOptions& o) { return Json(PrintableText(o.*member)); },
          [member](const Json& j, TrainOptions* o) {
            if (!j.is_string()) return false;
            o->*member = j.get<std::string>();
            return true;
          },
          member};
}

Field Bool(const char* key, bool TrainOptions::*member) {
  return {key, [member](const TrainOptions& o) { return Json(o.*member); },
          [member](const Json& j, TrainOptions* o) {
            if (!j.is_boolean()) return false;
            o->*member = j.get<bool>();
            return true;
          }};
}

std::vector<Field> MakeFields() {
  std::vector<Field> fields = {
      Str("data", &TrainOptions::data),
      Str("data_source", &TrainOptions::data_source),
      Str("model", &TrainOptions::model),
      Str("weights", &TrainOptions::weights),
      Num("freeze", &TrainOptions::freeze),
      {"freeze_layers", [](const TrainOptions& o) { return Json(o.freeze_layers); },
       [](const Json& j, TrainOptions* o) {
         if (!j.is_array()) return false;
         std::vector<int> layers;
         for (const Json& v : j) {
           if (!v.is_number_integer()) return false;
           layers.push_back(v.get<int>());
         }
         o->freeze_layers = std::move(layers);
         return true;
       }},
      Str("train_split", &TrainOptions::train_split),
      Str("val_split", &TrainOptions::val_split),
      Num("fraction", &TrainOptions::fraction),
      Bool("single_cls", &TrainOptions::single_cls),
      {"classes", [](const TrainOptions& o) { return Json(o.classes); },
       [](const Json& j, TrainOptions* o) {
         if (!j.is_array()) return false;
         std::vector<int32_t> classes;
         for (const Json& c : j) {
           if (!c.is_number_integer() || c.get<int64_t>() < 0) return false;
           classes.push_back(c.get<int32_t>());
         }
         o->classes = std::move(classes);
         return true;
       }},
      Num("epochs", &TrainOptions::epochs),
      Num("time", &TrainOptions::time),
      Num("batch", &TrainOptions::batch),
      Num("imgsz", &TrainOptions::imgsz),
      Str("device", &TrainOptions::device),
      {"amp", [](const TrainOptions& o) { return Json(AmpModeName(o.amp)); },
       [](const Json& j, TrainOptions* o) {
         if (j.is_boolean()) {
           o->amp = j.get<bool>() ? AmpMode::kOn : AmpMode::kOff;
           return true;
         }
         if (!j.is_string()) return false;
         const auto s = j.get<std::string>();
         if (s == "auto") o->amp = AmpMode::kAuto;
         else if (s == "on") o->amp = AmpMode::kOn;
         else if (s == "off") o->amp = AmpMode::kOff;
         else return false;
         return true;
       }},
      {"amp_dtype", [](const TrainOptions& o) { return Json(AmpDtypeName(o.amp_dtype)); },
       [](const Json& j, TrainOptions* o) {
         if (!j.is_string()) return false;
         auto d = ParseAmpDtype(j.get<std::string>());
         if (!d.ok()) return false;
         o->amp_dtype = *d;
         return true;
       }},
      Num("threads", &TrainOptions::threads),
      Num("torch_threads", &TrainOptions::torch_threads),
      Num("prefetch", &TrainOptions::prefetch),
      Str("order", &TrainOptions::order),
      Num("window_mb", &TrainOptions::window_mb),
      Num("ram_budget_gb", &TrainOptions::ram_budget_gb),
      Bool("channels_last", &TrainOptions::channels_last),
      Bool("fused_optimizer", &TrainOptions::fused_optimizer),
      Bool("cudnn_benchmark", &TrainOptions::cudnn_benchmark),
      Str("cuda_graphs", &TrainOptions::cuda_graphs),
      Str("depthwise_kernel", &TrainOptions::depthwise_kernel),
      Str("assigner_kernel", &TrainOptions::assigner_kernel),
      Str("val_overlap", &TrainOptions::val_overlap),
      Num("conv_warmup", &TrainOptions::conv_warmup),
      Bool("sync_bn", &TrainOptions::sync_bn),
      Str("optimizer", &TrainOptions::optimizer),
      Num("lr0", &TrainOptions::lr0),
      Num("lrf", &TrainOptions::lrf),
      Num("momentum", &TrainOptions::momentum),
      Num("weight_decay", &TrainOptions::weight_decay),
      Num("warmup_epochs", &TrainOptions::warmup_epochs),
      Num("warmup_momentum", &TrainOptions::warmup_momentum),
      Num("warmup_bias_lr", &TrainOptions::warmup_bias_lr),
      Bool("cos_lr", &TrainOptions::cos_lr),
      Num("nbs", &TrainOptions::nbs),
      Num("box", &TrainOptions::box),
      Num("cls", &TrainOptions::cls),
      Num("dfl", &TrainOptions::dfl),
      Num("clip_grad", &TrainOptions::clip_grad),
      Num("sparsity", &TrainOptions::sparsity),
      Num("prune_at", &TrainOptions::prune_at),
      Num("prune_ratio", &TrainOptions::prune_ratio),
      Num("prune_gflops", &TrainOptions::prune_gflops),
      Str("teacher", &TrainOptions::teacher),
      Num("distill", &TrainOptions::distill),
      Num("distill_temp", &TrainOptions::distill_temp),
      {"channels", [](const TrainOptions& o) { return Json(o.channels); },
       [](const Json& j, TrainOptions* o) {
         if (!j.is_object()) return false;
         std::map<std::string, int64_t> channels;
         for (const auto& [path, width] : j.items()) {
           if (!width.is_number_integer() || width.get<int64_t>() < 1) return false;
           channels[path] = width.get<int64_t>();
         }
         o->channels = std::move(channels);
         return true;
       }},
  };
  for (const OptionSpec& spec : LoaderOptionTable())
    if (spec.hyp) fields.push_back(Hyp(spec));
  fields.push_back(Bool("multi_scale", &TrainOptions::multi_scale));
  fields.insert(fields.end(), {
      Bool("rect", &TrainOptions::rect),
      Num("val_every", &TrainOptions::val_every),
      Bool("val", &TrainOptions::val),
      Bool("val_loss", &TrainOptions::val_loss),
      Num("val_conf", &TrainOptions::val_conf),
      Num("val_iou", &TrainOptions::val_iou),
      Num("max_det", &TrainOptions::max_det),
      Num("save_every", &TrainOptions::save_every),
      Num("keep", &TrainOptions::keep),
      Bool("exact_resume", &TrainOptions::exact_resume),
      Num("patience", &TrainOptions::patience),
      Num("seed", &TrainOptions::seed),
      Str("project", &TrainOptions::project),
      Str("name", &TrainOptions::name),
      Str("out", &TrainOptions::out),
      Bool("plots", &TrainOptions::plots),
      Bool("exist_ok", &TrainOptions::exist_ok),
      Num("log_every", &TrainOptions::log_every),
      Bool("synthetic_input", &TrainOptions::synthetic_input),
      Num("synthetic_iters", &TrainOptions::synthetic_iters),
  });
  return fields;
}

const std::vector<Field>& Fields() {
  static const std::vector<Field> fields = MakeFields();
  return fields;
}

}  // namespace

const char* AmpModeName(AmpMode mode) {
  switch (mode) {
    case AmpMode::kAuto: return "auto";
    case AmpMode::kOn: return "on";
    case AmpMode::kOff: return "off";
  }
  return "auto";
}

const char* AmpDtypeName(AmpDtype dtype) {
  switch (dtype) {
    case AmpDtype::kAuto: return "auto";
    case AmpDtype::kFloat16: return "fp16";
    case AmpDtype::kBFloat16: return "bf16";
  }
  return "auto";
}

Result<AmpDtype> ParseAmpDtype(const std::string& text) {
  if (text == "auto") return AmpDtype::kAuto;
  if (text == "fp16" || text == "float16" || text == "half") return AmpDtype::kFloat16;
  if (text == "bf16" || text == "bfloat16") return AmpDtype::kBFloat16;
  return Status::InvalidArgument("--amp-dtype '" + text + "': expected auto, fp16 or bf16");
}

nlohmann::ordered_json ToJson(const TrainOptions& options) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const Field& f : Fields()) {
    if (f.text != nullptr) {
      SetPathField(j, f.key, options.*f.text);
    } else {
      j[f.key] = f.get(options);
    }
  }
  return j;
}

Result<TrainOptions> TrainOptionsFromJson(const nlohmann::json& json) {
  if (!json.is_object()) return Status::InvalidArgument("train options: expected a JSON object");
  TrainOptions o;
  // Runs saved before --order existed trained in the shuffle order: keep it on resume (auto could
  // pick another order and change the rest of the run).
  o.order = "shuffle";
  for (const Field& f : Fields()) {
    auto it = json.find(f.key);
    if (it == json.end() || it->is_null()) continue;
    bool ok = false;
    try {
      ok = f.set(*it, &o);
    } catch (const nlohmann::json::exception&) {
      ok = false;  // e.g. a negative number for an unsigned field
    }
    if (ok && f.text != nullptr) ok = GetPathField(json, f.key, &(o.*f.text));  // the exact bytes from "<key>_hex"
    if (!ok) return Status::InvalidArgument(std::string("train options: key '") + f.key + "' has a wrong type or value");
  }
  return o;
}

int StrideMultipleImgsz(int imgsz, std::string* warning) {
  constexpr int kStride = 32;
  const int rounded = std::max(kStride, (imgsz + kStride - 1) / kStride * kStride);
  warning->clear();
  if (rounded != imgsz && imgsz > 0) {
    *warning = "imgsz=" + std::to_string(imgsz) + " must be a multiple of max stride " + std::to_string(kStride) +
               ", updating to " + std::to_string(rounded);
  }
  return imgsz > 0 ? rounded : imgsz;
}

Status ValidateTrainOptions(const TrainOptions& o) {
  auto bad = [](const std::string& what) { return Status::InvalidArgument(what); };
  auto finite = [](double v) { return std::isfinite(v); };
  if (o.epochs < 1) return bad("--epochs must be >= 1");
  if (o.model.empty() && o.weights.empty()) return bad("--model is required (or --weights, whose architecture is used)");
  if (o.freeze < 0) return bad("--freeze must be >= 0");
  for (int layer : o.freeze_layers) {
    if (layer < 0) return bad("--freeze " + std::to_string(layer) + ": a layer index must be >= 0");
  }
  if (o.freeze > 0 && !o.freeze_layers.empty()) return bad("--freeze takes a layer count or a list of layers, not both");
  if (!(o.time >= 0) || !finite(o.time)) return bad("--time must be >= 0 hours (0: off, train --epochs)");
  if (!(o.fraction > 0 && o.fraction <= 1)) {
    return bad("--fraction " + OptionText(o.fraction) + ": must be in (0, 1] (the share of the train images used)");
  }
  for (const int32_t c : o.classes) {
    if (c < 0) return bad("--classes " + std::to_string(c) + ": a class index is >= 0");
  }
  if (o.batch < 1) return bad("--batch must be >= 1");
  if (!(o.autobatch >= 0 && o.autobatch < 1)) return bad("--autobatch must be a share of the GPU memory in (0, 1), or 0");
  if (o.imgsz < 32 || o.imgsz % 32 != 0 || o.imgsz > kMaxImgsz) {
    return bad("--imgsz must be a multiple of 32 (the model's largest stride), 32.." + std::to_string(kMaxImgsz));
  }
  if (const std::string e = ThreadCountError("--threads", o.threads); !e.empty()) return bad(e);
  if (const std::string e = ThreadCountError("--torch-threads", o.torch_threads); !e.empty()) return bad(e);
  if (o.prefetch < 1) return bad("--prefetch must be >= 1");
  if (o.order != "auto" && !ParseSampleOrder(o.order).ok()) return bad("--order must be auto, shuffle or windowed");
  if (o.rect && o.order == "windowed") {
    return bad("--rect (rect=True) walks the records in aspect-ratio order: it needs --order shuffle or auto, not "
               "windowed");
  }
  if (!(o.window_mb >= 0) || !finite(o.window_mb)) return bad("--window must be >= 0");
  if (!(o.ram_budget_gb >= 0) || !finite(o.ram_budget_gb)) return bad("--ram-budget must be >= 0");
  if (o.read_ahead_mb < 0) return bad("--read-ahead must be >= 0");
  if (!(o.cache_budget_gb >= 0) || !finite(o.cache_budget_gb)) return bad("--cache-budget must be >= 0");
  if (o.cache_budget_gb > 0 && !o.data.empty() && !IsObjectUrl(o.data)) {
    return bad("--cache-budget streams a cache from object storage: --data must be an s3:// or https:// URL, not " +
               o.data);
  }
  if (!ParseWindowIo(o.window_io, 1).ok()) return bad("--window-io must be auto, direct or page-cache");
  if (o.cuda_graphs != "auto" && o.cuda_graphs != "on" && o.cuda_graphs != "off") {
    return bad("--cuda-graphs must be auto, on or off");
  }
  if (Result<DepthwiseKernelMode> mode = ParseDepthwiseKernelMode(o.depthwise_kernel); !mode.ok()) return mode.status();
  if (o.assigner_kernel != "auto" && o.assigner_kernel != "aten") return bad("--assigner-kernel must be auto or aten");
  if (o.val_overlap != "auto" && o.val_overlap != "on" && o.val_overlap != "off") {
    return bad("--val-overlap must be auto, on or off");
  }
  if (o.conv_warmup < 0 || o.conv_warmup > 256) return bad("--conv-warmup must be a thread count in [0, 256]");
  if (Result<std::optional<OptimizerKind>> kind = ParseOptimizerName(o.optimizer); !kind.ok()) return kind.status();
  if (!(o.lr0 > 0) || !finite(o.lr0)) return bad("--lr0 must be > 0");
  if (!(o.lrf > 0) || !finite(o.lrf)) return bad("--lrf must be > 0");
  if (!(o.momentum >= 0 && o.momentum < 1)) return bad("--momentum must be in [0, 1)");
  if (!(o.weight_decay >= 0) || !finite(o.weight_decay)) return bad("--weight-decay must be >= 0");
  if (!(o.warmup_epochs >= 0) || !finite(o.warmup_epochs)) return bad("--warmup-epochs must be >= 0");
  if (!(o.warmup_momentum >= 0 && o.warmup_momentum < 1)) return bad("--warmup-momentum must be in [0, 1)");
  if (!(o.warmup_bias_lr >= 0) || !finite(o.warmup_bias_lr)) return bad("--warmup-bias-lr must be >= 0");
  if (o.nbs < 1) return bad("--nbs must be >= 1");
  if (!(o.box >= 0 && o.cls >= 0 && o.dfl >= 0) || !finite(o.box + o.cls + o.dfl)) {
    return bad("loss gains --box/--cls/--dfl must be >= 0");
  }
  if (!(o.clip_grad > 0) || !finite(o.clip_grad)) return bad("--clip-grad must be > 0");
  if (!(o.sparsity >= 0) || !finite(o.sparsity)) return bad("--sparsity must be >= 0 (0: off)");
  if (o.prune_at < 0) return bad("--prune-at must be >= 0 (0: off)");
  const bool by_ratio = o.prune_ratio != 0, by_gflops = o.prune_gflops != 0;
  const std::string share_option = by_ratio ? "--prune-ratio" : "--prune-gflops";
  if (o.prune_at == 0 && (by_ratio || by_gflops)) {
    return bad(share_option + " needs --prune-at E: the epoch after which to prune");
  }
  if (o.prune_at > 0) {
    if (by_ratio == by_gflops) {
      return bad("--prune-at " + std::to_string(o.prune_at) + " needs one of --prune-ratio R (the share of the "
                 "prunable channels removed after that epoch) and --prune-gflops G (the share of the GFLOPs)");
    }
    const double share = by_ratio ? o.prune_ratio : o.prune_gflops;
    if (!(share > 0 && share < 1)) return bad(share_option + " " + FormatNumber("%g", share) + ": must be in (0, 1)");
    if (o.time <= 0 && o.prune_at >= o.epochs) {
      return bad("--prune-at " + std::to_string(o.prune_at) + " must be below --epochs " + std::to_string(o.epochs) +
                 ": the pruned model trains the epochs after it");
    }
  }
  if (!(o.distill >= 0) || !finite(o.distill)) return bad("--distill-weight must be >= 0");
  // Beyond ~20 the softened bin distributions are flat whatever the logits; T^2 would then scale noise.
  if (!(o.distill_temp >= 0.1 && o.distill_temp <= 20)) return bad("--distill-temp must be in [0.1, 20]");
  if (o.val_every < 0) return bad("--val-every must be >= 0");
  if (!(o.val_conf >= 0 && o.val_conf < 1)) return bad("--conf must be in [0, 1)");
  if (!(o.val_iou > 0 && o.val_iou <= 1)) return bad("--iou must be in (0, 1]");
  if (o.max_det < 1) return bad("--max-det must be >= 1");
  if (o.save_every < 0) return bad("--save-every must be >= 0");
  if (o.keep < 0) return bad("--keep must be >= 0");
  if (o.patience < 0) return bad("--patience must be >= 0");
  if (o.log_every < 1) return bad("--log-every must be >= 1");
  if (o.synthetic_iters < 1) return bad("--synthetic-iters must be >= 1");
  if (o.out.empty() && (o.project.empty() || o.name.empty())) return bad("--project and --name must not be empty");
  if (o.data.empty()) return bad("--data (a cache directory) is required");
  // The loader checks the augmentation ranges itself; fail early with its message.
  return ValidateOptions(TrainLoaderOptions(o));
}

std::vector<int> FrozenLayers(const TrainOptions& o) {
  if (!o.freeze_layers.empty()) return o.freeze_layers;
  std::vector<int> layers;
  for (int i = 0; i < o.freeze; ++i) layers.push_back(i);
  return layers;
}

Status SetFreeze(const std::string& text, TrainOptions* o) {
  const bool bracketed = text.find_first_of("[]") != std::string::npos;
  std::vector<int> items;
  std::string item;
  auto bad = [&text](const std::string& why) {
    return Status::InvalidArgument("--freeze '" + text + "': " + why +
                                   " (a layer count N, or a list of layer indices such as 0,3,5)");
  };
  auto flush = [&]() -> Status {
    if (item.empty()) return Status::OK();
    size_t used = 0;
    int v = -1;
    try {
      v = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size()) return bad("'" + item + "' is not an integer");
    if (v < 0) return bad(item + " is negative");
    items.push_back(v);
    item.clear();
    return Status::OK();
  };
  for (char c : text) {
    if (c == '[' || c == ']' || c == ' ') continue;
    if (c == ',') {
      YC_RETURN_IF_ERROR(flush());
      continue;
    }
    item.push_back(c);
  }
  YC_RETURN_IF_ERROR(flush());
  const bool list = bracketed || text.find(',') != std::string::npos;
  if (!list && items.size() != 1) return bad("empty");
  o->freeze = list ? 0 : items[0];
  o->freeze_layers = list ? items : std::vector<int>();
  return Status::OK();
}
LabelRules TrainLabelRules(const TrainOptions& o) { return LabelRules{o.classes, o.single_cls}; }

WindowIo WindowIoFor(const TrainOptions& o, int world_size) {
  Result<WindowIo> io = ParseWindowIo(o.window_io, world_size);
  return io.ok() ? *io : WindowIo::kDirect;  // ValidateTrainOptions refuses any other text
}

LoaderOptions TrainLoaderOptions(const TrainOptions& o, int rank, int world_size) {
  LoaderOptions lo;
  lo.mode = LoaderMode::kTrain;
  lo.batch = o.batch / world_size;  // Ultralytics: batch // world_size per rank
  lo.rank = rank;
  lo.world_size = world_size;  // EpochSampler pads the epoch so every rank gets the same batch count
  lo.imgsz = o.imgsz;
  lo.hyp = o.hyp;
  lo.train_rect = o.rect;
  lo.shuffle = !o.rect;  // Ultralytics: "'rect=True' is incompatible with DataLoader shuffle, setting shuffle=False"
  lo.epochs = o.epochs;
  lo.seed = o.seed;
  lo.threads = o.threads;
  lo.prefetch = o.prefetch;
  // "auto" is resolved by the trainer before the loader is made (ChooseSampleOrder); unresolved it
  // means the default.
  Result<SampleOrder> order = ParseSampleOrder(o.order);
  lo.order = order.ok() ? *order : SampleOrder::kShuffle;
  if (o.window_mb > 0) lo.window_bytes = static_cast<uint64_t>(o.window_mb * (1 << 20));
  lo.read_ahead_bytes = static_cast<uint64_t>(o.read_ahead_mb) << 20;
  lo.window_io = WindowIoFor(o, world_size);
  return lo;
}

}  // namespace yc::trainer
