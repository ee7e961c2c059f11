// `yolocache-train`: train, validate and run YOLOv8 and YOLO11 models on a yolocache cache.
//   yolocache-train train   --data CACHE --model yolov8n|yolo11n --epochs 100 --batch 16 --imgsz 640 ...
//   yolocache-train val     --weights DIR/weights/best.pt --data CACHE [--json]
//   yolocache-train predict --weights best.pt IMAGES/VIDEOS/DIRS... [--save-txt [--save-conf]] [--json]
// Runs go to --project/--name (runs/detect/train, val, predict; train2, train3 ... as Ultralytics), or --out.
//   yolocache-train ceiling --model yolov8n --batch 64 --imgsz 640 --amp [--data CACHE | --nc 80] [--json]
//   yolocache-train export  --weights best.pt --format onnx|torchscript [--imgsz 640] [--dynamic] [--json]
// Distributed training: start one `train` per rank with RANK/WORLD_SIZE/LOCAL_RANK/MASTER_ADDR/MASTER_PORT
// set (torchrun --no-python does it; docs/DISTRIBUTED.md); --batch is the global batch.
// Argument parsing and printing only; the work is in trainer/ (Train, ValidateCheckpoint, Predictor, Export).
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "base/status.h"
#include "libcache/base/path_json.h"
#include "libcache/base/pid_files.h"
#include "tools/common/cli_args.h"
#include "tools/common/data_arg.h"
#include "tools/common/interrupt.h"
#include "tools/common/progress_bar.h"
#include "tools/yolocache/cli_validators.h"
#include "trainer/config/run_dir.h"
#include "trainer/distributed/distributed.h"
#include "trainer/engine/ceiling_probe.h"
#include "trainer/engine/trainer.h"
#include "trainer/eval/predictor.h"
#include "trainer/eval/validator.h"
#include "trainer/io/exporter.h"
#include "trainer/runtime/device_feed.h"
#include "trainer/runtime/exception_text.h"

namespace {

using namespace yc;
using namespace yc::trainer;

std::string F(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

int Fail(const char* cmd, const Status& st) {
  std::cerr << "yolocache-train " << cmd << ": " << st.ToString() << "\n";
  return ExitCodeFor(st);
}

// A --json document. Paths in it went through SetPathField; anything else that is not UTF-8 (a class
// name from a weights file) shows as U+FFFD rather than failing once the work is done.
std::string JsonText(const nlohmann::json& j) { return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace); }

// Console output of a run: log lines on stdout, a progress bar per epoch on stderr (TTY only), and one
// summary line per epoch on stdout (always, so logs of non-interactive runs show progress).
class ConsoleObserver final : public TrainObserver {
 public:
  void OnMessage(const std::string& line) override {
    EndBar();
    std::cout << line << std::endl;
  }
  void OnEpochStart(int epoch, int epochs, size_t batches) override {
    if (!polling_) polling_.emplace();  // from the first batch on, Train polls the flag (RunTrain)
    EndBar();
    bar_ = std::make_unique<cli::ProgressBar>("epoch " + std::to_string(epoch) + "/" + std::to_string(epochs), batches,
                                              "batch");
  }
  void OnTrainProgress(const BatchProgress& p) override {
    last_ = p;
    if (!bar_) return;
    std::string s = "box " + F("%.4g", p.loss[0]) + " cls " + F("%.4g", p.loss[1]) + " dfl " + F("%.4g", p.loss[2]) +
                    " | " + F("%.1f", p.images_per_second) + " img/s";
    if (p.gpu_mem_gb > 0) s += " | " + F("%.2f", p.gpu_mem_gb) + "G";
    bar_->Update(p.batch, s);
  }
  void OnValStart(int epoch, size_t batches) override {
    EndBar();
    bar_ = std::make_unique<cli::ProgressBar>("  val", batches, "batch");
  }
  void OnValProgress(size_t done, size_t total) override {
    if (bar_) bar_->Update(done);
  }
  void OnEpochEnd(const EpochRecord& r) override {
    EndBar();
    std::string line = "epoch " + std::to_string(r.epoch) + ": box " + F("%.4f", r.train_loss[0]) + " cls " +
                       F("%.4f", r.train_loss[1]) + " dfl " + F("%.4f", r.train_loss[2]) + " | " +
                       F("%.1f", last_.images_per_second) + " img/s";
    if (r.validated) {
      line += " | P " + F("%.3f", r.precision) + " R " + F("%.3f", r.recall) + " mAP50 " + F("%.3f", r.map50) +
              " mAP50-95 " + F("%.3f", r.map50_95);
    }
    line += " | " + F("%.1f", r.time) + " s (epoch " + F("%.2f", r.epoch_train_seconds) + " s of which data wait " +
            F("%.2f", r.data_wait_seconds) + " s, val " +
            F("%.2f", r.val_seconds) + " s, save " + F("%.2f", r.save_seconds) + " s)";
    std::cout << line << std::endl;
  }

 private:
  void EndBar() {
    if (bar_) bar_->Finish();
    bar_.reset();
  }
  std::unique_ptr<cli::ProgressBar> bar_;
  BatchProgress last_;
  std::optional<cli::InterruptPolling> polling_;
};

struct TrainArgs {
  TrainOptions o;
  std::string resume;
  bool resume_other_data = false;
  bool amp = false, no_amp = false;
  std::string amp_dtype = "auto";
  std::string rank_weights;  // hidden --save-rank-weights DIR (DDP tests)
  cli::DataArgs data_args;   // --cache-dir, --strict-source
};

// --data as a cache, a data YAML or a dataset folder (tools/common/data_arg.h).
void AddDataOptions(CLI::App& app, cli::DataArgs& d) {
  app.add_option("--cache-dir", d.cache_dir,
                 "Where a cache built from a --data YAML or folder goes (default $YOLOCACHE_CACHE_DIR, else "
                 "$XDG_CACHE_HOME/yolocache or ~/.cache/yolocache)");
  app.add_flag("--strict-source", d.strict_source,
               "Refuse (exit 1) a cache whose source images or labels changed since it was built");
}

void AddTrainOptions(CLI::App& app, TrainArgs& a) {
  TrainOptions& o = a.o;
  app.add_option("--data", o.data, "Cache directory (`yolocache build`), or a data YAML or dataset folder to cache first");
  AddDataOptions(app, a.data_args);
  app.add_option("--model", o.model,
                 "yolov8n..yolov8x | yolo11n..yolo11x (train: default the --weights' architecture)")
      ->capture_default_str();
  app.add_option("--epochs", o.epochs, "Epochs")->capture_default_str();
  app.add_option("--batch", o.batch, "Batch size")->capture_default_str();
  app.add_option("--imgsz", o.imgsz, "Train/val image size (multiple of 32)")->capture_default_str();
  app.add_option("--device", o.device, "cpu | cuda | cuda:N | N (default: cuda:0 when available, else cpu)");
  app.add_flag("--amp", a.amp, "Mixed precision on (CUDA default: fp16 + loss scaling; CPU: bf16)");
  app.add_flag("--no-amp", a.no_amp, "Mixed precision off (CPU default)");
  app.add_option("--amp-dtype", a.amp_dtype, "auto | fp16 | bf16")->capture_default_str();
  app.add_option("--threads", o.threads, "Loader threads (0: all cores)")->capture_default_str()->check(cli::ThreadCount());
  app.add_option("--torch-threads", o.torch_threads, "LibTorch CPU threads (0: LibTorch's default)")
      ->capture_default_str()
      ->check(cli::ThreadCount());
  app.add_option("--prefetch", o.prefetch, "Batches prepared ahead by the loader")->capture_default_str();
  app.add_option("--order", o.order,
                 "Sampling order: auto (windowed when the train data exceeds the page-cache budget) | shuffle "
                 "(Ultralytics') | windowed (shuffled windows of contiguous records, read once per epoch)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "shuffle", "windowed"}));
  app.add_option("--window", o.window_mb, "Windowed order: window size in MiB (0: a quarter of the budget, an eighth for zstd; >= 256)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--ram-budget", o.ram_budget_gb,
                 "Page-cache budget in GiB for --order auto (0: MemAvailable - 4 GiB)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--window-io", o.window_io,
                 "Windowed order: how windows are read. auto (direct for one process, page-cache with several "
                 "ranks, which share it) | direct (O_DIRECT into the loader's buffers, around the page cache) | "
                 "page-cache (MADV_WILLNEED read-ahead)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "direct", "page-cache"}));
  app.add_option("--read-ahead", o.read_ahead_mb,
                 "MiB of records the train loader reads from disk ahead of its workers (0: off)")
      ->capture_default_str();
  // Negative flags as callbacks: CLI11's "!--no-x" form prints "--no-x{false}" in --help.
  app.add_flag_callback("--no-channels-last", [&o] { o.channels_last = false; },
                        "CUDA: keep weights and inputs NCHW (default channels_last)");
  app.add_flag_callback("--no-fused-optimizer", [&o] { o.fused_optimizer = false; },
               "Step with torch::optim's per-tensor loop instead of the fused multi-tensor kernels (LibTorch >= 2.4)");
  app.add_flag("--cudnn-benchmark", o.cudnn_benchmark,
               "CUDA: cuDNN autotuning (off by default, as in Ultralytics: it pauses to tune each new input shape)");
  app.add_flag("--sync-bn", o.sync_bn,
               "Data-parallel: BatchNorm statistics and the loss normaliser over the global batch (N ranks compute "
               "what one process does; default: per rank, as Ultralytics)");
  app.add_option("--optimizer", o.optimizer, "auto | SGD | Adam | AdamW | RMSProp")->capture_default_str();
  app.add_option("--lr0", o.lr0, "Initial learning rate")->capture_default_str();
  app.add_option("--lrf", o.lrf, "Final learning rate factor (lr0 * lrf)")->capture_default_str();
  app.add_option("--momentum", o.momentum, "SGD momentum / Adam beta1")->capture_default_str();
  app.add_option("--weight-decay", o.weight_decay, "Weight decay")->capture_default_str();
  app.add_option("--warmup-epochs", o.warmup_epochs, "Warmup epochs (>= 100 iterations when > 0)")->capture_default_str();
  app.add_option("--warmup-momentum", o.warmup_momentum, "Warmup initial momentum")->capture_default_str();
  app.add_option("--warmup-bias-lr", o.warmup_bias_lr, "Warmup initial bias lr")->capture_default_str();
  app.add_flag("--cos-lr", o.cos_lr, "Cosine learning-rate schedule");
  app.add_option("--nbs", o.nbs, "Nominal batch size (gradient accumulation)")->capture_default_str();
  app.add_option("--box", o.box, "Box loss gain")->capture_default_str();
  app.add_option("--cls", o.cls, "Class loss gain")->capture_default_str();
  app.add_option("--dfl", o.dfl, "DFL loss gain")->capture_default_str();
  app.add_option("--close-mosaic", o.hyp.close_mosaic, "Disable mosaic for the last N epochs")->capture_default_str();
  app.add_option("--mosaic", o.hyp.mosaic, "Mosaic probability")->capture_default_str();
  app.add_option("--mixup", o.hyp.mixup, "MixUp probability")->capture_default_str();
  app.add_option("--degrees", o.hyp.degrees, "Rotation (+/- deg)")->capture_default_str();
  app.add_option("--translate", o.hyp.translate, "Translation (+/- fraction)")->capture_default_str();
  app.add_option("--scale", o.hyp.scale, "Scale gain (+/-)")->capture_default_str();
  app.add_option("--shear", o.hyp.shear, "Shear (+/- deg)")->capture_default_str();
  app.add_option("--perspective", o.hyp.perspective, "Perspective (+/- fraction)")->capture_default_str();
  app.add_option("--hsv-h", o.hyp.hsv_h, "Hue gain")->capture_default_str();
  app.add_option("--hsv-s", o.hyp.hsv_s, "Saturation gain")->capture_default_str();
  app.add_option("--hsv-v", o.hyp.hsv_v, "Value gain")->capture_default_str();
  app.add_option("--flipud", o.hyp.flipud, "Vertical flip probability")->capture_default_str();
  app.add_option("--fliplr", o.hyp.fliplr, "Horizontal flip probability")->capture_default_str();
  app.add_option("--seed", o.seed, "Random seed (model init, sampling, augmentation)")
      ->capture_default_str()
      ->check(cli::NoMinusSign());  // CLI11 would take -1 as 2^64 - 1
  app.add_option("--synthetic-iters", o.synthetic_iters, "Iterations of the --synthetic-input probe")->capture_default_str();
}

// What only a training run has (validation, checkpoints, the run directory, resume); not `ceiling`'s.
void AddRunOptions(CLI::App& app, TrainArgs& a) {
  TrainOptions& o = a.o;
  app.add_option("--val-every", o.val_every, "Validate every N epochs (0: only after the last)")->capture_default_str();
  app.add_flag_callback("--no-val", [&o] { o.val = false; }, "Never validate (best.pt = the final EMA, no early stopping)");
  app.add_option("--conf", o.val_conf, "Validation NMS confidence threshold")->capture_default_str();
  app.add_option("--iou", o.val_iou, "Validation NMS IoU threshold")->capture_default_str();
  app.add_option("--save-every", o.save_every, "Also save weights/epochN.pt every N epochs (0: off)")->capture_default_str();
  app.add_option("--keep", o.keep, "epochN.pt files kept (0: all)")->capture_default_str();
  app.add_option("--patience", o.patience, "Stop after N epochs without improvement (0: never)")->capture_default_str();
  app.add_option("--resume", a.resume,
                 "Continue the run saved in this checkpoint (e.g. DIR/weights/last.pt), in its run folder unless --out "
                 "names another");
  app.add_flag("--resume-other-data", a.resume_other_data,
               "With --resume: continue on a --data cache other than the one the run trained on (refused without)");
  app.add_option("--project", o.project, "Runs folder: the run goes to PROJECT/NAME")->capture_default_str();
  app.add_option("--name", o.name, "Run name; NAME2, NAME3 ... when PROJECT/NAME exists (as Ultralytics)")
      ->capture_default_str();
  app.add_option("--out", o.out, "Run directory as given (no increment; wins over --project/--name)");
  app.add_flag("--exist-ok", o.exist_ok, "Reuse PROJECT/NAME, or start a new run in an --out that holds one");
  app.add_flag_callback("--no-plots", [&o] { o.plots = false; },
                        "No labels.jpg, train_batch*.jpg, results.png or validation plots");
  app.add_option("--log-every", o.log_every, "Batches between progress updates (host reads of the losses)")
      ->capture_default_str();
  app.add_flag("--synthetic-input", o.synthetic_input,
               "After training, measure the model's fwd+bwd+step ceiling on device-resident random data");
  app.add_option("--save-rank-weights", a.rank_weights, "Every rank writes its final parameters to DIR/rank<R>.pt")
      ->group("");  // hidden: for the distributed tests
}

// --amp / --no-amp / --amp-dtype into the options.
Status ApplyAmpFlags(const TrainArgs& a, TrainOptions* o) {
  if (a.amp) o->amp = AmpMode::kOn;
  if (a.no_amp) o->amp = AmpMode::kOff;
  Result<AmpDtype> dtype = ParseAmpDtype(a.amp_dtype);
  if (!dtype.ok()) return dtype.status();
  o->amp_dtype = *dtype;
  return Status::OK();
}

int RunTrain(CLI::App& app, TrainArgs& a) {
  TrainOptions o = a.o;
  TrainHooks hooks;
  if (!a.resume.empty()) {
    // A resumed run is the saved run: its options come from the checkpoint; only where it runs may change.
    Result<TrainOptions> saved = ResumeOptions(a.resume);
    if (!saved.ok()) return Fail("train", saved.status());
    TrainOptions r = *saved;
    for (const char* fixed : {"--model", "--weights", "--freeze", "--epochs", "--batch", "--imgsz", "--optimizer", "--lr0",
                              "--seed", "--order", "--window", "--project", "--name"}) {
      if (app.count(fixed) > 0) {
        std::cerr << "yolocache-train train: " << fixed << " is ignored with --resume (the checkpoint's value is used)\n";
      }
    }
    if (app.count("--data") > 0) r.data = o.data;  // the cache may have moved
    if (app.count("--out") > 0) r.out = o.out;     // continue elsewhere than the run folder stored
    if (app.count("--device") > 0) r.device = o.device;
    if (app.count("--threads") > 0) r.threads = o.threads;
    if (app.count("--torch-threads") > 0) r.torch_threads = o.torch_threads;
    if (app.count("--prefetch") > 0) r.prefetch = o.prefetch;
    if (app.count("--read-ahead") > 0) r.read_ahead_mb = o.read_ahead_mb;
    if (app.count("--window-io") > 0) r.window_io = o.window_io;
    if (app.count("--log-every") > 0) r.log_every = o.log_every;
    o = r;
    hooks.resume = a.resume;
    hooks.resume_other_data = a.resume_other_data;
  } else {
    Status amp = ApplyAmpFlags(a, &o);
    if (!amp.ok()) return Fail("train", amp);
    // --weights without --model: the file's architecture (Train reads it from the file).
    if (!o.weights.empty() && app.count("--model") == 0) o.model.clear();
  }
  if (const int rc = cli::PrepareDataArg("train", a.data_args, &o.data, o.imgsz, std::cout); rc >= 0) return rc;
  ConsoleObserver console;
  hooks.observer = &console;
  // Ctrl-C, kill and a closed terminal (SIGHUP: an ssh session that dropped) stop training at the next
  // batch, saving last.pt with the position: exit 130. Train polls the flag from its first epoch on (the
  // console observer opens the polling scope then); its setup (reading --weights or --resume, building
  // the model) does not, so a signal there exits at once. Data-parallel ranks poll throughout: they
  // agree on stopping at a batch, and a rank leaving alone would block the others' collectives.
  std::optional<cli::InterruptPolling> ranks_polling;
  Result<DistEnv> dist = DistEnvFromEnvironment();
  if (dist.ok() && dist->world_size > 1) ranks_polling.emplace();
  hooks.cancel = cli::InterruptFlag();
  hooks.rank_weights = a.rank_weights;
  Result<TrainSummary> r = Train(o, hooks);
  if (!r.ok()) return Fail("train", r.status());
  const TrainSummary& s = *r;
  if (s.rank != 0) return s.interrupted ? kExitInterrupted : kExitOk;  // DDP: rank 0 reports the run
  std::cout << "\n" << s.epochs_run << " epochs run (" << s.epochs_completed << "/" << o.epochs << " done) in "
            << F("%.1f", s.wall_seconds) << " s wall (" << F("%.1f", s.train_seconds) << " s training)\n";
  std::cout << "throughput: " << F("%.1f", s.images_per_second) << " img/s over " << s.train_images
            << " train images; GPU busy: " << (s.gpu_busy_percent < 0 ? std::string("n/a") : F("%.1f%%", s.gpu_busy_percent))
            << "\n";
  if (s.epochs_run > 0 && s.train_seconds > 0) {
    std::cout << "between epochs: " << F("%.2f", s.epoch_gap_seconds) << " s of validation + checkpoints = "
              << F("%.1f%%", 100.0 * s.epoch_gap_seconds / s.train_seconds) << " of training time\n";
  }
  if (s.synthetic_images_per_second >= 0) {
    std::cout << "synthetic-input ceiling (model fwd+bwd+step, device-resident data): "
              << F("%.1f", s.synthetic_images_per_second) << " img/s; real run " << F("%.1f", s.images_per_second)
              << " img/s = "
              << F("%.1f%%", s.synthetic_images_per_second > 0 ? 100.0 * s.images_per_second / s.synthetic_images_per_second : 0.0)
              << " of it\n";
  }
  if (s.has_metrics) {
    std::cout << "final val: P " << F("%.3f", s.final_metrics.precision) << " R " << F("%.3f", s.final_metrics.recall)
              << " mAP50 " << F("%.3f", s.final_metrics.map50) << " mAP50-95 " << F("%.3f", s.final_metrics.map50_95)
              << "\n";
  }
  if (!s.best.empty()) {
    std::cout << "best: epoch " << s.best_epoch << " (fitness " << F("%.4f", s.best_fitness) << ") -> " << s.best.string()
              << "\n";
  }
  std::cout << "last: " << s.last.string() << "\nresults: " << (s.out_dir / "results.csv").string()
            << (s.plot.empty() ? std::string() : "; " + s.plot) << "\nResults saved to " << s.out_dir.string() << "\n";
  if (s.early_stopped) std::cout << "stopped early (patience " << o.patience << ")\n";
  if (s.interrupted) return kExitInterrupted;
  return kExitOk;
}

// `ceiling`: the model's own fwd + bwd + optimizer step throughput on device-resident random data, with
// the train options (the same probe --synthetic-input runs after training, without a run).
struct CeilingArgs {
  TrainArgs train;
  int64_t nc = 80;
  bool json = false;
};

int RunCeiling(CLI::App& app, CeilingArgs& a) {
  TrainOptions o = a.train.o;
  Status amp = ApplyAmpFlags(a.train, &o);
  if (!amp.ok()) return Fail("ceiling", amp);
  int64_t nc = a.nc;
  std::vector<ProbeLabels> labels;  // empty: 4 random boxes per image
  if (!o.data.empty()) {  // the classes and the label tables of real batches
    std::ostream& log = a.json ? std::cerr : std::cout;
    if (const int rc = cli::PrepareDataArg("ceiling", a.train.data_args, &o.data, o.imgsz, log); rc >= 0) return rc;
    if (app.count("--nc") > 0) std::cerr << "yolocache-train ceiling: --nc is ignored with --data\n";
    Result<TrainLabelSample> sampled = SampleTrainLabels(o, 8);
    if (!sampled.ok()) return Fail("ceiling", sampled.status());
    nc = sampled->nc;
    labels = std::move(sampled->labels);
  }
  if (nc < 1) return Fail("ceiling", Status::InvalidArgument("--nc must be >= 1"));
  TrainOptions check = o;
  if (check.data.empty()) check.data = "(none: random data)";  // the probe reads no cache
  Status valid = ValidateTrainOptions(check);
  if (!valid.ok()) return Fail("ceiling", valid);
  Result<SyntheticThroughput> r = MeasureSyntheticThroughput(o, nc, o.synthetic_iters, labels);
  if (!r.ok()) return Fail("ceiling", r.status());
  if (a.json) {
    nlohmann::json j = {{"model", o.model},
                        {"batch", o.batch},
                        {"imgsz", o.imgsz},
                        {"nc", nc},
                        {"iterations", o.synthetic_iters},
                        {"fused_optimizer", r->fused_optimizer},
                        {"channels_last", o.channels_last},
                        {"label_tables", labels.size()},
                        {"warmup_seconds", r->warmup_seconds},
                        {"images_per_second", r->images_per_second}};
    std::cout << JsonText(j) << "\n";
  } else {
    std::cout << "ceiling: " << F("%.1f", r->images_per_second) << " img/s (" << o.model << ", batch " << o.batch
              << ", imgsz " << o.imgsz << ", nc " << nc << ", " << o.synthetic_iters << " iterations, "
              << (labels.empty() ? std::string("4 random boxes per image, ")
                                 : std::to_string(labels.size()) + " real label tables, ")
              << (r->fused_optimizer ? "fused" : "torch::optim") << " optimizer step; warm-up "
              << F("%.1f", r->warmup_seconds) << " s)\n";
  }
  return kExitOk;
}

struct ValArgs {
  CheckpointValOptions o;
  cli::DataArgs data_args;
  bool json = false;
  bool no_rect = false;
};

int RunVal(const ValArgs& a) {
  CheckpointValOptions o = a.o;
  o.rect = !a.no_rect;
  std::error_code ec;  // no cache is built for weights that are not there
  if (!std::filesystem::exists(o.weights, ec)) return Fail("val", Status::NotFound(Status::At(o.weights, "no such file")));
  std::ostream& log = a.json ? std::cerr : std::cout;  // stdout stays one JSON document
  // A YAML or folder is cached at the size val runs at: the checkpoint's imgsz when none is given.
  Result<int> imgsz = CheckpointValImgsz(o.weights, o.imgsz);
  if (!imgsz.ok()) return Fail("val", imgsz.status());
  o.imgsz = *imgsz;
  if (const int rc = cli::PrepareDataArg("val", a.data_args, &o.data, o.imgsz, log); rc >= 0) return rc;
  std::unique_ptr<cli::ProgressBar> bar;
  if (!a.json) bar = std::make_unique<cli::ProgressBar>("val", 0, "batch");
  auto progress = [&](size_t done, size_t total) {
    if (!bar) return;
    bar->SetTotal(total);
    bar->Update(done);
  };
  Result<CheckpointValReport> r = ValidateCheckpoint(o, progress);
  if (bar) bar->Finish();
  if (!r.ok()) return Fail("val", r.status());
  const ValResult& v = r->result;
  if (a.json) {
    nlohmann::json j = MetricsToJson(v.metrics, r->names);
    SetPathField(j, "save_dir", r->save_dir.string());
    SetPathField(j, "weights", o.weights);
    SetPathField(j, "data", o.data);
    j["split"] = o.split;
    j["imgsz"] = r->imgsz;
    j["seconds"] = v.seconds;
    j["stage_seconds"] = {{"data", v.data_seconds}, {"model", v.model_seconds}, {"nms", v.nms_seconds},
                          {"metrics", v.metrics_seconds}};
    if (v.has_loss) j["loss"] = {{"box", v.loss[0]}, {"cls", v.loss[1]}, {"dfl", v.loss[2]}};
    std::cout << JsonText(j) << "\n";
    return kExitOk;
  }
  std::printf("%-16s %8s %10s %8s %8s %8s %9s\n", "class", "images", "instances", "P", "R", "mAP50", "mAP50-95");
  std::printf("%-16s %8lld %10lld %8.3f %8.3f %8.3f %9.3f\n", "all", static_cast<long long>(v.metrics.images),
              static_cast<long long>(v.metrics.instances), v.metrics.precision, v.metrics.recall, v.metrics.map50,
              v.metrics.map50_95);
  const auto& pc = v.metrics.per_class;
  for (size_t i = 0; i < pc.classes.size(); ++i) {
    double ap = 0;
    for (double x : pc.ap[i]) ap += x;
    ap /= std::max<size_t>(pc.ap[i].size(), 1);
    const int64_t c = pc.classes[i];
    const std::string name = c >= 0 && static_cast<size_t>(c) < r->names.size() ? r->names[c] : std::to_string(c);
    std::printf("%-16s %8s %10lld %8.3f %8.3f %8.3f %9.3f\n", name.c_str(), "", static_cast<long long>(pc.num_targets[i]),
                pc.p[i], pc.r[i], pc.ap[i][0], ap);
  }
  std::printf("%lld images in %.2f s on %s, imgsz %d (data %.3f s, model %.3f s, NMS %.3f s, metrics %.3f s)\n",
              static_cast<long long>(v.images), v.seconds, r->device.c_str(), r->imgsz, v.data_seconds, v.model_seconds,
              v.nms_seconds, v.metrics_seconds);
  if (!r->plots.empty()) std::printf("%s\n", r->plots.c_str());
  std::printf("Results saved to %s\n", r->save_dir.c_str());
  return kExitOk;
}

struct PredictArgs {
  std::string weights, device;
  std::string project = "runs/detect", name = "predict", out;
  bool exist_ok = false;
  std::vector<std::string> images;
  PredictOptions o;
  bool json = false;
};

int RunPredict(const PredictArgs& a) {
  Result<std::vector<PredictInput>> inputs = ExpandPredictInputs(a.images);
  if (!inputs.ok()) return Fail("predict", inputs.status());
  if (inputs->empty()) return Fail("predict", Status::InvalidArgument("no images or videos given (files or directories)"));
  if (a.o.save_conf && !a.o.save_txt) std::cerr << "yolocache-train predict: --save-conf has no effect without --save-txt\n";
  Result<at::Device> device = ParseDevice(a.device);
  if (!device.ok()) return Fail("predict", device.status());
  ConfigureDevice(*device);
  // The output-path rule before anything is read or written: the run folder must not hold the inputs.
  Result<std::filesystem::path> planned = ResolveRunDir(a.out, a.project, a.name, a.exist_ok, /*create=*/false);
  if (!planned.ok()) return Fail("predict", planned.status());
  if (Status st = CheckPredictOutputs(*inputs, *planned); !st.ok()) return Fail("predict", st);
  Result<std::unique_ptr<Predictor>> p = Predictor::Load(a.weights, *device, a.o);
  if (!p.ok()) return Fail("predict", p.status());
  Result<std::filesystem::path> save_dir = ResolveRunDir(a.out, a.project, a.name, a.exist_ok);
  if (!save_dir.ok()) return Fail("predict", save_dir.status());
  for (const auto& dir : {*save_dir, *save_dir / "labels"}) RemoveStaleTempFiles(dir);  // a killed run's (pid_files.h)
  // Ctrl-C, kill and SIGHUP stop between images (a video between frames): the results so far are kept.
  cli::InterruptPolling polling;
  int failures = 0;
  size_t done = 0;
  nlohmann::json all = nlohmann::json::array();
  for (const PredictInput& in : *inputs) {
    if (polling.interrupted()) break;
    ++done;
    Result<PredictResult> r = in.video ? (*p)->PredictVideo(in, *save_dir, polling.flag()) : (*p)->PredictFile(in, *save_dir);
    if (!r.ok()) {
      if (r.status().code() == Status::Code::kCancelled) break;
      std::cerr << "yolocache-train predict: " << r.status().ToString() << "\n";
      ++failures;
      continue;
    }
    if (a.json) {
      all.push_back(PredictResultToJson(*r, (*p)->names()));
    } else {
      std::cout << in.source.string() << ": " << r->width << "x" << r->height << ", "
                << (in.video ? std::to_string(r->frames) + " frames, " : std::string()) << r->detections.size()
                << " detections (" << F("%.1f", r->milliseconds) << " ms) -> " << r->output.string() << "\n";
    }
  }
  if (a.json) {
    std::cout << JsonText(all) << "\n";
  } else {
    std::cout << "Results saved to " << save_dir->string() << (a.o.save_txt ? " (labels in labels/)" : "") << "\n";
  }
  if (polling.interrupted()) {
    std::cerr << "yolocache-train predict: interrupted after " << done << " of " << inputs->size() << " inputs\n";
    return kExitInterrupted;
  }
  return failures == 0 ? kExitOk : kExitProblems;
}

struct ExportArgs {
  ExportOptions o;
  std::string format = "torchscript";  // Ultralytics' default format
  bool json = false;
};

std::string Shape(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + (dims[i] < 0 ? std::string("?") : std::to_string(dims[i]));
  return s + "]";
}

int RunExport(ExportArgs& a) {
  Result<ExportFormat> format = ParseExportFormat(a.format);
  if (!format.ok()) return Fail("export", format.status());
  a.o.format = *format;
  Result<ExportReport> r = Export(a.o);
  if (!r.ok()) return Fail("export", r.status());
  for (const auto& w : r->warnings) std::cerr << "yolocache-train export: warning: " << w << "\n";
  const char* dtype = r->half ? "float16" : "float32";
  if (a.json) {
    nlohmann::json j;
    SetPathField(j, "file", r->file.string());
    j["format"] = ExportFormatName(r->format);
    j["bytes"] = r->bytes;
    j["model"] = r->model;
    j["nc"] = r->nc;
    j["input"] = {{"name", "images"}, {"shape", r->input_shape}, {"dtype", dtype}};
    j["output"] = {{"name", "output0"}, {"shape", r->output_shape}, {"dtype", dtype}};
    if (r->format == ExportFormat::kOnnx) j["opset"] = r->opset;
    j["device"] = r->device;
    j["warnings"] = r->warnings;
    j["seconds"] = r->seconds;
    std::cout << JsonText(j) << "\n";
    return kExitOk;
  }
  std::cout << "exported " << r->model << " (" << r->nc << " classes) to " << r->file.string() << " ("
            << F("%.1f", static_cast<double>(r->bytes) / 1e6) << " MB, " << ExportFormatName(r->format);
  if (r->format == ExportFormat::kOnnx) std::cout << " opset " << r->opset;
  std::cout << ") in " << F("%.1f", r->seconds) << " s\n"
            << "  input  images  " << Shape(r->input_shape) << " " << dtype << " (RGB 0-1)\n"
            << "  output output0 " << Shape(r->output_shape) << " " << dtype << " (xywh pixels, class scores)\n";
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  cli::InstallInterruptHandling("yolocache-train");  // first: a signal from here on exits 130 (interrupt.h)
  CLI::App app{"yolocache-train: train, validate and run YOLOv8 / YOLO11 on a yolocache cache (LibTorch)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "yolocache-train 0.1.0");

  TrainArgs train;
  CLI::App* train_cmd = app.add_subcommand("train", "Train a YOLOv8 or YOLO11 model (Ultralytics recipe) on a cache");
  AddTrainOptions(*train_cmd, train);
  AddRunOptions(*train_cmd, train);
  // Fine-tuning (train only): --model then defaults to the weights' architecture.
  train_cmd->add_option("--weights", train.o.weights,
                        "Initial weights: an Ultralytics .pt (yolov8n.pt, a run's best.pt) or a yolocache checkpoint; "
                        "tensors whose name and shape match are transferred; --model defaults to the file's");
  train_cmd->add_option("--freeze", train.o.freeze, "Freeze layers model.0 .. model.N-1 (and .dfl), as Ultralytics")
      ->capture_default_str();

  CeilingArgs ceiling;
  CLI::App* ceiling_cmd = app.add_subcommand(
      "ceiling", "Measure the model's fwd+bwd+step throughput on device-resident random data (no loader)");
  AddTrainOptions(*ceiling_cmd, ceiling.train);
  ceiling_cmd->add_option("--nc", ceiling.nc, "Classes (without --data)")->capture_default_str();
  ceiling_cmd->add_flag("--json", ceiling.json, "Print the result as JSON");

  ValArgs val;
  CLI::App* val_cmd = app.add_subcommand("val", "Validate a checkpoint on a cache split (P, R, mAP50, mAP50-95)");
  val_cmd->add_option("--weights", val.o.weights, "Checkpoint (best.pt / last.pt) or Ultralytics .pt")->required();
  val_cmd->add_option("--data", val.o.data, "Cache directory, or a data YAML or dataset folder to cache first")->required();
  AddDataOptions(*val_cmd, val.data_args);
  val_cmd->add_option("--split", val.o.split, "Split to validate on")->capture_default_str();
  val_cmd->add_option("--batch", val.o.batch, "Batch size")->capture_default_str();
  val_cmd->add_option("--imgsz", val.o.imgsz, "Image size (0: the checkpoint's)")->capture_default_str();
  val_cmd->add_option("--device", val.o.device, "cpu | cuda | cuda:N (default: cuda:0 when available)");
  val_cmd->add_option("--conf", val.o.nms.conf, "NMS confidence threshold")->capture_default_str();
  val_cmd->add_option("--iou", val.o.nms.iou, "NMS IoU threshold")->capture_default_str();
  val_cmd->add_option("--max-det", val.o.nms.max_det, "Detections per image at most")->capture_default_str();
  val_cmd->add_option("--threads", val.o.threads, "Loader threads (0: all cores)")->capture_default_str()->check(cli::ThreadCount());
  val_cmd->add_flag("--no-rect", val.no_rect, "Square imgsz batches instead of rectangular ones");
  val_cmd->add_flag("--json", val.json, "Print the metrics as JSON");
  val_cmd->add_option("--project", val.o.project, "Runs folder: plots go to PROJECT/NAME")->capture_default_str();
  val_cmd->add_option("--name", val.o.name, "Run name; NAME2, NAME3 ... when PROJECT/NAME exists")->capture_default_str();
  val_cmd->add_option("--out", val.o.out, "Run directory as given (no increment; wins over --project/--name)");
  val_cmd->add_flag("--exist-ok", val.o.exist_ok, "Reuse PROJECT/NAME instead of incrementing");
  val_cmd->add_flag_callback("--no-plots", [&val] { val.o.plots = false; }, "No PR/F1/P/R curves or confusion matrices");

  PredictArgs predict;
  predict.o.imgsz = 0;
  CLI::App* predict_cmd =
      app.add_subcommand("predict", "Detect objects in images and videos; write annotated JPEGs / AVIs (and label txt files)");
  predict_cmd->add_option("--weights", predict.weights, "Checkpoint (best.pt / last.pt) or Ultralytics .pt")->required();
  predict_cmd->add_option("images", predict.images, "Image or video files, or directories (searched recursively)")
      ->required();
  predict_cmd->add_option("--project", predict.project, "Runs folder: results go to PROJECT/NAME")->capture_default_str();
  predict_cmd->add_option("--name", predict.name, "Run name; NAME2, NAME3 ... when PROJECT/NAME exists")
      ->capture_default_str();
  predict_cmd->add_option("--out", predict.out, "Run directory as given (no increment; wins over --project/--name)");
  predict_cmd->add_flag("--exist-ok", predict.exist_ok, "Reuse PROJECT/NAME instead of incrementing");
  predict_cmd->add_flag("--save-txt", predict.o.save_txt, "Write labels/<name>.txt rows: cls xc yc w h (normalised)");
  predict_cmd->add_flag("--save-conf", predict.o.save_conf, "Append each detection's confidence to the --save-txt rows");
  predict_cmd->add_option("--imgsz", predict.o.imgsz, "Inference size (0: the checkpoint's)")->capture_default_str();
  predict_cmd->add_option("--conf", predict.o.conf, "Confidence threshold")->capture_default_str();
  predict_cmd->add_option("--iou", predict.o.iou, "NMS IoU threshold")->capture_default_str();
  predict_cmd->add_option("--max-det", predict.o.max_det, "Detections per image at most")->capture_default_str();
  predict_cmd->add_option("--device", predict.device, "cpu | cuda | cuda:N (default: cuda:0 when available)");
  predict_cmd->add_flag("--json", predict.json, "Print the detections as JSON");

  ExportArgs exp;
  CLI::App* export_cmd = app.add_subcommand(
      "export", "Export weights to ONNX or TorchScript, laid out as Ultralytics exports them (best.pt -> best.onnx)");
  export_cmd->add_option("--weights", exp.o.weights, "Ultralytics .pt or yolocache checkpoint")->required();
  export_cmd->add_option("--format", exp.format, "onnx | torchscript")->capture_default_str();
  export_cmd->add_option("--imgsz", exp.o.imgsz, "Input size: one value or height width (rounded up to a multiple of 32)")
      ->expected(1, 2)
      ->capture_default_str();
  export_cmd->add_option("--batch", exp.o.batch, "Batch size of the input")->capture_default_str();
  export_cmd->add_flag("--dynamic", exp.o.dynamic, "ONNX: batch, height and width free (any multiple of 32)");
  export_cmd->add_flag("--half", exp.o.half, "fp16 weights and I/O (ONNX: any device; TorchScript: CUDA only)");
  export_cmd->add_option("--opset", exp.o.opset,
                         "ONNX opset, " + std::to_string(kOnnxMinOpset) + ".." + std::to_string(OnnxMaxOpset()) +
                             " (default: the newest, " + std::to_string(OnnxMaxOpset()) + ")");
  export_cmd->add_option("--device", exp.o.device, "cpu | cuda | cuda:N (default cpu, as Ultralytics)");
  export_cmd->add_option("--out", exp.o.out, "Output file (default: the weights' stem + .onnx / .torchscript beside them)");
  export_cmd->add_flag("--json", exp.json, "Print the result as JSON");

  app.name(argv[0]);
  // Ultralytics' key=value (epochs=3 == --epochs 3; model=x.pt is --weights, save_period= --save-every,
  // workers= --threads) and "did you mean" on a typo.
  const std::vector<cli::KeyAlias> aliases = {
      {"model", "--weights", ".pt"}, {"save_period", "--save-every", ""}, {"workers", "--threads", ""}};
  if (const int rc = cli::ParseCommandLine(app, argc, argv, aliases); rc >= 0) return rc;
  try {
    if (train_cmd->parsed()) {
      if (train.resume.empty() && train.o.data.empty()) {
        return Fail("train", Status::InvalidArgument("--data CACHE is required (or --resume CHECKPOINT)"));
      }
      return RunTrain(*train_cmd, train);
    }
    if (ceiling_cmd->parsed()) return RunCeiling(*ceiling_cmd, ceiling);
    if (val_cmd->parsed()) return RunVal(val);
    if (predict_cmd->parsed()) return RunPredict(predict);
    if (export_cmd->parsed()) return RunExport(exp);
  } catch (const std::exception& e) {  // one line with the reason (LibTorch's what() holds a backtrace)
    const std::vector<CLI::App*> chosen = app.get_subcommands();
    return Fail(chosen.empty() ? "" : chosen.front()->get_name().c_str(), ExceptionStatus(e, ""));
  }
  return kExitUsage;
}
