#include "trainer/config/depthwise_kernel_mode.h"

namespace yc::trainer {

Result<DepthwiseKernelMode> ParseDepthwiseKernelMode(const std::string& text) {
  if (text == "auto") return DepthwiseKernelMode::kAuto;
  if (text == "cudnn") return DepthwiseKernelMode::kCudnn;
  if (text == "direct") return DepthwiseKernelMode::kDirect;
  return Status::InvalidArgument("--depthwise-kernel must be auto, cudnn or direct, got '" + text + "'");
}

}  // namespace yc::trainer
