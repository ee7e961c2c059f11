// Training checkpoints (last.pt, best.pt, epochN.pt): everything a run needs to continue exactly where
// it stopped — model and EMA weights (BatchNorm statistics included), optimizer state, loss-scaler
// state, pending accumulated gradients, counters, the loader position — plus the run's options (JSON)
// and class names, so `val` and `predict` can rebuild the model from the file alone.
//
// Format (docs/TRAINER.md ("Checkpoints and resume")): a torch.save zip archive whose pickle is the dictionary Ultralytics'
// trainer saves (trainer/io/ultralytics_checkpoint_writer.h: epoch, best_fitness, model, ema, updates,
// optimizer, train_args, ...; the EMA as an ultralytics.nn.tasks.DetectionModel), so that Ultralytics'
// YOLO('last.pt') loads, validates, exports and resumes it, plus our own entry `yolocache`, which
// Ultralytics ignores:
//   meta        str      JSON: format, model scale, nc, names, options, state, metrics, tensor names
//   model, ema  [Tensor] parameters then buffers in full precision, in the names listed in meta.tensors
//               (only with TrainOptions::exact_resume; the default compact form lists the EMA's names and
//               reads it back from Ultralytics' fp16 `ema`, and has no model tensors: the model resumes
//               from the EMA, as Ultralytics' resume does)
//   grads       [Tensor] accumulated .grad of the parameters named in meta.tensors.grads (optional)
//   optimizer   dict     our optimizer's groups: options and per-parameter state (optional; fp16 in the
//                        compact form, the same storages as Ultralytics' `optimizer`)
//   checksum    str      "xxh3-64:<hex>" over meta and every tensor and value above (checkpoint_checksum.h)
// Written atomically: a temporary file in the same directory, fsync, rename, fsync of the directory;
// a crash leaves the previous file intact.
//
// Release weights (meta.kind "release"; best.pt and, at the end of a run, last.pt, what Ultralytics'
// strip_optimizer makes): Ultralytics' `model` = the EMA in fp16, no optimizer, and `yolocache` with the
// meta and checksum only (the weights are read back from `model`). ~6.3 MB for yolov8n; val, predict,
// export and train --weights load it; it cannot be resumed.
//
// Files written before this format (LibTorch serialize archives: meta, model, ema, grads, optimizer,
// checksum records) are still read. Reading runs no code: either archive is parsed as data (zip + pickle,
// trainer/io/torch_archive.h) and never given to torch::jit::load or Python; an old-format file whose
// code/ defines anything (`def`) is refused.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include "base/status.h"
#include "trainer/config/train_options.h"
#include "trainer/io/optimizer_state.h"
#include "trainer/model/detection_model.h"

namespace yc::trainer {

inline constexpr int kCheckpointFormat = 1;
inline constexpr const char* kChecksumRecord = "checksum";
// The pickle entry Ultralytics ignores that holds what only yolocache reads.
inline constexpr const char* kYolocacheEntry = "yolocache";

class ChecksumInput;
class TorchArchive;
class TorchSaveWriter;

// Loop counters and bookkeeping; with the tensors this makes a resumed run match an uninterrupted one.
struct TrainState {
  int epoch = 0;                 // 0-based epoch to run next (== epochs completed when next_batch is 0)
  int64_t next_batch = 0;        // > 0: the run stopped inside `epoch`; continue at this batch
  // Data-parallel ranks the run stopped under (0: not recorded, files written before ranks streamed):
  // the windowed order deals each epoch's windows to the ranks, so a mid-epoch position means the same
  // samples only under the same count (run_setup.cc refuses another).
  int world_size = 0;
  int64_t optimizer_steps = 0;
  int64_t last_opt_step = -1;    // global iteration of the last optimizer step (accumulation phase)
  int64_t ema_updates = 0;
  double best_fitness = -1;      // < 0: no validation yet
  int best_epoch = 0;            // 1-based epoch that produced best_fitness
  double train_seconds = 0;      // time spent in epochs so far (results.csv "time")
  int64_t images_seen = 0;
  std::array<double, 3> epoch_loss_sum{};  // running loss sums of the interrupted epoch
  double epoch_kd_sum = 0;                 // and its distillation term's (--teacher)
  int64_t epoch_loss_batches = 0;
  double scaler_scale = 65536.0;  // GradScaler state (fp16 AMP)
  int64_t scaler_growth = 0;
  bool finished = false;          // the run completed (or stopped early): nothing left to resume
};

inline constexpr const char* kCheckpointKindTraining = "training";
inline constexpr const char* kCheckpointKindRelease = "release";

struct CheckpointMeta {
  int format = kCheckpointFormat;
  std::string kind = kCheckpointKindTraining;  // "training" (resumable) | "release" (EMA only, fp16)
  // "v8" | "11" (ModelFamilyName). Checkpoints written before YOLO11 have no "model_family" and are v8.
  std::string model_family = "v8";
  std::string model_scale = "n";  // n|s|m|l|x
  int64_t nc = 0;
  std::vector<std::string> names;  // class names, index = class id
  TrainOptions options;
  TrainState state;
  std::string created;             // UTC ISO 8601
  nlohmann::json metrics = nlohmann::json::object();  // last validation (precision, recall, mAP50, ...)
  // Written since runs and caches are identified (empty in older files): the run this file belongs to
  // (random, kept across resumes; also in the run folder's args.yaml) and the cache it trained on
  // (trainer/engine/run_identity.h): --resume refuses another run's folder and, unless told, another cache.
  std::string run_id;
  nlohmann::json data_identity = nlohmann::json::object();
  // The data YAML the cache was built from (its manifest's dataset_yaml; empty in older files or when
  // unknown): Ultralytics' train_args.data, which its resume and val read.
  std::string data_yaml;
};

nlohmann::json MetaToJson(const CheckpointMeta& meta);
// "yolov8n", "yolo11s", ...: the model the meta describes (for messages). MetaFromJson has validated it.
std::string MetaModelName(const CheckpointMeta& meta);
Result<CheckpointMeta> MetaFromJson(const nlohmann::json& json);

// An optimizer's state as a checkpoint stores it, taken from the live optimizer: its groups' options and
// per-parameter state, and how Ultralytics' optimizer entry names them (its id of each parameter, group sizes,
// kind, initial lr). Capture shares the live state tensors; Freeze replaces them by copies on their device
// (queued on the current stream), so that the checkpoint can be taken later while the optimizer steps on.
struct OptimizerCapture {
  SavedOptimizer saved;
  bool has_ultralytics = false;  // captured with the model: the fields below are set
  std::vector<std::vector<int64_t>> ultralytics_ids;  // per group and parameter; empty: one is not the model's
  std::vector<int64_t> group_sizes;
  std::string kind;
  double initial_lr = 0;

  // `model`: the module the optimizer trains (null: no Ultralytics entry is written for it).
  static Result<OptimizerCapture> Capture(const torch::optim::Optimizer& optimizer, const DetectionModelImpl* model);
  void Freeze();
};

struct CheckpointContents {
  CheckpointMeta meta;
  const torch::nn::Module* model = nullptr;  // required
  const torch::nn::Module* ema = nullptr;
  torch::optim::Optimizer* optimizer = nullptr;  // not changed; its state is swapped for copies while saved
  // Instead of `optimizer`: its state captured earlier (with `model`'s parameter order, if Ultralytics' entry
  // is wanted). `model` and `ema` are then the modules the capture belongs with (trainer/engine/epoch_shadow.h).
  const OptimizerCapture* optimizer_capture = nullptr;
  bool grads = false;  // save the model's defined .grad tensors (gradient accumulation in progress)
  bool half = false;   // store the floating-point tensors of `model` as fp16 (release weights)
  // Training form: keep the fp32 model, EMA and optimizer state for an exact resume. Off: Ultralytics' size,
  // the EMA and the optimizer state in fp16 and no model tensors (the reader gives the EMA for "model").
  bool full_precision = true;
  // Ultralytics' train_results: results.csv so far as {column: [values]} (pandas' to_dict(orient="list")).
  nlohmann::ordered_json train_results = nlohmann::ordered_json::object();
};

// The release form of a run's weights: meta.kind "release", `model` = `ema` in fp16, nothing else.
CheckpointContents ReleaseContents(CheckpointMeta meta, const torch::nn::Module& ema);

// Atomic write (see above). IOError naming the path on failure.
Status WriteCheckpoint(const std::filesystem::path& path, const CheckpointContents& contents);

// WriteCheckpoint in two halves, so that serialising and writing can run on another thread while training
// goes on (BackgroundWriter): Take() freezes the contents (host copies of every tensor, queued without a
// wait each and waited for twice: trainer/io/host_copies.h), Serialize() produces the file's bytes from the
// copies (pickling, zip and CRC; any thread, once, no device access).
class CheckpointSnapshot {
 public:
  static Result<std::shared_ptr<CheckpointSnapshot>> Take(const CheckpointContents& contents);
  Result<std::shared_ptr<const std::string>> Serialize();
  // Serialize() written atomically to `path` (WriteFileAtomic); errors name the path.
  Status WriteTo(const std::filesystem::path& path);

 private:
  CheckpointSnapshot() = default;
  std::mutex mu_;
  std::shared_ptr<TorchSaveWriter> writer_;  // the pickle and host copies; released once serialised
  std::shared_ptr<const std::string> bytes_;
};

// The name of the first floating-point parameter or buffer of `module` holding a NaN or an infinity
// (registration order, parameters first); empty when every value is finite. A diverged run's weights
// must not be saved, validated or run: the trainer checks before each checkpoint, val and predict when
// loading one. One reduction per tensor and one host read; names are looked up only on failure.
std::string FirstNonFiniteTensor(const torch::nn::Module& module);

// `bytes` written to `path` through a temporary file, fsync and rename (never half-written).
Status WriteFileAtomic(const std::filesystem::path& path, const std::string& bytes);

class CheckpointReader {
 public:
  // Tensors are mapped onto `device` as they are read. A file that is not a checkpoint, or is damaged,
  // is Corruption naming it (LibTorch's exceptions do not escape).
  static Result<std::unique_ptr<CheckpointReader>> Open(const std::filesystem::path& path, const at::Device& device);
  ~CheckpointReader();

  const CheckpointMeta& meta() const { return meta_; }
  const std::filesystem::path& path() const { return path_; }
  bool has_ema() const;
  bool has_optimizer() const;
  bool has_grads() const;
  bool is_release() const { return meta_.kind == kCheckpointKindRelease; }

  // Copies the saved "model" or "ema" tensors into the module's parameters and buffers by name (in
  // place: devices, dtypes, memory formats and optimizer references are kept; fp16 release weights are
  // widened). Every name must be present with the same shape, else Corruption.
  Status LoadModule(const std::string& section, torch::nn::Module& module) const;
  Status LoadOptimizer(torch::optim::Optimizer& optimizer) const;
  // Sets .grad of the named parameters (others are left undefined).
  Status LoadGrads(torch::nn::Module& module) const;

  // A DetectionModel of the saved family, scale and class count, with the EMA weights when present
  // (what Ultralytics validates and exports), else the model weights; in eval mode, on `device`.
  // Weights holding NaN or inf (a diverged run's) are Corruption naming the file and the first such
  // tensor: their detections would be garbage.
  Result<DetectionModel> BuildInferenceModel(const at::Device& device) const;

  struct Impl;

 private:
  CheckpointReader() = default;
  // Fill meta_ and impl_ from the two formats; `checksum` gets the contents, `stored` the file's checksum.
  Status ReadSaved(TorchArchive& archive, ChecksumInput* checksum, std::string* stored);
  Status ReadLegacy(TorchArchive& archive, ChecksumInput* checksum, std::string* stored);
  std::filesystem::path path_;
  CheckpointMeta meta_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace yc::trainer
