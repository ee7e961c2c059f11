// Train(): one TrainRun (trainer/engine/train_run.h) from set-up through the epoch loop to its summary.
#include "trainer/engine/trainer.h"

#include <algorithm>
#include <cstdio>

#include <torch/serialize.h>

#include "base/format.h"
#include "trainer/config/args_yaml.h"
#include "trainer/engine/stream_report.h"
#include "trainer/engine/train_run.h"
#include "trainer/model/depthwise_kernel.h"
#include "trainer/eval/val_plots.h"
#include "trainer/runtime/exception_text.h"

namespace yc::trainer {

namespace fs = std::filesystem;

bool EarlyStopping::Update(int epoch, double fitness) {
  improved_ = false;
  if (fitness > best_fitness_ || best_fitness_ <= 0) {
    best_fitness_ = fitness;
    best_epoch_ = epoch;
    improved_ = true;
  }
  return patience_ > 0 && epoch - best_epoch_ >= patience_;
}

void WarnIfNotPlotted(const Status& st) {
  if (!st.ok() && st.code() != Status::Code::kUnsupported) std::fprintf(stderr, "warning: %s\n", st.ToString().c_str());
}

Result<TrainOptions> ResumeOptions(const fs::path& checkpoint) {
  YC_ASSIGN_OR_RETURN(std::unique_ptr<CheckpointReader> reader, CheckpointReader::Open(checkpoint, at::Device(at::kCPU)));
  TrainOptions o = reader->meta().options;
  const fs::path parent = checkpoint.parent_path();
  if (parent.filename() == "weights" && parent.has_parent_path()) o.out = parent.parent_path().string();
  return o;
}

Result<TrainSummary> TrainRun::Execute() {
  YC_RETURN_IF_ERROR(Setup());
  summary_.out_dir = out_;
  summary_.last = last_;
  summary_.names = names_;
  YC_RETURN_IF_ERROR(RunEpochs());
  YC_RETURN_IF_ERROR(FinishOverlappedEpochEnd());  // an epoch end still beside (an early exit from the loop)
  if (stream_ != nullptr) {  // --cache-budget: what each rank fetched, said by rank 0
    YC_ASSIGN_OR_RETURN(std::vector<RankFetched> fetched,
                        GatherFetched(*dist_, stream_->counters(), static_cast<uint64_t>(summary_.train_images)));
    for (const std::string& line : FetchedLines(fetched)) Say(line);
  }
  if (IsMain() && !summary_.interrupted) YC_RETURN_IF_ERROR(ValidateBest());
  if (o_.plots && IsMain() && summary_.has_metrics && !summary_.interrupted) {
    // The last validation's curves and confusion matrices (Ultralytics draws them in its final validation).
    writer_.Submit([metrics = summary_.final_metrics, confusion = last_confusion_, names = names_, dir = out_]() -> Status {
      WarnIfNotPlotted(WriteValidationPlots(metrics, confusion, names, dir));
      return Status::OK();
    });
  }
  YC_RETURN_IF_ERROR(writer_.Wait());  // every checkpoint on disk before the run reports them
  Summarise();
  if (!hooks_.rank_weights.empty()) YC_RETURN_IF_ERROR(SaveRankWeights());
  summary_.rank = dist_->rank();
  summary_.world_size = dist_->world_size();
  if (o_.synthetic_input && !summary_.interrupted && IsMain()) YC_RETURN_IF_ERROR(RunSyntheticProbe());
  if (summary_.interrupted) {
    Say("interrupted: " + last_.string() + " holds epoch " + std::to_string(state_.epoch + 1) + " batch " +
        std::to_string(state_.next_batch) + "; continue with --resume " + last_.string());
  }
  summary_.wall_seconds = Seconds(wall0_);
  return summary_;
}

// Ultralytics' final_eval validates best.pt once more, and its figures are the run's: the class table, the
// curves, the confusion matrices, val_batch*.jpg. When best.pt holds the last validated EMA, that validation
// already gave them (best.pt is its fp16 rounding); otherwise best.pt is read back and validated here.
Status TrainRun::ValidateBest() {
  const int last_validated = last_metrics_.value("epoch", 0);
  if (!validator_ || state_.best_epoch <= 0 || state_.best_epoch == last_validated) return Status::OK();
  YC_RETURN_IF_ERROR(writer_.Wait());  // best.pt is on disk
  YC_ASSIGN_OR_RETURN(std::unique_ptr<CheckpointReader> reader, CheckpointReader::Open(best_, stack_.target.device));
  YC_ASSIGN_OR_RETURN(DetectionModel best, reader->BuildInferenceModel(stack_.target.device));
  Say("Validating " + best_.string() + " (epoch " + std::to_string(state_.best_epoch) + ")...");
  const ValSamplePlots samples{out_, names_};
  const Clock::time_point t0 = Clock::now();
  const DepthwiseKernelScope depthwise(stack_.step->depthwise_policy().Otherwise());
  YC_ASSIGN_OR_RETURN(ValResult v, validator_->Run(*best, {}, hooks_.cancel, o_.plots ? &samples : nullptr));
  Say("validated in " + FormatNumber("%.2f", Seconds(t0)) + " s");
  summary_.final_metrics = v.metrics;
  last_confusion_ = v.confusion;
  return Status::OK();
}

// From the resume position to the last epoch, or until a cancel, an early stop or an error.
Status TrainRun::RunEpochs() {
  const int start = state_.epoch;
  session_start_epoch_ = start;
  plot_epochs_ = o_.epochs;
  budget_ = TimeBudget(o_.time);
  budget_.Start();  // Ultralytics' train_time_start: the budget counts from here, in every session
  if (budget_.enabled()) Say("Starting training for " + YamlFloat(o_.time) + " hours (time=, overrides epochs)...");
  // With time= the epoch count moves after every epoch and the run ends by its stop rules alone (an epoch
  // past a count that shrank below it still runs, as Ultralytics' while loop does).
  for (int epoch = start; budget_.enabled() || epoch < o_.epochs; ++epoch) {
    YC_ASSIGN_OR_RETURN(bool cancel, Distributed() ? AgreeCancel() : Result<bool>(Cancelled()));
    if (cancel) {
      summary_.interrupted = true;
      break;
    }
    const size_t first = epoch == start ? static_cast<size_t>(state_.next_batch) : 0;
    if (first > nb_) {
      return Status::InvalidArgument(Status::At(hooks_.resume.string(), "resume position is past the epoch's end"));
    }
    // --prune-at E: at the start of epoch E + 1 (index E), also when a run resumes from epoch E's last.pt.
    if (o_.prune_at > 0 && epoch == o_.prune_at && first == 0) YC_RETURN_IF_ERROR(PruneInRun());
    bool interrupted = false;
    YC_RETURN_IF_ERROR(TrainEpoch(epoch, first, &interrupted));
    if (interrupted) {
      summary_.interrupted = true;
      break;
    }
    bool stop = false;
    YC_RETURN_IF_ERROR(EndEpoch(epoch, &stop));
    ++summary_.epochs_run;
    if (stop) {
      summary_.early_stopped = !time_stopped_;
      break;
    }
  }
  return Status::OK();
}

void TrainRun::Summarise() {
  summary_.epochs_completed = state_.epoch;
  summary_.best_epoch = state_.best_epoch;
  summary_.best_fitness = state_.best_fitness;
  std::error_code ec;
  if (fs::exists(best_, ec)) summary_.best = best_;
  summary_.images_per_second =
      summary_.train_seconds > 0 ? static_cast<double>(summary_.train_images) / summary_.train_seconds : 0.0;
  if (gpu_) summary_.gpu_busy_percent = gpu_->MeanBusyPercent();
  if (IsMain() && stack_.step->graphs() != nullptr) Say(DescribeGraphedStepStats(stack_.step->graphs()->stats()));
}

// Every rank's final trainable parameters (registration order) as a tensor list (torch::load-able):
// what the DDP tests compare across ranks and against one process.
Status TrainRun::SaveRankWeights() {
  std::error_code ec;
  fs::create_directories(hooks_.rank_weights, ec);
  if (ec) return Status::IOError(Status::At(hooks_.rank_weights.string(), ec.message()));
  std::vector<at::Tensor> params;
  for (const auto& p : stack_.model->parameters()) params.push_back(p.detach().to(at::kCPU).contiguous());
  const fs::path path = hooks_.rank_weights / ("rank" + std::to_string(dist_->rank()) + ".pt");
  try {
    torch::save(params, path.string());
  } catch (const std::exception& e) {
    return ExceptionStatus(e, path.string());
  }
  return Status::OK();
}

// --synthetic-input. Under DDP the probe runs on rank 0 alone, without the reducer, at the per-rank
// batch: the ceiling of one device (the other ranks have left; no collective follows).
Status TrainRun::RunSyntheticProbe() {
  Say("synthetic-input: measuring the model's fwd+bwd+step ceiling on device-resident images with the label "
      "tables of " + std::to_string(probe_labels_.size()) + " training batches (" +
      std::to_string(o_.synthetic_iters) + " iterations)");
  TrainOptions probe = o_;  // the optimizer the run resolved ("auto" depends on the dataset size)
  probe.optimizer = OptimizerName(stack_.spec.kind);
  probe.lr0 = stack_.spec.lr;
  probe.momentum = stack_.spec.momentum;
  probe.batch = o_.batch / dist_->world_size();
  probe.nbs = std::max(1, o_.nbs / dist_->world_size());  // same accumulation count as the run
  YC_ASSIGN_OR_RETURN(SyntheticThroughput ips, MeasureSyntheticThroughput(probe, nc_, o_.synthetic_iters, probe_labels_));
  summary_.synthetic_images_per_second = ips.images_per_second;
  return Status::OK();
}

Result<TrainSummary> Train(const TrainOptions& options, const TrainHooks& hooks) {
  try {
    TrainRun run(options, hooks);
    return run.Execute();
  } catch (const std::exception& e) {
    return ExceptionStatus(e, "training failed");
  }
}

}  // namespace yc::trainer
