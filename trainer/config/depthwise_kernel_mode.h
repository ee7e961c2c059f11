// --depthwise-kernel (trainer/model/depthwise_kernel.h applies it), read once here so that an unknown value
// is refused with the other options, before any work.
#pragma once

#include <string>

#include "base/status.h"

namespace yc::trainer {

// auto (cuDNN for the steady train shape only), cudnn (every shape: PyTorch's own choice), direct
// (PyTorch's depthwise kernel for every shape: no plan building at all, a slower steady step).
enum class DepthwiseKernelMode { kAuto, kCudnn, kDirect };

// The mode `text` names; anything else is InvalidArgument listing the values.
Result<DepthwiseKernelMode> ParseDepthwiseKernelMode(const std::string& text);

}  // namespace yc::trainer
