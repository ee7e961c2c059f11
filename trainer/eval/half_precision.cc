#include "trainer/eval/half_precision.h"

namespace yc::trainer {

bool HalfApplies(bool requested, const at::Device& device) { return requested && !device.is_cpu(); }

std::string HalfOnCpuNote(const std::string& command) {
  return "yolocache-train " + command +
         ": half=True runs fp16 on a GPU only; running fp32 on the CPU (LibTorch's CPU kernels lack fp16 "
         "convolutions in older releases and are slow in fp16 in newer ones)";
}

}  // namespace yc::trainer
