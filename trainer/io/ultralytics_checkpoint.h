// Ultralytics detection checkpoints (yolov8n.pt, yolo11n.pt, a run's last.pt/best.pt) read in C++: the
// model Ultralytics would load (`ckpt.get('ema') or ckpt['model']`), as a state_dict with Ultralytics'
// names ("model.0.conv.weight", ..., "model.22.dfl.conv.weight"; float tensors as float32, as
// Ultralytics' `.float()`), and what the model is: family and scale (from the pickled `yaml` dict:
// `yaml_file` 'yolov8n.yaml' / 'yolo11s.yaml', `scale`), class count, class names and strides.
//
//   Result<UltralyticsCheckpoint> ck = ReadUltralyticsCheckpoint("yolov8n.pt");
//   // ck->family == "yolov8", ck->scale == "n", ck->nc == 80, ck->state_dict[0].first == "model.0.conv.weight"
//
// Release files (`Model.save` / `strip_optimizer`: `model` set) and training files (`model` None, `ema`
// set; optimizer, train_args etc. ignored), fp16 or fp32. The module tree is walked through each
// module's `_modules` / `_parameters` / `_buffers` (non-persistent buffers left out, as state_dict does),
// not by class paths, which moved between Ultralytics versions. A model other than a DetectionModel with
// a plain Detect head (segment, pose, OBB, classify, RT-DETR, YOLO-World, v10) is Unsupported "not a
// detection checkpoint: <what it is>"; an architecture other than yolov8/yolo11 detect is Unsupported
// "unknown architecture"; a file that is not a torch.save archive or is damaged is IOError. Every
// message starts with the path.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "base/status.h"

namespace yc::trainer {

struct UltralyticsCheckpoint {
  std::string family;                  // "yolov8" | "yolo11"
  std::string scale;                   // "n".."x"
  std::string yaml_file;               // as pickled, e.g. "yolov8n.yaml"
  std::string source;                  // "ema" | "model": which entry the weights came from
  int64_t nc = 0;
  std::vector<std::string> names;      // index = class id (missing ids named by their number)
  std::vector<double> stride;          // e.g. {8, 16, 32}
  int imgsz = 0;                       // train_args.imgsz when the file has it, else 0
  bool single_cls = false;             // train_args.single_cls (val keeps it, as Ultralytics' _reset_ckpt_args)
  std::string version, date;           // Ultralytics version / save date when present
  std::vector<std::pair<std::string, at::Tensor>> state_dict;  // Ultralytics' order; CPU, float32 / int64
};

Result<UltralyticsCheckpoint> ReadUltralyticsCheckpoint(const std::filesystem::path& path);

}  // namespace yc::trainer
