// Validation as Ultralytics' DetectionValidator: the val split in val mode (rect batches, letterbox,
// no augmentation), the model in eval mode, NMS (conf 0.001, IoU 0.7, max_det 300, multi-label), then
// P, R, mAP50, mAP50-95 in letterboxed pixel space, and optionally the val losses (box, cls, dfl).
// The loader is built once (rect batching reads every record's size) and reused by every Run.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "libcache/record_source.h"
#include "libcache/status.h"
#include "loader/batch.h"
#include "trainer/loss/loss.h"
#include "trainer/eval/metrics.h"
#include "trainer/eval/nms.h"
#include "trainer/model/detection_model.h"

namespace yc::trainer {

struct ValOptions {
  int batch = 32;        // Ultralytics validates with 2x the training batch
  int imgsz = 640;
  bool rect = true;
  double pad = 0.5;
  NmsOptions nms;        // conf 0.001, IoU 0.7, max_det 300, multi-label
  bool compute_loss = true;
  LossOptions loss;      // gains for the val losses
  bool amp = false;      // autocast the forward (CUDA: as Ultralytics' half-precision EMA validation)
  at::ScalarType amp_dtype = at::kHalf;
  bool channels_last = false;  // CUDA: feed channels_last inputs
  int threads = 0;       // loader threads
  int prefetch = 4;
};

struct ValResult {
  MetricsSummary metrics;
  bool has_loss = false;
  std::array<double, 3> loss{};  // mean box, cls, dfl over the val batches
  int64_t images = 0;
  double seconds = 0;
  // Where `seconds` went (host wall time): waiting for the loader, the model (forward and val loss, up to
  // a device sync that NMS would otherwise take), NMS, and matching + metrics on the host.
  double data_seconds = 0, model_seconds = 0, nms_seconds = 0, metrics_seconds = 0;
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
  // Cancelled.
  Result<ValResult> Run(DetectionModelImpl& model, const std::function<void(size_t, size_t)>& progress = {},
                        const std::atomic<bool>* cancel = nullptr);

  size_t batches() const;
  size_t images() const;
  const ValOptions& options() const { return options_; }

  struct Impl;

 private:
  Validator() = default;
  ValOptions options_;
  std::unique_ptr<Impl> impl_;
};

// `yolocache-train val`: a checkpoint's weights (EMA when saved) on a cache split.
struct CheckpointValOptions {
  std::string weights;       // checkpoint
  std::string data;          // cache directory
  std::string split = "val";
  std::string device;        // as TrainOptions::device
  int batch = 32;
  int imgsz = 0;             // 0: the checkpoint's training imgsz
  bool rect = true;
  NmsOptions nms;
  bool compute_loss = true;
  int threads = 0;
};
struct CheckpointValReport {
  ValResult result;
  std::vector<std::string> names;
  int imgsz = 0;
  std::string device;
};
Result<CheckpointValReport> ValidateCheckpoint(const CheckpointValOptions& options,
                                               const std::function<void(size_t, size_t)>& progress = {});

// Ground truth of image `index` of a batch in letterboxed pixels: (m, 4) xyxy and (m) classes, on the CPU.
void BatchGroundTruth(const Batch& batch, int index, at::Tensor* boxes, at::Tensor* classes);

// {"precision":..,"recall":..,"mAP50":..,"mAP50-95":..,"fitness":..,"images":..,"instances":..,
//  "per_class":[{"class":id,"name":..,"instances":..,"precision":..,"recall":..,"mAP50":..,"mAP50-95":..}]}
nlohmann::json MetricsToJson(const MetricsSummary& metrics, const std::vector<std::string>& names);

}  // namespace yc::trainer
