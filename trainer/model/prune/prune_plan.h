// Which channels `prune` removes: network slimming's rule, the channels whose BatchNorm scale |gamma| is
// smallest, over the prunable outputs of trainer/model/prune/channel_graph.h only. Either a global share of
// those channels (--ratio R: the R * N smallest scales of all prunable channels together, so layers whose
// scales training drove to zero lose most) or a cut (--threshold T: every |gamma| < T). Every output keeps
// at least --min-keep of its channels (its largest scales; at least one): a global cut easily empties a
// layer whose scales are all small without being unimportant (a head branch after a short sparsity run,
// seen on yolov8s/yolo11s), and a layer cannot be removed whole. Under --ratio the channels a floor saves
// are taken from the next smallest scales elsewhere, so R * N channels go whenever the floors allow.
// Last, each output's kept count is rounded up to a multiple of --multiple-of (default 8, Ultralytics'
// make_divisible rule for every width; a split output rounds each half), its largest removed scales coming
// back: fp16 tensor-core convolutions want channel counts in multiples of 8, so an odd width can make a
// pruned model slower per FLOP on the GPU than the model it came from.
// Torch-free: the scales come in as numbers.
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

// Exactly one of ratio, threshold and gflops is > 0; each must be in (0, 1); min_keep in (0, 1];
// multiple_of >= 1. PlanPrune takes a ratio or a threshold; PruneModel (prune_model.h) turns gflops into the
// ratio that reaches it.
struct PruneCriterion {
  double ratio = 0;       // share of the prunable channels removed, globally
  double threshold = 0;   // remove channels with |gamma| below this
  double min_keep = 0.1;  // each output keeps at least ceil(min_keep * width) channels, at least 1
  int64_t multiple_of = 8;  // kept counts rounded up to a multiple of this (capped at the width); 1: exact
  double gflops = 0;      // remove at least this share of the model's GFLOPs: the smallest ratio that does
};

struct PrunePlan {
  ChannelKeep keep;            // only the nodes that lose channels
  int64_t prunable = 0;        // channels of the prunable outputs
  int64_t removed = 0;         // of them removed
  double cut = 0;              // |gamma| below which channels went (ratio: the largest removed scale)
  std::vector<std::string> floored;  // outputs held at their min_keep floor (the cut wanted more of them)
  int64_t kept_back = 0;       // channels the cut chose that stay after all: equal halves, multiple_of
};

// InvalidArgument naming the option and value unless exactly one of ratio, threshold and gflops is given, in
// (0, 1), min_keep is in (0, 1] and multiple_of >= 1.
Status CheckPruneCriterion(const PruneCriterion& criterion);

// InvalidArgument (the CLI's exit 2) names the option and value: a ratio or threshold outside (0, 1), none
// or both given, a min_keep outside (0, 1], a multiple_of below 1; a gflops criterion (PruneModel's).
// `gammas`: |gamma| (or gamma) per channel of every prunable node of `graph`, by path.
Result<PrunePlan> PlanPrune(const ChannelGraph& graph, const std::map<std::string, std::vector<float>>& gammas,
                            const PruneCriterion& criterion);

}  // namespace yc::trainer
