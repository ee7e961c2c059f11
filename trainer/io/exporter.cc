#include "trainer/io/exporter.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <system_error>

#include <c10/core/GradMode.h>

#include "libcache/base/output_file.h"
#include "libcache/base/pid_files.h"
#include "libcache/build/output_guard.h"

#include "trainer/io/checkpoint.h"
#include "trainer/io/export_metadata.h"
#include "trainer/io/onnx/onnx_export.h"
#include "trainer/io/pretrained.h"
#include "trainer/io/torchscript_export.h"
#include "trainer/model/fuse.h"
#include "trainer/runtime/device_feed.h"
#include "trainer/runtime/exception_text.h"

namespace yc::trainer {
namespace {

// The output-path rule (libcache/build/output_guard.h), before the weights are even read: the export never
// replaces its own input (--out w.pt of w.pt, or model.torchscript exported to TorchScript beside itself),
// never lands in a cache, and names a file.
Status CheckExportPath(const std::filesystem::path& out, const std::filesystem::path& weights) {
  std::error_code ec;
  if (out.filename().empty() || std::filesystem::is_directory(out, ec)) {
    return Status::InvalidArgument(Status::At(out.string(), "is a directory; --out names the exported file (e.g. " +
                                                                (out / std::filesystem::path(weights).filename())
                                                                    .replace_extension(".onnx")
                                                                    .string() +
                                                                ")"));
  }
  YC_RETURN_IF_ERROR(CheckNotAnInput(out, {weights}));
  return CheckOutsideCaches(out);
}

Status WriteExport(const std::filesystem::path& out, const std::string& bytes) {
  std::error_code ec;
  if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path(), ec);
  if (ec) return Status::IOError(Status::At(out.parent_path().string(), "cannot create the folder: " + ec.message()));
  return WriteFileAtomically(out, bytes);
}

Result<ExportReport> ExportModel(ExportOptions o) {
  const auto t0 = std::chrono::steady_clock::now();
  ExportReport report;
  YC_ASSIGN_OR_RETURN(std::vector<std::string> warnings, CheckExportOptions(&o));
  report.warnings = std::move(warnings);
  report.file = ExportPath(o);
  YC_RETURN_IF_ERROR(CheckExportPath(report.file, o.weights));
  // Ultralytics exports on CPU by default.
  YC_ASSIGN_OR_RETURN(at::Device device, ParseDevice(o.device.empty() ? "cpu" : o.device));
  // Ultralytics traces fp16 only on a GPU (CPU kernels lack half convolutions); ONNX fp16 is a weight
  // conversion here, so it works from any device.
  if (o.half && o.format == ExportFormat::kTorchScript && device.is_cpu()) {
    report.warnings.push_back("--half only compatible with a CUDA device for TorchScript, exporting fp32");
    o.half = false;
  }

  Result<InferenceModel> loaded = LoadInferenceModel(o.weights, device);
  // Whatever is wrong with the weights (unreadable, damaged, NaN) is an I/O-level failure: exit 3.
  if (!loaded.ok()) return Status::IOError(loaded.status().message());
  DetectionModel model = loaded->model;
  report.imgsz_from_weights = o.imgsz_from_weights();
  if (report.imgsz_from_weights) o.imgsz = {loaded->info.imgsz > 0 ? loaded->info.imgsz : 640};
  report.imgsz = o.hw();
  c10::NoGradGuard no_grad;
  FuseConvBatchNorm(*model);

  ExportMetadataInput meta_in;
  meta_in.model_name = ModelNameString(model->options().name());
  meta_in.source = loaded->info.description;
  meta_in.names = loaded->info.names;
  if (meta_in.names.size() != static_cast<size_t>(model->nc())) {  // no names recorded: Ultralytics' class0..
    meta_in.names.clear();
    for (int64_t i = 0; i < model->nc(); ++i) meta_in.names.push_back("class" + std::to_string(i));
  }
  meta_in.channels = static_cast<int>(model->options().in_channels);
  const ExportMetadata meta = BuildExportMetadata(meta_in, o);

  const auto hw = o.hw();
  std::string bytes;
  if (o.format == ExportFormat::kOnnx) {
    YC_ASSIGN_OR_RETURN(OnnxFile f, ExportOnnx(*model, o, meta));
    bytes = std::move(f.bytes);
    report.input_shape = f.input_shape;
    report.output_shape = f.output_shape;
    report.opset = f.opset;
  } else {
    if (o.half) model->to(at::kHalf);
    at::Tensor example = at::zeros({o.batch, model->options().in_channels, hw[0], hw[1]},
                                   at::TensorOptions().device(device).dtype(o.half ? at::kHalf : at::kFloat));
    int64_t anchors = 0;
    for (double s : model->strides()) anchors += (hw[0] / static_cast<int64_t>(s)) * (hw[1] / static_cast<int64_t>(s));
    std::optional<TorchScriptNms> nms;
    if (o.nms) nms = TorchScriptNms{*o.conf, o.iou, std::min<int64_t>(anchors, o.max_det), o.agnostic_nms};
    YC_ASSIGN_OR_RETURN(std::string b, ExportTorchScript(*model, example, meta.json, nms));
    bytes = std::move(b);
    report.input_shape = example.sizes().vec();
    report.output_shape = nms ? std::vector<int64_t>{o.batch, nms->max_det, 6}
                              : std::vector<int64_t>{o.batch, 4 + model->nc(), anchors};
  }
  // What an export killed while writing left in that folder (libcache/base/pid_files.h).
  RemoveStaleTempFiles(report.file.has_parent_path() ? report.file.parent_path() : std::filesystem::path("."));
  YC_RETURN_IF_ERROR(WriteExport(report.file, bytes));
  report.format = o.format;
  report.bytes = static_cast<int64_t>(bytes.size());
  report.model = meta_in.model_name;
  report.nc = model->nc();
  report.half = o.half;
  report.nms = o.nms;
  if (o.nms) report.conf = *o.conf;
  report.device = device.str();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace

Result<ExportReport> Export(ExportOptions o) {
  try {  // LibTorch throws (an input too large for memory, say): one line, not its C++ backtrace
    return ExportModel(std::move(o));
  } catch (const std::exception& e) {
    return ExceptionStatus(e, "export");
  }
}

}  // namespace yc::trainer
