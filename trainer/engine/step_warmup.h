// The train step's convolutions warmed before the first batch (--conv-warmup; trainer/runtime/conv_warmup.h):
// the model's forward (and a --teacher's) at batch 1, under the step's autocast and with the depthwise kernel
// each batch shape gets, recorded; then every convolution run forward and backward at each batch shape of the
// epoch (the full batch and a short last one) on several threads at once.
#pragma once

#include <string>
#include <vector>

#include "loader/batch.h"
#include "trainer/engine/training_stack.h"

namespace yc::trainer {

// Epochs with more distinct batch shapes than this (rect train batches) are left to warm up as they go.
constexpr size_t kMaxWarmedShapes = 4;

// Why the warm-up does not apply to this run ("" where it does): CPU, multi-scale or rect batches, cuDNN off.
std::string ConvWarmupBlocker(const TrainingStack& stack, const std::vector<BatchShape>& shapes, bool multi_scale);

// Records and runs the step's convolutions at `shapes` on `threads` threads; returns the line the run says
// ("conv warm-up: C of C convolutions (2 batch shapes: 64, 56 images) on 8 threads, T s"). The model is
// left as it was (its mode restored; the forward runs in eval mode so that BatchNorm's statistics stay). A
// failure is said in the line, never thrown: the run only loses the head start.
std::string WarmUpStepConvolutions(TrainingStack& stack, const std::vector<BatchShape>& shapes, int threads);

// WarmUpStepConvolutions where ConvWarmupBlocker allows, else "conv warm-up: none (<why>)": what the run's
// set-up and the ceiling probe say.
std::string WarmUpWhereItApplies(TrainingStack& stack, const std::vector<BatchShape>& shapes, bool multi_scale,
                                 int threads);

}  // namespace yc::trainer
