// What `yolocache-train export` is asked for, checked the way Ultralytics' exporter checks it: the format,
// the image size (rounded up to a multiple of the stride, with a warning), batch, opset range, and the
// output path (the weights' stem + ".onnx" / ".torchscript" beside the weights unless `out` is given).
//
//   ExportOptions o; o.weights = "runs/train/weights/best.pt"; o.format = ExportFormat::kOnnx;
//   Result<std::vector<std::string>> warnings = CheckExportOptions(&o);  // InvalidArgument -> exit 2
//   std::filesystem::path f = ExportPath(o);                             // runs/train/weights/best.onnx
#pragma once

#include <array>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace yc::trainer {

enum class ExportFormat { kOnnx, kTorchScript };
Result<ExportFormat> ParseExportFormat(const std::string& name);  // "onnx" | "torchscript" (case-insensitive)
const char* ExportFormatName(ExportFormat format);                // "onnx", "torchscript"
const char* ExportFormatSuffix(ExportFormat format);              // ".onnx", ".torchscript"

// ONNX opsets the exporter writes: 13 (Split/Unsqueeze take their sizes as inputs, Softmax works on one
// axis) up to the newest the ONNX library it was built with knows (17 for Debian 12's libonnx 1.12;
// onnxruntime 1.30 runs up to 23). The default is that newest one.
inline constexpr int kOnnxMinOpset = 13;
int OnnxMaxOpset();  // 0 when the exporter was built without libonnx

struct ExportOptions {
  std::filesystem::path weights;
  ExportFormat format = ExportFormat::kOnnx;
  // One value (square) or two (h, w); empty or {0}: the checkpoint's training imgsz (640 when the file
  // records none), as Ultralytics exports at the model's own args.imgsz. Export() resolves it.
  std::vector<int> imgsz;
  int batch = 1;
  bool dynamic = false;         // ONNX: batch, height and width free (TorchScript is traced: fixed shape)
  bool half = false;            // fp16 weights and I/O (ONNX: any device; TorchScript: CUDA only)
  int opset = 0;                // ONNX; 0: OnnxMaxOpset()
  std::string device;           // "" / "cpu" / "cuda[:N]"
  std::filesystem::path out;    // empty: ExportPath's default
  // Ultralytics' int8 and keras: taken by none of our formats, refused as its validate_args refuses them.
  bool int8 = false;
  bool keras = false;

  // nms: the file embeds NMS (Ultralytics' NMSModel, engine/exporter.py) and outputs (N, max_det, 6)
  // x1, y1, x2, y2, score, class per image, zero padded, with these settings baked in. conf unset (None)
  // or 0: 0.25, as Ultralytics' exporter sets `conf = conf or 0.25` for an nms export.
  bool nms = false;
  std::optional<double> conf;
  double iou = 0.7;
  int max_det = 300;
  bool agnostic_nms = false;

  bool imgsz_from_weights() const { return imgsz.empty() || (imgsz.size() == 1 && imgsz[0] == 0); }
  // After Export() resolved imgsz (or when it was given).
  std::array<int, 2> hw() const { return {imgsz.at(0), imgsz.size() > 1 ? imgsz[1] : imgsz[0]}; }
};

// Usage errors (InvalidArgument): imgsz not empty, {0}, or 1 or 2 positive values, batch < 1, opset outside
// [kOnnxMinOpset, OnnxMaxOpset()], an argument Ultralytics' export_formats table does not list for the
// format (int8 and keras for both, dynamic and opset for TorchScript: "argument 'int8' is not supported
// for format='onnx'", naming the formats that take it), conf or iou outside [0, 1], max_det < 1. imgsz
// not a multiple of 32 is rounded up as Ultralytics' check_imgsz does; the returned warnings say so.
// With nms, an unset conf becomes 0.25.
Result<std::vector<std::string>> CheckExportOptions(ExportOptions* options, int stride = 32);

// `out` when set, else the weights' path with the format's suffix (best.pt -> best.onnx).
std::filesystem::path ExportPath(const ExportOptions& options);

}  // namespace yc::trainer
