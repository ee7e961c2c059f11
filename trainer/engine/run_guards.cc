// What stops a run (trainer/engine/train_run.h): the stop vote every rank takes at the same point, the
// NaN/inf scans of the losses and weights, and the divergence error.
#include <cmath>
#include <sstream>

#include "trainer/engine/train_run.h"

namespace yc::trainer {

namespace {

// As printf's "%g" writes it ("nan", "inf", "1.25").
std::string Short(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

}  // namespace

Result<TrainRun::StopVote> TrainRun::AgreeStop(bool diverged) {
  const bool time_up = IsMain() && budget_.Exceeded();  // rank 0's clock, as Ultralytics broadcasts it
  at::Tensor flags = at::tensor(std::vector<int>{Cancelled() ? 1 : 0, diverged ? 1 : 0, time_up ? 1 : 0},
                                at::TensorOptions().dtype(at::kInt));
  YC_RETURN_IF_ERROR(dist_->AllReduce(flags, ReduceKind::kMax));
  StopVote vote;
  vote.cancel = flags[0].item<int>() != 0;
  vote.diverged = flags[1].item<int>() != 0;
  vote.time_up = flags[2].item<int>() != 0;
  return vote;
}

Result<bool> TrainRun::AgreeCancel() {
  YC_ASSIGN_OR_RETURN(StopVote vote, AgreeStop(false));
  return vote.cancel;
}

std::string TrainRun::FindNonFiniteLoss(int epoch, size_t from, size_t to) {
  if (to <= from) return {};
  const at::Tensor rows = loss_history_.narrow(0, static_cast<int64_t>(from), static_cast<int64_t>(to - from));
  if (at::isfinite(rows).all().item<bool>()) return {};  // the one host read: nothing to report
  const at::Tensor host = rows.to(at::kCPU).to(at::kDouble).contiguous();
  const double* v = host.data_ptr<double>();
  static const char* kTerms[4] = {"box", "cls", "dfl", "kd"};
  const int64_t items = rows.size(1);  // 3, or 4 with a teacher (kd)
  for (size_t r = 0; r < to - from; ++r, v += items) {
    std::string terms, values;
    for (int k = 0; k < items; ++k) {
      if (!std::isfinite(v[k])) terms += (terms.empty() ? "" : ", ") + std::string(kTerms[k]);
      values += (k ? ", " : "") + std::string(kTerms[k]) + " " + Short(v[k]);
    }
    if (terms.empty()) continue;
    return "non-finite " + terms + " loss at epoch " + std::to_string(epoch + 1) + "/" + std::to_string(o_.epochs) +
           ", batch " + std::to_string(from + r + 1) + "/" + std::to_string(nb_) + " (" + values + ")";
  }
  return "non-finite loss at epoch " + std::to_string(epoch + 1);  // unreachable: some row was not finite
}

std::string TrainRun::FindNonFiniteWeights() {
  std::string bad = FirstNonFiniteTensor(*stack_.model);
  if (!bad.empty()) return bad + " (model)";
  bad = FirstNonFiniteTensor(*stack_.ema->module());
  return bad.empty() ? bad : bad + " (EMA)";
}

Status TrainRun::Diverged(const std::string& what) {
  if (gpu_) gpu_->Stop();
  // The last.pt (and best.pt) being written, or still being made beside this epoch, were taken from
  // finite weights; let them land.
  Status pending = FinishOverlappedEpochEnd();
  if (const Status written = writer_.Wait(); pending.ok()) pending = written;
  std::string kept;
  if (!IsMain()) {
    kept = "rank 0 reports what was kept";
  } else if (saved_epoch_ > 0) {
    kept = last_.string() + " holds epoch " + std::to_string(saved_epoch_) +
           ", the last with finite weights; the current weights were not saved";
  } else {
    kept = "no checkpoint was saved from the current weights";
  }
  std::string msg = "training diverged: " + what + "; " + kept +
                    ". Lower --lr0 (or lengthen --warmup-epochs) and train again";
  if (!pending.ok()) msg += " (and an earlier checkpoint write failed: " + pending.ToString() + ")";
  return Status::DataError(msg);
}

}  // namespace yc::trainer
