// The TorchScript source of an nms=True TorchScript export's forward (torchscript_export.h): what
// Ultralytics' NMSModel (engine/exporter.py) computes, with torchvision.ops.nms written out in plain torch
// ops as torchvision's CPU kernel (torchvision/csrc/ops/cpu/nms_kernel.cpp) computes it, so that the file
// loads with torch alone. The settings are literals in the code.
//
//   module.define(TorchScriptNmsSource(nms));  // calls self.detect(images): the traced head, xyxy boxes
#pragma once

#include <string>

#include "trainer/io/torchscript_export.h"

namespace yc::trainer {

std::string TorchScriptNmsSource(const TorchScriptNms& nms);

}  // namespace yc::trainer
