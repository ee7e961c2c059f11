// Validation as Ultralytics' DetectionValidator: the val split in val mode (rect batches, letterbox,
// no augmentation), the model in eval mode, NMS (conf 0.001, IoU 0.7, max_det 300, multi-label), then
// P, R, mAP50, mAP50-95 with detections and labels mapped back to each original image (ratio_pad undone,
// clipped to the image: Ultralytics' scale_boxes), a confusion matrix, and optionally the val losses.
// The loader is built once (rect batching reads every record's size) and reused by every Run.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "base/status.h"
#include "libcache/record_source.h"
#include "loader/batch.h"
#include "trainer/eval/coco_json.h"
#include "trainer/eval/metrics.h"
#include "trainer/eval/nms.h"
#include "trainer/loss/loss.h"
#include "trainer/model/detection_model.h"

namespace yc::trainer {

struct ValOptions {
  int batch = 32;        // Ultralytics validates with 2x the training batch
  int imgsz = 640;
  bool rect = true;
  double pad = 0.5;
  NmsOptions nms;        // conf 0.001, IoU 0.7, max_det 300, multi-label
  // Ultralytics' single_cls (models/yolo/detect/val.py): class-agnostic NMS and every detection class 0,
  // for labels that the data side made class 0 (libcache/record_selection.h).
  bool single_cls = false;
  bool compute_loss = true;
  LossOptions loss;      // gains for the val losses
  bool amp = false;      // autocast the forward (CUDA: as Ultralytics' half-precision EMA validation)
  at::ScalarType amp_dtype = at::kHalf;
  bool half = false;     // fp16 input for a model already in fp16 (val half=True; half_precision.h)
  // Ultralytics' augment=True outside training (engine/validator.py): test-time augmentation
  // (model/augmented_inference.h); the val loss stays the plain pass's. Not for a prediction function.
  bool augment = false;
  bool keep_predictions = false;  // ValResult::predictions (save_json)
  bool channels_last = false;  // CUDA: feed channels_last inputs
  int threads = 0;       // loader threads
  int prefetch = 4;
};

struct ValResult {
  MetricsSummary metrics;
  // ConfusionMatrix counts, (nc + 1) x (nc + 1) row-major [predicted][true], the last index background.
  std::vector<double> confusion;
  bool has_loss = false;
  std::array<double, 3> loss{};  // mean box, cls, dfl over the val batches
  // With keep_predictions: every image's detections in its original pixels, in validation order.
  std::vector<ImagePredictions> predictions;
  int64_t images = 0;
  double seconds = 0;
  // Where `seconds` went (host wall time): waiting for the loader; the model (queuing the forward and val
  // loss: on a GPU they run while the host scores the batch before); NMS (its host reads wait for what is
  // left of the forward) and the detections' copy to the host; matching + metrics on the host.
  double data_seconds = 0, model_seconds = 0, nms_seconds = 0, metrics_seconds = 0;
};

// val_batch{0,1,2}_labels.jpg and _pred.jpg (the first three batches' labels and predictions, as
// Ultralytics' DetectionValidator plot_val_samples / plot_predictions; trainer/plots/batch_grid.h) into
// `dir`, with the class names.
struct ValSamplePlots {
  std::filesystem::path dir;
  std::vector<std::string> names;
};

class Validator {
 public:
  // nc: the model's class count; labels outside it are a DataError.
  static Result<std::unique_ptr<Validator>> Create(std::shared_ptr<const RecordSource> source, const ValOptions& options,
                                                   const at::Device& device, int64_t nc);
  ~Validator();
  Validator(const Validator&) = delete;
  Validator& operator=(const Validator&) = delete;

  // Runs the model (which must be in eval mode, on the validator's device) over the whole split.
  // progress(batches done, batches total) is called after each batch; a set `cancel` stops early with
  // Cancelled. `samples`, when given, draws the first three batches (a picture that cannot be written
  // is a warning on stderr, not a failed validation).
  Result<ValResult> Run(DetectionModelImpl& model, const std::function<void(size_t, size_t)>& progress = {},
                        const std::atomic<bool>* cancel = nullptr, const ValSamplePlots* samples = nullptr);
  // The same with a model given as its prediction function, images (N, 3, H, W) -> (N, 4 + nc, A) (a
  // TorchScript export: trainer/io/torchscript_model.h), of `nc` classes; the validator must have been
  // made without compute_loss (there are no per-level outputs to take a loss of).
  using PredictFn = std::function<at::Tensor(const at::Tensor&)>;
  Result<ValResult> Run(const PredictFn& predict, int64_t nc, const std::function<void(size_t, size_t)>& progress = {},
                        const std::atomic<bool>* cancel = nullptr, const ValSamplePlots* samples = nullptr);

  size_t batches() const;
  size_t images() const;
  const ValOptions& options() const { return options_; }

  struct Impl;

 private:
  Validator() = default;
  Result<ValResult> RunForward(const std::function<DetectOutput(const at::Tensor&)>& forward,
                               const std::function<void(size_t, size_t)>& progress, const std::atomic<bool>* cancel,
                               const ValSamplePlots* samples);
  ValOptions options_;
  std::unique_ptr<Impl> impl_;
};

// `yolocache-train val`: a checkpoint's weights (EMA when saved), or a .torchscript export (run at its
// traced batch and imgsz, square batches, no val loss, as Ultralytics validates a fixed-shape export),
// on a cache split. An .onnx file is Unsupported, saying what to give instead.
struct CheckpointValOptions {
  std::string weights;       // checkpoint
  std::string data;          // cache directory
  std::string split = "val";
  std::string device;        // as TrainOptions::device
  int batch = 32;
  int imgsz = 0;             // 0: the checkpoint's training imgsz
  bool rect = true;
  NmsOptions nms;
  // Ultralytics' single_cls and classes for val: labels made class 0 / only labels of these classes
  // kept (libcache/record_selection.h); single_cls also makes NMS class-agnostic and every detection
  // class 0. Unset single_cls: the checkpoint's (Ultralytics' val keeps train_args.single_cls).
  std::optional<bool> single_cls;
  std::vector<int32_t> classes;
  bool compute_loss = true;
  int threads = 0;
  // Where the plots go (config/run_dir.h): <project>/<name> incremented, or `out` as given.
  std::string project = "runs/detect", name = "val", out;
  bool exist_ok = false;
  bool plots = true;  // PR/F1/P/R curves and the confusion matrices
  bool half = false;       // fp16 inference on a GPU (half_precision.h)
  bool augment = false;    // test-time augmentation (ValOptions::augment); a .torchscript runs its graph, noted
  bool save_json = false;  // predictions.json (coco_json.h); also on for a COCO split, as Ultralytics
};
struct CheckpointValReport {
  ValResult result;
  std::vector<std::string> names;
  int imgsz = 0;
  std::string device;
  std::filesystem::path save_dir;  // the run directory
  std::string plots;               // what happened to the plots, one line
  std::vector<std::string> notes;  // lines for the console: half on the CPU, predictions.json, the COCO eval
  std::filesystem::path predictions_json;  // written with save_json (empty: not written)
};
Result<CheckpointValReport> ValidateCheckpoint(const CheckpointValOptions& options,
                                               const std::function<void(size_t, size_t)>& progress = {});

// The image size `val` runs at: `imgsz` when > 0, else the checkpoint's training imgsz (its train args,
// as `yolo val model=best.pt` takes it), else 640. Reads the weights file only when imgsz is 0; the CLI
// asks before building a cache from a YAML, so the cache is built at the size val then uses.
Result<int> CheckpointValImgsz(const std::string& weights, int imgsz);

// Ground truth of image `index` of a batch in letterboxed pixels: (m, 4) xyxy and (m) classes, on the CPU.
void BatchGroundTruth(const Batch& batch, int index, at::Tensor* boxes, at::Tensor* classes);
// Ultralytics scale_boxes with ratio_pad + clip_boxes, in place on the first 4 columns of (n, >= 4) float
// xyxy boxes: (x - pad_x) / gain, (y - pad_y) / gain (one gain for both axes, ratio_pad[0][0] as
// Ultralytics uses it), then clipped to [0, width] x [0, height].
void ScaleBoxesToOriginal(at::Tensor& boxes, double gain, double pad_x, double pad_y, double width, double height);
// The same with a sample's ratio_pad and original size: letterboxed pixels -> original image pixels.
void ToOriginalImage(const SampleInfo& sample, at::Tensor& boxes);

// {"precision":..,"recall":..,"mAP50":..,"mAP50-95":..,"fitness":..,"images":..,"instances":..,
//  "per_class":[{"class":id,"name":..,"images":..,"instances":..,"precision":..,"recall":..,"mAP50":..,"mAP50-95":..}]}
nlohmann::json MetricsToJson(const MetricsSummary& metrics, const std::vector<std::string>& names);

}  // namespace yc::trainer
