// `val save_json=True`: predictions.json in the run folder, the COCO results format Ultralytics'
// DetectionValidator writes (ultralytics/models/yolo/detect/val.py pred_to_json, engine/validator.py):
// one object per detection, images in validation order, detections in NMS order,
//   {"image_id": int(stem) when the file stem is all digits else the stem, "category_id": COCO's 91-id
//    number for the class when the split is COCO's (below), else class + 1,
//    "bbox": [x, y, w, h] in original-image pixels, each rounded to 3 decimals, "score": rounded to 5}
// with the box's float32 arithmetic as Ultralytics': xywh from xyxy, then x = xc - w / 2. The file is
// written only when some image has a detection (Ultralytics' `if self.jdict`).
// Ultralytics then scores the file with faster-coco-eval (8.3.166) against annotations/instances_val2017.json
// for a COCO split; Debian 12 packages neither it nor pycocotools, so yolocache writes the file and runs no
// COCO evaluation (docs/TRAINER.md).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "base/status.h"

namespace yc::trainer {

// One validated image's detections: (n, 6) float [x1, y1, x2, y2, conf, cls] in its original pixels.
struct ImagePredictions {
  std::string source;  // the image path (relative to the dataset root): its stem is the image_id
  at::Tensor detections;
};

// Ultralytics' is_coco for a split: given as one path that contains "coco" and ends in /val2017.txt or
// /test-dev2017.txt (a folder of images, such as coco128's, is not).
bool IsCocoSplit(const std::vector<std::filesystem::path>& split_inputs);

// category_id by class: the COCO 2017 category ids (1..90 less the 10 unused ones) for a COCO split,
// else 1..nc.
std::vector<int> CocoCategoryIds(bool coco, int nc);

// The image_id of an image path: its stem as an integer when it is all ASCII digits, else the stem.
nlohmann::json CocoImageId(std::string_view source);

// Python's round(value, digits) on a double (correctly rounded, halves to even).
double PythonRound(double value, int digits);

// The predictions.json array. A class id outside `category_ids` is an InvalidArgument.
Result<nlohmann::json> CocoPredictions(const std::vector<ImagePredictions>& images, const std::vector<int>& category_ids);

}  // namespace yc::trainer
