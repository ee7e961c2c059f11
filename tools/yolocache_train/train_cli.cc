#include "tools/yolocache_train/train_cli.h"

#include <cstdio>
#include <iostream>

#include "base/status.h"
#include "tools/common/cli_validators.h"
#include "tools/common/loader_flags.h"
#include "trainer/config/class_list.h"

namespace yc::cli {

using trainer::AmpDtype;
using trainer::AmpMode;
using trainer::TrainOptions;

int Fail(const char* command, const Status& status) {
  std::cerr << "yolocache-train " << command << ": " << status.ToString() << "\n";
  return ExitCodeFor(status);
}

std::string JsonText(const nlohmann::json& j) { return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace); }

void AddDataOptions(CLI::App& app, DataArgs& d) {
  app.add_option("--cache-dir", d.cache_dir,
                 "Where a cache built from a --data YAML or folder goes (default $YOLOCACHE_CACHE_DIR, else "
                 "$XDG_CACHE_HOME/yolocache or ~/.cache/yolocache)");
  app.add_flag("--strict-source", d.strict_source,
               "Refuse (exit 1) a cache whose source images or labels changed since it was built");
}

void AddDeviceOption(CLI::App& app, std::string& device, const std::string& default_text) {
  app.add_option("--device", device, "cpu | cuda | cuda:N | N (default: " + default_text + ")");
}

CLI::Option* AddClassesOption(CLI::App& app, std::vector<int32_t>* classes, const std::string& help) {
  return app
      .add_option_function<std::string>(
          "--classes",
          [classes](const std::string& text) {
            Result<std::vector<int32_t>> parsed = trainer::ParseClassList(text);
            if (!parsed.ok()) throw CLI::ValidationError("--classes", parsed.status().message());
            *classes = std::move(*parsed);
          },
          help)
      ->type_name("LIST");
}

void AddRunFolderOptions(CLI::App& app, std::string& project, std::string& name, std::string& out, bool& exist_ok,
                         const std::string& writes, const std::string& exist_ok_help) {
  app.add_option("--project", project, "Runs folder: PROJECT/NAME holds " + writes)->capture_default_str();
  app.add_option("--name", name, "Run name; NAME2, NAME3 ... when PROJECT/NAME exists (as Ultralytics)")
      ->capture_default_str();
  app.add_option("--out", out, "Run directory as given (no increment; wins over --project/--name)");
  app.add_flag("--exist-ok", exist_ok, exist_ok_help);
}

namespace {

// The model, its size and the batch.
void AddModelOptions(CLI::App& app, TrainOptions& o) {
  app.add_option("--model", o.model,
                 "yolov8n..yolov8x | yolo11n..yolo11x (train: default the --weights' architecture)")
      ->capture_default_str();
  app.add_option("--epochs", o.epochs, "Epochs")->capture_default_str();
  app.add_option("--batch", o.batch, "Batch size")->capture_default_str();
  app.add_option("--imgsz", o.imgsz, "Train/val image size (multiple of 32)")->capture_default_str();
}

// Device, precision, threads and the loader's sampling order.
void AddResourceOptions(CLI::App& app, TrainArgs& a) {
  TrainOptions& o = a.o;
  AddDeviceOption(app, o.device, "cuda:0 when available, else cpu");
  app.add_flag("--amp", a.amp, "Mixed precision on (CUDA default: fp16 + loss scaling; CPU: fp32 as Ultralytics, bf16 with --amp-dtype bf16)");
  app.add_flag("--no-amp", a.no_amp, "Mixed precision off (CPU default)");
  app.add_option("--amp-dtype", a.amp_dtype, "auto | fp16 | bf16 (bf16 also turns autocast on on the CPU)")->capture_default_str();
  AddLoaderFlag(app, "threads", &o.threads)->check(ThreadCount());
  app.add_option("--torch-threads", o.torch_threads, "LibTorch CPU threads (0: LibTorch's default)")
      ->capture_default_str()
      ->check(ThreadCount());
  AddLoaderFlag(app, "prefetch", &o.prefetch);
  // The trainer's own choice on top of the loader's orders (trainer/config/sample_order.h).
  app.add_option("--order", o.order,
                 "Sampling order: auto (windowed when the train data exceeds the page-cache budget) | shuffle "
                 "(Ultralytics') | windowed (shuffled windows of contiguous records, read once per epoch)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "shuffle", "windowed"}));
  app.add_option("--window", o.window_mb, "Windowed order: window size in MiB (0: a quarter of the budget, an eighth for zstd; >= 256)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--ram-budget", o.ram_budget_gb, "Page-cache budget in GiB for --order auto (0: MemAvailable - 4 GiB)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  AddLoaderFlag(app, "window_io", &o.window_io);
  AddLoaderFlag(app, "read_ahead_mb", &o.read_ahead_mb);
  // Negative flags as callbacks: CLI11's "!--no-x" form prints "--no-x{false}" in --help.
  app.add_flag_callback("--no-channels-last", [&o] { o.channels_last = false; },
                        "CUDA: keep weights and inputs NCHW (default channels_last)");
  app.add_flag_callback("--no-fused-optimizer", [&o] { o.fused_optimizer = false; },
                        "Step with torch::optim's per-tensor loop instead of the fused multi-tensor kernels (LibTorch >= 2.4)");
  app.add_option("--cuda-graphs", o.cuda_graphs,
                 "CUDA: capture the train step as CUDA graphs and replay it: auto (where the run allows: the fused "
                 "optimizer step, one process) | on (refuse a run that cannot) | off")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "on", "off"}));
  app.add_option("--depthwise-kernel", o.depthwise_kernel,
                 "CUDA: the kernel of depthwise convs (YOLO11): auto (cuDNN for the steady train batch, PyTorch's "
                 "depthwise kernel for shapes met a few times, which cuDNN would first plan for seconds) | cudnn | direct")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "cudnn", "direct"}));
  app.add_option("--assigner-kernel", o.assigner_kernel,
                 "CUDA: the loss's task-aligned assigner: auto (CUDA kernels of ours, where the build compiled them) | "
                 "aten (PyTorch's ops); same assignments")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "aten"}));
  app.add_option("--val-overlap", o.val_overlap,
                 "Validate an epoch and take its checkpoints on another thread while the next epoch trains (same "
                 "results and files; last.pt lags one epoch meanwhile): auto (CUDA) | on | off")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "on", "off"}));
  app.add_option("--conv-warmup", o.conv_warmup,
                 "CUDA: run the train step's convolutions once on N threads before the first batch, so that cuDNN's "
                 "first-call work for each batch shape is done in parallel (0: as the batches come)")
      ->capture_default_str()
      ->check(CLI::Range(0, 256));
  app.add_flag("--cudnn-benchmark", o.cudnn_benchmark,
               "CUDA: cuDNN autotuning (off by default, as in Ultralytics: it pauses to tune each new input shape)");
  app.add_flag("--sync-bn", o.sync_bn,
               "Data-parallel: BatchNorm statistics and the loss normaliser over the global batch (N ranks compute "
               "what one process does; default: per rank, as Ultralytics)");
}

// The optimisation recipe (Ultralytics' engine/trainer.py names).
void AddRecipeOptions(CLI::App& app, TrainOptions& o) {
  app.add_option("--optimizer", o.optimizer, "auto | SGD | Adam | AdamW | NAdam | RAdam | Adamax | RMSProp")->capture_default_str();
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
}

}  // namespace

void AddTrainOptions(CLI::App& app, TrainArgs& a) {
  TrainOptions& o = a.o;
  app.add_option("--data", o.data, "Cache directory (`yolocache build`), or a data YAML or dataset folder to cache first");
  AddDataOptions(app, a.data_args);
  AddModelOptions(app, o);
  AddResourceOptions(app, a);
  AddRecipeOptions(app, o);
  AddHypFlags(app, &o.hyp);
  app.add_option("--seed", o.seed, "Random seed (model init, sampling, augmentation)")
      ->capture_default_str()
      ->check(NoMinusSign());  // CLI11 would take -1 as 2^64 - 1
  app.add_option("--synthetic-iters", o.synthetic_iters, "Iterations of the --synthetic-input probe")->capture_default_str();
}

Status ApplyAmpFlags(const TrainArgs& a, TrainOptions* o) {
  if (a.amp) o->amp = AmpMode::kOn;
  if (a.no_amp) o->amp = AmpMode::kOff;
  YC_ASSIGN_OR_RETURN(const AmpDtype dtype, trainer::ParseAmpDtype(a.amp_dtype));
  o->amp_dtype = dtype;
  return Status::OK();
}

}  // namespace yc::cli
