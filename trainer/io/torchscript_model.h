// A TorchScript export run for inference by `val` and `predict`, as Ultralytics' AutoBackend runs one
// (ultralytics/nn/autobackend.py: torch.jit.load(w, map_location=device) and the metadata in the extra
// file config.txt): our exports (torchscript_export.h) and Ultralytics' export(format="torchscript").
// Loading a .torchscript file runs the code it carries; it is done only for a file the user names with
// that extension as the model to run (never for --weights of train or export, pretrained.h).
// An .onnx file is refused with what to give instead (yolocache runs no ONNX runtime).
//
//   if (IsTorchScriptPath(weights)) { YC_ASSIGN_OR_RETURN(TorchScriptModel m, LoadTorchScriptModel(weights, dev)); }
//   at::Tensor pred = m.Forward(images);  // (N, 4 + nc, anchors), as DetectOutput::pred
#pragma once

#include <array>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "base/status.h"

namespace torch::jit {
struct Module;
}

namespace yc::trainer {

struct TorchScriptModel {
  std::shared_ptr<torch::jit::Module> module;  // on the device given to LoadTorchScriptModel
  std::vector<std::string> names;              // index = class id
  std::array<int, 2> imgsz{640, 640};          // the traced input size (h, w): the only one it takes
  int batch = 1;                               // the traced batch
  bool half = false;                           // fp16 input
  // An nms=True export (metadata args.nms, which Ultralytics' AutoBackend reads as end2end): Forward
  // returns (N, max_det, 6) detections, not (N, 4 + nc, A).
  bool end2end = false;
  int stride = 32;
  std::string description;                     // "TorchScript export (yolocache 0.1 yolov8n, 2 classes)"

  // images: (N, 3, H, W) float in [0, 1] at imgsz, any N (run `batch` at a time); cast to the export's
  // dtype. Returns (N, 4 + nc, A) float (end2end: (N, max_det, 6)).
  at::Tensor Forward(const at::Tensor& images) const;
};

// Named as a TorchScript export (.torchscript), or as an ONNX file (.onnx).
bool IsTorchScriptPath(const std::filesystem::path& path);
bool IsOnnxPath(const std::filesystem::path& path);

// Errors are IOError naming the file: missing, not a TorchScript archive, no forward, no config.txt
// metadata, not a detection export.
Result<TorchScriptModel> LoadTorchScriptModel(const std::filesystem::path& path, const at::Device& device);

// InvalidArgument unless the export is square and `imgsz` (0: any) is its traced size: what `command`
// (val, predict) can run it at.
Status CheckTracedSize(const TorchScriptModel& model, const std::filesystem::path& path, int imgsz,
                       const std::string& command);

// Unsupported naming the .onnx file and what `command` (val, predict) takes instead.
Status OnnxNotRunnable(const std::filesystem::path& path, const std::string& command);

}  // namespace yc::trainer
