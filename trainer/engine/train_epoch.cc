// TrainRun::TrainEpoch: one epoch's batch loop (trainer/engine/train_run.h). Per batch: stage the next
// one, train this one, report progress at log points, then the stop checks (NaN/inf, cancel; agreed
// across ranks under DDP) and, on a cancel, the interrupt checkpoint.
#include <algorithm>
#include <string>

#include "base/format.h"

#include "trainer/engine/multi_scale.h"
#include "trainer/engine/train_run.h"
#include "trainer/plots/batch_grid.h"
#include "trainer/plots/image_file.h"

namespace yc::trainer {

Status TrainRun::TrainEpoch(int epoch, size_t first_batch, bool* interrupted) {
  *interrupted = false;
  BeginEpoch(epoch, first_batch);
  EpochCursor c;
  c.epoch = epoch;
  c.first = c.i = first_batch;
  c.t_train = Clock::now();
  // After the previous epoch the loader has run ahead into this one (its first batches were prepared
  // while the GPU validated); StartEpoch adopts them, or starts afresh on resume.
  YC_RETURN_IF_ERROR(loader_->StartEpoch(epoch, first_batch));
  YC_RETURN_IF_ERROR(StageNextBatch());
  while (feed_->staged() > 0) {
    // Stage batch i + 1 before computing batch i: on CUDA its copy overlaps this batch's compute.
    YC_RETURN_IF_ERROR(StageNextBatch());
    YC_ASSIGN_OR_RETURN(DeviceBatch db, feed_->Take());
    const int64_t steps_before = state_.optimizer_steps;
    YC_RETURN_IF_ERROR(TrainBatch(db, &c));
    if (epoch == session_start_epoch_) MarkWarmup(c);
    const bool last = feed_->staged() == 0;
    const bool log_point = (c.i - first_batch) % static_cast<size_t>(o_.log_every) == 0 || last;
    if (hooks_.observer && log_point) ReportProgress(c, db);
    YC_ASSIGN_OR_RETURN(bool cancel, CheckStop(c, log_point, state_.optimizer_steps > steps_before));
    if (cancel && c.i < nb_) {
      YC_RETURN_IF_ERROR(SaveInterrupted(c));
      *interrupted = true;
      return Status::OK();
    }
    if (time_up_) break;  // Ultralytics' timed stop: the epoch ends here, then validates and saves as usual
  }
  FinishEpoch(c);
  return Status::OK();
}

void TrainRun::BeginEpoch(int epoch, size_t first_batch) {
  stack_.model->train();
  // Ultralytics' _model_train: the BatchNorm layers of frozen layers keep their running statistics.
  if (const std::vector<int> frozen = FrozenLayers(o_); !frozen.empty()) {
    for (const auto& m : stack_.model->named_modules()) {
      if (m.value()->name().find("BatchNorm") != std::string::npos && IsFrozenName(m.key(), frozen)) m.value()->eval();
    }
  }
  if (hooks_.observer) hooks_.observer->OnEpochStart(epoch + 1, o_.epochs, nb_);
  epoch_t0_ = Clock::now();
  const at::TensorOptions on_device = at::TensorOptions().dtype(at::kFloat).device(stack_.target.device);
  const int64_t items = stack_.step->loss_items();  // box, cls, dfl (and kd with a teacher)
  epoch_loss_ = at::zeros({items}, on_device);
  if (!loss_history_.defined()) loss_history_ = at::zeros({static_cast<int64_t>(nb_), items}, on_device);
  losses_checked_ = first_batch;
  epoch_batches_ = 0;
  if (first_batch > 0) {  // resumed inside this epoch: continue its running means
    std::vector<float> sums(state_.epoch_loss_sum.begin(), state_.epoch_loss_sum.end());
    if (items > 3) sums.push_back(static_cast<float>(state_.epoch_kd_sum));
    epoch_loss_.copy_(at::tensor(sums));
    epoch_batches_ = state_.epoch_loss_batches;
  }
  if (gpu_) gpu_->Start();
  epoch_data_wait_s_ = 0;
}

// The loader's next batch onto the feed; the time blocked in the loader is what the GPU may have idled for.
Status TrainRun::StageNextBatch() {
  std::shared_ptr<Batch> next;
  const auto t = Clock::now();
  const Status st = loader_->Next(&next);
  epoch_data_wait_s_ += Seconds(t);
  YC_RETURN_IF_ERROR(st);
  return next ? feed_->Stage(std::move(next)) : Status::OK();
}

Status TrainRun::TrainBatch(const DeviceBatch& db, EpochCursor* c) {
  const int64_t ni = static_cast<int64_t>(c->i) + static_cast<int64_t>(nb_) * c->epoch;
  if (o_.plots && IsMain() && db.host && IsPlottedBatch(ni)) PlotTrainBatch(*db.host, ni);
  const StepSettings s = schedule_->At(c->epoch, ni, static_cast<int64_t>(nb_), stack_.spec.lr);
  ApplyStepSettings(*stack_.optimizer, s);
  const bool step_now = ni - state_.last_opt_step >= s.accumulate;  // before backward: DDP sync or no_sync
  if (o_.synthetic_input && c->i - c->first < kProbeBatches) {
    if (c->i == c->first) probe_labels_.clear();
    probe_labels_.push_back({db.labels, db.max_boxes});
  }
  at::Tensor images = db.images;
  if (o_.multi_scale) {
    // Ultralytics' self.stride: max(int(model.stride.max()), 32).
    const auto gs = std::max<int64_t>(static_cast<int64_t>(stack_.model->strides().back()), 32);
    images = MultiScaleImages(images, MultiScaleSize(o_.imgsz, gs, o_.seed, ni), gs);
  }
  YC_ASSIGN_OR_RETURN(at::Tensor items, stack_.step->ForwardBackward(images, db.labels, db.max_boxes, step_now));
  epoch_loss_.add_(items);  // this rank's losses (Ultralytics logs rank 0's too)
  loss_history_[static_cast<int64_t>(c->i)].copy_(items);  // on the device; scanned at the next log point
  ++epoch_batches_;
  last_ni_ = ni;
  if (step_now) {
    YC_RETURN_IF_ERROR(stack_.step->OptimizerStep());
    state_.last_opt_step = ni;
    ++state_.optimizer_steps;
  }
  c->images += db.size;
  ++c->i;
  return Status::OK();
}

// The batches Ultralytics draws (plots/batch_grid.h).
bool TrainRun::IsPlottedBatch(int64_t ni) const {
  return IsPlottedTrainBatch(ni, plot_epochs_, o_.hyp.close_mosaic, static_cast<int64_t>(nb_), resume_ != nullptr);
}

// train_batch{ni}.jpg, as Ultralytics' plot_training_samples: the grid is copied out here (the host
// buffer goes back to the loader), encoded and written by the background writer.
void TrainRun::PlotTrainBatch(const Batch& host, int64_t ni) {
  cv::Mat grid = RenderBatchGrid(host, names_);
  writer_.Submit([grid, jpg = out_ / ("train_batch" + std::to_string(ni) + ".jpg")]() -> Status {
    WarnIfNotPlotted(WriteImageFile(jpg, grid));
    return Status::OK();
  });
}

// The one host read of the losses per log interval.
void TrainRun::ReportProgress(const EpochCursor& c, const DeviceBatch& db) {
  auto mean = (epoch_loss_ / static_cast<double>(std::max<int64_t>(epoch_batches_, 1))).to(at::kCPU).to(at::kDouble);
  BatchProgress p;
  p.epoch = c.epoch + 1;
  p.epochs = o_.epochs;
  p.batch = c.i;
  p.batches = nb_;
  for (int k = 0; k < 3; ++k) p.loss[k] = mean[k].item<double>();
  p.has_kd = mean.size(0) > 3;
  if (p.has_kd) p.kd_loss = mean[3].item<double>();
  p.instances = static_cast<int64_t>(db.host->label_count());
  p.imgsz = o_.imgsz;
  p.images_per_second = static_cast<double>(c.images) / std::max(Seconds(c.t_train), 1e-9);
  p.gpu_mem_gb = DeviceMemoryReservedBytes(stack_.target.device) / 1e9;
  hooks_.observer->OnTrainProgress(p);
}

// One process: checked every batch. DDP: agreed at the log points (a collective, and on CUDA a host
// sync the log point pays anyway), so a stop takes effect within --log-every batches on all ranks.
// The losses since the last log point are scanned for NaN/inf there too, and before an interrupt's
// checkpoint: a diverged run stops (every rank) without saving its weights.
Result<bool> TrainRun::CheckStop(const EpochCursor& c, bool log_point, bool stepped) {
  bool cancel = Distributed() ? false : Cancelled();
  // Ultralytics checks the time= budget after every optimizer step; under DDP it is agreed at log points.
  if (stepped && !Distributed() && budget_.Exceeded()) time_up_ = true;
  std::string bad_loss;
  const size_t unchecked = losses_checked_;
  if (log_point || cancel) {
    bad_loss = FindNonFiniteLoss(c.epoch, losses_checked_, c.i);
    losses_checked_ = c.i;
  }
  bool diverged = !bad_loss.empty();
  if (Distributed() && log_point) {
    YC_ASSIGN_OR_RETURN(StopVote agreed, AgreeStop(diverged));
    cancel = agreed.cancel;
    diverged = agreed.diverged;
    time_up_ = time_up_ || agreed.time_up;
  }
  if (diverged) {
    if (bad_loss.empty()) {
      bad_loss = "non-finite loss on another rank at epoch " + std::to_string(c.epoch + 1) + "/" +
                 std::to_string(o_.epochs) + ", batches " + std::to_string(unchecked + 1) + ".." + std::to_string(c.i);
    }
    return Diverged(bad_loss);
  }
  return cancel;
}

// Stopped inside the epoch: last.pt with the exact position (batch i next), so --resume continues.
Status TrainRun::SaveInterrupted(const EpochCursor& c) {
  if (gpu_) gpu_->Stop();
  YC_RETURN_IF_ERROR(FinishOverlappedEpochEnd());  // the previous epoch's row and files before this last.pt
  auto sums = epoch_loss_.to(at::kCPU).to(at::kDouble);
  for (int k = 0; k < 3; ++k) state_.epoch_loss_sum[k] = sums[k].item<double>();
  state_.epoch_kd_sum = sums.size(0) > 3 ? sums[3].item<double>() : 0.0;
  state_.epoch_loss_batches = epoch_batches_;
  state_.epoch = c.epoch;
  state_.next_batch = static_cast<int64_t>(c.i);
  state_.train_seconds += Seconds(epoch_t0_);
  state_.images_seen += c.images;
  summary_.train_images += c.images;
  summary_.train_seconds += Seconds(c.t_train);
  const bool pending = last_ni_ > state_.last_opt_step;
  // Pending no-sync gradients differ per rank; their average is what the next synced step would
  // have reduced (it is linear), so every rank resuming from the averaged .grad continues exactly.
  if (pending && Distributed()) YC_RETURN_IF_ERROR(AverageGrads());
  if (!IsMain()) return Status::OK();
  // The losses were finite, but the last step may still have produced inf weights.
  const std::string bad = FindNonFiniteWeights();
  if (!bad.empty()) {
    return Diverged("non-finite weights at epoch " + std::to_string(c.epoch + 1) + " batch " + std::to_string(c.i) +
                    ": " + bad);
  }
  return SaveLast(pending);
}

// The first and the 10th batch of the session's first epoch, and the one before its last: where its
// first-use costs (CUDA's lazy kernel loading, cuDNN's plans, allocator growth, the graphs' eager batches and
// captures) fall, and what the last batch costs apart (a partial one is a shape of its own). Three device
// synchronisations per run.
void TrainRun::MarkWarmup(const EpochCursor& c) {
  const size_t done = c.i - c.first;
  const size_t total = nb_ - c.first;
  if (done != 1 && done != kWarmupBatches && !(done + 1 == total && done > kWarmupBatches)) return;
  SynchronizeDevice(stack_.target.device);
  warmup_marks_.push_back(Seconds(c.t_train));
  warmup_images_before_last_ = c.images;
}

// "first epoch: batch 1 2.31 s, batches 2-10 0.95 s, batches 11-79 3.10 s (0.046 s each), batch 80 (56 images)
// 0.10 s".
std::string TrainRun::WarmupText(const EpochCursor& c) const {
  const size_t done = c.i - c.first;
  std::string text = "first epoch: batch 1 " + FormatNumber("%.2f", warmup_marks_[0]) + " s";
  if (warmup_marks_.size() < 2) return text;
  text += ", batches 2-" + std::to_string(kWarmupBatches) + " " + FormatNumber("%.2f", warmup_marks_[1] - warmup_marks_[0]) + " s";
  if (done <= kWarmupBatches) return text;
  // Without the mark before the last batch (an epoch stopped early), the rest is one span.
  const bool last_apart = warmup_marks_.size() > 2;
  const size_t middle_end = last_apart ? done - 1 : done;
  const double middle = (last_apart ? warmup_marks_[2] : epoch_train_s_) - warmup_marks_[1];
  if (middle_end > kWarmupBatches) {
    text += ", batches " + std::to_string(kWarmupBatches + 1) + "-" + std::to_string(middle_end) + " " +
            FormatNumber("%.2f", middle) + " s (" +
            FormatNumber("%.3f", middle / static_cast<double>(middle_end - kWarmupBatches)) + " s each)";
  }
  if (last_apart) {
    text += ", batch " + std::to_string(done) + " (" + std::to_string(c.images - warmup_images_before_last_) +
            " images) " + FormatNumber("%.2f", epoch_train_s_ - warmup_marks_[2]) + " s";
  }
  return text;
}

void TrainRun::FinishEpoch(const EpochCursor& c) {
  SynchronizeDevice(stack_.target.device);
  if (gpu_) gpu_->Stop();
  epoch_train_s_ = Seconds(c.t_train);
  epoch_images_ = c.images;
  if (c.epoch == session_start_epoch_ && !warmup_marks_.empty() && IsMain()) Say(WarmupText(c));
  summary_.train_seconds += epoch_train_s_;
  summary_.train_images += c.images;
  state_.images_seen += c.images;
}

}  // namespace yc::trainer
