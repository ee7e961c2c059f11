// TrainRun::EndEpoch: after an epoch's last batch (trainer/engine/train_run.h): the weight check every
// rank agrees on, then on rank 0 validation, the results row, last.pt / best.pt / epochN.pt and
// results.png (written by the background writer while the next epoch trains), and early stopping; with
// --val-overlap, rank 0's part is made beside the next epoch where that changes no result (end_epoch_overlap.cc).
#include <algorithm>
#include <cstdio>

#include "libcache/format/manifest.h"
#include "trainer/config/args_yaml.h"
#include "trainer/engine/train_run.h"
#include "trainer/model/depthwise_kernel.h"
#include "trainer/plots/charts.h"

namespace yc::trainer {

namespace fs = std::filesystem;

namespace {

// Keeps the newest `keep` of the epochN.pt files this run wrote (`own`, oldest first; keep 0: all).
// Only those are ever deleted: another run's epochN.pt in the folder (--exist-ok), or a stale higher
// number, is neither deleted nor counted.
void RotateEpochCheckpoints(std::vector<fs::path>* own, int keep) {
  if (keep <= 0) return;
  std::error_code ec;
  while (own->size() > static_cast<size_t>(keep)) {
    fs::remove(own->front(), ec);
    own->erase(own->begin());
  }
}

// Hours with three decimals, as Ultralytics' "epochs completed in 0.012 hours".
std::string HoursText(double hours) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", hours);
  return buf;
}

}  // namespace

Status TrainRun::EndEpoch(int epoch, bool* stop) {
  *stop = false;
  YC_RETURN_IF_ERROR(FinishOverlappedEpochEnd());  // the previous epoch's, if it was made beside this one
  // Finite losses can still end in inf weights (the epoch's last step); neither they nor an EMA of them
  // are validated or saved. Every rank checks its own (BatchNorm statistics are per rank).
  std::string bad = FindNonFiniteWeights();
  bool diverged = !bad.empty();
  if (Distributed()) {
    YC_ASSIGN_OR_RETURN(StopVote agreed, AgreeStop(diverged));
    diverged = agreed.diverged;
    if (bad.empty()) bad = "on another rank";
  }
  if (diverged) return Diverged("non-finite weights after epoch " + std::to_string(epoch + 1) + "/" +
                                std::to_string(o_.epochs) + ": " + bad);
  // Gradients pending for the next epoch's step go into last.pt; under DDP they are this rank's own
  // (no_sync) sums, so average them first (exact: the next synced step averages linearly anyway).
  if (Distributed() && epoch + 1 < o_.epochs && last_ni_ > state_.last_opt_step) YC_RETURN_IF_ERROR(AverageGrads());
  if (IsMain()) {
    YC_RETURN_IF_ERROR(EndEpochMain(epoch, stop));
  } else {
    AdvanceState(epoch);  // the bookkeeping the loop needs; rank 0 keeps the run's record
  }
  if (Distributed()) {
    // Rank 0's stop decision and (time=) epoch count, so every rank leaves the loop together and keeps
    // the same schedule.
    std::vector<at::Tensor> flag{at::tensor(std::vector<int>{*stop ? 1 : 0, o_.epochs}, at::TensorOptions().dtype(at::kInt))};
    YC_RETURN_IF_ERROR(dist_->Broadcast(flag, 0));
    *stop = flag[0][0].item<int>() != 0;
    o_.epochs = flag[0][1].item<int>();
    if (!IsMain()) state_.finished = *stop || epoch + 1 >= o_.epochs;
  }
  if (budget_.enabled() && !*stop) ApplyEpochs(o_.epochs);
  return Status::OK();
}

// Ultralytics' _do_train after an epoch with time=: stop once the budget is spent (or a step found it
// spent), then epochs = ceil(time / mean epoch time of this session) with the scheduler re-made for it,
// and stop when the epoch just done is at or past that count.
bool TrainRun::TimedStop(int epoch) {
  if (!budget_.enabled()) return false;
  bool stop = time_up_ || budget_.Exceeded();
  const int epochs = budget_.Epochs(epoch - session_start_epoch_ + 1);
  stop = stop || epoch >= epochs;
  o_.epochs = epochs;  // into last.pt's options: --resume continues with the latest count
  return stop;
}

void TrainRun::ApplyEpochs(int epochs) {
  schedule_->set_epochs(epochs);
  const Status st = loader_->SetEpochs(epochs);
  if (!st.ok()) Say("warning: " + st.ToString());  // unreachable: epochs >= 1
}

Status TrainRun::EndEpochMain(int epoch, bool* stop) {
  EpochRecord rec = TrainRecord(epoch);
  const bool final_epoch = epoch + 1 >= o_.epochs;
  // A timed stop inside the epoch validates too (Ultralytics: `... or self.stop`).
  const bool validate =
      validator_ && (final_epoch || time_up_ || (o_.val_every > 0 && (epoch + 1) % o_.val_every == 0));
  *stop = false;
  if (CanOverlapEpochEnd(epoch, validate, final_epoch)) return BeginOverlappedEpochEnd(epoch, std::move(rec));
  bool improved = false;
  const auto t_val = Clock::now();
  if (validate) YC_RETURN_IF_ERROR(Validate(epoch, &rec, stop, &improved));
  rec.val_seconds = validate ? Seconds(t_val) : 0.0;
  const auto t_save = Clock::now();
  AdvanceState(epoch);
  const bool early_stop = *stop;
  // With time= the loop has no epoch bound: the last epoch of the current count stops it here (Ultralytics:
  // `self.stop |= ... or final_epoch`).
  time_stopped_ = budget_.enabled() && !early_stop && (final_epoch || TimedStop(epoch));
  *stop = early_stop || time_stopped_;
  state_.finished = final_epoch || *stop;
  rec.time = state_.train_seconds;
  // results.csv first: the checkpoints' train_results hold this epoch's row, as Ultralytics' save_model reads
  // the csv its save_metrics has just written.
  YC_RETURN_IF_ERROR(results_->Append(rec));
  const auto t_snap = Clock::now();
  YC_ASSIGN_OR_RETURN(EpochSnapshots snaps, TakeEpochSnapshots(improved));
  summary_.gap_parts.snapshots += Seconds(t_snap);
  // The files are written while the next epoch trains; the previous epoch's must be complete first
  // (and its error, if any, stops the run here).
  const auto t_wait = Clock::now();
  YC_RETURN_IF_ERROR(writer_.Wait());
  summary_.gap_parts.writer_wait += Seconds(t_wait);
  SubmitCheckpoints(epoch, snaps);
  SubmitResultsPlot();
  rec.save_seconds = Seconds(t_save);
  summary_.epoch_gap_seconds += rec.val_seconds + rec.save_seconds;
  if (hooks_.observer) hooks_.observer->OnEpochEnd(rec);
  if (early_stop) {
    Say("early stopping: no improvement in the last " + std::to_string(o_.patience) + " epochs; best was epoch " +
        std::to_string(state_.best_epoch));
  }
  if (time_stopped_) {
    Say("time=" + YamlFloat(o_.time) + " hours: stopping after epoch " + std::to_string(epoch + 1) + " (" +
        HoursText(budget_.Elapsed() / 3600.0) + " hours trained)");
  }
  return Status::OK();
}

// The epoch's row so far: mean train losses, the learning rates, its train and data-wait times.
EpochRecord TrainRun::TrainRecord(int epoch) {
  EpochRecord rec;
  rec.epoch = epoch + 1;
  auto mean = (epoch_loss_ / static_cast<double>(std::max<int64_t>(epoch_batches_, 1))).to(at::kCPU).to(at::kDouble);
  for (int k = 0; k < 3; ++k) {
    rec.train_loss[k] = mean[k].item<double>();
    rec.lr[k] = GetLearningRate(*stack_.optimizer, static_cast<size_t>(k));
  }
  rec.has_kd = mean.size(0) > 3;
  if (rec.has_kd) rec.kd_loss = mean[3].item<double>();
  rec.epoch_train_seconds = epoch_train_s_;
  rec.images_per_second = epoch_train_s_ > 0 ? static_cast<double>(epoch_images_) / epoch_train_s_ : 0.0;
  rec.data_wait_seconds = epoch_data_wait_s_;
  return rec;
}

// The EMA model on the val split: metrics into the row and the summary, then the early-stop verdict.
Status TrainRun::Validate(int epoch, EpochRecord* rec, bool* stop, bool* improved) {
  if (hooks_.observer) hooks_.observer->OnValStart(epoch + 1, validator_->batches());
  auto ema_model = stack_.ema->as<DetectionModelImpl>();
  std::function<void(size_t, size_t)> progress;
  if (hooks_.observer) progress = [this](size_t d, size_t t) { hooks_.observer->OnValProgress(d, t); };
  // The last epoch's validation draws val_batch{0,1,2}_labels/_pred.jpg, as Ultralytics' validator does
  // when the trainer turns its plots on (ultralytics/engine/validator.py: the final epoch).
  const ValSamplePlots samples{out_, names_};
  const bool draw = o_.plots && (epoch + 1 >= o_.epochs || time_up_);
  const DepthwiseKernelScope depthwise(stack_.step->depthwise_policy().Otherwise());
  YC_ASSIGN_OR_RETURN(ValResult v, validator_->Run(*ema_model, progress, nullptr, draw ? &samples : nullptr));
  summary_.gap_parts.val_data += v.data_seconds;
  summary_.gap_parts.val_model += v.model_seconds;
  summary_.gap_parts.val_nms += v.nms_seconds;
  summary_.gap_parts.val_metrics += v.metrics_seconds;
  RecordMetrics(v, rec);
  KeepValidation(v, MetricsJson(v.metrics, epoch + 1));
  *stop = stopper_->Update(epoch + 1, v.metrics.fitness);
  *improved = stopper_->improved();
  state_.best_fitness = stopper_->best_fitness();
  state_.best_epoch = stopper_->best_epoch();
  return Status::OK();
}

void TrainRun::RecordMetrics(const ValResult& v, EpochRecord* rec) {
  rec->validated = true;
  rec->precision = v.metrics.precision;
  rec->recall = v.metrics.recall;
  rec->map50 = v.metrics.map50;
  rec->map50_95 = v.metrics.map50_95;
  rec->has_val_loss = v.has_loss;
  rec->val_loss = v.loss;
}

nlohmann::json TrainRun::MetricsJson(const MetricsSummary& m, int epoch) {
  return {{"precision", m.precision}, {"recall", m.recall}, {"mAP50", m.map50}, {"mAP50-95", m.map50_95},
          {"fitness", m.fitness}, {"epoch", epoch}};
}

void TrainRun::KeepValidation(const ValResult& v, nlohmann::json metrics) {
  summary_.final_metrics = v.metrics;
  summary_.has_metrics = true;
  last_confusion_ = v.confusion;
  last_metrics_ = std::move(metrics);
}

void TrainRun::AdvanceState(int epoch) {
  state_.epoch = epoch + 1;
  state_.next_batch = 0;
  state_.epoch_loss_sum = {};
  state_.epoch_kd_sum = 0;
  state_.epoch_loss_batches = 0;
  state_.train_seconds += Seconds(epoch_t0_);
}

Result<TrainRun::EpochSnapshots> TrainRun::TakeEpochSnapshots(bool improved) {
  EpochSnapshots snaps;
  // Gradients still waiting for an optimizer step carry over into the next epoch; a finished run has
  // no next epoch, so they are not worth storing.
  YC_ASSIGN_OR_RETURN(snaps.training, SnapshotLast(/*pending_grads=*/!state_.finished && last_ni_ > state_.last_opt_step));
  snaps.last = snaps.training;
  // A finished run's last.pt is stripped as Ultralytics' strip_optimizer leaves it (the final EMA in fp16,
  // no optimizer), like best.pt; its epochN.pt keeps the training form, as Ultralytics' save_model writes it.
  if (state_.finished) {
    YC_ASSIGN_OR_RETURN(snaps.last, SnapshotRelease(last_));
  }
  // best.pt: the release weights of the best epoch so far; a run that never validated (best_fitness still
  // < 0) keeps its final EMA, written once since `finished` is set only by the last epoch.
  if (improved || (state_.finished && state_.best_fitness < 0)) {
    YC_ASSIGN_OR_RETURN(snaps.best, SnapshotRelease(best_));
  }
  return snaps;
}

void TrainRun::SubmitCheckpoints(int epoch, const EpochSnapshots& snaps) {
  const fs::path epoch_file = o_.save_every > 0 && (epoch + 1) % o_.save_every == 0
                                  ? weights_ / ("epoch" + std::to_string(epoch + 1) + ".pt")
                                  : fs::path();
  saved_epoch_ = epoch + 1;
  writer_.Submit([this, snapshot = snaps.last, best = snaps.best, training = snaps.training, epoch_file]() -> Status {
    // Serialised once (Serialize keeps the bytes), written once or twice.
    YC_RETURN_IF_ERROR(snapshot->WriteTo(last_));
    if (best) YC_RETURN_IF_ERROR(best->WriteTo(best_));
    if (!epoch_file.empty()) {
      YC_RETURN_IF_ERROR((training ? training : snapshot)->WriteTo(epoch_file));
      epoch_files_.erase(std::remove(epoch_files_.begin(), epoch_files_.end(), epoch_file), epoch_files_.end());
      epoch_files_.push_back(epoch_file);
      RotateEpochCheckpoints(&epoch_files_, o_.keep);
    }
    return Status::OK();
  });
}

void TrainRun::SubmitResultsPlot() {
  if (plot_disabled_ || !o_.plots || !IsMain()) return;
  if (std::string(ResultsPlotEncoder()) == "none") {
    plot_disabled_ = true;
    summary_.plot = "results.png and the other plots skipped: this build has no PLplot or no PNG encoder";
    Say(summary_.plot);
    return;
  }
  summary_.plot = "results.png written (" + std::string(ResultsPlotEncoder()) + ")";
  writer_.Submit([records = results_->records(), png = out_ / "results.png"]() -> Status {
    Status st = WriteResultsPlot(records, png);
    // A plot that cannot be drawn is not worth stopping a run for.
    if (!st.ok()) std::fprintf(stderr, "warning: %s\n", st.ToString().c_str());
    return Status::OK();
  });
}

}  // namespace yc::trainer
