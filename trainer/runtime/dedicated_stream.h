// CUDA streams that no other code uses, one per device and use, created once per process and never
// destroyed (work may be queued on them until exit). PyTorch's pool streams are handed out round-robin, so
// a pool stream taken for a CUDA graph capture on one thread could be the one another thread queues
// work on; these cannot. kSideWork's stream has the device's highest priority (side_stream.cc says why).
// Included only by files compiled against a LibTorch with CUDA.
#pragma once

#include <c10/cuda/CUDAStream.h>

namespace yc::trainer {

enum class DedicatedStreamUse { kGraphCapture, kSideWork };

c10::cuda::CUDAStream DedicatedCudaStream(c10::DeviceIndex device, DedicatedStreamUse use);

}  // namespace yc::trainer
