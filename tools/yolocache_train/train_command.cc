// `yolocache-train train`: a YOLOv8 / YOLO11 training run (Ultralytics' recipe) on a cache, or its
// continuation with --resume. Distributed: device=0,1 starts one process per device (train_ranks.h), or
// one process per rank under torchrun (docs/DISTRIBUTED.md).
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "libcache/remote/object_location.h"
#include "tools/common/command.h"
#include "tools/common/data_report.h"
#include "tools/common/interrupt.h"
#include "tools/common/rank_output.h"
#include "tools/yolocache_train/console_observer.h"
#include "tools/yolocache_train/result_file.h"
#include "tools/yolocache_train/teacher_check.h"
#include "tools/yolocache_train/train_cli.h"
#include "tools/yolocache_train/train_ranks.h"
#include "trainer/config/args_yaml.h"
#include "trainer/distributed/distributed.h"
#include "trainer/engine/trainer.h"
#include "trainer/eval/class_table.h"

namespace yc::cli {
namespace {

using namespace yc::trainer;

// Which images and labels of the cache the run uses (Ultralytics' fraction, single_cls, classes), chosen
// when it opens the data: the cache stays as built.
void AddDataSelectionOptions(CLI::App& app, TrainOptions& o) {
  app.add_option("--fraction", o.fraction, "Share of the train images used: the first round(n x fraction), as Ultralytics")
      ->capture_default_str();
  app.add_flag("--single-cls", o.single_cls, "Train one class: every label is class 0 ('item'), a 1-class model");
  AddClassesOption(app, &o.classes, "Only labels of these classes, train and val (0 | [0,2] | 0,2; default: all)");
}

// What only a training run has (validation, checkpoints, the run directory, resume); not `ceiling`'s.
void AddRunOptions(CLI::App& app, TrainArgs& a) {
  TrainOptions& o = a.o;
  app.add_option("--val-every", o.val_every, "Validate every N epochs (0: only after the last)")->capture_default_str();
  app.add_flag_callback("--no-val", [&o] { o.val = false; }, "Never validate (best.pt = the final EMA, no early stopping)");
  app.add_option("--conf", o.val_conf, "Validation NMS confidence threshold")->capture_default_str();
  app.add_option("--iou", o.val_iou, "Validation NMS IoU threshold")->capture_default_str();
  app.add_option("--max-det", o.max_det, "Validation detections per image at most")->capture_default_str();
  app.add_flag("--rect", o.rect,
               "Rectangular train batches as Ultralytics' rect=True: aspect-ratio order, a shape per batch, no "
               "shuffle, no mosaic/mixup/cutmix");
  app.add_option("--autobatch", o.autobatch,
                 "Pick the batch that fills this share of the GPU's memory (Ultralytics' batch=-1 is 0.6, batch=0.7 "
                 "is 0.7); on the CPU the default batch 16")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--save-every", o.save_every, "Also save weights/epochN.pt every N epochs (0: off)")->capture_default_str();
  app.add_option("--keep", o.keep, "epochN.pt files kept (0: all)")->capture_default_str();
  app.add_flag("--exact-resume", o.exact_resume,
               "last.pt/epochN.pt keep the fp32 model, EMA and optimizer state (~3x Ultralytics' fp16 size), so "
               "--resume ends bit-for-bit where an uninterrupted run does");
  app.add_option("--patience", o.patience, "Stop after N epochs without improvement (0: never)")->capture_default_str();
  app.add_option("--resume", a.resume,
                 "Continue the run saved in this checkpoint (e.g. DIR/weights/last.pt), in its run folder unless --out "
                 "names another");
  app.add_flag("--resume-other-data", a.resume_other_data,
               "With --resume: continue on a --data cache other than the one the run trained on (refused without)");
  AddRunFolderOptions(app, o.project, o.name, o.out, o.exist_ok, "the run",
                      "Reuse PROJECT/NAME, or start a new run in an --out that holds one");
  app.add_flag_callback("--no-plots", [&o] { o.plots = false; },
                        "No labels.jpg, train_batch*.jpg, results.png or validation plots");
  app.add_option("--log-every", o.log_every, "Batches between progress updates (host reads of the losses)")
      ->capture_default_str();
  app.add_flag("--synthetic-input", o.synthetic_input,
               "After training, measure the model's fwd+bwd+step ceiling on device-resident random data");
  app.add_flag("--dry-run", a.dry_run,
               "Read and check every argument, print the run's args.yaml (Ultralytics' keys) and stop: no cache is "
               "built and nothing is written");
  app.add_option("--cache-budget", o.cache_budget_gb,
                 "GiB: stream a --data s3:// or https:// cache into at most this much of --cache-dir instead of "
                 "fetching it whole: the train split window by window (--order windowed; each data-parallel rank "
                 "fetches only the windows dealt to it), the val split whole (docs/REMOTE.md, \"Streaming\")")
      ->check(CLI::PositiveNumber);
  app.add_option("--cpu-ranks", a.cpu_ranks,
                 "Start N data-parallel ranks on the CPU (Gloo) with --device cpu, as device=0,1 starts one per GPU "
                 "(Ultralytics has no CPU DDP: for testing)");
  app.add_option("--save-rank-weights", a.rank_weights, "Every rank writes its final parameters to DIR/rank<R>.pt")
      ->group("");  // hidden: for the distributed tests
  // Fine-tuning (train only): --model then defaults to the weights' architecture.
  app.add_option("--weights", o.weights,
                 "Initial weights: an Ultralytics .pt (yolov8n.pt, a run's best.pt) or a yolocache checkpoint; "
                 "tensors whose name and shape match are transferred; --model defaults to the file's");
  app.add_option_function<std::string>(
      "--freeze",
      [&o](const std::string& text) {
        if (Status st = SetFreeze(text, &o); !st.ok()) throw CLI::ValidationError(st.message());
      },
      "Freeze layers as Ultralytics' freeze: N freezes model.0 .. model.N-1, a list 0,3,5 (or [0,3,5]) the layers "
      "named; .dfl always");
  app.add_option("--time", o.time,
                 "Train for this many hours, overriding --epochs (recomputed after every epoch from the mean epoch "
                 "time), as Ultralytics' time=; 0: off")
      ->capture_default_str();
  app.add_flag("--multi-scale", o.multi_scale,
               "Each train batch resized to a random multiple of 32 in [0.5, 1.5] x imgsz, as Ultralytics' multi_scale");
  // --sr and sr= are the YOLOv5 pruning forks' name (key=value maps to --sr: not a default.yaml key).
  app.add_option("--sparsity,--sr", o.sparsity,
                 "Network slimming: S * sign(gamma) added to the prunable BatchNorm weights' gradients before each "
                 "optimizer step (e.g. 1e-3; then `prune`); --sr / sr= as the YOLOv5 pruning forks; 0: off")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  // Not default.yaml keys: key=value maps prune_at=, prune_ratio= and prune_gflops= to these.
  app.add_option("--prune-at", o.prune_at,
                 "Prune after this epoch: the EMA's smallest-|gamma| channels go (--prune-ratio) and the later epochs "
                 "train the pruned model on the same schedule, sparsity off (docs/TRAINER.md, \"Pruning inside a "
                 "run\"); 0: off")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--prune-ratio", o.prune_ratio,
                 "With --prune-at: the share (0..1) of the prunable channels removed, as `prune --ratio` "
                 "(--min-keep 0.1, --multiple-of 8)")
      ->capture_default_str();
  app.add_option("--prune-gflops", o.prune_gflops,
                 "With --prune-at, instead of --prune-ratio: remove at least this share (0..1) of the GFLOPs at "
                 "--imgsz, as `prune --gflops`")
      ->capture_default_str();
  // Not default.yaml keys either: key=value maps teacher=, distill= and distill_temp= to these.
  app.add_option("--teacher", o.teacher,
                 "Knowledge distillation from this trained checkpoint of the same classes (a run's best.pt, an "
                 "Ultralytics .pt, a pruned file): run frozen on every batch, its head outputs teach the model's "
                 "(docs/TRAINER.md, \"Distillation\")");
  app.add_option("--distill-weight,--distill", o.distill,
                 "With --teacher: weight of the distillation loss added to the detection loss (distill=)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--distill-temp", o.distill_temp,
                 "With --teacher: temperature T of the DFL box-bin distributions (the term is scaled by T^2)")
      ->capture_default_str();
  AddDataSelectionOptions(app, o);
}


// A resumed run is the saved run: its options come from the checkpoint; only where and how fast it runs
// may change.
Result<TrainOptions> ResumedOptions(const CLI::App& app, const TrainOptions& given, const std::string& resume) {
  YC_ASSIGN_OR_RETURN(TrainOptions r, ResumeOptions(resume));
  for (const char* fixed : {"--model", "--weights", "--freeze", "--sparsity", "--prune-at", "--prune-ratio", "--prune-gflops",
                            "--teacher", "--distill-weight",
                            "--distill-temp", "--epochs", "--time", "--multi-scale", "--batch",
                            "--imgsz", "--optimizer", "--lr0", "--seed", "--order", "--window", "--project", "--name",
                            "--fraction", "--single-cls", "--classes"}) {
    if (app.count(fixed) > 0) {
      RankStream(std::cerr) << "yolocache-train train: " << fixed << " is ignored with --resume (the checkpoint's value is used)\n";
    }
  }
  if (app.count("--data") > 0) r.data = r.data_source = given.data;  // the cache may have moved
  if (app.count("--out") > 0) r.out = given.out;     // continue elsewhere than the run folder stored
  if (app.count("--device") > 0) r.device = given.device;
  if (app.count("--threads") > 0) r.threads = given.threads;
  if (app.count("--torch-threads") > 0) r.torch_threads = given.torch_threads;
  if (app.count("--prefetch") > 0) r.prefetch = given.prefetch;
  if (app.count("--read-ahead") > 0) r.read_ahead_mb = given.read_ahead_mb;
  if (app.count("--window-io") > 0) r.window_io = given.window_io;
  if (app.count("--log-every") > 0) r.log_every = given.log_every;
  r.cache_budget_gb = given.cache_budget_gb;  // resources, not stored with the run: as given now
  r.cache_root = given.cache_root;
  return r;
}

void PrintSummary(const TrainSummary& s, const TrainOptions& o) {
  std::cout << "\n" << s.epochs_run << " epochs run (" << s.epochs_completed << "/" << o.epochs << " done) in "
            << F("%.1f", s.wall_seconds) << " s wall (" << F("%.1f", s.train_seconds) << " s training)\n";
  std::cout << "throughput: " << F("%.1f", s.images_per_second) << " img/s over " << s.train_images
            << " train images; GPU busy: " << (s.gpu_busy_percent < 0 ? std::string("n/a") : F("%.1f%%", s.gpu_busy_percent))
            << "\n";
  if (s.epochs_run > 0 && s.train_seconds > 0) {
    const TrainSummary::GapParts& g = s.gap_parts;
    std::cout << "between epochs: " << F("%.2f", s.epoch_gap_seconds) << " s of validation + checkpoints = "
              << F("%.1f%%", 100.0 * s.epoch_gap_seconds / s.train_seconds) << " of training time (validation: data "
              << F("%.2f", g.val_data) << " s, model " << F("%.2f", g.val_model) << " s, NMS " << F("%.2f", g.val_nms)
              << " s, metrics " << F("%.2f", g.val_metrics) << " s; checkpoints: snapshots " << F("%.2f", g.snapshots)
              << " s, waiting for the writer " << F("%.2f", g.writer_wait) << " s"
              << (g.beside > 0 ? "; " + std::to_string(g.beside) + " epoch ends beside the next epoch, " +
                                     F("%.2f", g.beside_seconds) + " s on their own thread"
                               : std::string())
              << ")\n";
  }
  if (s.synthetic_images_per_second >= 0) {
    const double share = s.synthetic_images_per_second > 0 ? 100.0 * s.images_per_second / s.synthetic_images_per_second : 0.0;
    std::cout << "synthetic-input ceiling (model fwd+bwd+step, device-resident data): "
              << F("%.1f", s.synthetic_images_per_second) << " img/s; real run " << F("%.1f", s.images_per_second)
              << " img/s = " << F("%.1f%%", share) << " of it\n";
  }
  if (s.has_metrics) {
    // Ultralytics' closing table: every class with its images and instances (trainer/eval/class_table.h).
    for (const std::string& line : ClassTableLines(s.final_metrics, s.names)) std::cout << line << "\n";
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
}

int RunTrain(const CLI::App& app, const TrainArgs& a) {
  if (a.resume.empty() && a.o.data.empty())
    return Fail("train", Status::InvalidArgument("--data CACHE is required (or --resume CHECKPOINT)"));
  TrainOptions o = a.o;
  TrainHooks hooks;
  if (!a.resume.empty()) {
    Result<TrainOptions> resumed = ResumedOptions(app, a.o, a.resume);
    if (!resumed.ok()) return Fail("train", resumed.status());
    o = *resumed;
    hooks.resume = a.resume;
    hooks.resume_other_data = a.resume_other_data;
  } else {
    if (Status amp = ApplyAmpFlags(a, &o); !amp.ok()) return Fail("train", amp);
    // --weights without --model: the file's architecture (Train reads it from the file).
    if (!o.weights.empty() && app.count("--model") == 0) o.model.clear();
    if (o.teacher.empty() && (app.count("--distill-weight") > 0 || app.count("--distill-temp") > 0)) {
      return Fail("train", Status::InvalidArgument("--distill-weight and --distill-temp need --teacher T.pt"));
    }
    // Absolute, so --resume (and args.yaml's cfg=) finds the teacher from any working directory.
    if (!o.teacher.empty()) o.teacher = std::filesystem::absolute(o.teacher).lexically_normal().string();
  }
  if (a.resume.empty()) o.data_source = o.data;  // args.yaml's `data`: what the user gave, not the cache
  o.cache_root = a.data_args.cache_dir;
  // Every argument is checked before any work: a run that will be refused builds no cache.
  std::string rounded;
  o.imgsz = StrideMultipleImgsz(o.imgsz, &rounded);
  if (!rounded.empty()) std::cerr << "yolocache-train train: warning: " << rounded << "\n";
  if (Status st = ValidateTrainOptions(o); !st.ok()) return Fail("train", st);
  Result<int> launch = RanksToLaunch(a, o);  // device=0,1: the ranks are started below, after the data
  if (!launch.ok()) return Fail("train", launch.status());
  if (const int rc = CheckTeacherBeforeData("train", o); rc >= 0) return rc;
  if (a.dry_run) {
    std::cout << ArgsYaml(o, "");
    return kExitOk;
  }
  Result<DistEnv> dist = DistEnvFromEnvironment();
  std::ostream quiet(nullptr);
  std::ostream& log = RankStream(std::cout);  // ranks other than 0 say nothing (rank_output.h)
  // A launcher builds the cache from a YAML before the ranks start (they only reuse one) and refuses data
  // that cannot train; rank 0 then reports the data, once.
  // --cache-budget: each rank opens its own stream of the URL in Train (trainer/engine/run_setup.cc), so
  // nothing is fetched here, and the data report (the cache's audit.json) is not read before it.
  const bool streamed = o.cache_budget_gb > 0 && IsObjectUrl(o.data);
  if (!streamed) {
    if (const int rc = PrepareDataArg("train", a.data_args, &o.data, o.imgsz, log); rc >= 0) return rc;
    if (const int rc = ReportDataProblems("train", o.data, {o.train_split, o.val ? o.val_split : ""},
                                          *launch > 1 ? quiet : log);
        rc >= 0)
      return rc;
  }
  if (*launch > 1) return LaunchTrainRanks(*launch);
  ConsoleObserver console;
  hooks.observer = &console;
  // Ctrl-C, kill and a closed terminal (SIGHUP: an ssh session that dropped) stop training at the next
  // batch, saving last.pt with the position: exit 130. Train polls the flag from its first epoch on (the
  // console observer opens the polling scope then); its setup (reading --weights or --resume, building
  // the model) does not, so a signal there exits at once. Data-parallel ranks poll throughout: they
  // agree on stopping at a batch, and a rank leaving alone would block the others' collectives.
  std::optional<InterruptPolling> ranks_polling;
  if (dist.ok() && dist->world_size > 1) ranks_polling.emplace();
  hooks.cancel = InterruptFlag();
  hooks.rank_weights = a.rank_weights;
  Result<TrainSummary> r = Train(o, hooks);
  if (!r.ok()) return Fail("train", r.status());
  if (r->rank != 0) return r->interrupted ? kExitInterrupted : kExitOk;  // DDP: rank 0 reports the run
  PrintSummary(*r, o);
  WriteResultFile(a.result_file, TrainSummaryJson(*r), "train");
  return r->interrupted ? kExitInterrupted : kExitOk;
}

Registration reg("train", "Train a YOLOv8 or YOLO11 model (Ultralytics recipe) on a cache", [](CLI::App& app) -> Action {
  auto a = std::make_shared<TrainArgs>();
  AddTrainOptions(app, *a);
  AddRunOptions(app, *a);
  AddResultFileOption(app, &a->result_file);
  return [a, &app] { return RunTrain(app, *a); };
});

}  // namespace
}  // namespace yc::cli
