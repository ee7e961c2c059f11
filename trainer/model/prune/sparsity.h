// Network slimming (Liu et al. 2017) as the YOLOv5 pruning forks train it (`sr`): an L1 penalty on the
// BatchNorm scale factors, applied as S * sign(gamma) added to each gamma's gradient after backward and
// before the optimizer step, so that the scales of unimportant channels are driven to zero and `prune`
// can remove them. Only the BatchNorms of prunable outputs (trainer/model/prune/channel_graph.h) get it:
// an exempt channel is never removed, so shrinking its scale would only cost accuracy.
//
//   std::vector<at::Tensor> gammas = SparsityTargets(*model);  // once, after the model is built
//   ... backward, unscale, clip ...
//   AddSparsityGradient(gammas, 1e-3);                        // then optimizer.step()
#pragma once

#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "trainer/model/detection_model.h"

namespace yc::trainer {

// The weights (gamma) of the prunable BatchNorms, in forward order; frozen ones (requires_grad false)
// are left out, as they have no gradient to add to.
std::vector<at::Tensor> SparsityTargets(DetectionModelImpl& model);
// Their paths ("model.2.m.0.cv1.bn.weight", ...), for messages and tests.
std::vector<std::string> SparsityTargetNames(DetectionModelImpl& model);

// grad += s * sign(gamma) for every gamma whose gradient is defined (no grad recorded; in place, so a
// captured CUDA graph replays it).
void AddSparsityGradient(const std::vector<at::Tensor>& gammas, double s);

}  // namespace yc::trainer
