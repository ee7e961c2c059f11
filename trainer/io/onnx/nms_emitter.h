// Internal to ONNX export: the NMS an nms=True export embeds after the head, as Ultralytics' NMSModel
// (engine/exporter.py) computes it, built on ONNX's NonMaxSuppression (opset 10+; torchvision's nms
// exports to the same op): per image the best class of each anchor, candidates with score > conf, boxes
// divided by max(H, W) and, unless agnostic, offset by their class index before the IoU test, at most
// max_det kept by descending score, written as (N, max_det, 6) rows x1, y1, x2, y2, score, class, the
// rest zeros. The whole batch goes through one NonMaxSuppression node (its batch dimension), so a
// dynamic export takes any batch size; H and W are read from the input's shape.
//
//   std::string pred = EmitDetect(g, path, detect, feats, /*xyxy=*/true);  // (N, 4 + nc, A) corners
//   std::string out = EmitNms(g, "images", pred, nc, settings);          // (N, max_det, 6), graph float type
#pragma once

#include <cstdint>
#include <string>

#include "trainer/io/onnx/graph_builder.h"

namespace yc::trainer::onnx_export {

struct NmsSettings {
  double conf = 0.25;
  double iou = 0.7;
  int64_t max_det = 300;  // already capped at the anchor count, as NMSModel does
  bool agnostic = false;
  int opset = 13;         // ReduceMax takes its axes as an input from opset 18
};

// `pred`: (N, 4 + nc, A) xyxy pixel boxes and class scores in the graph's float type; `images` the
// graph input (N, C, H, W). Returns the name of the (N, max_det, 6) detections.
std::string EmitNms(GraphBuilder& g, const std::string& images, const std::string& pred, int64_t nc,
                    const NmsSettings& s);

}  // namespace yc::trainer::onnx_export
