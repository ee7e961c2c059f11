#include "trainer/io/export_metadata.h"

#include <chrono>
#include <cstdio>
#include <ctime>

#include <nlohmann/json.hpp>

namespace yc::trainer {

namespace {

// datetime.now().isoformat(): local time with microseconds, no zone.
std::string IsoNow() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1000000;
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lld", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(us));
  return buf;
}

const char* PyBool(bool b) { return b ? "True" : "False"; }

// "YOLO11n" from "yolo11n", as Ultralytics' pretty_name.
std::string Pretty(std::string name) {
  if (name.rfind("yolo", 0) == 0) name.replace(0, 4, "YOLO");
  return name;
}

}  // namespace

std::string PyRepr(const std::string& s) {
  const bool dq = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char q = dq ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == static_cast<unsigned char>(q)) {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);  // UTF-8 passes through, as Python 3 prints printable text
    }
  }
  out += q;
  return out;
}

ExportMetadata BuildExportMetadata(const ExportMetadataInput& in, const ExportOptions& o) {
  const auto hw = o.hw();
  const bool onnx = o.format == ExportFormat::kOnnx;
  // Ultralytics writes its own name, version and licence here; ours say who exported the file, and the
  // licence is that of the weights' architecture (Ultralytics' YOLO, AGPL-3.0).
  const std::string description = Pretty(in.model_name) + " model exported by yolocache-train from " +
                                  o.weights.filename().string() + (in.source.empty() ? "" : " (" + in.source + ")");
  const std::string author = "yolocache";
  const std::string date = IsoNow();
  const std::string version = "yolocache-train 0.1.0";
  const std::string license = "AGPL-3.0 License (https://ultralytics.com/license)";
  const std::string docs = "docs/TRAINER.md#export";

  // args: the format's options in Ultralytics' default.yaml order. args.nms is what Ultralytics'
  // AutoBackend reads as `end2end` (nn/autobackend.py): its predictor and validator then take the output
  // as final detections instead of running NMS.
  nlohmann::ordered_json args;
  std::string args_py;
  args["batch"] = o.batch;
  args["half"] = o.half;
  if (onnx) {
    args["dynamic"] = o.dynamic;
    args["simplify"] = false;  // no onnxslim pass
    args["opset"] = o.opset;
    args_py = "{'batch': " + std::to_string(o.batch) + ", 'half': " + PyBool(o.half) + ", 'dynamic': " +
              PyBool(o.dynamic) + ", 'simplify': False, 'opset': " + std::to_string(o.opset) + ", 'nms': " + PyBool(o.nms) +
              "}";
  } else {
    args["optimize"] = false;
    args_py = "{'batch': " + std::to_string(o.batch) + ", 'half': " + PyBool(o.half) +
              ", 'optimize': False, 'nms': " + PyBool(o.nms) + "}";
  }
  args["nms"] = o.nms;

  std::string names_py = "{";
  nlohmann::ordered_json names = nlohmann::ordered_json::object();
  for (size_t i = 0; i < in.names.size(); ++i) {
    if (i) names_py += ", ";
    names_py += std::to_string(i) + ": " + PyRepr(in.names[i]);
    names[std::to_string(i)] = in.names[i];
  }
  names_py += "}";
  const std::string imgsz_py = "[" + std::to_string(hw[0]) + ", " + std::to_string(hw[1]) + "]";

  ExportMetadata m;
  m.props = {{"description", description},
             {"author", author},
             {"date", date},
             {"version", version},
             {"license", license},
             {"docs", docs},
             {"stride", std::to_string(in.stride)},
             {"task", "detect"},
             {"batch", std::to_string(o.batch)},
             {"imgsz", imgsz_py},
             {"names", names_py},
             {"args", args_py},
             {"channels", std::to_string(in.channels)}};
  nlohmann::ordered_json j;
  j["description"] = description;
  j["author"] = author;
  j["date"] = date;
  j["version"] = version;
  j["license"] = license;
  j["docs"] = docs;
  j["stride"] = in.stride;
  j["task"] = "detect";
  j["batch"] = o.batch;
  j["imgsz"] = {hw[0], hw[1]};
  j["names"] = names;
  j["args"] = args;
  j["channels"] = in.channels;
  // json.dumps' default separators (", ", ": ") are what nlohmann's dump(-1) lacks; the content is the same
  // and json.loads reads both.
  m.json = j.dump();
  return m;
}

}  // namespace yc::trainer
