// TrainRun::PruneInRun: --prune-at E --prune-ratio R | --prune-gflops G (trainer/engine/train_run.h).
// Network slimming's prune and fine-tune inside one run: the epochs up to E train with the sparsity penalty,
// then the EMA (what a checkpoint's weights are) is pruned as `yolocache-train prune --ratio R` (or
// --gflops G) would prune it, and the
// later epochs train that model on the run's own schedule, learning rate and momentum following the epoch
// as before. Measured on the CPU (docs/TRAINER.md, "The recipe"), continuing the schedule is what keeps
// the pruned model's mAP; two self-contained runs lost 0.039 mAP50-95 where the continued one lost 0.006.
//
// What starts afresh, as a fine-tune from the pruned weights would: the optimizer state, the EMA (from the
// pruned weights), the loss scaler, the CUDA graphs (captured again for the new shapes), the gradient
// all-reduce; best.pt and the early-stopping patience count from the prune on, so the run's best.pt is a
// pruned model. The prune happens at the start of epoch E + 1, so that a run resumed from epoch E's
// last.pt prunes too; the checkpoints after it record the widths (TrainOptions::channels) for --resume.
#include "base/format.h"
#include "trainer/engine/train_run.h"
#include "trainer/model/prune/model_cost.h"
#include "trainer/model/prune/prune_model.h"

namespace yc::trainer {

namespace {

// Every parameter and buffer of `from` into the same-named tensor of `to` (same shapes; any layout).
void CopyTensors(torch::nn::Module& from, torch::nn::Module& to) {
  c10::NoGradGuard no_grad;
  const auto params = from.named_parameters(/*recurse=*/true);
  for (auto& p : to.named_parameters(/*recurse=*/true)) p.value().copy_(params[p.key()]);
  const auto buffers = from.named_buffers(/*recurse=*/true);
  for (auto& b : to.named_buffers(/*recurse=*/true)) b.value().copy_(buffers[b.key()]);
}

std::string SizeChange(const ModelCost& before, const ModelCost& after) {
  return std::to_string(before.parameters) + " -> " + std::to_string(after.parameters) + " parameters, " +
         FormatNumber("%.2f", before.gflops) + " -> " + FormatNumber("%.2f", after.gflops) + " GFLOPs";
}

}  // namespace

Status TrainRun::PruneInRun() {
  YC_RETURN_IF_ERROR(FinishOverlappedEpochEnd());
  YC_RETURN_IF_ERROR(writer_.Wait());  // the last epoch's checkpoints hold the stack being replaced
  SynchronizeDevice(stack_.target.device);
  auto pruned = std::dynamic_pointer_cast<DetectionModelImpl>(stack_.ema->module()->clone());
  if (pruned == nullptr) return Status::InvalidArgument("--prune-at: the EMA is not a detection model");
  const ModelCost before = MeasureModelSize(*pruned, o_.imgsz);
  PruneCriterion criterion;
  criterion.ratio = o_.prune_ratio;
  criterion.gflops = o_.prune_gflops;
  YC_ASSIGN_OR_RETURN(ModelPrune cut, PruneModel(*pruned, criterion, o_.channels, o_.imgsz));
  const ModelCost after = MeasureModelSize(*pruned, o_.imgsz);
  o_.channels = cut.channels;
  const std::string rule = o_.prune_gflops > 0 ? "--prune-gflops " + FormatNumber("%g", o_.prune_gflops) + ": --ratio " +
                                                     FormatNumber("%.3f", cut.ratio)
                                               : "--prune-ratio " + FormatNumber("%g", o_.prune_ratio);
  Say("pruned after epoch " + std::to_string(o_.prune_at) + " (" + rule + "): " + std::to_string(cut.plan.removed) + " of " + std::to_string(cut.plan.prunable) + " prunable channels, " +
      SizeChange(before, after) + " at " + std::to_string(o_.imgsz) + "; epochs " + std::to_string(o_.prune_at + 1) +
      "-" + std::to_string(o_.epochs) + " train it, sparsity off");

  stack_.step.reset();  // holds references into the stack: first to go
  stack_.model = NewModel(model_name_, nc_, stack_.target, o_.channels);
  CopyTensors(*pruned, *stack_.model);
  reducer_.reset();
  YC_RETURN_IF_ERROR(PrepareModelForTraining());
  state_.best_fitness = -1;  // best.pt: the pruned model's best epoch
  state_.best_epoch = 0;
  YC_RETURN_IF_ERROR(BuildTrainingFrom(nullptr));
  return Status::OK();
}

}  // namespace yc::trainer
