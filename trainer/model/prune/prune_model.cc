#include "trainer/model/prune/prune_model.h"

#include <memory>
#include <vector>

#include "base/format.h"
#include "trainer/model/prune/channel_widths.h"
#include "trainer/model/prune/model_cost.h"

namespace yc::trainer {

namespace {

// |gamma| per channel of every prunable node, as PlanPrune reads them.
std::map<std::string, std::vector<float>> PrunableScales(DetectionModelImpl& model, const ChannelGraph& graph) {
  std::map<std::string, std::vector<float>> gammas;
  const auto params = model.named_parameters(/*recurse=*/true);
  for (const ConvNode& n : graph.convs) {
    if (!n.prunable) continue;
    // Every prunable node of the graph is a Conv with its BatchNorm (GraphOf reads the model itself).
    const at::Tensor g = params[n.path + ".bn.weight"].detach().to(at::kCPU, at::kFloat).contiguous();
    gammas[n.path].assign(g.data_ptr<float>(), g.data_ptr<float>() + g.numel());
  }
  return gammas;
}

// The share of the model's GFLOPs that pruning a copy by `ratio` removes.
Result<double> GflopsCutAt(DetectionModelImpl& model, const ChannelGraph& graph,
                           const std::map<std::string, std::vector<float>>& gammas, PruneCriterion c, double ratio,
                           int imgsz, double full) {
  c.gflops = 0;
  c.ratio = ratio;
  YC_ASSIGN_OR_RETURN(PrunePlan plan, PlanPrune(graph, gammas, c));
  auto copy = std::dynamic_pointer_cast<DetectionModelImpl>(model.clone());
  ApplyChannelKeep(*copy, graph, plan.keep);
  return 1.0 - ModelGflops(*copy, imgsz) / full;
}

// The smallest ratio (to 0.005) whose cut reaches c.gflops: the cut grows with the ratio.
Result<double> RatioForGflops(DetectionModelImpl& model, const ChannelGraph& graph,
                              const std::map<std::string, std::vector<float>>& gammas, const PruneCriterion& c,
                              int imgsz) {
  const double full = ModelGflops(model, imgsz);
  double lo = 0, hi = 0.995;
  YC_ASSIGN_OR_RETURN(double most, GflopsCutAt(model, graph, gammas, c, hi, imgsz, full));
  if (most < c.gflops) {
    return Status::InvalidArgument("--gflops " + FormatNumber("%g", c.gflops) + ": at most " +
                                   FormatNumber("%.3f", most) + " of the GFLOPs can go (every output keeps --min-keep " +
                                   FormatNumber("%g", c.min_keep) + " of its channels)");
  }
  while (hi - lo > 0.005) {
    const double mid = (lo + hi) / 2;
    YC_ASSIGN_OR_RETURN(double cut, GflopsCutAt(model, graph, gammas, c, mid, imgsz, full));
    (cut >= c.gflops ? hi : lo) = mid;
  }
  return hi;
}

}  // namespace

Result<ModelPrune> PruneModel(DetectionModelImpl& model, const PruneCriterion& criterion,
                              const std::map<std::string, int64_t>& recorded, int imgsz) {
  YC_RETURN_IF_ERROR(CheckPruneCriterion(criterion));
  const ChannelGraph graph = GraphOf(model);
  const std::map<std::string, std::vector<float>> gammas = PrunableScales(model, graph);
  PruneCriterion planned = criterion;
  if (criterion.gflops != 0) {
    YC_ASSIGN_OR_RETURN(planned.ratio, RatioForGflops(model, graph, gammas, criterion, imgsz));
    planned.gflops = 0;
  }
  ModelPrune result;
  result.ratio = planned.ratio;
  YC_ASSIGN_OR_RETURN(result.plan, PlanPrune(graph, gammas, planned));
  ApplyChannelKeep(model, graph, result.plan.keep);
  result.channels = recorded;
  for (const auto& [path, kept] : result.plan.keep) result.channels[path] = static_cast<int64_t>(kept.size());
  return result;
}

}  // namespace yc::trainer
