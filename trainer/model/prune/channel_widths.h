// Cutting a DetectionModel's convolutions down to chosen output channels, consistently through every
// consumer (trainer/model/prune/channel_graph.h says which tensor slices go where):
//  * a Conv keeps the chosen rows of its weight and BatchNorm (gamma, beta, running mean and variance),
//  * every Conv or Conv2d reading those channels keeps the matching input columns (through the C2f/C3k2
//    halves, the concatenations, SPPF's four copies and the Detect head's inputs),
//  * a depthwise Conv keeps the rows of its remaining inputs and its groups follow.
// The module options (Conv2d in/out channels and groups, BatchNorm num_features) are updated too, so clone()
// (the EMA) and the Ultralytics module writer see the cut shapes.
//
//   ChannelGraph g = GraphOf(*model);
//   ApplyChannelKeep(*model, g, {{"model.2.m.0.cv1", {0, 3, 5}}});  // what `prune` does with a plan
//   CutToWidths(*model, {{"model.2.m.0.cv1", 3}});                   // a recorded architecture, to load into
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "trainer/model/detection_model.h"
#include "trainer/model/prune/channel_graph.h"

namespace yc::trainer {

// Output widths by path: every Conv's (its conv weight's rows) and every bare Conv2d's.
std::map<std::string, int64_t> ConvWidths(torch::nn::Module& model);
// The model's channel graph (its current widths).
ChannelGraph GraphOf(DetectionModelImpl& model);

// Cuts the model's tensors in place (no grad) as above. `keep` names prunable nodes only, each keeping at
// least one channel, a `halves` node as many in each half; otherwise std::invalid_argument naming the path.
void ApplyChannelKeep(DetectionModelImpl& model, const ChannelGraph& graph, const ChannelKeep& keep);

// A recorded architecture (ModelOptions::channels): each listed node cut to its first `width` channels
// (a halves node: the first width / 2 of each half). The values are placeholders: the checkpoint's
// weights are loaded over them. Bad entries are std::invalid_argument naming the path.
void CutToWidths(DetectionModelImpl& model, const std::map<std::string, int64_t>& widths);

}  // namespace yc::trainer
