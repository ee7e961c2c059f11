// TrainRun::Setup: everything a run needs before its first batch, one step per concern, in the order the
// run's log tells them (trainer/engine/train_run.h).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <thread>
#include <utility>

#include <ATen/Parallel.h>
#include <torch/utils.h>

#include "base/format.h"
#include "libcache/base/output_file.h"
#include "libcache/base/pid_files.h"
#include "libcache/build/output_guard.h"
#include "libcache/build/prepare_cache.h"
#include "libcache/build/stream_cache.h"
#include "libcache/format/manifest.h"
#include "libcache/remote/object_location.h"
#include "loader/option_table.h"
#include "trainer/config/args_yaml.h"
#include "trainer/config/class_list.h"
#include "trainer/config/run_dir.h"
#include "trainer/config/sample_order.h"
#include "trainer/engine/autobatch.h"
#include "trainer/engine/run_identity.h"
#include "trainer/engine/step_warmup.h"
#include "trainer/engine/train_run.h"
#include "trainer/model/depthwise_kernel.h"
#include "trainer/model/prune/sparsity.h"
#include "trainer/model/sync_batch_norm.h"
#include "trainer/plots/charts.h"
#include "trainer/runtime/device_list.h"

namespace yc::trainer {

namespace fs = std::filesystem;

namespace {

// Ultralytics' build_dataloader (data/build.py): each of a host's ranks gets at most cpu_count // ranks
// workers; --threads 0 (all cores) is that share. Batches do not depend on the count (the loader is
// deterministic at any thread count).
int RankLoaderThreads(int threads, int local_ranks) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int share = std::max(1, cores / std::max(1, local_ranks));
  return threads == 0 ? share : std::min(threads, share);
}

// The windowed order deals each epoch's windows to the ranks (loader/order/window_deal.h): batch K of
// a rank under N ranks holds other samples than batch K under M, so the samples an interrupted epoch
// already trained on cannot be told apart under another rank count. Refused rather than repeating or
// skipping samples; at an epoch boundary any count continues exactly (every epoch is dealt afresh).
// The shuffle order needs no check: its global batch K is the same samples under any rank count.
Status CheckResumedRanks(const TrainState& saved, const std::string& order, int world_size, const std::string& file) {
  if (saved.next_batch == 0 || order != "windowed" || saved.world_size == 0 || saved.world_size == world_size) {
    return Status::OK();
  }
  return Status::InvalidArgument(Status::At(
      file, "stopped inside epoch " + std::to_string(saved.epoch + 1) + " (batch " + std::to_string(saved.next_batch) +
                ") under " + std::to_string(saved.world_size) + " ranks, and the windowed order deals each epoch's "
                "windows to the ranks: under " + std::to_string(world_size) + " the rest of that epoch is other "
                "samples. Resume with " + std::to_string(saved.world_size) + " ranks, or from an epoch's end "
                "(--save-every's weights/epochN.pt)"));
}

// "26.8 MiB".
std::string MibText(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

}  // namespace

// Each step of the set-up, timed: the seconds before the first epoch count in a run's wall time (issue 29's
// whole-run rate), so the run says where they went.
Status TrainRun::Setup() {
  YC_RETURN_IF_ERROR(ValidateTrainOptions(o_));
  using Step = Status (TrainRun::*)();
  static constexpr std::pair<const char*, Step> kSteps[] = {
      {"weights", &TrainRun::ReadWeightsAndModelName}, {"device", &TrainRun::SetupDevice},
      {"data", &TrainRun::OpenData},                   {"teacher", &TrainRun::LoadTeacher},
      {"order", &TrainRun::ResolveOrder},              {"resume", &TrainRun::OpenResume},
      {"run dir", &TrainRun::PrepareRunDir},           {"model", &TrainRun::BuildModel},
      {"autobatch", &TrainRun::ChooseAutoBatch},       {"loader", &TrainRun::BuildLoader},
      {"optimizer", &TrainRun::BuildTraining},         {"validator", &TrainRun::BuildValidator},
      {"records", &TrainRun::OpenRecords},             {"conv warm-up", &TrainRun::WarmUpConvolutions}};
  std::string parts;
  for (const auto& [name, step] : kSteps) {
    const Clock::time_point t0 = Clock::now();
    YC_RETURN_IF_ERROR((this->*step)());
    const double s = Seconds(t0);
    if (s >= 0.05) parts += std::string(parts.empty() ? "" : ", ") + name + " " + FormatNumber("%.2f", s);
  }
  if (IsMain()) Say("set-up: " + FormatNumber("%.2f", Seconds(wall0_)) + " s" + (parts.empty() ? "" : " (" + parts + ")"));
  return Status::OK();
}

// --weights (a fresh run; a resumed one has its weights in the checkpoint): read first, so a bad file
// fails before any work, and the architecture comes from it unless --model names one.
Status TrainRun::ReadWeightsAndModelName() {
  if (!o_.weights.empty() && hooks_.resume.empty()) {
    YC_ASSIGN_OR_RETURN(ModelWeights weights, ReadModelWeights(o_.weights));
    pretrained_ = std::make_unique<ModelWeights>(std::move(weights));
    const std::string file_model = ModelNameString(pretrained_->name);
    if (o_.model.empty()) o_.model = file_model;
    // A pruned file (yolocache-train prune) fine-tunes in its own architecture; another --model is built at
    // its scale's widths and takes what matches, as with any other file.
    Result<ModelName> given = ParseModelName(o_.model);
    if (!pretrained_->channels.empty() && given.ok() && ModelNameString(*given) == file_model) {
      o_.channels = pretrained_->channels;
    }
  }
  Result<ModelName> model_name = ParseModelName(o_.model);
  if (!model_name.ok()) return Status::InvalidArgument("--model: " + model_name.status().message());
  model_name_ = *model_name;
  return Status::OK();
}

// The device, the data-parallel ranks (torchrun or a shell loop setting RANK/WORLD_SIZE/...; none set:
// one process) and AMP on this rank's device.
Status TrainRun::SetupDevice() {
  YC_ASSIGN_OR_RETURN(DistEnv env, DistEnvFromEnvironment());
  if (env.world_size == 1 && IsDeviceList(o_.device)) {
    return Status::InvalidArgument("--device '" + o_.device + "' names one device per rank: yolocache-train train "
                                   "starts those ranks itself, or run one process per device under torchrun");
  }
  // device=0,1: each local rank takes its item of the list; one device (or none): cuda:LOCAL_RANK.
  YC_ASSIGN_OR_RETURN(at::Device device, RankDevice(o_.device, env.local_rank, env.local_world_size));
  if (env.world_size > 1 && o_.batch % env.world_size != 0) {
    return Status::InvalidArgument("--batch " + std::to_string(o_.batch) + " is the global batch; it must be a multiple of "
                                   "WORLD_SIZE " + std::to_string(env.world_size));
  }
  if (device.is_cuda() && IsDeviceList(o_.device)) env.cuda_device = device.index();
  local_ranks_ = env.local_world_size;
  YC_ASSIGN_OR_RETURN(dist_, InitDistributed(env, device.is_cuda() ? DistBackend::kNccl : DistBackend::kGloo));
  if (device.is_cuda() && dist_->distributed()) device = dist_->device();  // the list's item, else cuda:LOCAL_RANK
  if (!dist_->is_main()) hooks_.observer = nullptr;  // rank 0 alone logs (and validates and saves)
  YC_ASSIGN_OR_RETURN(stack_.target, PrepareDevice(o_, device));
  if (o_.torch_threads > 0) at::set_num_threads(o_.torch_threads);
  const TrainDevice& t = stack_.target;
  Say("device: " + DeviceDescription(t.device) + (t.device.is_cuda() ? "; " + t.tuning : std::string()) +
      (t.channels_last ? "; channels_last" : ""));
  if (dist_->distributed()) {
    Say(std::string("distributed: ") + std::to_string(dist_->world_size()) + " ranks (" +
        DistBackendName(dist_->backend()) + "), global batch " + std::to_string(o_.batch) + " = " +
        std::to_string(o_.batch / dist_->world_size()) + " per rank, " +
        std::to_string(RankLoaderThreads(o_.threads, local_ranks_)) + " loader threads per rank");
  }
  Say("amp: " + DescribeAmp(t.amp));
  return Status::OK();
}

// The cache, its classes and identity, and the train and val splits.
Status TrainRun::OpenData() {
  if (o_.cache_budget_gb > 0) {
    YC_RETURN_IF_ERROR(OpenStream());
  } else {
    YC_ASSIGN_OR_RETURN(cache_, Cache::Open(o_.data));
  }
  const std::vector<std::string>& cache_names = cache_->manifest().names;
  if (cache_names.empty()) return Status::DataError(Status::At(o_.data, "the cache's manifest names no classes"));
  YC_RETURN_IF_ERROR(CheckLabelRules(TrainLabelRules(o_), cache_names.size()));
  names_ = SelectedNames(cache_names, TrainLabelRules(o_));
  nc_ = static_cast<int64_t>(names_.size());
  YC_ASSIGN_OR_RETURN(data_identity_, CacheIdentity(*cache_));
  const RecordSource* train = cache_->split(o_.train_split);
  if (train == nullptr) return Status::NotFound(Status::At(o_.data, "no '" + o_.train_split + "' split"));
  if (train->size() == 0) {
    return Status::DataError(Status::At(o_.data, "the '" + o_.train_split + "' split is empty"));
  }
  const RecordSource* val = o_.val ? cache_->split(o_.val_split) : nullptr;
  if (o_.val && (val == nullptr || val->size() == 0)) {
    Say("warning: no '" + o_.val_split + "' split with images: training without validation (no best.pt)");
    o_.val = false;
    val = nullptr;
  }
  YC_RETURN_IF_ERROR(SelectSplits(train, val));
  if (cache_->manifest().imgsz > 0 && cache_->manifest().imgsz < o_.imgsz) {
    Say("warning: the cache holds images at " + std::to_string(cache_->manifest().imgsz) + " px, training at " +
        std::to_string(o_.imgsz) + " upsamples them");
  }
  return Status::OK();
}

// --cache-budget: the train split is read window by window through the loader's window stage, which has
// each window this rank walks fetched before it reads it (the windows are dealt to the ranks:
// loader/order/window_deal.h); the val split is read outside that stage, in the validator's own order, so
// it is fetched whole here and stays pinned on disk for the run (it is small: Ultralytics' val splits are
// a few percent of train). The window defaults to a quarter of the budget, at most 256 MiB.
Status TrainRun::OpenStream() {
  if (!IsObjectUrl(o_.data)) {
    return Status::InvalidArgument("--cache-budget streams a cache from object storage: --data must be an s3:// or "
                                   "https:// URL, not " + o_.data);
  }
  if (o_.order == "shuffle" || o_.rect) {
    return Status::InvalidArgument(std::string("--cache-budget reads the train split window by window: it needs ") +
                                   "--order windowed (or auto), not " + (o_.rect ? "rect batches" : "--order shuffle"));
  }
  if (o_.read_ahead_mb == 0) {
    return Status::InvalidArgument("--cache-budget reads every window through the loader's window stage, which "
                                   "--read-ahead 0 turns off");
  }
  if (o_.window_io == "page-cache") {
    return Status::InvalidArgument("--cache-budget reads every window through the loader's window stage: --window-io "
                                   "page-cache would read records that were never fetched");
  }
  const uint64_t budget = static_cast<uint64_t>(o_.cache_budget_gb * (1ull << 30));
  constexpr uint64_t kMaxDefaultWindow = uint64_t{256} << 20;
  o_.order = "windowed";
  o_.window_io = "direct";  // auto would pick the page cache under several ranks: the stage it is
  if (o_.window_mb <= 0) o_.window_mb = static_cast<double>(std::min(kMaxDefaultWindow, budget / 4)) / (1 << 20);
  StreamOptions so;
  so.cache_root = o_.cache_root.empty() ? DefaultCacheRoot() : fs::path(o_.cache_root);
  so.budget_bytes = budget;
  so.window_bytes = static_cast<uint64_t>(o_.window_mb * (1 << 20));
  so.cancel = hooks_.cancel;
  so.rank = dist_->rank();
  so.world_size = dist_->world_size();
  YC_ASSIGN_OR_RETURN(StreamedCache streamed, OpenStreamedCache(o_.data, so));
  stream_ = std::move(streamed.stream);
  cache_ = std::move(streamed.cache);
  uint64_t val_bytes = 0;
  // Rank 0 alone validates (BuildValidator): the other ranks never read the val split.
  const SplitManifest* val = o_.val && IsMain() ? cache_->manifest().FindSplit(o_.val_split) : nullptr;
  if (val != nullptr) {
    std::vector<FileRange> whole;
    for (const ShardEntry& shard : val->shards) {
      whole.push_back({(stream_->dir() / shard.file).string(), 0, shard.bytes});
      val_bytes += shard.bytes;
    }
    if (val_bytes + so.window_bytes > budget) {
      return Status::ResourceExhausted(Status::At(
          o_.data, "--cache-budget " + OptionText(o_.cache_budget_gb) + " GiB holds the '" + o_.val_split + "' split (" +
                       MibText(val_bytes) + ", kept whole for validation) but not a window of " +
                       MibText(so.window_bytes) + " beside it: a larger budget, a smaller --window, "
                       "or --no-val"));
    }
    uint64_t pin = 0;  // never unpinned: validation reads the split every epoch
    YC_RETURN_IF_ERROR(stream_->Fetch(whole, &pin).WithContext("the '" + o_.val_split + "' split"));
  }
  Say("data: streaming " + o_.data + " into " + stream_->dir().string() + " within --cache-budget " +
      OptionText(o_.cache_budget_gb) + " GiB: the '" + o_.train_split + "' split window by window" +
      (Distributed() ? " (each rank the windows dealt to it)" : std::string()) +
      (val != nullptr ? ", the '" + o_.val_split + "' split fetched whole (" + MibText(val_bytes) + ")"
                      : std::string()));
  return Status::OK();
}

// The splits as Ultralytics' datasets would hold them (libcache/record_selection.h): the train split cut
// to its fraction, both relabelled by classes / single_cls; said in the log when they change anything.
Status TrainRun::SelectSplits(const RecordSource* train, const RecordSource* val) {
  const LabelRules rules = TrainLabelRules(o_);
  const SplitManifest* train_manifest = cache_->manifest().FindSplit(o_.train_split);
  const size_t kept = train_manifest != nullptr ? FractionRecords(*train_manifest, o_.fraction) : train->size();
  if (kept == 0) {
    return Status::InvalidArgument("--fraction " + OptionText(o_.fraction) + " keeps none of the " +
                                   std::to_string(train->size()) + " '" + o_.train_split + "' images");
  }
  // Aliasing pointers: each split keeps the cache alive.
  train_split_ = std::make_shared<SelectedSource>(std::shared_ptr<const RecordSource>(cache_, train), kept, rules);
  if (val != nullptr) {
    val_split_ = std::make_shared<SelectedSource>(std::shared_ptr<const RecordSource>(cache_, val), val->size(), rules);
  }
  if (o_.fraction < 1) {
    Say("data: " + o_.train_split + ": fraction " + OptionText(o_.fraction) + ": " + std::to_string(kept) + " of its " +
        std::to_string(train->size()) + " images used (Ultralytics' first round(n x fraction) images)");
  }
  if (!o_.classes.empty()) {
    Say("data: classes " + ClassListText(o_.classes) + ": only their labels are used (train and val); images "
        "without any stay, as backgrounds");
  }
  if (o_.single_cls) Say("data: single_cls: every label is class 0, 'item'; a 1-class model");
  return Status::OK();
}

// --teacher: read once the run's class count is known, before the run folder or the model exist (a
// teacher that does not fit costs nothing), and before BuildModel seeds the generator (building the
// teacher draws from it). A resumed run has the path in its options and reloads it here.
Status TrainRun::LoadTeacher() {
  if (o_.teacher.empty()) return Status::OK();
  YC_ASSIGN_OR_RETURN(stack_.teacher,
                      Teacher::Load(o_.teacher, nc_, stack_.target.device, stack_.target.channels_last));
  Say("teacher: " + stack_.teacher->Describe() + " from " + o_.teacher + ", frozen, run on every batch");
  return Status::OK();
}

// Sampling order: resolved once (a resumed run's checkpoint holds the resolved one) and stored in o_,
// so args.yaml and the checkpoints repeat it.
Status TrainRun::ResolveOrder() {
  if (o_.order == "auto" || (o_.order == "windowed" && o_.window_mb <= 0)) {
    Result<uint64_t> budget = PageCacheBudget(o_.ram_budget_gb);
    if (!budget.ok()) return Status(budget.status()).WithContext("--order auto (give --ram-budget GB)");
    const OrderChoice choice = ChooseSampleOrder(o_, train_split_->data_bytes(), *budget,
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
        (stream_ != nullptr ? " (--cache-budget: a stream is read window by window)"
                            : " (given, or kept from the resumed run)"));
  }
  if (o_.order == "windowed" && stream_ != nullptr) {
    Say("windows: each fetched into the stream's folder as the loader's window stage reaches it, read ahead by "
        "--read-ahead " + std::to_string(o_.read_ahead_mb) + " MiB");
  } else if (o_.order == "windowed") {
    const int ranks = dist_->world_size();
    Say(WindowIoFor(o_, ranks) == WindowIo::kDirect
            ? "windows: read with O_DIRECT into the loader's buffers, around the page cache (--window-io " +
                  o_.window_io + ")"
            : "windows: read through the page cache" +
                  (ranks > 1 ? ", one budget for the " + std::to_string(ranks) + " ranks' windows" : std::string()) +
                  " (--window-io " + o_.window_io + ")");
  }
  return Status::OK();
}

// --resume: the checkpoint must be a training one of this model and data, not finished.
Status TrainRun::OpenResume() {
  if (!hooks_.resume.empty()) {
    YC_ASSIGN_OR_RETURN(resume_, CheckpointReader::Open(hooks_.resume, stack_.target.device));
    const CheckpointMeta& meta = resume_->meta();
    const std::string resumed = hooks_.resume.string();
    if (resume_->is_release()) {
      return Status::InvalidArgument(Status::At(resumed, "release weights (EMA only, fp16: best.pt, or "
                                                         "the last.pt of a finished run) cannot be resumed; resume "
                                                         "an unfinished run's weights/last.pt"));
    }
    if (meta.state.finished) return Status::InvalidArgument(Status::At(resumed, "this run already finished; nothing to resume"));
    if (meta.nc != nc_ || meta.names != names_ || meta.model_scale != ModelScaleName(model_name_.scale) ||
        meta.model_family != ModelFamilyName(model_name_.family)) {
      return Status::InvalidArgument(Status::At(resumed, "checkpoint is a " + MetaModelName(meta) + " for " +
                                                             std::to_string(meta.nc) +
                                                             " classes; it does not fit this model/data"));
    }
    if (!resume_->has_optimizer()) return Status::InvalidArgument(Status::At(resumed, "has no optimizer state; cannot resume"));
    YC_RETURN_IF_ERROR(CheckResumedData(meta));
    YC_RETURN_IF_ERROR(CheckResumedRanks(meta.state, o_.order, dist_->world_size(), resumed));
    state_ = meta.state;
    last_metrics_ = meta.metrics;
    run_id_ = meta.run_id;
  }
  if (run_id_.empty()) run_id_ = NewRunId();
  state_.world_size = dist_->world_size();  // what the checkpoints' position is a position of
  return Status::OK();
}

// Output directory: an explicit --out as given, else <project>/<name> incremented as Ultralytics does.
// Only rank 0 picks (and creates) it; other ranks write nothing there. The choice goes into o_.out, so
// args.yaml and the checkpoints name it and --resume continues in it.
// Not inside the dataset or the cache (libcache/build/output_guard.h): checked on <project>/<name> before
// it is created (the incremented siblings are in the same folder).
Status TrainRun::PrepareRunDir() {
  YC_RETURN_IF_ERROR(CheckOutsideCacheData(o_.out.empty() ? fs::path(o_.project) / o_.name : fs::path(o_.out),
                                           cache_->dir(), cache_->manifest()));
  if (o_.out.empty()) {
    YC_ASSIGN_OR_RETURN(fs::path dir, ResolveRunDir("", o_.project, o_.name, o_.exist_ok, /*create=*/IsMain()));
    o_.out = dir.string();
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
  return IsMain() ? WriteArgs() : Status::OK();
}

// Rank 0: weights/ created, a killed run's half-written files removed, args.yaml written (as
// Ultralytics' trainer writes it: config/args_yaml.h), atomically.
Status TrainRun::WriteArgs() {
  std::error_code ec;
  fs::create_directories(weights_, ec);
  if (ec) return Status::IOError(Status::At(weights_.string(), ec.message()));
  for (const fs::path& dir : {out_, weights_}) RemoveStaleTempFiles(dir);
  return WriteFileAtomically(out_ / "args.yaml", ArgsYaml(o_, run_id_));
}

// Model: same init as Ultralytics' DetectionModel, from the seeded default generator; then the resumed
// or pretrained weights, frozen layers and (DDP) the same start on every rank.
Status TrainRun::BuildModel() {
  torch::manual_seed(o_.seed);
  stack_.model = NewModel(model_name_, nc_, stack_.target, o_.channels);
  DetectionModel& model = stack_.model;
  if (resume_) YC_RETURN_IF_ERROR(resume_->LoadModule("model", *model));
  if (pretrained_) TransferPretrained();
  YC_RETURN_IF_ERROR(PrepareModelForTraining());
  Say("model: " + ModelNameString(model_name_) + ", " + std::to_string(nc_) + " classes, " +
      std::to_string(CountParameters(*model)) + " parameters" +
      (o_.channels.empty() ? std::string() : " (pruned: " + std::to_string(o_.channels.size()) + " convolutions cut)"));
  return Status::OK();
}

// The model's weights are in place: frozen layers, the ranks' identical start and the gradient all-reduce.
Status TrainRun::PrepareModelForTraining() {
  DetectionModel& model = stack_.model;
  if (const std::vector<int> layers = FrozenLayers(o_); !layers.empty()) {
    // Before the optimizer is built: frozen parameters join no group (resume too).
    const int64_t frozen = FreezeLayers(*model, layers);
    std::string which;
    for (int i : layers) which += (which.empty() ? "model." : ", model.") + std::to_string(i);
    if (o_.freeze_layers.empty()) which = "model.0-" + std::to_string(o_.freeze - 1);
    Say("freeze: layers " + which + " and .dfl (" + std::to_string(frozen) + " parameter tensors)");
  }
  if (Distributed()) {
    // Identical start on every rank (seeded init or the same checkpoint already give it; this makes it
    // a guarantee), then the gradient all-reduce hooked onto the parameters on their final device.
    YC_RETURN_IF_ERROR(dist_->BroadcastModule(*model));
    reducer_ = std::make_unique<GradReducer>(*model, dist_->group());
  }
  model->train();
  return Status::OK();
}

// --autobatch (batch=-1): the batch is chosen once the model exists, before the loader is built with it,
// and stored as `batch` (the checkpoints' options, so --resume keeps it). Ultralytics measures it only
// in a single process; so do we.
Status TrainRun::ChooseAutoBatch() {
  if (o_.autobatch <= 0) return Status::OK();
  if (Distributed()) {
    return Status::InvalidArgument("--autobatch (batch=-1) works in one process only, as in Ultralytics; give --batch");
  }
  AutoBatchRequest r;
  r.fraction = o_.autobatch;
  r.imgsz = o_.imgsz;
  r.autocast_fp16 = stack_.target.amp.enabled && stack_.target.amp.dtype == at::kHalf;
  r.channels_last = stack_.target.channels_last;
  o_.batch = AutoBatchSize(stack_.model, stack_.target.device, r, [this](const std::string& line) { Say(line); });
  o_.autobatch = 0;
  return Status::OK();
}

// Ultralytics' intersect_dicts: every tensor whose name and shape match.
void TrainRun::TransferPretrained() {
  const TransferReport t = TransferWeights(*pretrained_, *stack_.model);
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

// The train loader and the device feed.
Status TrainRun::BuildLoader() {
  feed_ = std::make_unique<DeviceFeed>(stack_.target.device, stack_.target.channels_last, nc_);
  LoaderOptions lo = TrainLoaderOptions(o_, dist_->rank(), dist_->world_size());
  if (Distributed()) lo.threads = RankLoaderThreads(o_.threads, local_ranks_);
  lo.layout = feed_->layout();
  lo.allocator = MakeBatchAllocator(stack_.target.device);
  lo.fetcher = stream_;  // --cache-budget: the train records come through the window stage's fetches
  const std::shared_ptr<const RecordSource>& train_source = train_split_;
  // Ultralytics' words (models/yolo/detect/train.py get_dataloader); its build_transforms also turns
  // mosaic, mixup and cutmix off, which the loader does for rect batches.
  if (o_.rect) Say("warning: 'rect=True' is incompatible with DataLoader shuffle, setting shuffle=False");
  Result<std::unique_ptr<Loader>> loader = Loader::Create(train_source, lo);
  if (!loader.ok()) return Status(loader.status()).WithContext("train loader");
  loader_ = std::move(*loader);
  nb_ = loader_->batches_per_epoch();
  if (o_.plots && IsMain() && resume_ == nullptr && stream_ == nullptr) PlotLabelsInBackground(train_source);
  // Drawing labels.jpg reads every train record, which a stream holds only window by window.
  if (o_.plots && IsMain() && resume_ == nullptr && stream_ != nullptr)
    Say("labels.jpg: not drawn for a streamed cache (the labels come with the records, window by window)");
  Say("data: " + o_.data + ": " + std::to_string(loader_->dataset_size()) + " train images, " +
      (o_.val ? std::to_string(val_split_->size()) + " val images" : std::string("no validation")) + "; imgsz " +
      std::to_string(o_.imgsz) + ", batch " + std::to_string(o_.batch) + ", " + std::to_string(nb_) + " batches/epoch" +
      (Distributed() ? " per rank" : ""));
  return Status::OK();
}

// labels.jpg from every label of the train split, drawn by the background writer while training starts.
void TrainRun::PlotLabelsInBackground(std::shared_ptr<const RecordSource> train_source) {
  writer_.Submit([source = std::move(train_source), names = names_, jpg = out_ / "labels.jpg"]() -> Status {
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

// The training stack around the model (Ultralytics build_optimizer, EMA, scaler, loss, step;
// trainer/engine/training_stack.h), the lr schedule and early stopping.
Status TrainRun::BuildTraining() { return BuildTrainingFrom(resume_.get()); }

// `restore`: the checkpoint whose optimizer, EMA and scaler state the step continues (null: fresh).
Status TrainRun::BuildTrainingFrom(const CheckpointReader* restore) {
  const int64_t iterations =
      OptimizerIterations(static_cast<int64_t>(loader_->dataset_size()), o_.batch, o_.nbs, o_.epochs);
  YC_RETURN_IF_ERROR(BuildStackOptimizer(&stack_, o_, nc_, iterations));
  Say(DescribeOptimizer(stack_));
  YC_RETURN_IF_ERROR(BuildStep(&stack_, o_, nc_, StackRestore{restore, &state_},
                               StepSync{reducer_.get(), dist_->world_size()}));
  if (stack_.target.device.is_cuda() && HasDepthwiseConvs(*stack_.model)) Say(stack_.step->depthwise_policy().Describe());
  if (o_.sparsity > 0 && !PrunedInRun()) {  // --prune-at: the penalty serves the epochs before the prune
    std::vector<at::Tensor> gammas = SparsityTargets(*stack_.model);
    char s[32];
    std::snprintf(s, sizeof s, "%g", o_.sparsity);
    Say("sparsity: " + std::string(s) + " * sign(gamma) added to the gradients of " +
        std::to_string(gammas.size()) + " prunable BatchNorm weights before each optimizer step (network slimming)");
    stack_.step->set_sparsity(o_.sparsity, std::move(gammas));
  }
  if (stack_.teacher) {
    YC_RETURN_IF_ERROR(stack_.teacher->CheckPairsWith(*stack_.model));
    DistillOptions d;
    d.nc = nc_;
    d.reg_max = stack_.model->reg_max();
    d.temperature = o_.distill_temp;
    stack_.distill = std::make_unique<DistillLoss>(d);
    stack_.step->set_distillation(stack_.teacher.get(), stack_.distill.get(), o_.distill);
    Say("distillation: " + OptionText(o_.distill) + " x kd (class-score KL + T^2 x DFL-bin KL at T=" +
        OptionText(o_.distill_temp) + ", anchors weighted by the teacher's confidence) added to the loss; "
        "results.csv's train/kd_loss");
  }
  LrScheduleOptions lso;
  lso.epochs = o_.epochs;
  lso.lrf = o_.lrf;
  lso.cos_lr = o_.cos_lr;
  lso.warmup_epochs = o_.warmup_epochs;
  lso.warmup_momentum = o_.warmup_momentum;
  lso.warmup_bias_lr = stack_.spec.warmup_bias_lr;
  lso.momentum = o_.momentum;  // Ultralytics warms up to args.momentum even after the auto rule
  lso.nbs = o_.nbs;
  lso.batch = o_.batch;
  schedule_ = std::make_unique<LrSchedule>(lso);
  if (o_.sync_bn && Distributed()) {
    auto reducer = std::make_shared<StatsReducer>(*dist_);
    EnableSyncBatchNorm(*stack_.model, reducer);
    stack_.loss->set_global_normaliser(reducer);
    if (stack_.distill) stack_.distill->set_global_normaliser(reducer);
    Say("distributed: SyncBatchNorm and the loss normaliser over the global batch (--sync-bn)");
  } else if (o_.sync_bn) {
    Say("--sync-bn: one process, nothing to synchronise");
  }
  if (stack_.fused) Say("optimizer step: fused multi-tensor kernels, inf/nan steps skipped on the device");
  YC_RETURN_IF_ERROR(EnableCudaGraphs(&stack_, o_, Distributed(), [this](const std::string& line) {
    if (IsMain()) Say(line);
  }));
  stopper_ = std::make_unique<EarlyStopping>(o_.patience, state_.best_fitness, state_.best_epoch);
  return Status::OK();
}

// --conv-warmup: the step's convolutions run once on several threads before the first batch (step_warmup.h).
Status TrainRun::WarmUpConvolutions() {
  if (o_.conv_warmup == 0) return Status::OK();
  const std::string line = WarmUpWhereItApplies(stack_, loader_->batch_shapes(), o_.multi_scale, o_.conv_warmup);
  if (IsMain()) Say(line);
  return Status::OK();
}

// Rank 0 validates (the EMA is identical on every rank).
Status TrainRun::BuildValidator() {
  if (!o_.val || !IsMain()) return Status::OK();
  ValOptions vo;
  vo.batch = 2 * o_.batch;
  vo.imgsz = o_.imgsz;
  vo.nms.conf = o_.val_conf;
  vo.nms.iou = o_.val_iou;
  vo.nms.max_det = o_.max_det;
  vo.compute_loss = o_.val_loss;
  vo.loss = LossOptions{o_.box, o_.cls, o_.dfl};
  vo.amp = stack_.target.amp.enabled;
  vo.amp_dtype = stack_.target.amp.dtype;
  vo.channels_last = stack_.target.channels_last;
  vo.threads = o_.threads;
  vo.prefetch = o_.prefetch;
  vo.single_cls = o_.single_cls;
  YC_ASSIGN_OR_RETURN(validator_, Validator::Create(val_split_, vo, stack_.target.device, nc_));
  return Status::OK();
}

// results.csv (rank 0), the GPU monitor, and where a resumed run continues.
Status TrainRun::OpenRecords() {
  if (IsMain()) {
    YC_ASSIGN_OR_RETURN(results_, ResultsLog::Open(out_ / "results.csv", resume_ ? state_.epoch : -1,
                                                   stack_.teacher != nullptr));
  }
  if (stack_.target.device.is_cuda()) {
    gpu_ = std::make_unique<GpuMonitor>(stack_.target.device.index());
    if (!gpu_->available()) Say("gpu busy %: n/a (" + gpu_->unavailable_reason() + ")");
  }
  if (resume_) {
    Say("resumed from " + hooks_.resume.string() + " at epoch " + std::to_string(state_.epoch + 1) +
        (state_.next_batch > 0 ? ", batch " + std::to_string(state_.next_batch) : std::string()));
  }
  return Status::OK();
}

}  // namespace yc::trainer
