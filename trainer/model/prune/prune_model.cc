#include "trainer/model/prune/prune_model.h"

#include <vector>

#include "trainer/model/prune/channel_widths.h"

namespace yc::trainer {

Result<ModelPrune> PruneModel(DetectionModelImpl& model, const PruneCriterion& criterion,
                              const std::map<std::string, int64_t>& recorded) {
  YC_RETURN_IF_ERROR(CheckPruneCriterion(criterion));
  const ChannelGraph graph = GraphOf(model);
  std::map<std::string, std::vector<float>> gammas;
  const auto params = model.named_parameters(/*recurse=*/true);
  for (const ConvNode& n : graph.convs) {
    if (!n.prunable) continue;
    // Every prunable node of the graph is a Conv with its BatchNorm (GraphOf reads the model itself).
    const at::Tensor g = params[n.path + ".bn.weight"].detach().to(at::kCPU, at::kFloat).contiguous();
    gammas[n.path].assign(g.data_ptr<float>(), g.data_ptr<float>() + g.numel());
  }
  ModelPrune result;
  YC_ASSIGN_OR_RETURN(result.plan, PlanPrune(graph, gammas, criterion));
  ApplyChannelKeep(model, graph, result.plan.keep);
  result.channels = recorded;
  for (const auto& [path, kept] : result.plan.keep) result.channels[path] = static_cast<int64_t>(kept.size());
  return result;
}

}  // namespace yc::trainer
