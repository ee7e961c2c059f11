// Everything that shapes a training run, with Ultralytics' names and defaults (cfg/default.yaml):
// the model and data, the optimisation recipe (engine/trainer.py), the augmentation hyperparameters
// handed to the loader, validation/checkpoint cadence and the run's resources. Serialised as JSON
// into every checkpoint (and, with Ultralytics' keys, into <out>/args.yaml: config/args_yaml.h), so that `--resume` and `val` rebuild the same run.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "libcache/record_selection.h"
#include "loader/options.h"

namespace yc::trainer {

// AMP: auto and on = fp16 autocast + GradScaler on CUDA, fp32 on CPU (Ultralytics' amp=True, which it
// turns off on CPU) unless an autocast dtype is asked for there (bf16); off = fp32.
enum class AmpMode { kAuto, kOn, kOff };
// Autocast dtype when AMP is on: auto = fp16 (+ loss scaling) on CUDA, none on CPU; bf16 never scales.
enum class AmpDtype { kAuto, kFloat16, kBFloat16 };

struct TrainOptions {
  // Data and model.
  std::string data;              // cache directory (`yolocache build` output)
  // --data as the user gave it (a data YAML, a dataset folder or the cache), for args.yaml's `data`
  // (config/args_yaml.h); "" = `data`.
  std::string data_source;
  // --cache-budget GiB with --data s3://... or https://...: the train split is streamed window by window
  // into at most this much of `cache_root` (libcache/build/stream_cache.h), the val split fetched whole
  // and kept beside it (docs/REMOTE.md, "Streaming"); 0: the cache is fetched whole first. A resource, like
  // window_io: it changes no batch, so it is not stored with the options (--resume takes it anew).
  double cache_budget_gb = 0;
  std::string cache_root;  // where the stream's folder goes ("": DefaultCacheRoot(), as --cache-dir)
  std::string model = "yolov8n";  // yolov8n|s|m|l|x; "" with `weights`: the file's architecture
  // Fine-tuning: initial weights (an Ultralytics .pt or a yolocache checkpoint; every tensor whose name and
  // shape match is transferred, trainer/io/pretrained.h) and Ultralytics' freeze: freeze=N freezes
  // model.0 .. model.{N-1} (`freeze`), freeze=[0, 3, 5] the layers listed (`freeze_layers`, non-empty only for
  // that form, which args.yaml writes back as a list); .dfl is always frozen. FrozenLayers() gives either.
  std::string weights;
  int freeze = 0;
  std::vector<int> freeze_layers;
  std::string train_split = "train";
  std::string val_split = "val";
  // Which images and labels the run uses, chosen when it opens the cache (libcache/record_selection.h),
  // with Ultralytics' meanings: `fraction` of the train images (the first round(n * fraction)),
  // `single_cls` (every label class 0, names {"item"}, a 1-class head) and `classes` (only labels of
  // these classes, train and val; empty: all).
  double fraction = 1.0;
  bool single_cls = false;
  std::vector<int32_t> classes;
  int epochs = 100;
  // Ultralytics' time: hours of training (> 0) that override epochs: after every epoch `epochs` becomes
  // ceil(time / mean epoch time so far) (the schedule follows it), and the run stops once the time is up,
  // after the optimizer step that crossed it (trainer/engine/time_budget.h). 0 = off (Ultralytics' None).
  double time = 0;
  int batch = 16;
  // Ultralytics' AutoBatch (batch=-1, or batch=0.7): > 0 picks the batch that fills this share of the
  // GPU's memory once the model is built (engine/autobatch.h), into `batch`; 0 = off (`batch` as given).
  double autobatch = 0;
  int imgsz = 640;

  // Device and resources.
  std::string device;            // "" or "auto": cuda:0 when available, else cpu; "cpu", "cuda", "cuda:1", "1"
  AmpMode amp = AmpMode::kAuto;
  AmpDtype amp_dtype = AmpDtype::kAuto;
  int threads = 0;               // loader (TBB) threads; 0 = all hardware threads
  int torch_threads = 0;         // LibTorch intra-op threads (CPU math); 0 = LibTorch's default
  int prefetch = 4;              // batches the loader prepares ahead
  // Sampling order (trainer/config/sample_order.h): auto | shuffle | windowed. The trainer stores the
  // order it resolved (and the window) here before writing the checkpoints' options, so --resume keeps the order.
  std::string order = "auto";
  double window_mb = 0;          // windowed order's window, MiB; 0: a quarter of the page-cache budget
  double ram_budget_gb = 0;      // page-cache budget for auto; 0: MemAvailable - 4 GiB
  // How the windowed order reads its windows (LoaderOptions::window_io): auto | direct | page-cache.
  // auto: direct (O_DIRECT into the loader's buffers) for one process; page-cache with several ranks,
  // which then share each window's pages on their host instead of each reading it from disk.
  // Changes no batch, so it is not stored with the options: --resume takes it anew.
  std::string window_io = "auto";
  // Train loader's read-ahead budget in MiB (LoaderOptions::read_ahead_bytes; 0 = off).
  int read_ahead_mb = static_cast<int>(LoaderOptions().read_ahead_bytes >> 20);
  bool channels_last = true;     // CUDA only: channels_last weights and inputs
  bool fused_optimizer = true;   // PyTorch's fused optimizer kernels where the LibTorch has them (fused_step.h)
  // CUDA: cuDNN autotuning. Off as in Ultralytics (PyTorch's default): on an H200 it gained ~1% per step
  // for yolov8n and cost ~6 s of tuning per process plus a pause for each new validation shape.
  bool cudnn_benchmark = false;
  // CUDA graphs of the train step (trainer/engine/graphed_step.h): auto | on | off. auto: on where the run
  // allows it (CUDA, the fused optimizer step, one process); on: the same, refusing a run that cannot.
  std::string cuda_graphs = "auto";
  // CUDA: the kernel of depthwise convs (YOLO11's; trainer/model/depthwise_kernel.h): auto | cudnn | direct.
  // auto: cuDNN for the steady train batch only, PyTorch's depthwise kernel for the shapes a run meets a few
  // times, for which cuDNN would first spend 0.2-2 s building a plan per shape.
  std::string depthwise_kernel = "auto";
  // CUDA: the loss's task-aligned assigner (trainer/loss/assigner_kernels.h): auto (CUDA kernels of ours where
  // the build has them) | aten (PyTorch's ops, as builds without nvcc). Same assignments either way.
  std::string assigner_kernel = "auto";
  // An epoch's validation and checkpoints beside the next epoch's training (trainer/engine/end_epoch_overlap.cc):
  // auto (CUDA, where memory allows) | on (also CPU) | off. The results and files are those of the in-line end.
  // Off by default: on an H100 it made a 25-epoch run 2% slower, the training sharing the SMs with the
  // validation beside it (docs/TRAINER.md).
  std::string val_overlap = "off";
  // Threads that run the train step's convolutions once before the first batch, so that cuDNN's per-process
  // work for each shape is done in parallel (trainer/engine/step_warmup.h; CUDA, fixed batch shapes); 0 = none,
  // the default: on an H100 it cost more than it saved (docs/TRAINER.md).
  int conv_warmup = 0;
  bool sync_bn = false;          // data-parallel: BatchNorm and loss normaliser over the global batch

  // Optimisation (engine/trainer.py).
  std::string optimizer = "auto";  // auto|SGD|Adam|AdamW|RMSProp|NAdam|RAdam|Adamax (config/optimizer_name.h)
  double lr0 = 0.01;
  double lrf = 0.01;
  double momentum = 0.937;
  double weight_decay = 0.0005;
  double warmup_epochs = 3.0;
  double warmup_momentum = 0.8;
  double warmup_bias_lr = 0.1;
  bool cos_lr = false;
  int nbs = 64;                  // nominal batch size (gradient accumulation target)
  double box = 7.5, cls = 0.5, dfl = 1.5;  // loss gains
  double clip_grad = 10.0;       // max total gradient norm
  // Network slimming (--sparsity, the YOLOv5 pruning forks' `sr`): S * sign(gamma) is added to the gradient
  // of every prunable BatchNorm weight after backward, before the optimizer step (trainer/model/prune/
  // sparsity.h; which BatchNorms are exempt: trainer/model/prune/channel_graph.h). 0 = off.
  double sparsity = 0;
  // Pruning inside the run (--prune-at E --prune-ratio R | --prune-gflops G): once epoch E is done, the EMA's channels with the
  // smallest BatchNorm scales are removed (the `prune` command's plan, trainer/model/prune/prune_model.h)
  // and epochs E+1.. train the pruned model on the same schedule, sparsity off (trainer/engine/
  // prune_in_run.cc). 0 = off. Sparsity training, pruning and fine-tuning in one run of `epochs`.
  int prune_at = 0;
  double prune_ratio = 0;   // the share of the prunable channels removed (prune --ratio), or
  double prune_gflops = 0;  // the share of the GFLOPs removed (prune --gflops)
  // The pruned architecture the run trains (ModelOptions::channels): taken from --weights when that file
  // is pruned (yolocache-train prune) and --model is its architecture; kept in the checkpoints, so
  // --resume, val, predict and export rebuild it. Empty: the scale's own widths.
  std::map<std::string, int64_t> channels;
  // Knowledge distillation (--teacher, trainer/loss/distill_loss.h): a trained checkpoint of the run's
  // classes, head layout and strides, run in eval mode on every batch; distill * the distillation loss on
  // the Detect head outputs (class scores and DFL box distributions, temperature distill_temp) is added
  // to the detection loss. "" = off. Stored in the checkpoints and args.yaml, so --resume reloads it.
  std::string teacher;
  double distill = 1.0;
  double distill_temp = 2.0;

  // Augmentation (loader/options.h AugmentHyp, including close_mosaic).
  AugmentHyp hyp;
  // Ultralytics' multi_scale: each train batch resized (bilinear) to a random multiple of the stride in
  // [0.5, 1.5] x imgsz, drawn from `seed` and the batch's iteration (trainer/engine/multi_scale.h).
  bool multi_scale = false;
  // Ultralytics' rect=True for training (LoaderOptions::train_rect): batches in aspect-ratio order, each
  // letterboxed to its own shape, not shuffled, without mosaic, mixup or cutmix.
  bool rect = false;

  // Validation, checkpoints, stopping.
  int val_every = 1;             // validate every N epochs (and always after the last); 0 = final only
  bool val = true;               // false: never validate (best.pt = the final EMA, no early stopping)
  bool val_loss = true;          // also compute val/box_loss etc.
  double val_conf = 0.001, val_iou = 0.7;
  int max_det = 300;
  int save_every = 0;            // also write epochN.pt every N epochs; 0 = off (Ultralytics save_period)
  int keep = 3;                  // epochN.pt files kept (newest); 0 = keep all
  // last.pt / epochN.pt while training: false (Ultralytics' form) holds the EMA and optimizer state in fp16
  // (~13 MB for yolov8n) and --resume restarts the model from the EMA, as Ultralytics' resume does; true also
  // keeps the fp32 model, EMA and optimizer state (~3x the size) so a resumed run ends bit-for-bit where an
  // uninterrupted one does.
  bool exact_resume = false;
  int patience = 100;            // epochs without fitness improvement before stopping; 0 = never
  uint64_t seed = 0;             // torch init + loader sampling/augmentation

  // Output.
  // The run directory: <project>/<name>, incremented to <name>2, <name>3 ... when it exists (Ultralytics'
  // get_save_dir + increment_path; --exist-ok reuses it); an explicit `out` is used as given instead.
  // The trainer stores the directory it chose in `out` (args.yaml's save_dir, checkpoints), so --resume finds it.
  std::string project = "runs/detect";
  std::string name = "train";
  std::string out;
  bool exist_ok = false;         // reuse <project>/<name>, or start a fresh run in an --out that holds one
  bool plots = true;             // labels.jpg, train_batch0-2.jpg, results.png, validation curves

  int log_every = 10;            // batches between host reads of the running losses (progress)

  // Throughput probe (--synthetic-input): fwd+bwd+step iterations on device-resident random data.
  bool synthetic_input = false;
  int synthetic_iters = 30;
};

nlohmann::ordered_json ToJson(const TrainOptions& options);
// Missing keys keep their defaults; unknown keys are ignored (newer writers); a wrong type or value is
// InvalidArgument naming the key.
Result<TrainOptions> TrainOptionsFromJson(const nlohmann::json& json);

// Ultralytics' check_imgsz: `imgsz` rounded up to a multiple of the largest stride (32), with the warning
// it prints ("" when none was needed).
int StrideMultipleImgsz(int imgsz, std::string* warning);

// The layer indices Ultralytics' freeze names: freeze_layers when given, else 0 .. freeze-1.
std::vector<int> FrozenLayers(const TrainOptions& options);
// --freeze's text: "N" (a count) or a list "0,3,5" / "[0, 3, 5]" (layer indices) into `freeze` or
// `freeze_layers`; InvalidArgument naming the text and what is wrong.
Status SetFreeze(const std::string& text, TrainOptions* options);

// Ranges and combinations; the message names the option as the CLI spells it (--lr0, --batch, ...).
Status ValidateTrainOptions(const TrainOptions& options);

// The label rules (classes, single_cls) both splits are read with.
LabelRules TrainLabelRules(const TrainOptions& options);

// The train loader's options for rank `rank` of `world_size` (batch per rank = batch / world_size,
// as Ultralytics); the caller adds the device-specific layout and allocator.
LoaderOptions TrainLoaderOptions(const TrainOptions& options, int rank = 0, int world_size = 1);
// options.window_io resolved for a run of `world_size` ranks ("auto": direct alone, page cache shared
// by several ranks).
WindowIo WindowIoFor(const TrainOptions& options, int world_size);

const char* AmpModeName(AmpMode mode);
const char* AmpDtypeName(AmpDtype dtype);
Result<AmpDtype> ParseAmpDtype(const std::string& text);  // auto|fp16|bf16

}  // namespace yc::trainer
