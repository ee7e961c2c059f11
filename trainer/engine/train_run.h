// One training run's state and its steps, behind Train() (trainer/engine/trainer.h). Internal to
// trainer/engine; its steps live in files by job:
//   trainer.cc        Train(), the epoch loop (Execute) and the run's summary
//   run_setup.cc      Setup: options, device and ranks, data, order, resume, run directory, model, loader,
//                     training stack, validator, records
//   train_epoch.cc    one epoch's batch loop: train step, plots, progress, the stop checks, the interrupt
//   end_epoch.cc      after an epoch: validation, results row, checkpoints, plots, early stop
//   end_epoch_overlap.cc  the same made from a copy of the epoch's state while the next epoch trains
//   run_guards.cc     what stops a run: the DDP stop vote, NaN/inf scans, divergence
//   run_checkpoint.cc last.pt / best.pt contents, the resumed data check, gradient averaging
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "libcache/cache.h"
#include "loader/loader.h"
#include "trainer/distributed/distributed.h"
#include "trainer/distributed/grad_reducer.h"
#include "trainer/engine/ceiling_probe.h"
#include "trainer/engine/epoch_shadow.h"
#include "trainer/engine/lr_schedule.h"
#include "trainer/engine/time_budget.h"
#include "trainer/engine/trainer.h"
#include "trainer/engine/training_stack.h"
#include "trainer/eval/validator.h"
#include "trainer/io/checkpoint.h"
#include "trainer/io/pretrained.h"
#include "trainer/runtime/background_writer.h"
#include "trainer/runtime/clock.h"
#include "trainer/runtime/device_feed.h"
#include "trainer/runtime/gpu_monitor.h"
#include "trainer/runtime/side_stream.h"

namespace yc {
class StreamCache;
}

namespace yc::trainer {

// A picture that cannot be drawn is not worth stopping a run for; a build without PLplot says so once
// (in the run summary), not per picture.
void WarnIfNotPlotted(const Status& st);

// Label tables the synthetic-input probe cycles through (from the run's last epoch).
constexpr size_t kProbeBatches = 8;
// The session's first epoch is timed to its first batch and to this one (TrainRun::MarkWarmup).
constexpr size_t kWarmupBatches = 10;

class TrainRun {
 public:
  TrainRun(const TrainOptions& options, const TrainHooks& hooks) : o_(options), hooks_(hooks) {}
  Result<TrainSummary> Execute();

 private:
  void Say(const std::string& line) {
    if (hooks_.observer != nullptr) hooks_.observer->OnMessage(line);
  }
  bool Cancelled() const { return hooks_.cancel != nullptr && hooks_.cancel->load(); }
  bool IsMain() const { return dist_ == nullptr || dist_->is_main(); }
  bool Distributed() const { return dist_ != nullptr && dist_->distributed(); }

  // Set-up (run_setup.cc), in this order.
  Status Setup();
  Status ReadWeightsAndModelName();
  Status SetupDevice();
  Status OpenData();
  Status LoadTeacher();
  // --cache-budget: opens the URL as a stream (this rank's folder), its val split fetched whole and pinned.
  Status OpenStream();
  Status SelectSplits(const RecordSource* train, const RecordSource* val);
  Status ResolveOrder();
  Status OpenResume();
  Status PrepareRunDir();
  Status WriteArgs();
  Status BuildModel();
  Status PrepareModelForTraining();
  Status ChooseAutoBatch();
  void TransferPretrained();
  Status BuildLoader();
  void PlotLabelsInBackground(std::shared_ptr<const RecordSource> train_source);
  Status BuildTraining();
  Status BuildTrainingFrom(const CheckpointReader* restore);
  Status BuildValidator();
  Status OpenRecords();
  Status WarmUpConvolutions();

  // --prune-at (prune_in_run.cc): whether the run's epochs have reached the prune, and the prune itself.
  bool PrunedInRun() const { return o_.prune_at > 0 && state_.epoch >= o_.prune_at; }
  Status PruneInRun();

  // The epoch loop (trainer.cc).
  Status RunEpochs();
  Status ValidateBest();  // Ultralytics' final_eval: the run's final figures are best.pt's
  Status RunSyntheticProbe();
  Status SaveRankWeights();
  void Summarise();

  // One epoch (train_epoch.cc). Where the batch loop is: `i` is the next batch of this epoch.
  struct EpochCursor {
    int epoch = 0;
    size_t first = 0, i = 0;
    int64_t images = 0;  // trained on in this call
    Clock::time_point t_train;
  };
  Status TrainEpoch(int epoch, size_t first_batch, bool* interrupted);
  void BeginEpoch(int epoch, size_t first_batch);
  Status StageNextBatch();
  Status TrainBatch(const DeviceBatch& db, EpochCursor* c);
  bool IsPlottedBatch(int64_t ni) const;  // train_batch{ni}.jpg is drawn for this batch
  void PlotTrainBatch(const Batch& host, int64_t ni);
  void ReportProgress(const EpochCursor& c, const DeviceBatch& db);
  // Whether to stop for a cancel agreed by every rank; a non-finite loss on any rank is Diverged. Sets
  // time_up_ when the time= budget ran out at an optimizer step (agreed at log points under DDP).
  Result<bool> CheckStop(const EpochCursor& c, bool log_point, bool stepped);
  Status SaveInterrupted(const EpochCursor& c);
  void FinishEpoch(const EpochCursor& c);
  void MarkWarmup(const EpochCursor& c);
  std::string WarmupText(const EpochCursor& c) const;

  // After an epoch (end_epoch.cc).
  Status EndEpoch(int epoch, bool* stop);
  Status EndEpochMain(int epoch, bool* stop);  // rank 0: validation, checkpoints, results
  EpochRecord TrainRecord(int epoch);
  Status Validate(int epoch, EpochRecord* rec, bool* stop, bool* improved);
  void AdvanceState(int epoch);  // the epoch is done: the resume position moves to the next one
  // time=: whether the budget stops the run after `epoch`, with o_.epochs recomputed (rank 0).
  bool TimedStop(int epoch);
  void ApplyEpochs(int epochs);  // schedule and loader follow a recomputed epoch count
  struct EpochSnapshots {
    std::shared_ptr<CheckpointSnapshot> last, best;  // best: null when not written this epoch
    // epochN.pt: the training form; last.pt too until the run finishes, when last.pt is stripped.
    std::shared_ptr<CheckpointSnapshot> training;
  };
  Result<EpochSnapshots> TakeEpochSnapshots(bool improved);
  void SubmitCheckpoints(int epoch, const EpochSnapshots& snaps);
  void SubmitResultsPlot();
  // A validation's figures: into its epoch's row; as checkpoints record them (last_metrics_); kept for the
  // run's summary and final plots.
  static void RecordMetrics(const ValResult& v, EpochRecord* rec);
  static nlohmann::json MetricsJson(const MetricsSummary& m, int epoch);
  void KeepValidation(const ValResult& v, nlohmann::json metrics);
  // What SnapshotLast records beside the tensors: EMA updates, loss scaler, the fused optimizer's step counts.
  void RecordStepState();

  // The end of an epoch beside the next one (end_epoch_overlap.cc; --val-overlap). Rank 0 copies the
  // training state on the device (EpochShadow) and returns; a background thread validates the copy's EMA
  // and takes the epoch's checkpoints from it, with the metrics they record. FinishOverlappedEpochEnd
  // waits for that and does the rest on this thread (results row, early stop, files, the epoch's line): at
  // the next epoch's end, before an interrupt's or a prune's checkpoint, and after the last epoch. Only
  // where its results equal the in-line end's: not the last epoch, not one early stopping could end the
  // run after, not with gradients pending, time= or a prune next; under auto, where the device memory allows.
  bool CanOverlapEpochEnd(int epoch, bool validate, bool final_epoch);
  bool OverlapFitsInMemory();  // auto on CUDA: enough device memory free beside the training
  Status BeginOverlappedEpochEnd(int epoch, EpochRecord rec);
  Status FinishOverlappedEpochEnd();
  struct PendingEpochEnd {
    int epoch = 0;
    EpochRecord rec;
    TrainOptions options;    // o_ at the epoch's end (the meta's; o_ itself may be written meanwhile)
    TrainState state;        // after the epoch; best_fitness / best_epoch after its validation once done
    EarlyStopping stopper{0};  // likewise
    std::vector<EpochRecord> records;  // results.csv's rows before this epoch's
    bool improved = false;
    ValResult val;
    nlohmann::json metrics;  // last_metrics_ after it
    EpochSnapshots snaps;
    double seconds = 0;      // the background thread's time (validation and snapshots)
    double line_seconds = 0; // this thread's: the copy and the hand-over at the epoch's end
  };
  // The background half: validation, verdict, snapshots (on the side stream, after `ready`).
  Status CompleteEpochEnd(PendingEpochEnd* p, const StreamFence& ready);

  // What stops a run (run_guards.cc).
  // Whether any rank was asked to stop (cancel) or found a non-finite loss or weight (diverged; this
  // rank's own finding comes in). Under DDP a collective, so every rank must call it at the same point;
  // all ranks then leave at the same batch (the resume position is one for all of them).
  // time_up: rank 0's time= budget is spent (Ultralytics broadcasts rank 0's verdict).
  struct StopVote {
    bool cancel = false, diverged = false, time_up = false;
  };
  Result<StopVote> AgreeStop(bool diverged);
  Result<bool> AgreeCancel();
  // The first batch in [from, to) of this epoch whose loss items (box, cls, dfl) are not all finite, as
  // "non-finite box loss at epoch E/N batch B/NB (box nan, cls 1.2, dfl 0.9)"; empty when all are.
  std::string FindNonFiniteLoss(int epoch, size_t from, size_t to);
  // The first parameter or buffer of the model or its EMA holding NaN/inf ("model.0.conv.weight (EMA)");
  // empty when all are finite.
  std::string FindNonFiniteWeights();
  // The run stops here: the checkpoint still being written (taken from finite weights) is completed and
  // nothing is saved from the current weights. DataError (exit 1) saying what diverged and what is kept.
  Status Diverged(const std::string& what);

  // Checkpoints (run_checkpoint.cc).
  // Under DDP: averages every defined .grad across ranks (pending accumulated gradients before an
  // interrupt's checkpoint; see TrainEpoch).
  Status AverageGrads();
  // last.pt's contents now (a snapshot: it is serialised and written during the next epoch).
  Result<std::shared_ptr<CheckpointSnapshot>> SnapshotLast(bool pending_grads);
  // The release form now (EMA only, fp16; see trainer/io/checkpoint.h): best.pt, and a finished run's
  // last.pt. `file` names the destination in errors.
  Result<std::shared_ptr<CheckpointSnapshot>> SnapshotRelease(const std::filesystem::path& file);
  // The same two from an epoch's copy (EpochShadow), with that epoch's state, metrics and rows.
  Result<std::shared_ptr<CheckpointSnapshot>> SnapshotShadow(const PendingEpochEnd& p, bool release,
                                                             const std::filesystem::path& file) const;
  CheckpointMeta Meta() const { return MetaOf(o_, state_, last_metrics_); }  // the run as it stands, for either file
  CheckpointMeta MetaOf(const TrainOptions& options, const TrainState& state, const nlohmann::json& metrics) const;
  nlohmann::ordered_json TrainResults() const;  // results.csv so far, as the checkpoints' train_results
  // The resumed checkpoint's cache is --data's, or hooks_.resume_other_data allows another.
  Status CheckResumedData(const CheckpointMeta& meta);
  Status SaveLast(bool pending_grads);  // written before returning (interrupts)

  TrainOptions o_;
  TrainHooks hooks_;
  Clock::time_point wall0_ = Clock::now();

  std::shared_ptr<Cache> cache_;
  // --cache-budget: the stream the cache's train records come from (its val split is held on disk
  // whole); null when the cache is local.
  std::shared_ptr<StreamCache> stream_;
  // The splits as the run reads them: fraction, classes and single_cls applied (libcache/record_selection.h).
  std::shared_ptr<const RecordSource> train_split_;
  std::shared_ptr<const RecordSource> val_split_;  // null without validation
  std::vector<std::string> names_;  // the run's classes (single_cls: {"item"})
  int64_t nc_ = 0;
  ModelName model_name_;
  std::unique_ptr<CheckpointReader> resume_;
  std::string run_id_;             // kept across resumes (run_identity.h)
  nlohmann::json data_identity_;   // the cache's
  std::unique_ptr<ModelWeights> pretrained_;  // --weights, until transferred into the model
  TrainState state_;
  std::filesystem::path out_, weights_, last_, best_;
  std::unique_ptr<DistContext> dist_;       // world 1: a local no-op context
  int local_ranks_ = 1;                     // ranks on this host (LOCAL_WORLD_SIZE): they share its cores
  std::unique_ptr<GradReducer> reducer_;   // only when distributed

  TrainingStack stack_;  // device, AMP, model, optimizer, EMA, scaler, loss, step (training_stack.h)
  std::unique_ptr<DeviceFeed> feed_;
  std::unique_ptr<Loader> loader_;
  size_t nb_ = 0;
  std::unique_ptr<LrSchedule> schedule_;
  std::unique_ptr<Validator> validator_;
  std::unique_ptr<ResultsLog> results_;
  std::unique_ptr<GpuMonitor> gpu_;
  std::unique_ptr<EarlyStopping> stopper_;
  BackgroundWriter writer_;  // checkpoints and results.png after each epoch
  std::vector<ProbeLabels> probe_labels_;  // --synthetic-input: the last epoch's first label tables

  // Epoch accumulators (device) and bookkeeping.
  at::Tensor epoch_loss_;
  // (nb_, K): this epoch's loss items per batch (K = 3, or 4 with a teacher: TrainStep::loss_items), scanned
  // for NaN/inf at log points.
  at::Tensor loss_history_;
  size_t losses_checked_ = 0;  // batches of this epoch before this one were scanned
  int saved_epoch_ = 0;        // epochs completed in the last.pt this run wrote (0: none yet)
  std::vector<std::filesystem::path> epoch_files_;  // weights/epochN.pt this run wrote, oldest first (writer thread only)
  int64_t epoch_batches_ = 0;
  int64_t last_ni_ = -1;
  Clock::time_point epoch_t0_;
  double epoch_train_s_ = 0;
  int64_t epoch_images_ = 0;
  double epoch_data_wait_s_ = 0;
  // The session's first epoch: seconds from its start to the end of its first batch, its 10th and the one
  // before its last (device synchronised there), for the warm-up line FinishEpoch prints (issue 29's
  // first-epoch tax).
  std::vector<double> warmup_marks_;
  int64_t warmup_images_before_last_ = 0;  // images trained on at the last mark (the last batch's size follows)
  nlohmann::json last_metrics_ = nlohmann::json::object();
  bool plot_disabled_ = false;
  std::vector<double> last_confusion_;  // of the last validation, for the final plots
  // time= (time_budget.h): the budget, the epoch this session started at, whether a step found the budget
  // spent inside the epoch (it then ends there), whether the budget stopped the run.
  TimeBudget budget_;
  int session_start_epoch_ = 0;
  bool time_up_ = false;
  bool time_stopped_ = false;
  int plot_epochs_ = 0;  // the epoch count the train_batch plots were chosen with (Ultralytics: at the start)

  TrainSummary summary_;

  // --val-overlap: the last epoch's end still being made in the background (null: none).
  EpochShadow shadow_;
  std::unique_ptr<PendingEpochEnd> pending_end_;
  std::optional<bool> overlap_fits_;  // OverlapFitsInMemory's verdict, once made
  // Declared last, so destroyed first: its thread may still read the members above.
  BackgroundWriter finisher_;
};

}  // namespace yc::trainer
