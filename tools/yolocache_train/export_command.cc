// `yolocache-train export`: weights to ONNX or TorchScript, laid out as Ultralytics exports them
// (best.pt -> best.onnx beside it).
#include <iostream>
#include <memory>

#include "libcache/base/path_json.h"
#include "tools/common/command.h"
#include "tools/yolocache_train/result_file.h"
#include "tools/yolocache_train/train_cli.h"
#include "trainer/io/exporter.h"

namespace yc::cli {
namespace {

using namespace yc::trainer;

struct ExportArgs {
  ExportOptions o;
  std::string format = "torchscript";  // Ultralytics' default format
  bool json = false;
  std::string result_file;  // hidden --result-json FILE: the --json document (result_file.h)
};

std::string Shape(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + (dims[i] < 0 ? std::string("?") : std::to_string(dims[i]));
  return s + "]";
}

nlohmann::json ExportJson(const ExportReport& r) {
  const char* dtype = r.half ? "float16" : "float32";
  nlohmann::json j;
  SetPathField(j, "file", r.file.string());
  j["format"] = ExportFormatName(r.format);
  j["bytes"] = r.bytes;
  j["model"] = r.model;
  j["nc"] = r.nc;
  j["imgsz"] = r.imgsz;
  j["imgsz_from_weights"] = r.imgsz_from_weights;
  j["input"] = {{"name", "images"}, {"shape", r.input_shape}, {"dtype", dtype}};
  j["output"] = {{"name", "output0"}, {"shape", r.output_shape}, {"dtype", dtype}};
  j["nms"] = r.nms;
  if (r.nms) j["conf"] = r.conf;
  if (r.format == ExportFormat::kOnnx) j["opset"] = r.opset;
  j["device"] = r.device;
  j["warnings"] = r.warnings;
  j["seconds"] = r.seconds;
  return j;
}

void PrintText(const ExportReport& r) {
  const char* dtype = r.half ? "float16" : "float32";
  std::cout << "exported " << r.model << " (" << r.nc << " classes) to " << r.file.string() << " ("
            << F("%.1f", static_cast<double>(r.bytes) / 1e6) << " MB, " << ExportFormatName(r.format);
  if (r.format == ExportFormat::kOnnx) std::cout << " opset " << r.opset;
  std::cout << ", imgsz " << r.imgsz[0] << "x" << r.imgsz[1] << (r.imgsz_from_weights ? " as trained" : "") << ") in "
            << F("%.1f", r.seconds) << " s\n"
            << "  input  images  " << Shape(r.input_shape) << " " << dtype << " (RGB 0-1)\n"
            << "  output output0 " << Shape(r.output_shape) << " " << dtype
            << (r.nms ? " (x1, y1, x2, y2 pixels, score, class; NMS at conf " + F("%g", r.conf) + ", zero padded)"
                      : std::string(" (xywh pixels, class scores)"))
            << "\n";
}

int RunExport(const ExportArgs& a) {
  ExportOptions o = a.o;
  Result<ExportFormat> format = ParseExportFormat(a.format);
  if (!format.ok()) return Fail("export", format.status());
  o.format = *format;
  Result<ExportReport> r = Export(o);
  if (!r.ok()) return Fail("export", r.status());
  for (const auto& w : r->warnings) std::cerr << "yolocache-train export: warning: " << w << "\n";
  if (a.json) {
    std::cout << JsonText(ExportJson(*r)) << "\n";
  } else {
    PrintText(*r);
  }
  WriteResultFile(a.result_file, ExportJson(*r), "export");
  return kExitOk;
}

Registration reg("export", "Export weights to ONNX or TorchScript, laid out as Ultralytics exports them (best.pt -> best.onnx)",
                 [](CLI::App& app) -> Action {
                   auto a = std::make_shared<ExportArgs>();
                   ExportOptions& o = a->o;
                   app.add_option("--weights", o.weights, "Ultralytics .pt or yolocache checkpoint")->required();
                   app.add_option("--format", a->format, "onnx | torchscript")->capture_default_str();
                   app.add_option("--imgsz", o.imgsz,
                                  "Input size: one value or height width, rounded up to a multiple of 32 (default: "
                                  "the checkpoint's training imgsz, as Ultralytics)")
                       ->expected(1, 2);
                   app.add_option("--batch", o.batch, "Batch size of the input")->capture_default_str();
                   app.add_flag("--dynamic", o.dynamic, "ONNX: batch, height and width free (any multiple of 32)");
                   app.add_flag("--half", o.half, "fp16 weights and I/O (ONNX: any device; TorchScript: CUDA only)");
                   app.add_option("--opset", o.opset,
                                  "ONNX opset, " + std::to_string(kOnnxMinOpset) + ".." + std::to_string(OnnxMaxOpset()) +
                                      " (default: the newest, " + std::to_string(OnnxMaxOpset()) + ")");
                   app.add_flag("--nms", o.nms,
                                "Embed NMS (Ultralytics' NMSModel): output (N, max-det, 6) x1, y1, x2, y2, score, "
                                "class, zero padded");
                   app.add_option_function<double>(
                       "--conf", [&o](double v) { o.conf = v; },
                       "With --nms: confidence threshold baked in (default: 0.25, as Ultralytics)");
                   app.add_option("--iou", o.iou, "With --nms: NMS IoU threshold")->capture_default_str();
                   app.add_option("--max-det", o.max_det, "With --nms: detections per image at most")->capture_default_str();
                   app.add_flag("--agnostic-nms", o.agnostic_nms,
                                "With --nms: class-agnostic NMS (boxes of different classes suppress each other)");
                   app.add_flag("--int8", o.int8, "Refused, as Ultralytics refuses int8 for onnx and torchscript");
                   app.add_flag("--keras", o.keras, "Refused, as Ultralytics refuses keras for onnx and torchscript");
                   AddDeviceOption(app, o.device, "cpu, as Ultralytics");
                   app.add_option("--out", o.out, "Output file (default: the weights' stem + .onnx / .torchscript beside them)");
                   app.add_flag("--json", a->json, "Print the result as JSON");
                   AddResultFileOption(app, &a->result_file);
                   return [a] { return RunExport(*a); };
                 });

}  // namespace
}  // namespace yc::cli
