#include "trainer/model/prune/prune_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>

#include "base/format.h"

namespace yc::trainer {

namespace {

struct Channel {
  float scale;  // |gamma|
  size_t node;  // index into the prunable nodes
  int64_t k;
};

// `count` rounded up to a multiple of `multiple`, at most `width`.
int64_t RoundUp(int64_t count, int64_t multiple, int64_t width) {
  return std::min(width, (count + multiple - 1) / multiple * multiple);
}

// A halves node (C2f/C3k2 cv1) keeps as many channels in each half as the fuller half keeps by the cut,
// rounded up to `multiple`, the largest scales of each half: Ultralytics' C2f.forward chunks cv1's output
// equally.
std::vector<int64_t> EqualHalves(const std::vector<int64_t>& kept, const std::vector<float>& scale, int64_t out,
                                 int64_t multiple) {
  const int64_t c = out / 2;
  int64_t first = 0;
  for (int64_t k : kept) first += k < c ? 1 : 0;
  const int64_t count = RoundUp(std::max<int64_t>(first, static_cast<int64_t>(kept.size()) - first), multiple, c);
  std::vector<int64_t> result;
  for (int64_t h = 0; h < 2; ++h) {
    std::vector<int64_t> half;
    for (int64_t k = h * c; k < (h + 1) * c; ++k) half.push_back(k);
    std::stable_sort(half.begin(), half.end(), [&](int64_t a, int64_t b) { return scale[a] > scale[b]; });
    result.insert(result.end(), half.begin(), half.begin() + count);
  }
  std::sort(result.begin(), result.end());
  return result;
}

// An output's kept channels rounded up to `multiple`: its largest removed scales come back.
std::vector<int64_t> RoundedUp(std::vector<int64_t> kept, const std::vector<bool>& removed, const std::vector<float>& scale,
                               int64_t multiple) {
  const int64_t out = static_cast<int64_t>(removed.size());
  const int64_t target = RoundUp(static_cast<int64_t>(kept.size()), multiple, out);
  std::vector<int64_t> back;
  for (int64_t k = 0; k < out; ++k) {
    if (removed[k]) back.push_back(k);
  }
  std::stable_sort(back.begin(), back.end(), [&](int64_t a, int64_t b) { return scale[a] > scale[b]; });
  kept.insert(kept.end(), back.begin(), back.begin() + (target - static_cast<int64_t>(kept.size())));
  std::sort(kept.begin(), kept.end());
  return kept;
}

std::string CriterionText(const PruneCriterion& c) {
  if (c.ratio != 0) return "--ratio " + FormatNumber("%g", c.ratio);
  if (c.threshold != 0) return "--threshold " + FormatNumber("%g", c.threshold);
  return "--gflops " + FormatNumber("%g", c.gflops);
}

}  // namespace

Status CheckPruneCriterion(const PruneCriterion& c) {
  const int given = (c.ratio != 0) + (c.threshold != 0) + (c.gflops != 0);
  if (given != 1) return Status::InvalidArgument("give one of --ratio R, --threshold T and --gflops G");
  const double value = c.ratio != 0 ? c.ratio : c.threshold != 0 ? c.threshold : c.gflops;
  if (!(value > 0 && value < 1)) {
    const char* meaning = c.ratio != 0       ? "the share of the prunable channels removed"
                          : c.threshold != 0 ? "the BatchNorm scale |gamma| below which channels are removed"
                                             : "the share of the model's GFLOPs removed";
    return Status::InvalidArgument(CriterionText(c) + ": must be in (0, 1) (" + meaning + ")");
  }
  if (!(c.min_keep > 0 && c.min_keep <= 1)) {
    return Status::InvalidArgument("--min-keep " + FormatNumber("%g", c.min_keep) +
                                   ": must be in (0, 1] (the share of each output's channels always kept)");
  }
  if (c.multiple_of < 1) {
    return Status::InvalidArgument("--multiple-of " + std::to_string(c.multiple_of) +
                                   ": must be >= 1 (each output keeps a multiple of it; 1 keeps exact counts)");
  }
  return Status::OK();
}

Result<PrunePlan> PlanPrune(const ChannelGraph& graph, const std::map<std::string, std::vector<float>>& gammas,
                            const PruneCriterion& c) {
  YC_RETURN_IF_ERROR(CheckPruneCriterion(c));
  if (c.gflops != 0) return Status::InvalidArgument("--gflops: a GFLOPs target is planned by PruneModel, not PlanPrune");
  const bool by_ratio = c.ratio != 0;
  std::vector<const ConvNode*> nodes;
  std::vector<std::vector<float>> scales;
  std::vector<Channel> all;
  for (const ConvNode& n : graph.convs) {
    if (!n.prunable) continue;
    auto it = gammas.find(n.path);
    if (it == gammas.end() || static_cast<int64_t>(it->second.size()) != n.out) {
      return Status::InvalidArgument("no BatchNorm scales for " + n.path);
    }
    std::vector<float> s;
    for (float g : it->second) s.push_back(std::fabs(g));
    for (int64_t k = 0; k < n.out; ++k) all.push_back({s[k], nodes.size(), k});
    nodes.push_back(&n);
    scales.push_back(std::move(s));
  }
  PrunePlan plan;
  plan.prunable = static_cast<int64_t>(all.size());
  // Removed channels: the smallest scales first (ties in graph order, so a plan is reproducible), each
  // output down to its floor at most; --ratio stops after R * N, --threshold at the first scale >= T.
  std::stable_sort(all.begin(), all.end(), [](const Channel& a, const Channel& b) {
    return std::tie(a.scale, a.node, a.k) < std::tie(b.scale, b.node, b.k);
  });
  std::vector<std::vector<bool>> removed(nodes.size());
  std::vector<int64_t> left(nodes.size()), floor(nodes.size());
  std::vector<bool> held(nodes.size(), false);
  for (size_t i = 0; i < nodes.size(); ++i) {
    removed[i].assign(nodes[i]->out, false);
    left[i] = nodes[i]->out;
    floor[i] = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(c.min_keep * static_cast<double>(nodes[i]->out))));
  }
  const auto wanted = by_ratio ? static_cast<size_t>(std::floor(c.ratio * static_cast<double>(all.size()))) : all.size();
  size_t count = 0;
  for (const Channel& ch : all) {
    if (count == wanted || (!by_ratio && ch.scale >= c.threshold)) break;
    if (left[ch.node] <= floor[ch.node]) {
      held[ch.node] = true;
      continue;
    }
    removed[ch.node][ch.k] = true;
    --left[ch.node];
    ++count;
    if (by_ratio) plan.cut = ch.scale;
  }
  if (!by_ratio) plan.cut = c.threshold;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const ConvNode& n = *nodes[i];
    if (held[i]) plan.floored.push_back(n.path);
    std::vector<int64_t> kept;
    for (int64_t k = 0; k < n.out; ++k) {
      if (!removed[i][k]) kept.push_back(k);
    }
    const auto by_cut = static_cast<int64_t>(kept.size());
    kept = n.halves ? EqualHalves(kept, scales[i], n.out, c.multiple_of)
                    : RoundedUp(std::move(kept), removed[i], scales[i], c.multiple_of);
    plan.kept_back += std::max<int64_t>(0, static_cast<int64_t>(kept.size()) - by_cut);
    if (static_cast<int64_t>(kept.size()) < n.out) {
      plan.removed += n.out - static_cast<int64_t>(kept.size());
      plan.keep[n.path] = std::move(kept);
    }
  }
  return plan;
}

}  // namespace yc::trainer
