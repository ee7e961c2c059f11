// TorchScript export of a DetectionModel: a module traced at one input shape (as torch.jit.trace does for
// Ultralytics' export) whose forward(images) returns the eval-mode prediction (N, 4 + nc, anchors), with
// the weights (BatchNorm folded) as graph constants and the metadata JSON in the extra file config.txt.
// Both torch::jit::load and Python's torch.jit.load run it.
//
// With `nms` (Ultralytics' nms=True), the traced head returns xyxy boxes (method `detect`) and forward is
// TorchScript code (compiled from source, so its loops are kept, not unrolled) computing what
// Ultralytics' NMSModel (engine/exporter.py) does with torchvision.ops.nms: (N, max_det, 6) rows x1, y1,
// x2, y2, score, class, zero padded. The greedy suppression is written out in plain torch ops, the way
// torchvision's CPU kernel computes it, so loading the file needs no torchvision.
//
//   FuseConvBatchNorm(*model);
//   Result<std::string> bytes = ExportTorchScript(*model, example, metadata.json);  // example: (N, 3, H, W)
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <ATen/ATen.h>

#include "base/status.h"
#include "trainer/model/detection_model.h"

namespace yc::trainer {

// The NMS an nms export embeds (ExportOptions' conf, iou, agnostic_nms; max_det already capped at the
// anchor count).
struct TorchScriptNms {
  double conf = 0.25;
  double iou = 0.7;
  int64_t max_det = 300;
  bool agnostic = false;
};

// `model`: eval mode, parameters without grad, on `example`'s device and dtype. Returns the archive bytes.
Result<std::string> ExportTorchScript(DetectionModelImpl& model, const at::Tensor& example,
                                      const std::string& config_json,
                                      const std::optional<TorchScriptNms>& nms = std::nullopt);

}  // namespace yc::trainer
