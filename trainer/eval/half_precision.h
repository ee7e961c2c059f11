// Ultralytics' `half` for val and predict (cfg/default.yaml: "use half precision (FP16)"): the model's
// weights and its input in fp16 (nn/autobackend.py: model.half(), im.half()), the boxes then mapped and
// matched as they come out of NMS.
//
// On the CPU, Ultralytics 8.3.166 keeps fp16 (AutoBackend only drops it for backends without fp16) and
// runs the half model there: with torch 1.13 that fails at the first convolution ("slow_conv2d_cpu" not
// implemented for 'Half'), with a torch 2.x it runs slowly. yolocache runs fp32 on the CPU instead and
// says so (HalfOnCpuNote): the same boxes up to fp16 rounding, on any LibTorch.
#pragma once

#include <string>

#include <ATen/ATen.h>

namespace yc::trainer {

// Whether half=`requested` runs the model in fp16 on `device`: only on a GPU.
bool HalfApplies(bool requested, const at::Device& device);

// The one line `command` (val, predict) prints when half=True meets the CPU.
std::string HalfOnCpuNote(const std::string& command);

}  // namespace yc::trainer
