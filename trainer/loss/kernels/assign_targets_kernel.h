// The assigner's steps after its top-k (assign_targets.h) as three CUDA kernels queued on one stream.
// Plain pointers and a stream handle only: no LibTorch, so nvcc compiles it alone.
#pragma once

#include "trainer/loss/kernels/assign_targets.h"

namespace yc::trainer::kernels {

// Queues the three steps on `stream` (a cudaStream_t); the scratch must be zero. Returns null, or CUDA's
// message when a launch failed.
const char* LaunchAssignTargets(const AssignTargetsArgs& args, void* stream);

// Null when the build holds images of the three kernels the current device can run, else CUDA's message.
const char* AssignTargetsKernelsImageError();

}  // namespace yc::trainer::kernels
