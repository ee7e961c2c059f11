#include "trainer/io/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include <c10/core/GradMode.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include "libcache/base/mapped_file.h"
#include "libcache/base/output_file.h"
#include "libcache/format/manifest.h"
#include "trainer/config/args_yaml.h"
#include "trainer/io/checkpoint_checksum.h"
#include "trainer/io/named_state.h"
#include "trainer/io/optimizer_state.h"
#include "trainer/io/pickle_writer.h"
#include "trainer/io/torch_save_writer.h"
#include "trainer/io/ultralytics_checkpoint_writer.h"
#include "trainer/io/ultralytics_module_writer.h"
#include "trainer/runtime/exception_text.h"

namespace yc::trainer {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

Json StateToJson(const TrainState& s) {
  return Json{{"epoch", s.epoch},
              {"next_batch", s.next_batch},
              {"world_size", s.world_size},
              {"optimizer_steps", s.optimizer_steps},
              {"last_opt_step", s.last_opt_step},
              {"ema_updates", s.ema_updates},
              {"best_fitness", s.best_fitness},
              {"best_epoch", s.best_epoch},
              {"train_seconds", s.train_seconds},
              {"images_seen", s.images_seen},
              {"epoch_loss_sum", s.epoch_loss_sum},
              {"epoch_kd_sum", s.epoch_kd_sum},
              {"epoch_loss_batches", s.epoch_loss_batches},
              {"scaler_scale", s.scaler_scale},
              {"scaler_growth", s.scaler_growth},
              {"finished", s.finished}};
}

template <typename T>
bool Get(const Json& j, const char* key, T* out) {
  auto it = j.find(key);
  if (it == j.end()) return true;  // optional: keep the default
  try {
    *out = it->get<T>();
    return true;
  } catch (const Json::exception&) {
    return false;
  }
}

Result<TrainState> StateFromJson(const Json& j) {
  TrainState s;
  if (!j.is_object()) return Status::Corruption("state: expected an object");
  const bool ok = Get(j, "epoch", &s.epoch) && Get(j, "next_batch", &s.next_batch) &&
                  Get(j, "world_size", &s.world_size) &&
                  Get(j, "optimizer_steps", &s.optimizer_steps) && Get(j, "last_opt_step", &s.last_opt_step) &&
                  Get(j, "ema_updates", &s.ema_updates) && Get(j, "best_fitness", &s.best_fitness) &&
                  Get(j, "best_epoch", &s.best_epoch) && Get(j, "train_seconds", &s.train_seconds) &&
                  Get(j, "images_seen", &s.images_seen) && Get(j, "epoch_loss_sum", &s.epoch_loss_sum) &&
                  Get(j, "epoch_kd_sum", &s.epoch_kd_sum) &&
                  Get(j, "epoch_loss_batches", &s.epoch_loss_batches) && Get(j, "scaler_scale", &s.scaler_scale) &&
                  Get(j, "scaler_growth", &s.scaler_growth) && Get(j, "finished", &s.finished);
  if (!ok) return Status::Corruption("state: a field has the wrong type");
  if (s.epoch < 0 || s.next_batch < 0 || s.world_size < 0)
    return Status::Corruption("state: negative epoch, batch or world_size");
  return s;
}

}  // namespace

Json MetaToJson(const CheckpointMeta& meta) {
  return Json{{"format", meta.format},
              {"kind", meta.kind},
              {"model_family", meta.model_family},
              {"model_scale", meta.model_scale},
              {"nc", meta.nc},
              {"names", meta.names},
              {"options", ToJson(meta.options)},
              {"state", StateToJson(meta.state)},
              {"created", meta.created},
              {"metrics", meta.metrics},
              {"run_id", meta.run_id},
              {"data_identity", meta.data_identity},
              {"data_yaml", meta.data_yaml}};
}

std::string MetaModelName(const CheckpointMeta& meta) {
  Result<ModelFamily> family = ParseModelFamily(meta.model_family);
  Result<ModelScale> scale = ParseModelScale(meta.model_scale);
  if (!family.ok() || !scale.ok()) return meta.model_family + "/" + meta.model_scale;
  return ModelNameString(ModelName{*family, *scale});
}

Result<CheckpointMeta> MetaFromJson(const Json& j) {
  if (!j.is_object()) return Status::Corruption("meta: expected a JSON object");
  CheckpointMeta m;
  if (!Get(j, "format", &m.format)) return Status::Corruption("meta: 'format' is not an integer");
  if (m.format > kCheckpointFormat) {
    return Status::Unsupported("checkpoint format " + std::to_string(m.format) + " is newer than this tool's (" +
                               std::to_string(kCheckpointFormat) + ")");
  }
  if (!Get(j, "model_scale", &m.model_scale) || !Get(j, "nc", &m.nc) || !Get(j, "names", &m.names) ||
      !Get(j, "created", &m.created)) {
    return Status::Corruption("meta: model_scale/nc/names/created have the wrong type");
  }
  if (m.nc < 1) return Status::Corruption("meta: nc must be >= 1");
  if (!ParseModelScale(m.model_scale).ok()) return Status::Corruption("meta: unknown model scale '" + m.model_scale + "'");
  // Absent in checkpoints written before YOLO11: those are YOLOv8.
  if (!Get(j, "model_family", &m.model_family)) {
    return Status::Corruption("meta: model_family has the wrong type");
  }
  if (!ParseModelFamily(m.model_family).ok()) {
    return Status::Corruption("meta: unknown model family '" + m.model_family + "' (expected v8 or 11)");
  }
  // Absent in checkpoints written before release weights: those are training checkpoints.
  if (!Get(j, "kind", &m.kind) || (m.kind != kCheckpointKindTraining && m.kind != kCheckpointKindRelease)) {
    return Status::Corruption("meta: kind must be \"training\" or \"release\"");
  }
  if (auto it = j.find("options"); it != j.end()) {
    Result<TrainOptions> o = TrainOptionsFromJson(*it);
    if (!o.ok()) return Status::Corruption("meta: " + o.status().message());
    m.options = *o;
  }
  if (auto it = j.find("state"); it != j.end()) {
    Result<TrainState> s = StateFromJson(*it);
    if (!s.ok()) return Status::Corruption("meta: " + s.status().message());
    m.state = *s;
  }
  if (auto it = j.find("metrics"); it != j.end() && it->is_object()) m.metrics = *it;
  // Absent in checkpoints written before runs and caches were identified: not checked on resume.
  if (!Get(j, "run_id", &m.run_id)) return Status::Corruption("meta: run_id is not a string");
  if (!Get(j, "data_yaml", &m.data_yaml)) return Status::Corruption("meta: data_yaml is not a string");
  if (auto it = j.find("data_identity"); it != j.end()) {
    if (!it->is_object()) return Status::Corruption("meta: data_identity is not an object");
    m.data_identity = *it;
  }
  return m;
}

namespace {

const char* OptimizerKindName(const torch::optim::Optimizer& o) {
  if (dynamic_cast<const torch::optim::SGD*>(&o) != nullptr) return "SGD";
  if (dynamic_cast<const torch::optim::AdamW*>(&o) != nullptr) return "AdamW";
  if (dynamic_cast<const torch::optim::Adam*>(&o) != nullptr) return "Adam";
  if (dynamic_cast<const torch::optim::RMSprop*>(&o) != nullptr) return "RMSProp";
  // NAdam, RAdam, Adamax (trainer/engine/adam_variants.h) name themselves through their group options.
  if (!o.param_groups().empty()) {
    if (const auto* d = dynamic_cast<const DescribedOptions*>(&o.param_groups()[0].options())) return d->kind_name();
  }
  return "";
}

// Captured optimizer state with host copies of its tensors (the optimizer keeps stepping its own), queued on
// `copies`. `half`: floating-point state in fp16, as Ultralytics' convert_optimizer_state_dict_to_fp16
// stores it.
SavedOptimizer CopyOptimizer(SavedOptimizer saved, bool half, HostCopies* copies) {
  for (auto& g : saved.groups) {
    for (auto& param : g.params) {
      if (!param) continue;
      // A 0-dim state (NAdam's mu_product, a running product) keeps float32: fp16 would cost a resume
      // precision for 2 bytes.
      for (auto& [name, t] : param->tensors) {
        t = copies->Queue(half && t.is_floating_point() && t.dim() > 0 ? t.to(at::kHalf) : t);
      }
    }
  }
  return saved;
}

// Per group and parameter of our optimizer, the id Ultralytics' optimizer gives that parameter; empty when
// one is not a parameter of `model`.
std::vector<std::vector<int64_t>> UltralyticsIds(const torch::optim::Optimizer& optimizer,
                                                 const UltralyticsParamOrder& order) {
  std::vector<std::vector<int64_t>> ids;
  for (const auto& g : optimizer.param_groups()) {
    ids.emplace_back();
    for (const auto& p : g.params()) {
      auto it = order.id.find(p.unsafeGetTensorImpl());
      if (it == order.id.end()) return {};
      ids.back().push_back(it->second);
    }
  }
  return ids;
}

// Our optimizer state: {'groups': [{'options': {name: float}, 'params': [None | {'ints': {..}, 'tensors': {..}}]}]}.
void PickleOptimizer(TorchSaveWriter& w, const SavedOptimizer& s) {
  PickleWriter& p = w.pickle();
  p.EmptyDict();
  p.Mark();
  p.Str("groups");
  p.EmptyList();
  p.Mark();
  for (const auto& g : s.groups) {
    p.EmptyDict();
    p.Mark();
    p.Str("options");
    p.EmptyDict();
    p.Mark();
    for (const auto& [name, value] : g.options) {
      p.Str(name);
      p.Float(value);
    }
    p.SetItems();
    p.Str("params");
    p.EmptyList();
    p.Mark();
    for (const auto& param : g.params) {
      if (!param) {
        p.None();
        continue;
      }
      p.EmptyDict();
      p.Mark();
      p.Str("ints");
      p.EmptyDict();
      p.Mark();
      for (const auto& [name, v] : param->ints) {
        p.Str(name);
        p.Int(v);
      }
      p.SetItems();
      p.Str("tensors");
      p.EmptyDict();
      p.Mark();
      for (const auto& [name, t] : param->tensors) {
        p.Str(name);
        w.Tensor(t);
      }
      p.SetItems();
      p.SetItems();
    }
    p.Appends();
    p.SetItems();
  }
  p.Appends();
  p.SetItems();
}

// A section of full-precision tensors (or fp16 for release weights of a model that is not a DetectionModel):
// pushes the list, records the names, adds the stored values to the checksum.
void PickleSection(TorchSaveWriter& w, const std::string& key, const std::vector<std::pair<std::string, at::Tensor>>& state,
                   bool half, Json* names, ChecksumInput* checksum) {
  PickleWriter& p = w.pickle();
  Json list = Json::array();
  p.Str(key);
  p.EmptyList();
  p.Mark();
  for (const auto& [name, t] : state) {
    list.push_back(name);
    // The live tensor: the writer copies it, and shares the copy with the Ultralytics EMA writing it again.
    const at::Tensor stored = w.Tensor(half && t.is_floating_point() ? t.detach().to(at::kHalf) : t);
    checksum->AddTensor(key + "/" + std::to_string(list.size() - 1), stored);
  }
  p.Appends();
  (*names)[key] = list;
}

// A section whose tensors are Ultralytics' fp16 DetectionModel entry of the same name (release `model`, the
// compact form's `ema`): only listed, and hashed as the reader gets them back (float32, copies queued on
// `copies`). Returns AllFitHalf of the module, for the writer of that entry.
bool ListUltralyticsSection(const std::string& key, const DetectionModelImpl& module, Json* names,
                            ChecksumInput* checksum, HostCopies* copies) {
  Json list = Json::array();
  const std::vector<std::pair<std::string, at::Tensor>> state = NamedState(module);
  const bool fits_half = AllFitHalf(state);
  for (const auto& [name, t] : state) {
    list.push_back(name);
    at::Tensor stored = copies->Queue(t.is_floating_point() ? ReleaseHalf(t, fits_half).to(at::kFloat) : t);
    checksum->AddTensor(key + "/" + std::to_string(list.size() - 1), stored);
  }
  (*names)[key] = list;
  return fits_half;
}

std::vector<std::pair<std::string, at::Tensor>> Grads(const torch::nn::Module& model) {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& p : model.named_parameters(true)) {
    if (p.value().grad().defined()) out.emplace_back(p.key(), p.value().grad());
  }
  return out;
}

// The Ultralytics half of the file: what its trainer would have saved for this state.
UltralyticsCheckpointFields UltralyticsFields(const CheckpointContents& c, const DetectionModelImpl* model,
                                              const DetectionModelImpl* ema) {
  const CheckpointMeta& m = c.meta;
  UltralyticsCheckpointFields f;
  f.names = m.names;
  f.date = m.created;
  const std::string model_arg = m.options.weights.empty() ? MetaModelName(m) + ".yaml" : m.options.weights;
  f.train_args = UltralyticsArgs(m.options);  // as args.yaml (trainer/config/args_yaml.h)
  f.train_args["model"] = model_arg;          // the architecture --weights resolved to, for Ultralytics' resume
  // Ultralytics reads a data YAML, not our cache: the one the cache was built from when a cache was given.
  if (m.options.data_source.empty() && !m.data_yaml.empty()) f.train_args["data"] = m.data_yaml;
  f.train_metrics = UltralyticsTrainMetrics(m.metrics);
  f.train_results = c.train_results;
  if (m.kind == kCheckpointKindRelease) {
    f.model = model;
    return f;
  }
  f.ema = ema;
  if (ema == nullptr) f.model = model;  // no EMA kept: Ultralytics loads `model` instead
  // Ultralytics resumes at epoch + 1: the last completed one (an interrupted epoch is run again there).
  f.epoch = m.state.epoch - 1;
  if (m.state.best_fitness >= 0) f.best_fitness = m.state.best_fitness;
  f.updates = m.state.ema_updates;
  return f;
}

}  // namespace

Result<OptimizerCapture> OptimizerCapture::Capture(const torch::optim::Optimizer& optimizer,
                                                   const DetectionModelImpl* model) {
  OptimizerCapture c;
  YC_ASSIGN_OR_RETURN(c.saved, CaptureOptimizer(optimizer));
  if (model == nullptr) return c;
  const UltralyticsParamOrder order = UltralyticsParamOrderOf(*model);
  c.has_ultralytics = true;
  c.ultralytics_ids = UltralyticsIds(optimizer, order);
  c.group_sizes = order.group_sizes;
  c.kind = OptimizerKindName(optimizer);
  c.initial_lr = optimizer.param_groups().empty() ? 0.0 : optimizer.param_groups()[0].options().get_lr();
  return c;
}

void OptimizerCapture::Freeze() {
  c10::NoGradGuard no_grad;
  for (auto& g : saved.groups) {
    for (auto& param : g.params) {
      if (!param) continue;
      for (auto& [name, t] : param->tensors) t = t.detach().clone();
    }
  }
}

CheckpointContents ReleaseContents(CheckpointMeta meta, const torch::nn::Module& ema) {
  meta.kind = kCheckpointKindRelease;
  meta.state.finished = true;
  CheckpointContents c;
  c.meta = std::move(meta);
  c.model = &ema;
  c.half = true;
  return c;
}

Result<std::shared_ptr<CheckpointSnapshot>> CheckpointSnapshot::Take(const CheckpointContents& c) {
  if (c.model == nullptr) return Status::InvalidArgument("checkpoint without a model");
  std::shared_ptr<CheckpointSnapshot> snap(new CheckpointSnapshot());
  snap->writer_ = std::make_shared<TorchSaveWriter>();
  TorchSaveWriter& w = *snap->writer_;
  PickleWriter& p = w.pickle();
  try {
    c10::NoGradGuard no_grad;
    const bool release = c.meta.kind == kCheckpointKindRelease;
    const auto* model = c.model->as<DetectionModelImpl>();
    const auto* ema = c.ema != nullptr ? c.ema->as<DetectionModelImpl>() : (release ? model : nullptr);
    std::optional<SavedOptimizer> optimizer;
    UltralyticsCheckpointFields fields = UltralyticsFields(c, model, ema);
    // Full precision: our fp32 EMA and optimizer state are in the file anyway, so Ultralytics' `ema` and
    // `optimizer` share their storages instead of adding fp16 copies. Otherwise both are fp16, stored once:
    // our optimizer entry holds the fp16 copies Ultralytics' entry shares, and our EMA is read back from
    // Ultralytics' `ema` (as release weights are from its `model`).
    const bool compact = !release && !c.full_precision && ema != nullptr;
    fields.half_ema = c.ema == nullptr || compact;
    fields.half_optimizer = false;
    std::optional<OptimizerCapture> live;  // captured here from c.optimizer
    const OptimizerCapture* captured = c.optimizer_capture;
    if (captured == nullptr && c.optimizer != nullptr) {
      Result<OptimizerCapture> now = OptimizerCapture::Capture(*c.optimizer, model);
      if (!now.ok()) return Status::IOError("cannot snapshot checkpoint: " + now.status().message());
      live = std::move(*now);
      captured = &*live;
    }
    if (captured != nullptr) {
      optimizer = CopyOptimizer(captured->saved, compact, &w.copies());
      if (captured->has_ultralytics) {
        fields.optimizer = &*optimizer;
        fields.optimizer_ids = captured->ultralytics_ids;
        fields.optimizer_group_sizes = captured->group_sizes;
        fields.optimizer_kind = captured->kind;
        fields.initial_lr = captured->initial_lr;
      }
    }
    // Our entry first (its tensors are the archive's first storages), then Ultralytics' keys.
    p.EmptyDict();
    p.Mark();
    p.Str(kYolocacheEntry);
    p.EmptyDict();
    p.Mark();
    Json names = Json::object();
    ChecksumInput tensors;  // in the reader's order: meta, model, ema, grads, optimizer
    if (release && model != nullptr) {
      fields.model_fits_half = ListUltralyticsSection("model", *model, &names, &tensors, &w.copies());
    } else if (!compact) {
      PickleSection(w, "model", NamedState(*c.model), c.half, &names, &tensors);
    }
    if (compact) {  // compact implies an EMA
      fields.ema_fits_half = ListUltralyticsSection("ema", *ema, &names, &tensors, &w.copies());
    } else if (c.ema != nullptr) {
      PickleSection(w, "ema", NamedState(*c.ema), false, &names, &tensors);
    }
    if (c.grads) PickleSection(w, "grads", Grads(*c.model), false, &names, &tensors);
    if (optimizer) {
      p.Str("optimizer");
      PickleOptimizer(w, *optimizer);
    }
    Json meta = MetaToJson(c.meta);
    meta["tensors"] = names;
    const std::string meta_text = meta.dump();
    w.copies().Wait();  // the checksum reads the host copies: one wait for all of them
    ChecksumInput checksum;
    checksum.AddText("meta", meta_text);
    checksum.Append(std::move(tensors));
    if (optimizer) AddToChecksum(*optimizer, &checksum);
    p.Str("meta");
    p.Str(meta_text);
    p.Str(kChecksumRecord);
    p.Str(checksum.Digest());
    p.SetItems();  // yolocache
    WriteUltralyticsCheckpointItems(w, fields);
    p.SetItems();  // the checkpoint dict
    w.EndSharing();  // the snapshot keeps host copies only, no live or temporary tensors
  } catch (const std::exception& e) {
    return Status::IOError(std::string("cannot snapshot checkpoint: ") + ExceptionLine(e));
  }
  return snap;
}

Result<std::shared_ptr<const std::string>> CheckpointSnapshot::Serialize() {
  std::lock_guard<std::mutex> lock(mu_);
  if (bytes_) return bytes_;
  Result<std::string> zip = writer_->Finish();
  if (!zip.ok()) return Status::IOError("cannot serialise checkpoint: " + zip.status().message());
  bytes_ = std::make_shared<const std::string>(std::move(*zip));
  writer_.reset();  // the tensor copies are no longer needed
  return bytes_;
}

Status WriteFileAtomic(const fs::path& path, const std::string& bytes) {
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::IOError(Status::At(dir.string(), ec.message()));
  // The temp file .<name>.tmp-<pid> is created with O_EXCL|O_NOFOLLOW and renamed only over a regular
  // file (libcache/base/output_file.h): a link of either name is never written through.
  return WriteFileAtomically(path, bytes);
}

Status CheckpointSnapshot::WriteTo(const fs::path& path) {
  Result<std::shared_ptr<const std::string>> bytes = Serialize();
  if (!bytes.ok()) return Status(bytes.status()).WithContext(path.string());
  return WriteFileAtomic(path, **bytes);
}

Status WriteCheckpoint(const fs::path& path, const CheckpointContents& c) {
  Result<std::shared_ptr<CheckpointSnapshot>> snap = CheckpointSnapshot::Take(c);
  if (!snap.ok()) return Status(snap.status()).WithContext(path.string());
  return (*snap)->WriteTo(path);
}

std::string FirstNonFiniteTensor(const torch::nn::Module& module) {
  c10::NoGradGuard no_grad;
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  for (const auto& p : module.named_parameters(/*recurse=*/true)) tensors.emplace_back(p.key(), p.value());
  for (const auto& b : module.named_buffers(/*recurse=*/true)) tensors.emplace_back(b.key(), b.value());
  std::vector<at::Tensor> finite;
  std::vector<size_t> index;  // into tensors, for the floating-point ones
  finite.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& t = tensors[i].second;
    if (!t.defined() || !at::isFloatingType(t.scalar_type()) || t.numel() == 0) continue;
    finite.push_back(at::isfinite(t.detach()).all().reshape({1}));
    index.push_back(i);
  }
  if (finite.empty()) return {};
  const at::Tensor flags = at::cat(finite).to(at::kCPU);  // one host read for all of them
  if (flags.all().item<bool>()) return {};
  const bool* f = flags.data_ptr<bool>();
  for (size_t k = 0; k < index.size(); ++k) {
    if (!f[k]) return tensors[index[k]].first;
  }
  return {};
}

}  // namespace yc::trainer
