// Which channels `prune` removes: network slimming's rule, the channels whose BatchNorm scale |gamma| is
// smallest, over the prunable outputs of trainer/model/prune/channel_graph.h only. Either a global share of
// those channels (--ratio R: the R * N smallest scales of all prunable channels together, so layers whose
// scales training drove to zero lose most) or a cut (--threshold T: every |gamma| < T). A layer that would
// lose every channel is refused rather than left with a width the model cannot run. Torch-free: the scales
// come in as numbers.
//
//   Result<PrunePlan> plan = PlanPrune(graph, gammas, PruneCriterion{.ratio = 0.3});
//   ApplyChannelKeep(*model, graph, plan->keep);   // trainer/model/prune/channel_widths.h
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "trainer/model/prune/channel_graph.h"

namespace yc::trainer {

// Exactly one of the two is > 0; each must be in (0, 1).
struct PruneCriterion {
  double ratio = 0;      // share of the prunable channels removed, globally
  double threshold = 0;  // remove channels with |gamma| below this
};

struct PrunePlan {
  ChannelKeep keep;            // only the nodes that lose channels
  int64_t prunable = 0;        // channels of the prunable outputs
  int64_t removed = 0;         // of them removed
  double cut = 0;              // |gamma| below which channels went (ratio: the largest removed scale)
};

// InvalidArgument naming the option and value unless exactly one of ratio and threshold is given, in (0, 1).
Status CheckPruneCriterion(const PruneCriterion& criterion);

// InvalidArgument (the CLI's exit 2) names the option and value: a ratio or threshold outside (0, 1), none
// or both given, or a cut that would remove every channel of an output (naming it and its largest scale).
// `gammas`: |gamma| (or gamma) per channel of every prunable node of `graph`, by path.
Result<PrunePlan> PlanPrune(const ChannelGraph& graph, const std::map<std::string, std::vector<float>>& gammas,
                            const PruneCriterion& criterion);

}  // namespace yc::trainer
