// ONNX export of a DetectionModel, laid out as Ultralytics exports it so code written for Ultralytics'
// ONNX files runs unchanged: input "images" (N, 3, H, W) RGB 0-1, output "output0" (N, 4 + nc, anchors)
// with xywh boxes in input pixels and sigmoid class scores (what DetectionModel's eval forward returns as
// .pred), BatchNorm folded into the convolutions, Ultralytics' metadata_props. Built with libonnx's
// protobuf types and checked with onnx::checker. With `dynamic`, images {0: batch, 2: height, 3: width}
// and output0 {0: batch, 2: anchors} are symbolic; the anchor grid is computed in-graph (Shape, Range)
// in both cases, so one graph serves every H, W multiple of 32. With options.nms the graph ends in the NMS
// of Ultralytics' NMSModel (nms_emitter.h): output0 (N, max_det, 6), only the batch symbolic.
//
//   FuseConvBatchNorm(*model);                                        // trainer/model/fuse.h
//   Result<OnnxFile> f = ExportOnnx(*model, options, metadata);      // f->bytes: the serialized ModelProto
//   Status ok = CheckOnnxFile("best.onnx");                           // onnx::checker::check_model
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "trainer/io/export_metadata.h"
#include "trainer/io/export_options.h"
#include "trainer/model/detection_model.h"

namespace yc::trainer {

// True when this build has libonnx (else ExportOnnx returns Unsupported).
bool OnnxExportAvailable();

struct OnnxFile {
  std::string bytes;
  std::vector<int64_t> input_shape;   // -1 for a symbolic dimension
  std::vector<int64_t> output_shape;
  int opset = 0;
  int64_t nodes = 0, initializers = 0;
};
// `model`: eval mode, every Conv fused. Uses options' imgsz, batch, dynamic, half, opset.
Result<OnnxFile> ExportOnnx(DetectionModelImpl& model, const ExportOptions& options, const ExportMetadata& metadata);

// onnx::checker::check_model on a file; the error names the file.
Status CheckOnnxFile(const std::filesystem::path& path);
// The file's metadata_props in order.
Result<std::vector<std::pair<std::string, std::string>>> ReadOnnxMetadata(const std::filesystem::path& path);

}  // namespace yc::trainer
