// TrainRun's epoch end beside the next epoch (--val-overlap; trainer/engine/train_run.h): validation and
// checkpoints leave the training thread's critical path (issue 29: a whole run at >= 0.9 of the steady rate).
//
// At the end of epoch e the training thread copies the model, the EMA and the optimizer state on the device
// (EpochShadow: one queued copy, no host wait) and goes on with epoch e + 1. The finisher thread, on a CUDA
// stream of its own that first waits for the copy, validates the copy's EMA, updates a copy of the early
// stopper, and takes last.pt's and best.pt's snapshots from the copy with the metrics they record: the
// files hold what the in-line end would have written. At the end of epoch e + 1 (or before an interrupt's
// checkpoint, a prune, or the run's end) the training thread takes the result: results.csv's row, the
// stopper, the files to the writer, the epoch's console line. So last.pt lags one epoch behind while the
// next one trains, and epoch e's line is printed after epoch e + 1's progress.
#include <utility>

#include "base/format.h"
#include "trainer/engine/train_run.h"
#include "trainer/model/depthwise_kernel.h"
#include "trainer/runtime/exception_text.h"

namespace yc::trainer {

bool TrainRun::CanOverlapEpochEnd(int epoch, bool validate, bool final_epoch) {
  if (o_.val_overlap == "off" || !validate || final_epoch || !validator_) return false;
  // Beside a CPU run the validation would take the training's own cores.
  if (o_.val_overlap == "auto" && !stack_.target.device.is_cuda()) return false;
  if (o_.val_overlap == "auto" && !OverlapFitsInMemory()) return false;
  // time=: whether this epoch is the last depends on the time the end takes.
  if (budget_.enabled() || time_up_) return false;
  // Gradients pending for the next step are not in the copy (last.pt would need them).
  if (last_ni_ > state_.last_opt_step) return false;
  // The prune at the start of the next epoch cuts this epoch's EMA and replaces the modules.
  if (o_.prune_at > 0 && epoch + 1 == o_.prune_at) return false;
  // Only an epoch early stopping cannot end the run after, whatever its fitness: otherwise the next epoch
  // would already be training when the verdict came.
  if (o_.patience > 0 && epoch + 1 - state_.best_epoch >= o_.patience) return false;
  return true;
}

// A validation batch (twice the train batch, no gradients) and the copy of the training state need about
// half the memory the training holds once its first epoch has run; with less free, a validation beside the
// step could run either out of memory (AutoBatch fills 60% of the device). Decided once, at the first end.
bool TrainRun::OverlapFitsInMemory() {
  if (overlap_fits_) return *overlap_fits_;
  const DeviceMemory m = DeviceMemoryNow(stack_.target.device);
  overlap_fits_ = m.total <= 0 || m.total - m.reserved >= 0.5 * m.reserved;
  if (!*overlap_fits_) {
    Say("val-overlap: epochs end in line: training holds " + FormatNumber("%.1f", m.reserved / 1073741824.0) + " of " +
        FormatNumber("%.1f", m.total / 1073741824.0) + " GiB of device memory, too little beside it for a validation");
  }
  return *overlap_fits_;
}

Status TrainRun::BeginOverlappedEpochEnd(int epoch, EpochRecord rec) {
  const auto t0 = Clock::now();
  AdvanceState(epoch);
  state_.finished = false;
  rec.time = state_.train_seconds;
  RecordStepState();
  YC_RETURN_IF_ERROR(shadow_.Capture(*stack_.model.get(), *stack_.ema->module(), *stack_.optimizer));
  auto p = std::make_unique<PendingEpochEnd>();
  p->epoch = epoch;
  p->rec = std::move(rec);
  p->options = o_;
  p->state = state_;
  p->stopper = *stopper_;
  p->records = results_->records();
  const StreamFence ready = StreamFence::Record(stack_.target.device);
  pending_end_ = std::move(p);
  finisher_.Submit([this, p = pending_end_.get(), ready] { return CompleteEpochEnd(p, ready); });
  pending_end_->line_seconds = Seconds(t0);
  return Status::OK();
}

// On the finisher thread (or, after it failed, on the training thread): reads only the shadow, the
// validator and what `p` holds, so the training thread can go on meanwhile.
Status TrainRun::CompleteEpochEnd(PendingEpochEnd* p, const StreamFence& ready) {
  const auto t0 = Clock::now();
  try {
    const SideStreamScope side(stack_.target.device);
    ready.WaitOnCurrentStream();
    const DepthwiseKernelScope depthwise(stack_.step->depthwise_policy().Otherwise());
    YC_ASSIGN_OR_RETURN(p->val, validator_->Run(shadow_.ema(), {}, nullptr, nullptr));
    RecordMetrics(p->val, &p->rec);
    // Cannot stop here (CanOverlapEpochEnd); only the best epoch may move.
    p->stopper.Update(p->epoch + 1, p->val.metrics.fitness);
    p->improved = p->stopper.improved();
    p->state.best_fitness = p->stopper.best_fitness();
    p->state.best_epoch = p->stopper.best_epoch();
    p->metrics = MetricsJson(p->val.metrics, p->epoch + 1);
    YC_ASSIGN_OR_RETURN(p->snaps.training, SnapshotShadow(*p, /*release=*/false, last_));
    p->snaps.last = p->snaps.training;
    p->snaps.best.reset();
    if (p->improved) {
      YC_ASSIGN_OR_RETURN(p->snaps.best, SnapshotShadow(*p, /*release=*/true, best_));
    }
    SynchronizeCurrentStream(stack_.target.device);  // nothing of it still reads the shadow
  } catch (const std::exception& e) {
    return Status::IOError("validation beside training: " + ExceptionLine(e));
  }
  p->seconds = Seconds(t0);
  return Status::OK();
}

Status TrainRun::FinishOverlappedEpochEnd() {
  if (!pending_end_) return Status::OK();
  const auto t0 = Clock::now();
  Status done = finisher_.Wait();
  std::unique_ptr<PendingEpochEnd> p = std::move(pending_end_);
  if (!done.ok()) {
    // Out of device memory beside the training step, say: the copy still holds the epoch's state.
    Say("warning: epoch " + std::to_string(p->epoch + 1) + "'s validation beside training failed (" + done.ToString() +
        "); validating it now");
    p->stopper = *stopper_;
    p->state.best_fitness = state_.best_fitness;
    p->state.best_epoch = state_.best_epoch;
    YC_RETURN_IF_ERROR(CompleteEpochEnd(p.get(), StreamFence::Record(stack_.target.device)));
  }
  *stopper_ = p->stopper;
  state_.best_fitness = p->stopper.best_fitness();
  state_.best_epoch = p->stopper.best_epoch();
  KeepValidation(p->val, p->metrics);
  YC_RETURN_IF_ERROR(results_->Append(p->rec));
  YC_RETURN_IF_ERROR(writer_.Wait());
  SubmitCheckpoints(p->epoch, p->snaps);
  SubmitResultsPlot();
  EpochRecord& rec = p->rec;
  rec.val_seconds = p->line_seconds;
  rec.save_seconds = Seconds(t0);
  rec.beside_seconds = p->seconds;
  summary_.epoch_gap_seconds += rec.val_seconds + rec.save_seconds;
  summary_.gap_parts.beside += 1;
  summary_.gap_parts.beside_seconds += p->seconds;
  if (hooks_.observer) hooks_.observer->OnEpochEnd(rec);
  return Status::OK();
}

}  // namespace yc::trainer
