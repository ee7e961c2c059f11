#include "trainer/io/export_options.h"

#include <cctype>
#include <cstdio>

#include "base/format.h"

namespace yc::trainer {

namespace {

// The formats of Ultralytics' export_formats() (engine/exporter.py) that list each argument its
// validate_args checks and our formats may lack; an argument off its default for a format that does not
// list it is an error there (AssertionError) and a usage error here.
struct FormatArgument {
  const char* arg;
  const char* formats;  // the formats whose Arguments column holds it
};
constexpr FormatArgument kTakenBy[] = {
    {"int8", "openvino, engine, coreml, saved_model, tflite, tfjs, mnn, imx"},
    {"keras", "saved_model"},
    {"dynamic", "onnx, openvino, engine"},
};

Status NotSupportedFor(const char* arg, ExportFormat format) {
  std::string taken_by;
  for (const auto& a : kTakenBy) {
    if (std::string(a.arg) == arg) taken_by = a.formats;
  }
  return Status::InvalidArgument(std::string("argument '") + arg + "' is not supported for format='" +
                                 ExportFormatName(format) + "', as in Ultralytics (formats that take it: " + taken_by +
                                 "; yolocache-train writes onnx and torchscript)");
}

Status CheckNmsOptions(ExportOptions* o) {
  if (o->conf && (*o->conf < 0 || *o->conf > 1)) return Status::InvalidArgument("--conf " + FormatNumber("%g", *o->conf) + ": expected 0..1");
  if (o->iou < 0 || o->iou > 1) return Status::InvalidArgument("--iou " + FormatNumber("%g", o->iou) + ": expected 0..1");
  if (o->max_det < 1) return Status::InvalidArgument("--max-det " + std::to_string(o->max_det) + ": expected >= 1");
  // Ultralytics: `self.args.conf = self.args.conf or 0.25` (so conf=0 is 0.25 too).
  if (o->nms && o->conf.value_or(0) == 0) o->conf = 0.25;
  return Status::OK();
}

}  // namespace

Result<ExportFormat> ParseExportFormat(const std::string& name) {
  std::string s;
  for (char c : name) s.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (s == "onnx") return ExportFormat::kOnnx;
  if (s == "torchscript") return ExportFormat::kTorchScript;
  return Status::InvalidArgument("--format '" + name + "': expected onnx or torchscript");
}

const char* ExportFormatName(ExportFormat format) { return format == ExportFormat::kOnnx ? "onnx" : "torchscript"; }

const char* ExportFormatSuffix(ExportFormat format) {
  return format == ExportFormat::kOnnx ? ".onnx" : ".torchscript";
}

Result<std::vector<std::string>> CheckExportOptions(ExportOptions* o, int stride) {
  std::vector<std::string> warnings;
  if (o->imgsz.size() > 2) return Status::InvalidArgument("--imgsz: expected one value or two (height width)");
  if (o->imgsz_from_weights()) o->imgsz.clear();  // resolved from the weights by Export()
  for (int& v : o->imgsz) {
    // Same bound as train/build (kMaxImgsz): larger is a typo, not an image.
    if (v <= 0 || v > 8192) return Status::InvalidArgument("--imgsz " + std::to_string(v) + ": expected 1..8192");
    // Ultralytics' check_imgsz: round up to a multiple of the stride and warn.
    const int rounded = (v + stride - 1) / stride * stride;
    if (rounded != v) {
      warnings.push_back("--imgsz " + std::to_string(v) + " must be a multiple of max stride " + std::to_string(stride) +
                         ", updating to " + std::to_string(rounded));
      v = rounded;
    }
  }
  if (o->batch < 1 || o->batch > 1024) {
    return Status::InvalidArgument("--batch " + std::to_string(o->batch) + ": expected 1..1024");
  }
  if (o->int8) return NotSupportedFor("int8", o->format);
  if (o->keras) return NotSupportedFor("keras", o->format);
  YC_RETURN_IF_ERROR(CheckNmsOptions(o));
  if (o->format == ExportFormat::kTorchScript) {
    if (o->dynamic) return NotSupportedFor("dynamic", o->format);
    if (o->opset != 0) return Status::InvalidArgument("--opset applies to ONNX only");
  } else {
    const int max = OnnxMaxOpset();
    if (max == 0) return Status::Unsupported("ONNX export: this build has no libonnx (install libonnx-dev, reconfigure)");
    if (o->opset == 0) o->opset = max;
    if (o->opset < kOnnxMinOpset || o->opset > max) {
      return Status::InvalidArgument("--opset " + std::to_string(o->opset) + ": expected " +
                                     std::to_string(kOnnxMinOpset) + ".." + std::to_string(max));
    }
  }
  return warnings;
}

std::filesystem::path ExportPath(const ExportOptions& o) {
  if (!o.out.empty()) return o.out;
  std::filesystem::path p = o.weights;
  return p.replace_extension(ExportFormatSuffix(o.format));
}

}  // namespace yc::trainer
