#include "trainer/engine/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>

#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <torch/serialize.h>
#include <torch/utils.h>

#include "libcache/base/mapped_file.h"
#include "libcache/base/pid_files.h"
#include "libcache/build/output_guard.h"
#include "libcache/cache.h"
#include "libcache/format/manifest.h"
#include "loader/loader.h"
#include "trainer/config/run_dir.h"
#include "trainer/config/sample_order.h"
#include "trainer/distributed/distributed.h"
#include "trainer/distributed/grad_reducer.h"
#include "trainer/engine/ceiling_probe.h"
#include "trainer/engine/ema.h"
#include "trainer/engine/fused_step.h"
#include "trainer/engine/grad_scaler.h"
#include "trainer/engine/lr_schedule.h"
#include "trainer/engine/optimizer.h"
#include "trainer/engine/run_identity.h"
#include "trainer/engine/train_step.h"
#include "trainer/eval/val_plots.h"
#include "trainer/eval/validator.h"
#include "trainer/io/checkpoint.h"
#include "trainer/io/pretrained.h"
#include "trainer/loss/loss.h"
#include "trainer/model/detection_model.h"
#include "trainer/model/sync_batch_norm.h"
#include "trainer/plots/batch_grid.h"
#include "trainer/plots/charts.h"
#include "trainer/plots/image_file.h"
#include "trainer/runtime/autocast.h"
#include "trainer/runtime/background_writer.h"
#include "trainer/runtime/device_feed.h"
#include "trainer/runtime/gpu_monitor.h"

namespace yc::trainer {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Label tables the synthetic-input probe cycles through (from the run's last epoch).
constexpr size_t kProbeBatches = 8;

bool EarlyStopping::Update(int epoch, double fitness) {
  improved_ = false;
  if (fitness > best_fitness_ || best_fitness_ <= 0) {
    best_fitness_ = fitness;
    best_epoch_ = epoch;
    improved_ = true;
  }
  return patience_ > 0 && epoch - best_epoch_ >= patience_;
}

namespace {

// A picture that cannot be drawn is not worth stopping a run for; a build without PLplot says so once
// (in the run summary), not per picture.
void WarnIfNotPlotted(const Status& st) {
  if (!st.ok() && st.code() != Status::Code::kUnsupported) std::fprintf(stderr, "warning: %s\n", st.ToString().c_str());
}

double Seconds(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

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

nlohmann::json SummaryJson(const MetricsSummary& m) {
  return {{"precision", m.precision}, {"recall", m.recall}, {"mAP50", m.map50}, {"mAP50-95", m.map50_95},
          {"fitness", m.fitness}};
}

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string ParamGroupLine(const torch::nn::Module& model, const OptimizerSpec& spec, double wd, int64_t accumulate) {
  ParamGroups g = SplitParameters(model);
  return std::string("optimizer: ") + OptimizerName(spec.kind) + "(lr=" + Fmt("%g", spec.lr) +
         ", momentum=" + Fmt("%g", spec.momentum) + ") with parameter groups " + std::to_string(g.norm_weights.size()) +
         " weight(decay=0.0), " + std::to_string(g.decay.size()) + " weight(decay=" + Fmt("%g", wd) + "), " +
         std::to_string(g.biases.size()) + " bias(decay=0.0); accumulate " + std::to_string(accumulate) +
         " batches per step";
}

}  // namespace

Result<TrainOptions> ResumeOptions(const fs::path& checkpoint) {
  Result<std::unique_ptr<CheckpointReader>> r = CheckpointReader::Open(checkpoint, at::Device(at::kCPU));
  if (!r.ok()) return r.status();
  TrainOptions o = (*r)->meta().options;
  const fs::path parent = checkpoint.parent_path();
  if (parent.filename() == "weights" && parent.has_parent_path()) o.out = parent.parent_path().string();
  return o;
}

namespace {

// Everything one run holds; Train() below is its driver.
class Run {
 public:
  Run(const TrainOptions& options, const TrainHooks& hooks) : o_(options), hooks_(hooks) {}
  Result<TrainSummary> Execute();

 private:
  void Say(const std::string& line) {
    if (hooks_.observer != nullptr) hooks_.observer->OnMessage(line);
  }
  bool Cancelled() const { return hooks_.cancel != nullptr && hooks_.cancel->load(); }
  bool IsMain() const { return dist_ == nullptr || dist_->is_main(); }
  bool Distributed() const { return dist_ != nullptr && dist_->distributed(); }
  // Whether any rank was asked to stop (cancel) or found a non-finite loss or weight (diverged; this
  // rank's own finding comes in). Under DDP a collective, so every rank must call it at the same point;
  // all ranks then leave at the same batch (the resume position is one for all of them).
  struct StopVote {
    bool cancel = false, diverged = false;
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
  // Under DDP: averages every defined .grad across ranks (pending accumulated gradients before an
  // interrupt's checkpoint; see TrainEpoch).
  Status AverageGrads();
  Status SaveRankWeights();
  Status Setup();
  Status TrainEpoch(int epoch, size_t first_batch, bool* interrupted);
  Status EndEpoch(int epoch, bool* stop);
  Status EndEpochMain(int epoch, bool* stop);  // rank 0: validation, checkpoints, results
  // last.pt's contents now (a snapshot: it is serialised and written during the next epoch).
  Result<std::shared_ptr<CheckpointSnapshot>> SnapshotLast(bool pending_grads);
  // best.pt's contents now: the release form (EMA only, fp16; see trainer/io/checkpoint.h).
  Result<std::shared_ptr<CheckpointSnapshot>> SnapshotBest();
  CheckpointMeta Meta() const;  // the run as it stands, for either file
  // The resumed checkpoint's cache is --data's, or hooks_.resume_other_data allows another.
  Status CheckResumedData(const CheckpointMeta& meta);
  Status SaveLast(bool pending_grads);  // written before returning (interrupts)

  TrainOptions o_;
  TrainHooks hooks_;
  Clock::time_point wall0_ = Clock::now();

  at::Device device_{at::kCPU};
  AmpConfig amp_;
  bool channels_last_ = false;
  std::shared_ptr<Cache> cache_;
  std::vector<std::string> names_;
  int64_t nc_ = 0;
  ModelName model_name_;
  std::unique_ptr<CheckpointReader> resume_;
  std::string run_id_;             // kept across resumes (run_identity.h)
  nlohmann::json data_identity_;   // the cache's
  std::unique_ptr<ModelWeights> pretrained_;  // --weights, until transferred into the model
  TrainState state_;
  fs::path out_, weights_, last_, best_;
  std::unique_ptr<DistContext> dist_;       // world 1: a local no-op context
  std::unique_ptr<GradReducer> reducer_;   // only when distributed

  DetectionModel model_{nullptr};
  std::unique_ptr<DeviceFeed> feed_;
  std::unique_ptr<Loader> loader_;
  size_t nb_ = 0;
  OptimizerSpec spec_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<FusedStep> fused_;  // null: torch::optim's own step
  std::unique_ptr<ModelEMA> ema_;
  std::unique_ptr<GradScaler> scaler_;
  std::unique_ptr<LrSchedule> schedule_;
  std::unique_ptr<DetectionLoss> loss_;
  std::unique_ptr<TrainStep> train_step_;
  std::unique_ptr<Validator> validator_;
  std::unique_ptr<ResultsLog> results_;
  std::unique_ptr<GpuMonitor> gpu_;
  std::unique_ptr<EarlyStopping> stopper_;
  BackgroundWriter writer_;  // checkpoints and results.png after each epoch
  std::vector<ProbeLabels> probe_labels_;  // --synthetic-input: the last epoch's first label tables

  // Epoch accumulators (device) and bookkeeping.
  at::Tensor epoch_loss_;
  at::Tensor loss_history_;  // (nb_, 3): this epoch's loss items per batch, scanned for NaN/inf at log points
  size_t losses_checked_ = 0;  // batches of this epoch before this one were scanned
  int saved_epoch_ = 0;        // epochs completed in the last.pt this run wrote (0: none yet)
  std::vector<fs::path> epoch_files_;  // weights/epochN.pt this run wrote, oldest first (writer thread only)
  int64_t epoch_batches_ = 0;
  int64_t last_ni_ = -1;
  Clock::time_point epoch_t0_;
  double epoch_train_s_ = 0;
  double epoch_data_wait_s_ = 0;
  nlohmann::json last_metrics_ = nlohmann::json::object();
  bool plot_disabled_ = false;
  std::vector<double> last_confusion_;  // of the last validation, for the final plots

  TrainSummary summary_;
};

Status Run::Setup() {
  YC_RETURN_IF_ERROR(ValidateTrainOptions(o_));
  // --weights (a fresh run; a resumed one has its weights in the checkpoint): read first, so a bad file
  // fails before any work, and the architecture comes from it unless --model names one.
  if (!o_.weights.empty() && hooks_.resume.empty()) {
    Result<ModelWeights> w = ReadModelWeights(o_.weights);
    if (!w.ok()) return w.status();
    pretrained_ = std::make_unique<ModelWeights>(std::move(*w));
    if (o_.model.empty()) o_.model = ModelNameString(pretrained_->name);
  }
  Result<ModelName> model_name = ParseModelName(o_.model);
  if (!model_name.ok()) return Status::InvalidArgument("--model: " + model_name.status().message());
  model_name_ = *model_name;
  Result<at::Device> device = ParseDevice(o_.device);
  if (!device.ok()) return device.status();
  device_ = *device;
  // Data-parallel ranks (torchrun or a shell loop setting RANK/WORLD_SIZE/...); none set: one process.
  Result<DistEnv> env = DistEnvFromEnvironment();
  if (!env.ok()) return env.status();
  if (env->world_size > 1 && o_.batch % env->world_size != 0) {
    return Status::InvalidArgument("--batch " + std::to_string(o_.batch) + " is the global batch; it must be a multiple of "
                                   "WORLD_SIZE " + std::to_string(env->world_size));
  }
  Result<std::unique_ptr<DistContext>> dist =
      InitDistributed(*env, device_.is_cuda() ? DistBackend::kNccl : DistBackend::kGloo);
  if (!dist.ok()) return dist.status();
  dist_ = std::move(*dist);
  if (device_.is_cuda() && dist_->distributed()) device_ = dist_->device();  // cuda:LOCAL_RANK
  if (!dist_->is_main()) hooks_.observer = nullptr;  // rank 0 alone logs (and validates and saves)
  Result<AmpConfig> amp = ResolveAmp(o_, device_);
  if (!amp.ok()) return amp.status();
  amp_ = *amp;
  if (o_.torch_threads > 0) at::set_num_threads(o_.torch_threads);
  const std::string tuning = ConfigureDevice(device_, o_.cudnn_benchmark);
  channels_last_ = device_.is_cuda() && o_.channels_last;
  Say("device: " + DeviceDescription(device_) + (device_.is_cuda() ? "; " + tuning : std::string()) +
      (channels_last_ ? "; channels_last" : ""));
  if (dist_->distributed()) {
    Say(std::string("distributed: ") + std::to_string(dist_->world_size()) + " ranks (" +
        DistBackendName(dist_->backend()) + "), global batch " + std::to_string(o_.batch) + " = " +
        std::to_string(o_.batch / dist_->world_size()) + " per rank");
  }
  Say("amp: " + DescribeAmp(amp_));

  // Data.
  Result<std::unique_ptr<Cache>> cache = Cache::Open(o_.data);
  if (!cache.ok()) return cache.status();
  cache_ = std::shared_ptr<Cache>(std::move(*cache));
  names_ = cache_->manifest().names;
  nc_ = static_cast<int64_t>(names_.size());
  if (nc_ < 1) return Status::DataError(Status::At(o_.data, "the cache's manifest names no classes"));
  Result<nlohmann::json> identity = CacheIdentity(*cache_);
  if (!identity.ok()) return identity.status();
  data_identity_ = *identity;
  const RecordSource* train = cache_->split(o_.train_split);
  if (train == nullptr) return Status::NotFound(Status::At(o_.data, "no '" + o_.train_split + "' split"));
  if (train->size() == 0) return Status::DataError(Status::At(o_.data, "the '" + o_.train_split + "' split is empty"));
  const RecordSource* val = o_.val ? cache_->split(o_.val_split) : nullptr;
  if (o_.val && (val == nullptr || val->size() == 0)) {
    Say("warning: no '" + o_.val_split + "' split with images: training without validation (no best.pt)");
    o_.val = false;
  }
  if (cache_->manifest().imgsz > 0 && cache_->manifest().imgsz < o_.imgsz) {
    Say("warning: the cache holds images at " + std::to_string(cache_->manifest().imgsz) + " px, training at " +
        std::to_string(o_.imgsz) + " upsamples them");
  }

  // Sampling order: resolved once (a resumed run's checkpoint holds the resolved one) and stored in o_,
  // so args.json and the checkpoints repeat it.
  if (o_.order == "auto" || (o_.order == "windowed" && o_.window_mb <= 0)) {
    Result<uint64_t> budget = PageCacheBudget(o_.ram_budget_gb);
    if (!budget.ok()) return Status(budget.status()).WithContext("--order auto (give --ram-budget GB)");
    const OrderChoice choice = ChooseSampleOrder(o_, train->data_bytes(), *budget,
                                                 cache_->manifest().codec.kind != Codec::Kind::kNone);
    o_.order = choice.order;
    o_.window_mb = choice.window_mb;
    if (Distributed()) {  // rank 0's choice: each rank reads its own MemAvailable, and all must agree
      std::vector<at::Tensor> pick{
          at::tensor({o_.order == "windowed" ? 1.0 : 0.0, o_.window_mb}, at::TensorOptions().dtype(at::kDouble))};
      YC_RETURN_IF_ERROR(dist_->Broadcast(pick, 0));
      o_.order = pick[0][0].item<double>() != 0 ? "windowed" : "shuffle";
      o_.window_mb = pick[0][1].item<double>();
    }
    Say(choice.reason);
  } else {
    const std::string window = std::to_string(static_cast<int64_t>(o_.window_mb));
    Say("order: " + o_.order + (o_.order == "windowed" ? ", window " + window + " MiB" : std::string()) +
        " (given, or kept from the resumed run)");
  }
  if (o_.order == "windowed") {
    const int ranks = dist_->world_size();
    Say(WindowIoFor(o_, ranks) == WindowIo::kDirect
            ? "windows: read with O_DIRECT into the loader's buffers, around the page cache (--window-io " +
                  o_.window_io + ")"
            : "windows: read through the page cache" +
                  (ranks > 1 ? ", which the " + std::to_string(ranks) + " ranks share" : std::string()) +
                  " (--window-io " + o_.window_io + ")");
  }

  // Resume state.
  if (!hooks_.resume.empty()) {
    Result<std::unique_ptr<CheckpointReader>> r = CheckpointReader::Open(hooks_.resume, device_);
    if (!r.ok()) return r.status();
    resume_ = std::move(*r);
    const CheckpointMeta& meta = resume_->meta();
    if (resume_->is_release()) {
      return Status::InvalidArgument(Status::At(hooks_.resume.string(), "release weights (EMA only, fp16) cannot be "
                                                                        "resumed; resume from the run's weights/last.pt"));
    }
    if (meta.state.finished) {
      return Status::InvalidArgument(Status::At(hooks_.resume.string(), "this run already finished; nothing to resume"));
    }
    if (meta.nc != nc_ || meta.names != names_ || meta.model_scale != ModelScaleName(model_name_.scale) ||
        meta.model_family != ModelFamilyName(model_name_.family)) {
      return Status::InvalidArgument(Status::At(hooks_.resume.string(), "checkpoint is a " + MetaModelName(meta) +
                                                                            " for " + std::to_string(meta.nc) +
                                                                            " classes; it does not fit this model/data"));
    }
    if (!resume_->has_optimizer()) {
      return Status::InvalidArgument(Status::At(hooks_.resume.string(), "has no optimizer state; cannot resume"));
    }
    YC_RETURN_IF_ERROR(CheckResumedData(meta));
    state_ = meta.state;
    last_metrics_ = meta.metrics;
    run_id_ = meta.run_id;
  }
  if (run_id_.empty()) run_id_ = NewRunId();

  // Output directory: an explicit --out as given, else <project>/<name> incremented as Ultralytics does.
  // Only rank 0 picks (and creates) it; other ranks write nothing there. The choice goes into o_.out, so
  // args.json and the checkpoints name it and --resume continues in it.
  // Not inside the dataset or the cache (libcache/build/output_guard.h): checked on <project>/<name> before
  // it is created (the incremented siblings are in the same folder).
  YC_RETURN_IF_ERROR(CheckOutsideCacheData(o_.out.empty() ? fs::path(o_.project) / o_.name : fs::path(o_.out),
                                           cache_->dir(), cache_->manifest()));
  if (o_.out.empty()) {
    Result<fs::path> dir = ResolveRunDir("", o_.project, o_.name, o_.exist_ok, /*create=*/IsMain());
    if (!dir.ok()) return dir.status();
    o_.out = dir->string();
  }
  out_ = o_.out;
  if (IsMain()) Say("run directory: " + out_.string());
  weights_ = out_ / "weights";
  last_ = weights_ / "last.pt";
  best_ = weights_ / "best.pt";
  std::error_code ec;
  // Every rank checks (the same answer on one host); only rank 0 writes into the run directory.
  if (resume_) YC_RETURN_IF_ERROR(CheckRunFolder(out_, hooks_.resume, resume_->meta()));
  if (resume_ == nullptr && !o_.exist_ok && fs::exists(last_, ec)) {
    return Status::InvalidArgument(Status::At(out_.string(), "already holds a run (weights/last.pt); use --resume "
                                                             "to continue it, --exist-ok to overwrite, or another --out"));
  }
  if (IsMain()) {
    fs::create_directories(weights_, ec);
    if (ec) return Status::IOError(Status::At(weights_.string(), ec.message()));
    for (const fs::path& dir : {out_, weights_}) RemoveStaleTempFiles(dir);  // a killed run's half-written files
    std::ofstream args(out_ / "args.json", std::ios::trunc);
    nlohmann::json args_json = ToJson(o_);
    args_json["run_id"] = run_id_;  // whose folder this is (run_identity.h)
    args << args_json.dump(2) << "\n";
    if (!args) return Status::IOError(Status::At((out_ / "args.json").string(), "cannot write"));
  }

  // Model: same init as Ultralytics' DetectionModel, from the seeded default generator.
  torch::manual_seed(o_.seed);
  model_ = DetectionModel(ModelOptions(model_name_, nc_));
  model_->to(device_);
  if (channels_last_) ToChannelsLast(*model_);
  if (resume_) YC_RETURN_IF_ERROR(resume_->LoadModule("model", *model_));
  if (pretrained_) {  // Ultralytics' intersect_dicts: every tensor whose name and shape match
    const TransferReport t = TransferWeights(*pretrained_, *model_);
    Say("Transferred " + std::to_string(t.transferred) + "/" + std::to_string(t.total) +
        " items from pretrained weights " + o_.weights + " (" + pretrained_->description + ")");
    if (!t.not_transferred.empty()) Say("left at init: " + CompactNames(t.not_transferred));
    if (pretrained_->nc != nc_) {
      Say("classes: the weights have " + std::to_string(pretrained_->nc) + ", the data " + std::to_string(nc_) +
          "; the class branches start from init");
    }
    if (ModelNameString(pretrained_->name) != ModelNameString(model_name_)) {
      Say("--model " + ModelNameString(model_name_) + " differs from the weights' " + ModelNameString(pretrained_->name) +
          ": only tensors of matching name and shape were taken");
    }
    pretrained_.reset();  // the tensors are in the model now
  }
  if (o_.freeze > 0) {  // before the optimizer is built: frozen parameters join no group (resume too)
    const int64_t frozen = FreezeLayers(*model_, o_.freeze);
    Say("freeze: layers model.0-" + std::to_string(o_.freeze - 1) + " and .dfl (" + std::to_string(frozen) +
        " parameter tensors)");
  }
  if (Distributed()) {
    // Identical start on every rank (seeded init or the same checkpoint already give it; this makes it
    // a guarantee), then the gradient all-reduce hooked onto the parameters on their final device.
    YC_RETURN_IF_ERROR(dist_->BroadcastModule(*model_));
    reducer_ = std::make_unique<GradReducer>(*model_, dist_->group());
  }
  model_->train();
  Say("model: " + ModelNameString(model_name_) + ", " + std::to_string(nc_) + " classes, " +
      std::to_string(CountParameters(*model_)) + " parameters");

  // Loader and device feed.
  feed_ = std::make_unique<DeviceFeed>(device_, channels_last_, nc_);
  LoaderOptions lo = TrainLoaderOptions(o_, dist_->rank(), dist_->world_size());
  lo.layout = feed_->layout();
  lo.allocator = MakeBatchAllocator(device_);
  std::shared_ptr<const RecordSource> train_source(cache_, train);  // aliasing: keeps the cache alive
  Result<std::unique_ptr<Loader>> loader = Loader::Create(train_source, lo);
  if (!loader.ok()) return Status(loader.status()).WithContext("train loader");
  loader_ = std::move(*loader);
  nb_ = loader_->batches_per_epoch();
  if (o_.plots && IsMain() && resume_ == nullptr) {
    // labels.jpg from every label of the train split, drawn by the background writer while training starts.
    writer_.Submit([source = train_source, names = names_, jpg = out_ / "labels.jpg"]() -> Status {
      std::vector<Box> boxes;
      ScratchBuffer scratch;
      RecordView view;
      for (size_t r = 0; r < source->size(); ++r) {
        if (!source->Read(r, &view, &scratch).ok()) continue;  // the loader reports damaged records itself
        boxes.insert(boxes.end(), view.boxes, view.boxes + view.box_count);
      }
      WarnIfNotPlotted(PlotLabels(boxes, names, jpg));
      return Status::OK();
    });
  }
  Say("data: " + o_.data + ": " + std::to_string(loader_->dataset_size()) + " train images, " +
      (o_.val ? std::to_string(val->size()) + " val images" : std::string("no validation")) + "; imgsz " +
      std::to_string(o_.imgsz) + ", batch " + std::to_string(o_.batch) + ", " + std::to_string(nb_) + " batches/epoch" +
      (Distributed() ? " per rank" : ""));

  // Optimizer (Ultralytics build_optimizer), EMA, scaler, schedule, loss.
  const int64_t accumulate = AccumulateSteps(o_.nbs, o_.batch);
  const double wd = ScaledWeightDecay(o_.weight_decay, o_.batch, accumulate, o_.nbs);
  const int64_t iterations =
      OptimizerIterations(static_cast<int64_t>(loader_->dataset_size()), o_.batch, o_.nbs, o_.epochs);
  Result<OptimizerSpec> spec = ResolveOptimizer(o_.optimizer, o_.lr0, o_.momentum, o_.warmup_bias_lr, nc_, iterations);
  if (!spec.ok()) return spec.status();
  spec_ = *spec;
  optimizer_ = BuildOptimizer(*model_, spec_, wd);
  Say(ParamGroupLine(*model_, spec_, wd, accumulate));
  if (resume_) {
    YC_RETURN_IF_ERROR(resume_->LoadOptimizer(*optimizer_));
    YC_RETURN_IF_ERROR(resume_->LoadGrads(*model_));
  }
  ema_ = std::make_unique<ModelEMA>(*model_, 0.9999, 2000.0, state_.ema_updates);
  if (resume_ && resume_->has_ema()) YC_RETURN_IF_ERROR(resume_->LoadModule("ema", *ema_->module()));
  GradScalerOptions so;
  so.enabled = amp_.scaler;
  scaler_ = std::make_unique<GradScaler>(so);
  if (resume_ && amp_.scaler) scaler_->LoadState(state_.scaler_scale, state_.scaler_growth, device_);
  LrScheduleOptions lso;
  lso.epochs = o_.epochs;
  lso.lrf = o_.lrf;
  lso.cos_lr = o_.cos_lr;
  lso.warmup_epochs = o_.warmup_epochs;
  lso.warmup_momentum = o_.warmup_momentum;
  lso.warmup_bias_lr = spec_.warmup_bias_lr;
  lso.momentum = o_.momentum;  // Ultralytics warms up to args.momentum even after the auto rule
  lso.nbs = o_.nbs;
  lso.batch = o_.batch;
  schedule_ = std::make_unique<LrSchedule>(lso);
  loss_ = std::make_unique<DetectionLoss>(nc_, model_->strides(), LossOptions{o_.box, o_.cls, o_.dfl});
  if (o_.sync_bn && Distributed()) {
    auto reducer = std::make_shared<StatsReducer>(*dist_);
    EnableSyncBatchNorm(*model_, reducer);
    loss_->set_global_normaliser(reducer);
    Say("distributed: SyncBatchNorm and the loss normaliser over the global batch (--sync-bn)");
  } else if (o_.sync_bn) {
    Say("--sync-bn: one process, nothing to synchronise");
  }
  if (o_.fused_optimizer && FusedStep::Supported(*optimizer_)) {
    fused_ = std::make_unique<FusedStep>(*optimizer_);  // after LoadOptimizer: it reads the loaded state
    Say("optimizer step: fused multi-tensor kernels, inf/nan steps skipped on the device");
  }
  train_step_ = std::make_unique<TrainStep>(model_, *optimizer_, *ema_, *scaler_, *loss_, amp_, o_.clip_grad,
                                            device_.type(), fused_.get(), reducer_.get(), dist_->world_size());
  stopper_ = std::make_unique<EarlyStopping>(o_.patience, state_.best_fitness, state_.best_epoch);

  if (o_.val && IsMain()) {  // rank 0 validates (the EMA is identical on every rank)
    ValOptions vo;
    vo.batch = 2 * o_.batch;
    vo.imgsz = o_.imgsz;
    vo.nms.conf = o_.val_conf;
    vo.nms.iou = o_.val_iou;
    vo.nms.max_det = o_.max_det;
    vo.compute_loss = o_.val_loss;
    vo.loss = LossOptions{o_.box, o_.cls, o_.dfl};
    vo.amp = amp_.enabled;
    vo.amp_dtype = amp_.dtype;
    vo.channels_last = channels_last_;
    vo.threads = o_.threads;
    vo.prefetch = o_.prefetch;
    std::shared_ptr<const RecordSource> val_source(cache_, val);
    Result<std::unique_ptr<Validator>> v = Validator::Create(val_source, vo, device_, nc_);
    if (!v.ok()) return v.status();
    validator_ = std::move(*v);
  }
  if (IsMain()) {
    Result<std::unique_ptr<ResultsLog>> log = ResultsLog::Open(out_ / "results.csv", resume_ ? state_.epoch : -1);
    if (!log.ok()) return log.status();
    results_ = std::move(*log);
  }
  if (device_.is_cuda()) {
    gpu_ = std::make_unique<GpuMonitor>(device_.index());
    if (!gpu_->available()) Say("gpu busy %: n/a (" + gpu_->unavailable_reason() + ")");
  }
  if (resume_) {
    Say("resumed from " + hooks_.resume.string() + " at epoch " + std::to_string(state_.epoch + 1) +
        (state_.next_batch > 0 ? ", batch " + std::to_string(state_.next_batch) : std::string()));
  }
  return Status::OK();
}

CheckpointMeta Run::Meta() const {
  CheckpointMeta m;
  m.model_family = ModelFamilyName(model_name_.family);
  m.model_scale = ModelScaleName(model_name_.scale);
  m.nc = nc_;
  m.names = names_;
  m.options = o_;
  m.state = state_;
  m.created = ManifestTimestampNow();
  m.metrics = last_metrics_;
  m.run_id = run_id_;
  m.data_identity = data_identity_;
  return m;
}

Status Run::CheckResumedData(const CheckpointMeta& meta) {
  const std::string resumed = hooks_.resume.string();
  if (meta.data_identity.empty()) {
    Say("warning: " + resumed + " predates checkpoints recording their cache; cannot check that --data " + o_.data +
        " is the dataset it trained on");
    return Status::OK();
  }
  if (meta.data_identity == data_identity_) return Status::OK();
  const std::string what = resumed + " trained on " + meta.options.data + " (" + DescribeCacheIdentity(meta.data_identity) +
                           "); --data " + o_.data + " is another cache (" + DescribeCacheIdentity(data_identity_) + ")";
  if (!hooks_.resume_other_data) {
    return Status::InvalidArgument("--resume " + what + "; give --resume-other-data to continue on it anyway");
  }
  Say("warning: --resume-other-data: " + what + "; continuing on it");
  return Status::OK();
}

Result<std::shared_ptr<CheckpointSnapshot>> Run::SnapshotBest() {
  Result<std::shared_ptr<CheckpointSnapshot>> snap = CheckpointSnapshot::Take(ReleaseContents(Meta(), *ema_->module()));
  if (!snap.ok()) return Status(snap.status()).WithContext(best_.string());
  return snap;
}

Result<std::shared_ptr<CheckpointSnapshot>> Run::SnapshotLast(bool pending_grads) {
  state_.ema_updates = ema_->updates();
  if (amp_.scaler) {
    state_.scaler_scale = scaler_->scale_value();
    state_.scaler_growth = scaler_->growth_value();
  }
  CheckpointContents c;
  c.meta = Meta();
  c.model = model_.get();
  c.ema = ema_->module().get();
  if (fused_) fused_->SyncState();  // Adam step counts live on the device while training
  c.optimizer = optimizer_.get();
  c.grads = pending_grads;
  Result<std::shared_ptr<CheckpointSnapshot>> snap = CheckpointSnapshot::Take(c);
  if (!snap.ok()) return Status(snap.status()).WithContext(last_.string());
  return snap;
}

Status Run::SaveLast(bool pending_grads) {
  YC_RETURN_IF_ERROR(writer_.Wait());  // an earlier background write must not land after this one
  Result<std::shared_ptr<CheckpointSnapshot>> snap = SnapshotLast(pending_grads);
  if (!snap.ok()) return snap.status();
  return (*snap)->WriteTo(last_);
}

Status Run::TrainEpoch(int epoch, size_t first_batch, bool* interrupted) {
  *interrupted = false;
  model_->train();
  if (hooks_.observer) hooks_.observer->OnEpochStart(epoch + 1, o_.epochs, nb_);
  epoch_t0_ = Clock::now();
  epoch_loss_ = at::zeros({3}, at::TensorOptions().dtype(at::kFloat).device(device_));
  if (!loss_history_.defined()) {
    loss_history_ = at::zeros({static_cast<int64_t>(nb_), 3}, at::TensorOptions().dtype(at::kFloat).device(device_));
  }
  losses_checked_ = first_batch;
  epoch_batches_ = 0;
  if (first_batch > 0) {  // resumed inside this epoch: continue its running means
    epoch_loss_.copy_(at::tensor(std::vector<float>(state_.epoch_loss_sum.begin(), state_.epoch_loss_sum.end())));
    epoch_batches_ = state_.epoch_loss_batches;
  }
  if (gpu_) gpu_->Start();
  epoch_data_wait_s_ = 0;
  // The loader's next batch; the time blocked here is what the GPU may have idled for.
  std::shared_ptr<Batch> next;
  auto next_batch = [&]() -> Status {
    const auto t = Clock::now();
    Status st = loader_->Next(&next);
    epoch_data_wait_s_ += Seconds(t);
    return st;
  };
  const auto t_train = Clock::now();
  // After the previous epoch the loader has run ahead into this one (its first batches were prepared
  // while the GPU validated); StartEpoch adopts them, or starts afresh on resume.
  YC_RETURN_IF_ERROR(loader_->StartEpoch(epoch, first_batch));
  YC_RETURN_IF_ERROR(next_batch());
  if (next) YC_RETURN_IF_ERROR(feed_->Stage(std::move(next)));
  int64_t images = 0;
  size_t i = first_batch;
  while (feed_->staged() > 0) {
    // Stage batch i + 1 before computing batch i: on CUDA its copy overlaps this batch's compute.
    YC_RETURN_IF_ERROR(next_batch());
    if (next) YC_RETURN_IF_ERROR(feed_->Stage(std::move(next)));
    Result<DeviceBatch> db = feed_->Take();
    if (!db.ok()) return db.status();
    const int64_t ni = static_cast<int64_t>(i) + static_cast<int64_t>(nb_) * epoch;
    if (o_.plots && IsMain() && ni < 3 && resume_ == nullptr && db->host) {
      // train_batch0-2.jpg, as Ultralytics' plot_training_samples: the grid is copied out here (the host
      // buffer goes back to the loader), encoded and written by the background writer.
      cv::Mat grid = RenderBatchGrid(*db->host, names_);
      writer_.Submit([grid, jpg = out_ / ("train_batch" + std::to_string(ni) + ".jpg")]() -> Status {
        WarnIfNotPlotted(WriteImageFile(jpg, grid));
        return Status::OK();
      });
    }
    const StepSettings s = schedule_->At(epoch, ni, static_cast<int64_t>(nb_), spec_.lr);
    ApplyStepSettings(*optimizer_, s);
    const bool step_now = ni - state_.last_opt_step >= s.accumulate;  // before backward: DDP sync or no_sync
    if (o_.synthetic_input && i - first_batch < kProbeBatches) {
      if (i == first_batch) probe_labels_.clear();
      probe_labels_.push_back({db->labels, db->max_boxes});
    }
    Result<at::Tensor> items = train_step_->ForwardBackward(db->images, db->labels, db->max_boxes, step_now);
    if (!items.ok()) return items.status();
    epoch_loss_.add_(*items);  // this rank's losses (Ultralytics logs rank 0's too)
    loss_history_[static_cast<int64_t>(i)].copy_(*items);  // on the device; scanned at the next log point
    ++epoch_batches_;
    last_ni_ = ni;
    if (step_now) {
      YC_RETURN_IF_ERROR(train_step_->OptimizerStep());
      state_.last_opt_step = ni;
      ++state_.optimizer_steps;
    }
    images += db->size;
    ++i;
    const bool last = feed_->staged() == 0;
    const bool log_point = (i - first_batch) % static_cast<size_t>(o_.log_every) == 0 || last;
    if (hooks_.observer && log_point) {
      // The one host read of the losses per log interval.
      auto mean = (epoch_loss_ / static_cast<double>(std::max<int64_t>(epoch_batches_, 1))).to(at::kCPU).to(at::kDouble);
      BatchProgress p;
      p.epoch = epoch + 1;
      p.epochs = o_.epochs;
      p.batch = i;
      p.batches = nb_;
      for (int k = 0; k < 3; ++k) p.loss[k] = mean[k].item<double>();
      p.instances = static_cast<int64_t>(db->host->label_count());
      p.imgsz = o_.imgsz;
      p.images_per_second = static_cast<double>(images) / std::max(Seconds(t_train), 1e-9);
      p.gpu_mem_gb = DeviceMemoryReservedBytes(device_) / 1e9;
      hooks_.observer->OnTrainProgress(p);
    }
    // One process: checked every batch. DDP: agreed at the log points (a collective, and on CUDA a host
    // sync the log point pays anyway), so a stop takes effect within --log-every batches on all ranks.
    // The losses since the last log point are scanned for NaN/inf there too, and before an interrupt's
    // checkpoint: a diverged run stops (every rank) without saving its weights.
    bool cancel = Distributed() ? false : Cancelled();
    std::string bad_loss;
    const size_t unchecked = losses_checked_;
    if (log_point || cancel) {
      bad_loss = FindNonFiniteLoss(epoch, losses_checked_, i);
      losses_checked_ = i;
    }
    bool diverged = !bad_loss.empty();
    if (Distributed() && log_point) {
      Result<StopVote> agreed = AgreeStop(diverged);
      if (!agreed.ok()) return agreed.status();
      cancel = agreed->cancel;
      diverged = agreed->diverged;
    }
    if (diverged) {
      if (bad_loss.empty()) {
        bad_loss = "non-finite loss on another rank at epoch " + std::to_string(epoch + 1) + "/" +
                   std::to_string(o_.epochs) + ", batches " + std::to_string(unchecked + 1) + ".." + std::to_string(i);
      }
      return Diverged(bad_loss);
    }
    if (cancel && i < nb_) {
      if (gpu_) gpu_->Stop();
      auto sums = epoch_loss_.to(at::kCPU).to(at::kDouble);
      for (int k = 0; k < 3; ++k) state_.epoch_loss_sum[k] = sums[k].item<double>();
      state_.epoch_loss_batches = epoch_batches_;
      state_.epoch = epoch;
      state_.next_batch = static_cast<int64_t>(i);
      state_.train_seconds += Seconds(epoch_t0_);
      state_.images_seen += images;
      summary_.train_images += images;
      summary_.train_seconds += Seconds(t_train);
      const bool pending = last_ni_ > state_.last_opt_step;
      // Pending no-sync gradients differ per rank; their average is what the next synced step would
      // have reduced (it is linear), so every rank resuming from the averaged .grad continues exactly.
      if (pending && Distributed()) YC_RETURN_IF_ERROR(AverageGrads());
      if (IsMain()) {
        // The losses were finite, but the last step may still have produced inf weights.
        const std::string bad = FindNonFiniteWeights();
        if (!bad.empty()) return Diverged("non-finite weights at epoch " + std::to_string(epoch + 1) + " batch " +
                                          std::to_string(i) + ": " + bad);
        YC_RETURN_IF_ERROR(SaveLast(pending));
      }
      *interrupted = true;
      return Status::OK();
    }
  }
  SynchronizeDevice(device_);
  if (gpu_) gpu_->Stop();
  epoch_train_s_ = Seconds(t_train);
  summary_.train_seconds += epoch_train_s_;
  summary_.train_images += images;
  state_.images_seen += images;
  return Status::OK();
}

Status Run::EndEpoch(int epoch, bool* stop) {
  *stop = false;
  // Finite losses can still end in inf weights (the epoch's last step); neither they nor an EMA of them
  // are validated or saved. Every rank checks its own (BatchNorm statistics are per rank).
  std::string bad = FindNonFiniteWeights();
  bool diverged = !bad.empty();
  if (Distributed()) {
    Result<StopVote> agreed = AgreeStop(diverged);
    if (!agreed.ok()) return agreed.status();
    diverged = agreed->diverged;
    if (bad.empty()) bad = "on another rank";
  }
  if (diverged) return Diverged("non-finite weights after epoch " + std::to_string(epoch + 1) + "/" +
                                std::to_string(o_.epochs) + ": " + bad);
  // Gradients pending for the next epoch's step go into last.pt; under DDP they are this rank's own
  // (no_sync) sums, so average them first (exact: the next synced step averages linearly anyway).
  if (Distributed() && epoch + 1 < o_.epochs && last_ni_ > state_.last_opt_step) YC_RETURN_IF_ERROR(AverageGrads());
  if (IsMain()) {
    YC_RETURN_IF_ERROR(EndEpochMain(epoch, stop));
  } else {  // the bookkeeping the loop needs; rank 0 keeps the run's record
    state_.epoch = epoch + 1;
    state_.next_batch = 0;
    state_.epoch_loss_sum = {};
    state_.epoch_loss_batches = 0;
    state_.train_seconds += Seconds(epoch_t0_);
  }
  if (Distributed()) {  // rank 0's early-stop decision, so every rank leaves the loop together
    std::vector<at::Tensor> flag{at::full({1}, *stop ? 1 : 0, at::TensorOptions().dtype(at::kInt))};
    YC_RETURN_IF_ERROR(dist_->Broadcast(flag, 0));
    *stop = flag[0].item<int>() != 0;
    if (!IsMain()) state_.finished = *stop || epoch + 1 >= o_.epochs;
  }
  return Status::OK();
}

Status Run::EndEpochMain(int epoch, bool* stop) {
  EpochRecord rec;
  rec.epoch = epoch + 1;
  auto mean = (epoch_loss_ / static_cast<double>(std::max<int64_t>(epoch_batches_, 1))).to(at::kCPU).to(at::kDouble);
  for (int k = 0; k < 3; ++k) {
    rec.train_loss[k] = mean[k].item<double>();
    rec.lr[k] = GetLearningRate(*optimizer_, static_cast<size_t>(k));
  }
  const bool final_epoch = epoch + 1 >= o_.epochs;
  const bool validate = validator_ && (final_epoch || (o_.val_every > 0 && (epoch + 1) % o_.val_every == 0));
  *stop = false;
  bool improved = false;
  rec.epoch_train_seconds = epoch_train_s_;
  rec.data_wait_seconds = epoch_data_wait_s_;
  const auto t_val = Clock::now();
  if (validate) {
    if (hooks_.observer) hooks_.observer->OnValStart(epoch + 1, validator_->batches());
    auto ema_model = ema_->as<DetectionModelImpl>();
    std::function<void(size_t, size_t)> progress;
    if (hooks_.observer) progress = [this](size_t d, size_t t) { hooks_.observer->OnValProgress(d, t); };
    Result<ValResult> v = validator_->Run(*ema_model, progress);
    if (!v.ok()) return v.status();
    rec.validated = true;
    rec.precision = v->metrics.precision;
    rec.recall = v->metrics.recall;
    rec.map50 = v->metrics.map50;
    rec.map50_95 = v->metrics.map50_95;
    rec.has_val_loss = v->has_loss;
    rec.val_loss = v->loss;
    summary_.final_metrics = v->metrics;
    summary_.has_metrics = true;
    last_confusion_ = v->confusion;
    last_metrics_ = SummaryJson(v->metrics);
    last_metrics_["epoch"] = epoch + 1;
    *stop = stopper_->Update(epoch + 1, v->metrics.fitness);
    improved = stopper_->improved();
    state_.best_fitness = stopper_->best_fitness();
    state_.best_epoch = stopper_->best_epoch();
  }
  rec.val_seconds = validate ? Seconds(t_val) : 0.0;
  const auto t_save = Clock::now();
  state_.epoch = epoch + 1;
  state_.next_batch = 0;
  state_.epoch_loss_sum = {};
  state_.epoch_loss_batches = 0;
  state_.train_seconds += Seconds(epoch_t0_);
  state_.finished = final_epoch || *stop;
  rec.time = state_.train_seconds;
  // Gradients still waiting for an optimizer step carry over into the next epoch; a finished run has
  // no next epoch, so they are not worth storing.
  Result<std::shared_ptr<CheckpointSnapshot>> snap =
      SnapshotLast(/*pending_grads=*/!state_.finished && last_ni_ > state_.last_opt_step);
  if (!snap.ok()) return snap.status();
  // best.pt: the release weights of the best epoch so far; a run that never validated (best_fitness still
  // < 0) keeps its final EMA, written once since `finished` is set only by the last epoch.
  const bool write_best = improved || (state_.finished && state_.best_fitness < 0);
  std::shared_ptr<CheckpointSnapshot> best;
  if (write_best) {
    Result<std::shared_ptr<CheckpointSnapshot>> b = SnapshotBest();
    if (!b.ok()) return b.status();
    best = *b;
  }
  YC_RETURN_IF_ERROR(results_->Append(rec));
  // The files are written while the next epoch trains; the previous epoch's must be complete first
  // (and its error, if any, stops the run here).
  YC_RETURN_IF_ERROR(writer_.Wait());
  const fs::path epoch_file = o_.save_every > 0 && (epoch + 1) % o_.save_every == 0
                                  ? weights_ / ("epoch" + std::to_string(epoch + 1) + ".pt")
                                  : fs::path();
  saved_epoch_ = epoch + 1;
  writer_.Submit([this, snapshot = *snap, best, epoch_file]() -> Status {
    // Serialised once (Serialize keeps the bytes), written once or twice.
    YC_RETURN_IF_ERROR(snapshot->WriteTo(last_));
    if (best) YC_RETURN_IF_ERROR(best->WriteTo(best_));
    if (!epoch_file.empty()) {
      YC_RETURN_IF_ERROR(snapshot->WriteTo(epoch_file));
      epoch_files_.erase(std::remove(epoch_files_.begin(), epoch_files_.end(), epoch_file), epoch_files_.end());
      epoch_files_.push_back(epoch_file);
      RotateEpochCheckpoints(&epoch_files_, o_.keep);
    }
    return Status::OK();
  });
  if (!plot_disabled_ && o_.plots && IsMain()) {
    if (std::string(ResultsPlotEncoder()) == "none") {
      plot_disabled_ = true;
      summary_.plot = "results.png and the other plots skipped: this build has no PLplot or no PNG encoder";
      Say(summary_.plot);
    } else {
      summary_.plot = "results.png written (" + std::string(ResultsPlotEncoder()) + ")";
      writer_.Submit([records = results_->records(), png = out_ / "results.png"]() -> Status {
        Status st = WriteResultsPlot(records, png);
        // A plot that cannot be drawn is not worth stopping a run for.
        if (!st.ok()) std::fprintf(stderr, "warning: %s\n", st.ToString().c_str());
        return Status::OK();
      });
    }
  }
  rec.save_seconds = Seconds(t_save);
  summary_.epoch_gap_seconds += rec.val_seconds + rec.save_seconds;
  if (hooks_.observer) hooks_.observer->OnEpochEnd(rec);
  if (*stop) {
    Say("early stopping: no improvement in the last " + std::to_string(o_.patience) + " epochs; best was epoch " +
        std::to_string(state_.best_epoch));
  }
  return Status::OK();
}

Result<Run::StopVote> Run::AgreeStop(bool diverged) {
  at::Tensor flags = at::tensor(std::vector<int>{Cancelled() ? 1 : 0, diverged ? 1 : 0}, at::TensorOptions().dtype(at::kInt));
  YC_RETURN_IF_ERROR(dist_->AllReduce(flags, ReduceKind::kMax));
  StopVote vote;
  vote.cancel = flags[0].item<int>() != 0;
  vote.diverged = flags[1].item<int>() != 0;
  return vote;
}

Result<bool> Run::AgreeCancel() {
  Result<StopVote> vote = AgreeStop(false);
  if (!vote.ok()) return vote.status();
  return vote->cancel;
}

std::string Run::FindNonFiniteLoss(int epoch, size_t from, size_t to) {
  if (to <= from) return {};
  const at::Tensor rows = loss_history_.narrow(0, static_cast<int64_t>(from), static_cast<int64_t>(to - from));
  if (at::isfinite(rows).all().item<bool>()) return {};  // the one host read: nothing to report
  const at::Tensor host = rows.to(at::kCPU).to(at::kDouble).contiguous();
  const double* v = host.data_ptr<double>();
  static const char* kTerms[3] = {"box", "cls", "dfl"};
  for (size_t r = 0; r < to - from; ++r, v += 3) {
    std::string terms, values;
    for (int k = 0; k < 3; ++k) {
      if (!std::isfinite(v[k])) terms += (terms.empty() ? "" : ", ") + std::string(kTerms[k]);
      values += (k ? ", " : "") + std::string(kTerms[k]) + " " + Fmt("%g", v[k]);
    }
    if (terms.empty()) continue;
    return "non-finite " + terms + " loss at epoch " + std::to_string(epoch + 1) + "/" + std::to_string(o_.epochs) +
           ", batch " + std::to_string(from + r + 1) + "/" + std::to_string(nb_) + " (" + values + ")";
  }
  return "non-finite loss at epoch " + std::to_string(epoch + 1);  // unreachable: some row was not finite
}

std::string Run::FindNonFiniteWeights() {
  std::string bad = FirstNonFiniteTensor(*model_);
  if (!bad.empty()) return bad + " (model)";
  bad = FirstNonFiniteTensor(*ema_->module());
  return bad.empty() ? bad : bad + " (EMA)";
}

Status Run::Diverged(const std::string& what) {
  if (gpu_) gpu_->Stop();
  // The last.pt (and best.pt) being written were taken from finite weights; let them land.
  const Status pending = writer_.Wait();
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

Status Run::AverageGrads() {
  std::vector<at::Tensor> grads;
  for (const auto& p : model_->parameters()) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  if (grads.empty()) return Status::OK();
  std::vector<at::Tensor> flat;
  flat.reserve(grads.size());
  for (const auto& g : grads) flat.push_back(g.reshape({-1}).to(at::kFloat));
  at::Tensor all = at::cat(flat);  // one collective for all of them
  YC_RETURN_IF_ERROR(dist_->AllReduce(all, ReduceKind::kAvg));
  int64_t offset = 0;
  for (auto& g : grads) {
    const int64_t n = g.numel();
    g.copy_(all.narrow(0, offset, n).view(g.sizes()));
    offset += n;
  }
  return Status::OK();
}

// Every rank's final trainable parameters (registration order) as a tensor list (torch::load-able):
// what the DDP tests compare across ranks and against one process.
Status Run::SaveRankWeights() {
  std::error_code ec;
  fs::create_directories(hooks_.rank_weights, ec);
  if (ec) return Status::IOError(Status::At(hooks_.rank_weights.string(), ec.message()));
  std::vector<at::Tensor> params;
  for (const auto& p : model_->parameters()) params.push_back(p.detach().to(at::kCPU).contiguous());
  const fs::path path = hooks_.rank_weights / ("rank" + std::to_string(dist_->rank()) + ".pt");
  try {
    torch::save(params, path.string());
  } catch (const std::exception& e) {
    return Status::IOError(Status::At(path.string(), e.what()));
  }
  return Status::OK();
}

Result<TrainSummary> Run::Execute() {
  YC_RETURN_IF_ERROR(Setup());
  summary_.out_dir = out_;
  summary_.last = last_;
  const int start = state_.epoch;
  for (int epoch = start; epoch < o_.epochs; ++epoch) {
    Result<bool> cancel = Distributed() ? AgreeCancel() : Result<bool>(Cancelled());
    if (!cancel.ok()) return cancel.status();
    if (*cancel) {
      summary_.interrupted = true;
      break;
    }
    const size_t first = epoch == start ? static_cast<size_t>(state_.next_batch) : 0;
    if (first > nb_) {
      return Status::InvalidArgument(Status::At(hooks_.resume.string(), "resume position is past the epoch's end"));
    }
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
      summary_.early_stopped = true;
      break;
    }
  }
  if (o_.plots && IsMain() && summary_.has_metrics && !summary_.interrupted) {
    // The last validation's curves and confusion matrices (Ultralytics draws them in its final validation).
    writer_.Submit([metrics = summary_.final_metrics, confusion = last_confusion_, names = names_, dir = out_]() -> Status {
      WarnIfNotPlotted(WriteValidationPlots(metrics, confusion, names, dir));
      return Status::OK();
    });
  }
  YC_RETURN_IF_ERROR(writer_.Wait());  // every checkpoint on disk before the run reports them
  summary_.epochs_completed = state_.epoch;
  summary_.best_epoch = state_.best_epoch;
  summary_.best_fitness = state_.best_fitness;
  std::error_code ec;
  if (fs::exists(best_, ec)) summary_.best = best_;
  summary_.images_per_second =
      summary_.train_seconds > 0 ? static_cast<double>(summary_.train_images) / summary_.train_seconds : 0.0;
  if (gpu_) summary_.gpu_busy_percent = gpu_->MeanBusyPercent();
  if (!hooks_.rank_weights.empty()) YC_RETURN_IF_ERROR(SaveRankWeights());
  summary_.rank = dist_->rank();
  summary_.world_size = dist_->world_size();
  // Under DDP the probe runs on rank 0 alone, without the reducer, at the per-rank batch: the ceiling of
  // one device (the other ranks have left; no collective follows).
  if (o_.synthetic_input && !summary_.interrupted && IsMain()) {
    Say("synthetic-input: measuring the model's fwd+bwd+step ceiling on device-resident images with the label "
        "tables of " + std::to_string(probe_labels_.size()) + " training batches (" +
        std::to_string(o_.synthetic_iters) + " iterations)");
    TrainOptions probe = o_;  // the optimizer the run resolved ("auto" depends on the dataset size)
    probe.optimizer = OptimizerName(spec_.kind);
    probe.lr0 = spec_.lr;
    probe.momentum = spec_.momentum;
    probe.batch = o_.batch / dist_->world_size();
    probe.nbs = std::max(1, o_.nbs / dist_->world_size());  // same accumulation count as the run
    Result<SyntheticThroughput> ips = MeasureSyntheticThroughput(probe, nc_, o_.synthetic_iters, probe_labels_);
    if (!ips.ok()) return ips.status();
    summary_.synthetic_images_per_second = ips->images_per_second;
  }
  if (summary_.interrupted) {
    Say("interrupted: " + last_.string() + " holds epoch " + std::to_string(state_.epoch + 1) + " batch " +
        std::to_string(state_.next_batch) + "; continue with --resume " + last_.string());
  }
  summary_.wall_seconds = Seconds(wall0_);
  return summary_;
}

}  // namespace

Result<TrainSummary> Train(const TrainOptions& options, const TrainHooks& hooks) {
  try {
    Run run(options, hooks);
    return run.Execute();
  } catch (const std::exception& e) {
    return Status::IOError(std::string("training failed: ") + e.what());
  }
}

}  // namespace yc::trainer
