// The metadata an exported model carries, with Ultralytics' keys and order (exporter.py): description,
// author, date, version, license, docs, stride, task, batch, imgsz, names, args, channels. ONNX stores
// each value as Python's str() of it (metadata_props: "{0: 'person', 1: 'bicycle'}", "[640, 640]"), which
// Ultralytics' AutoBackend reads back with int() / eval(); TorchScript stores json.dumps of the dict in
// the extra file config.txt.
//
//   ExportMetadata m = BuildExportMetadata(info, options);
//   for (auto& [k, v] : m.props) ...;   // ONNX metadata_props
//   m.json                              // TorchScript config.txt
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "trainer/io/export_options.h"

namespace yc::trainer {

struct ExportMetadataInput {
  std::string model_name;          // "yolo11n"
  std::string source;              // what the weights are, e.g. "Ultralytics 8.3.166 yolo11n (ema, 80 classes)"
  std::vector<std::string> names;  // class names, index = id
  int stride = 32;
  int channels = 3;
};

struct ExportMetadata {
  std::vector<std::pair<std::string, std::string>> props;  // key, Python str() of the value
  std::string json;                                         // json.dumps-style object
};
ExportMetadata BuildExportMetadata(const ExportMetadataInput& in, const ExportOptions& options);

// Python's repr() of a str: single quotes unless the text holds ' and no ", backslash escapes.
std::string PyRepr(const std::string& s);

}  // namespace yc::trainer
