// The model's own training-step ceiling (`--synthetic-input`, `yolocache-train ceiling`): the same model,
// batch, imgsz, AMP, accumulation, optimizer and EMA as training, stepping on device-resident random images
// with real or random label tables. No data loading and no host-to-device copies: what a perfect loader
// would give, measured in the same process as the run it is compared with.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "base/status.h"
#include "trainer/config/train_options.h"
#include "trainer/engine/step_profile.h"

namespace yc::trainer {

// One training batch's label table (batch_idx, cls, cx, cy, w, h) and its most boxes in one image: the
// probe steps on these so its loss and assigner see the box counts of training.
struct ProbeLabels {
  at::Tensor table;
  int64_t max_boxes = 0;
};

struct SyntheticThroughput {
  double images_per_second = 0;
  double warmup_seconds = 0;     // the first few iterations: CUDA set-up, allocator growth, autotuning if on
  std::string conv_warmup;       // --conv-warmup N: its line, before those iterations (step_warmup.h); else empty
  bool fused_optimizer = false;  // whether the fused optimizer step ran (fused_step.h)
  bool cuda_graphs = false;      // whether the timed steps replayed CUDA graphs (graphed_step.h)
  // With `profile`: a second timed pass with the parts synchronised (step_profile.h), in ms per batch.
  bool profiled = false;
  std::array<double, kStepParts> part_ms{};
};

// `iterations` timed steps after a few warm-up ones. `labels`: real label tables to cycle through
// (empty: 4 random boxes per image). `profile`: then as many again, timing the step's parts. Under
// `options.device`; errors (no such device, out of memory) are a Status.
Result<SyntheticThroughput> MeasureSyntheticThroughput(const TrainOptions& options, int64_t nc, int iterations,
                                                       const std::vector<ProbeLabels>& labels = {},
                                                       bool profile = false);

// What the probe needs from a real cache: its class count and the label tables of the first `batches`
// batches of epoch 0 from its train loader (augmented as in training).
struct TrainLabelSample {
  int64_t nc = 0;
  std::vector<ProbeLabels> labels;
};
Result<TrainLabelSample> SampleTrainLabels(const TrainOptions& options, int batches);

}  // namespace yc::trainer
