// Weights from a file, whatever wrote it: an Ultralytics checkpoint (trainer/io/ultralytics_checkpoint.h)
// or a yolocache checkpoint (trainer/io/checkpoint.h), told apart by content (a yolocache checkpoint is a
// LibTorch archive with constants.pkl; an Ultralytics one a plain torch.save pickle), never by extension.
// Used by `train --weights` (fine-tuning: Ultralytics' intersect_dicts transfer, --freeze) and by `val` /
// `predict` (inference with the file's class names).
//
//   Result<ModelWeights> w = ReadModelWeights("yolo11n.pt");       // family, scale, nc, names, tensors
//   DetectionModel model(ModelOptions(w->name, 4));                 // the architecture, new class count
//   TransferReport r = TransferWeights(*w, *model);                 // every tensor whose name and shape match
//   FreezeLayers(*model, 10);                                       // model.0-9 and every .dfl frozen
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include "base/status.h"
#include "trainer/model/detection_model.h"

namespace yc::trainer {

struct ModelWeights {
  std::string format;               // "ultralytics" | "yolocache"
  ModelName name;                   // family and scale: yolov8n .. yolo11x
  int64_t nc = 0;
  std::vector<std::string> names;   // index = class id
  int imgsz = 0;                    // the training image size when the file records it, else 0
  bool single_cls = false;          // trained with single_cls (`val` then validates with it by default)
  std::array<double, 3> loss_gains{7.5, 0.5, 1.5};  // box, cls, dfl (a yolocache run's; else Ultralytics' defaults)
  std::string description;          // "Ultralytics 8.3.166 yolov8n (ema, 80 classes)"
  std::map<std::string, int64_t> channels;  // a pruned architecture (ModelOptions::channels); empty: unpruned
  std::vector<std::pair<std::string, at::Tensor>> tensors;  // state_dict names; CPU float32 / int64
};

// Errors start with the path: IOError (missing, a directory, empty, not a torch archive, damaged: a zip
// CRC-32 or our checksum that does not match, TorchScript code in a checkpoint), Unsupported (not a
// detection checkpoint, unknown architecture, a .torchscript file: its code is never run).
Result<ModelWeights> ReadModelWeights(const std::filesystem::path& path);

struct TransferReport {
  int64_t transferred = 0;                  // K: tensors copied
  int64_t total = 0;                        // N: the model's state_dict size
  std::vector<std::string> not_transferred;  // the model's names left at init (sorted as the model lists them)
};
// Ultralytics' intersect_dicts + load_state_dict(strict=False): copies (in place, under no_grad, into the
// model's device and dtype) every tensor whose name and shape match a parameter or buffer of `model`.
TransferReport TransferWeights(const ModelWeights& weights, torch::nn::Module& model);

// The names compactly: names deeper than 4 components grouped by their first 4, in order of first
// appearance, with counts, e.g. "model.22.cv3.0.* (12), model.22.cv3.1.* (12)". At most `max_items`
// entries, then "... (K more)".
std::string CompactNames(const std::vector<std::string>& names, size_t max_items = 12);

// Ultralytics' freeze (engine/trainer.py _setup_train): a parameter whose name contains "model.{i}." for
// an i in `layers`, or ".dfl", gets requires_grad false. Returns how many parameter tensors are frozen.
int64_t FreezeLayers(torch::nn::Module& model, const std::vector<int>& layers);
// Whether `name` (a parameter's or a module's) is frozen by `layers` in that sense; Ultralytics' _model_train
// also keeps the BatchNorm layers so named in eval mode (their running statistics frozen too).
bool IsFrozenName(const std::string& name, const std::vector<int>& layers);

// An inference model (eval, no grad, on `device`) from either kind of file, with its names and
// the weights' metadata (tensors released).
struct InferenceModel {
  DetectionModel model{nullptr};
  ModelWeights info;
};
Result<InferenceModel> LoadInferenceModel(const std::filesystem::path& path, const at::Device& device);

}  // namespace yc::trainer
