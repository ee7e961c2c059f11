#include "trainer/io/export_options.h"

#include <cctype>

namespace yc::trainer {

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
  if (o->format == ExportFormat::kTorchScript) {
    if (o->opset != 0) return Status::InvalidArgument("--opset applies to ONNX only");
    if (o->dynamic) return Status::InvalidArgument("--dynamic applies to ONNX only (TorchScript is traced at one shape)");
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
