// The training loop (`ultralytics/engine/trainer.py` BaseTrainer._setup_train and _do_train's recipe):
//
//   per batch i of epoch e (ni = i + nb * e):
//     warmup / schedule -> lr and momentum of the 3 parameter groups, accumulation count
//     forward under autocast -> v8 detection loss (fp32) -> scaled backward
//     every `accumulate` batches: unscale, clip grad norm 10, step (skipped on inf/nan), scale update,
//                                zero grads, EMA update
//   per epoch: lr factor stepped, validation of the EMA model (every --val-every epochs and at the
//   end), fitness 0.1 mAP50 + 0.9 mAP50-95, results.csv/png, last.pt / best.pt / epochN.pt, early stop
//
// Distributed (docs/DISTRIBUTED.md): with RANK/WORLD_SIZE/... set (torchrun), every process trains on
// its shard of each global batch (--batch / WORLD_SIZE), gradients are averaged by a GradReducer before
// each optimizer step, and rank 0 alone logs, validates and writes the run directory; its early-stop and
// interrupt decisions reach every rank, so all leave the loop together.
//
// The data comes from the cache through the loader (close_mosaic handled there) and DeviceFeed
// (pinned buffers + asynchronous copies on CUDA). Losses are summed on the device and read on the host
// once per log interval, not per step. A set `cancel` flag stops at the next batch boundary after
// writing last.pt with the exact position, so `--resume` continues the run as if never stopped.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "base/status.h"
#include "trainer/config/train_options.h"
#include "trainer/engine/results_log.h"
#include "trainer/eval/metrics.h"

namespace yc::trainer {

// Progress of the current epoch, reported every log_every batches and at the epoch's end.
struct BatchProgress {
  int epoch = 0, epochs = 0;     // 1-based epoch
  size_t batch = 0, batches = 0;  // batches done in this epoch / per epoch
  std::array<double, 3> loss{};  // running mean box, cls, dfl of this epoch
  bool has_kd = false;           // a distillation run (--teacher): kd_loss is its running mean weighted kd
  double kd_loss = 0;
  int64_t instances = 0;         // labels in the latest batch
  int imgsz = 0;
  double images_per_second = 0;  // this epoch so far
  double gpu_mem_gb = 0;         // LibTorch's reserved CUDA memory (0 on CPU)
};

class TrainObserver {
 public:
  virtual ~TrainObserver() = default;
  virtual void OnMessage(const std::string& line) {}
  virtual void OnEpochStart(int epoch, int epochs, size_t batches) {}
  virtual void OnTrainProgress(const BatchProgress& progress) {}
  virtual void OnValStart(int epoch, size_t batches) {}
  virtual void OnValProgress(size_t done, size_t total) {}
  // After the epoch's row was written (record.validated says whether metrics are fresh).
  virtual void OnEpochEnd(const EpochRecord& record) {}
};

struct TrainHooks {
  TrainObserver* observer = nullptr;
  const std::atomic<bool>* cancel = nullptr;  // set -> save last.pt at the next batch and return
  std::filesystem::path resume;               // checkpoint to continue from (options must come from it)
  // Tests/debugging: every rank writes its final parameters to <dir>/rank<R>.pt (a torch::save'd tensor
  // list, registration order), so DDP ranks can be compared with each other and with one process.
  std::filesystem::path rank_weights;
  // --resume-other-data: continue the resumed run on a cache other than the one it trained on
  // (trainer/engine/run_identity.h); without it that is refused.
  bool resume_other_data = false;
};

struct TrainSummary {
  std::filesystem::path out_dir, last, best;  // best is empty when no epoch finished
  int epochs_completed = 0;                   // in total, resumed epochs included
  int epochs_run = 0;                         // by this call
  bool interrupted = false;                   // stopped by `cancel`; last.pt can be resumed
  bool early_stopped = false;                 // patience ran out
  double wall_seconds = 0;                    // this call, set-up and validation included
  double train_seconds = 0;                   // this call, training epochs only
  int64_t train_images = 0;                   // this call
  double images_per_second = 0;               // train_images / train_seconds
  double epoch_gap_seconds = 0;               // this call: validation + checkpoints between epochs (rank 0)
  // Where epoch_gap_seconds went (rank 0): the validations' parts summed (ValResult's loader wait, model,
  // NMS, metrics) and the checkpoints' (snapshots taken on the training thread; waiting for the writer to
  // finish the previous epoch's files).
  // Epoch ends made beside the next epoch (--val-overlap) count their time on the training thread in
  // epoch_gap_seconds and apart here: how many, and the background thread's seconds for them.
  struct GapParts {
    double val_data = 0, val_model = 0, val_nms = 0, val_metrics = 0;
    double snapshots = 0, writer_wait = 0;
    int beside = 0;
    double beside_seconds = 0;
  } gap_parts;
  double gpu_busy_percent = -1;               // NVML mean over training epochs; -1 = n/a
  double synthetic_images_per_second = -1;    // --synthetic-input ceiling; -1 = not measured
  bool has_metrics = false;
  MetricsSummary final_metrics;               // the last validation
  std::vector<std::string> names;             // class names (eval/class_table.h prints final_metrics with them)
  int best_epoch = 0;
  double best_fitness = -1;
  std::string plot;                           // what happened to results.png
  int rank = 0, world_size = 1;               // DDP: this process's rank (only rank 0 logs and saves)
};

Result<TrainSummary> Train(const TrainOptions& options, const TrainHooks& hooks = {});

// The options stored in a checkpoint, with `out` pointed at the checkpoint's run directory
// (<run>/weights/last.pt -> <run>), ready for Train(..., {.resume = checkpoint}).
Result<TrainOptions> ResumeOptions(const std::filesystem::path& checkpoint);

// Ultralytics' EarlyStopping: best epoch by fitness (any fitness replaces a best of 0), stop once
// `patience` epochs passed without improvement (patience 0: never).
class EarlyStopping {
 public:
  explicit EarlyStopping(int patience, double best_fitness = -1, int best_epoch = 0)
      : patience_(patience), best_fitness_(best_fitness), best_epoch_(best_epoch) {}
  // epoch: 1-based. Returns whether to stop; improved() says whether this epoch is the new best.
  bool Update(int epoch, double fitness);
  bool improved() const { return improved_; }
  double best_fitness() const { return best_fitness_; }
  int best_epoch() const { return best_epoch_; }

 private:
  int patience_;
  double best_fitness_;
  int best_epoch_;
  bool improved_ = false;
};

}  // namespace yc::trainer
