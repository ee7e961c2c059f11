// TorchScript export of a DetectionModel: a module traced at one input shape (as torch.jit.trace does for
// Ultralytics' export) whose forward(images) returns the eval-mode prediction (N, 4 + nc, anchors), with
// the weights (BatchNorm folded) as graph constants and the metadata JSON in the extra file config.txt.
// Both torch::jit::load and Python's torch.jit.load run it.
//
//   FuseConvBatchNorm(*model);
//   Result<std::string> bytes = ExportTorchScript(*model, example, metadata.json);  // example: (N, 3, H, W)
#pragma once

#include <string>

#include <ATen/ATen.h>

#include "base/status.h"
#include "trainer/model/detection_model.h"

namespace yc::trainer {

// `model`: eval mode, parameters without grad, on `example`'s device and dtype. Returns the archive bytes.
Result<std::string> ExportTorchScript(DetectionModelImpl& model, const at::Tensor& example,
                                      const std::string& config_json);

}  // namespace yc::trainer
