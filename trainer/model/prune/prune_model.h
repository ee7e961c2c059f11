// A model pruned in place by a criterion (trainer/model/prune/prune_plan.h): its prunable BatchNorm scales
// read, the plan made and applied through every consumer (channel_widths.h), and the architecture that a
// checkpoint records for it (ModelOptions::channels: what the model already had cut, then this cut's
// widths). Shared by the `prune` command (trainer/io/prune_weights.h) and train --prune-at.
//
//   Result<ModelPrune> p = PruneModel(*model, PruneCriterion{.ratio = 0.3}, recorded_channels);
//   options.channels = p->channels;
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "base/status.h"
#include "trainer/model/detection_model.h"
#include "trainer/model/prune/prune_plan.h"

namespace yc::trainer {

struct ModelPrune {
  PrunePlan plan;
  double ratio = 0;  // the ratio planned with (a gflops criterion's, found; else the criterion's own)
  std::map<std::string, int64_t> channels;  // the architecture to record: `recorded` plus this cut's widths
};

// A gflops criterion becomes the smallest ratio (bisection to 0.005) whose cut removes at least that share
// of the model's GFLOPs at `imgsz` (ModelGflops), each ratio tried on a copy. InvalidArgument: a bad
// criterion (CheckPruneCriterion), or a GFLOPs share the --min-keep floors do not allow (naming the most
// that can go). The model is changed only when the result is ok.
Result<ModelPrune> PruneModel(DetectionModelImpl& model, const PruneCriterion& criterion,
                              const std::map<std::string, int64_t>& recorded, int imgsz = 640);

}  // namespace yc::trainer
