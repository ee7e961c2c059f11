// `yolocache-train export`: weights in (anything LoadInferenceModel reads: Ultralytics .pt release or
// training form, yolocache checkpoints), an ONNX or TorchScript file out, written atomically beside the
// weights (best.pt -> best.onnx) unless options.out says otherwise; an output that is the weights
// themselves, a directory or inside a cache is refused before the weights are read (InvalidArgument
// naming both; libcache/build/output_guard.h), and the file is written through a temp file + rename
// (libcache/base/output_file.h). BatchNorm is folded first
// (trainer/model/fuse.h); the formats are in trainer/io/onnx/onnx_export.h and torchscript_export.h.
//
// Without an imgsz the checkpoint's training size is used (Ultralytics exports at the model's args.imgsz).
// With nms the file embeds NMS as Ultralytics' NMSModel (export_options.h) and its metadata says
// args.nms = True, which Ultralytics' AutoBackend and our val/predict read as final detections.
//
//   ExportOptions o; o.weights = "yolo11n.pt"; o.format = ExportFormat::kOnnx;  // o.imgsz = {640} to choose
//   Result<ExportReport> r = Export(o);  // InvalidArgument: usage (exit 2); IOError/Unsupported: exit 3
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "base/status.h"
#include "trainer/io/export_options.h"

namespace yc::trainer {

struct ExportReport {
  std::filesystem::path file;
  ExportFormat format = ExportFormat::kOnnx;
  int64_t bytes = 0;
  std::string model;                  // "yolo11n"
  int64_t nc = 0;
  std::array<int, 2> imgsz{};         // the size exported at (h, w)
  bool imgsz_from_weights = false;    // imgsz was the checkpoint's training size (none was given)
  std::vector<int64_t> input_shape;   // -1: dynamic
  std::vector<int64_t> output_shape;
  int opset = 0;                      // ONNX
  bool half = false;
  bool nms = false;                   // output (N, max_det, 6) detections (ExportOptions::nms)
  double conf = 0;                    // with nms: the threshold baked in (0.25 when none was given)
  std::string device;
  std::vector<std::string> warnings;  // imgsz rounded, --half ignored on CPU, ...
  double seconds = 0;
};

Result<ExportReport> Export(ExportOptions options);

}  // namespace yc::trainer
