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
#include <torch/serialize/output-archive.h>

#include "libcache/base/mapped_file.h"
#include "libcache/base/output_file.h"
#include "libcache/format/manifest.h"
#include "trainer/io/checkpoint_checksum.h"
#include "trainer/io/named_state.h"
#include "trainer/io/optimizer_state.h"

namespace yc::trainer {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

Json StateToJson(const TrainState& s) {
  return Json{{"epoch", s.epoch},
              {"next_batch", s.next_batch},
              {"optimizer_steps", s.optimizer_steps},
              {"last_opt_step", s.last_opt_step},
              {"ema_updates", s.ema_updates},
              {"best_fitness", s.best_fitness},
              {"best_epoch", s.best_epoch},
              {"train_seconds", s.train_seconds},
              {"images_seen", s.images_seen},
              {"epoch_loss_sum", s.epoch_loss_sum},
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
                  Get(j, "optimizer_steps", &s.optimizer_steps) && Get(j, "last_opt_step", &s.last_opt_step) &&
                  Get(j, "ema_updates", &s.ema_updates) && Get(j, "best_fitness", &s.best_fitness) &&
                  Get(j, "best_epoch", &s.best_epoch) && Get(j, "train_seconds", &s.train_seconds) &&
                  Get(j, "images_seen", &s.images_seen) && Get(j, "epoch_loss_sum", &s.epoch_loss_sum) &&
                  Get(j, "epoch_loss_batches", &s.epoch_loss_batches) && Get(j, "scaler_scale", &s.scaler_scale) &&
                  Get(j, "scaler_growth", &s.scaler_growth) && Get(j, "finished", &s.finished);
  if (!ok) return Status::Corruption("state: a field has the wrong type");
  if (s.epoch < 0 || s.next_batch < 0) return Status::Corruption("state: negative epoch or batch");
  return s;
}

// A host copy of `t`, taken now (also when it already lives on the host): a snapshot holds host tensors, so
// serialising it later on another thread touches no device and sees no later training step.
at::Tensor HostCopy(const at::Tensor& t) {
  return t.detach().to(t.options().device(at::kCPU), /*non_blocking=*/false, /*copy=*/true);
}

void WriteSection(torch::serialize::OutputArchive& archive, const std::string& key, const torch::nn::Module& m,
                  Json* names, ChecksumInput* checksum, bool half = false) {
  std::vector<at::Tensor> tensors;
  Json list = Json::array();
  for (auto& [name, t] : NamedState(m)) {
    list.push_back(name);
    // Training goes on while the snapshot is written; fp16 halves release weights (as Ultralytics' .half()),
    // except a tensor beyond fp16's range (|x| > 65504, a run about to diverge), which stays fp32 rather
    // than turn into infinities.
    at::Tensor copy;
    if (half && t.is_floating_point()) {
      copy = t.detach().to(at::kCPU, at::kHalf, /*non_blocking=*/false, /*copy=*/true);
      if (!at::isfinite(copy).all().item<bool>()) copy = HostCopy(t);
    } else {
      copy = HostCopy(t);
    }
    checksum->AddTensor(key + "/" + std::to_string(tensors.size()), copy);
    tensors.push_back(std::move(copy));
  }
  (*names)[key] = list;
  archive.write(key, c10::IValue(tensors));
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
              {"data_identity", meta.data_identity}};
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
  if (auto it = j.find("data_identity"); it != j.end()) {
    if (!it->is_object()) return Status::Corruption("meta: data_identity is not an object");
    m.data_identity = *it;
  }
  return m;
}

namespace {

// Writes the optimizer into `archive` holding copies of its state tensors (the optimizer keeps stepping
// its own): each state tensor is swapped for a copy during save() and put back after. False for an
// optimizer kind whose state this does not know (then the archive holds the live tensors). `captured`
// gets the saved state (the copies) for the checksum, unset for an unknown kind.
bool SaveOptimizerCopy(torch::optim::Optimizer& optimizer, torch::serialize::OutputArchive& archive,
                       std::optional<SavedOptimizer>* captured) {
  std::vector<std::pair<at::Tensor*, at::Tensor>> originals;
  bool known = true;
  auto swap_in_copy = [&originals](at::Tensor& t) {
    if (!t.defined()) return;
    originals.emplace_back(&t, t);
    t = HostCopy(t);
  };
  for (auto& entry : optimizer.state()) {
    auto* state = entry.second.get();
    if (auto* a = dynamic_cast<torch::optim::AdamParamState*>(state)) {
      swap_in_copy(a->exp_avg());
      swap_in_copy(a->exp_avg_sq());
      swap_in_copy(a->max_exp_avg_sq());
    } else if (auto* w = dynamic_cast<torch::optim::AdamWParamState*>(state)) {
      swap_in_copy(w->exp_avg());
      swap_in_copy(w->exp_avg_sq());
      swap_in_copy(w->max_exp_avg_sq());
    } else if (auto* g = dynamic_cast<torch::optim::SGDParamState*>(state)) {
      swap_in_copy(g->momentum_buffer());
    } else if (auto* r = dynamic_cast<torch::optim::RMSpropParamState*>(state)) {
      swap_in_copy(r->square_avg());
      swap_in_copy(r->momentum_buffer());
      swap_in_copy(r->grad_avg());
    } else {
      known = false;
    }
  }
  if (known) {
    Result<SavedOptimizer> saved = CaptureOptimizer(optimizer);
    if (saved.ok()) *captured = std::move(*saved);
  }
  try {
    optimizer.save(archive);
  } catch (...) {
    for (auto& [slot, original] : originals) *slot = original;
    throw;
  }
  for (auto& [slot, original] : originals) *slot = original;
  return known;
}

}  // namespace

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
  snap->archive_ = std::make_shared<torch::serialize::OutputArchive>();
  torch::serialize::OutputArchive& archive = *snap->archive_;
  bool frozen = true;
  try {
    c10::NoGradGuard no_grad;
    Json meta = MetaToJson(c.meta);
    Json names = Json::object();
    ChecksumInput tensors;  // in the reader's order: meta, model, ema, grads, optimizer
    WriteSection(archive, "model", *c.model, &names, &tensors, c.half);
    if (c.ema != nullptr) WriteSection(archive, "ema", *c.ema, &names, &tensors);
    if (c.grads) {
      std::vector<at::Tensor> grads;
      Json list = Json::array();
      for (const auto& p : c.model->named_parameters(true)) {
        if (!p.value().grad().defined()) continue;
        list.push_back(p.key());
        grads.push_back(HostCopy(p.value().grad()));
        tensors.AddTensor("grads/" + std::to_string(grads.size() - 1), grads.back());
      }
      names["grads"] = list;
      archive.write("grads", c10::IValue(grads));
    }
    std::optional<SavedOptimizer> optimizer;
    if (c.optimizer != nullptr) {
      torch::serialize::OutputArchive opt;
      frozen = SaveOptimizerCopy(*c.optimizer, opt, &optimizer);
      archive.write("optimizer", opt);
    }
    meta["tensors"] = names;
    const std::string meta_text = meta.dump();
    archive.write("meta", c10::IValue(meta_text));
    // An optimizer of a kind not captured: no checksum (the reader then checks the CRCs alone).
    if (c.optimizer == nullptr || optimizer.has_value()) {
      auto checksum = std::make_shared<ChecksumInput>();
      checksum->AddText("meta", meta_text);
      checksum->Append(std::move(tensors));
      if (optimizer) AddToChecksum(*optimizer, checksum.get());
      snap->checksum_ = std::move(checksum);
    }
  } catch (const std::exception& e) {
    return Status::IOError(std::string("cannot snapshot checkpoint: ") + e.what());
  }
  if (!frozen) {  // live optimizer tensors: produce the bytes now, before training changes them
    YC_RETURN_IF_ERROR(snap->Serialize().status());
  }
  return snap;
}

Result<std::shared_ptr<const std::string>> CheckpointSnapshot::Serialize() {
  std::lock_guard<std::mutex> lock(mu_);
  if (bytes_) return bytes_;
  auto bytes = std::make_shared<std::string>();
  try {
    // Hashed here, off the training thread (the snapshot's copies are no longer changed).
    if (checksum_) archive_->write(kChecksumRecord, c10::IValue(checksum_->Digest()));
    checksum_.reset();
    archive_->save_to([&](const void* data, size_t size) -> size_t {
      bytes->append(static_cast<const char*>(data), size);
      return size;
    });
  } catch (const std::exception& e) {
    return Status::IOError(std::string("cannot serialise checkpoint: ") + e.what());
  }
  bytes_ = std::move(bytes);
  archive_.reset();  // the tensor copies are no longer needed
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
