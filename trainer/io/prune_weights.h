// `yolocache-train prune`: a trained checkpoint (ours or an Ultralytics .pt) in, a smaller one out. The
// channels with the smallest BatchNorm scales are removed from every prunable output and from every layer
// that reads them (trainer/model/prune/), and the result is written as release weights (best.pt's form)
// whose options record the pruned architecture (TrainOptions::channels), so that train --weights (fine-tune),
// val, predict, export and a later run's --resume rebuild it.
//
//   Result<PruneReport> r = PruneWeights({.weights = "best.pt", .criterion = {.ratio = 0.3}});
//   // r->out == "best-pruned.pt"; r->before / r->after: parameters, GFLOPs, per-layer channels
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "trainer/model/prune/model_cost.h"
#include "trainer/model/prune/prune_plan.h"

namespace yc::trainer {

struct PruneRequest {
  std::filesystem::path weights;  // the input; never written
  std::filesystem::path out;      // "" -> <weights' stem>-pruned.pt beside it
  PruneCriterion criterion;
  int imgsz = 640;                // GFLOPs at this size (and --gflops's target)
};

struct PruneReport {
  std::filesystem::path out;
  std::string model;              // "yolov8n"
  std::string source;             // the input's description (ModelWeights::description)
  ModelCost before, after;
  double ratio = 0;               // the --ratio planned with (with --gflops: the one found), 0 under --threshold
  int64_t prunable = 0, removed = 0;
  double cut = 0;                 // the |gamma| cut (PrunePlan::cut)
  std::vector<std::string> floored;  // outputs held at the --min-keep floor (PrunePlan::floored)
  int64_t kept_back = 0;             // chosen by the cut, kept for equal halves and --multiple-of (PrunePlan)
  std::map<std::string, int64_t> channels;  // the architecture recorded in the output
};

// InvalidArgument (exit 2): a bad criterion, an output that is the input.
// IOError (exit 3): the input is missing, damaged or not a detection checkpoint, or the output cannot be
// written; messages name the file. Corruption (exit 1): the input's weights hold NaN or inf.
Result<PruneReport> PruneWeights(const PruneRequest& request);

// Where the output goes by default: <dir>/<stem>-pruned.pt.
std::filesystem::path DefaultPrunedPath(const std::filesystem::path& weights);

}  // namespace yc::trainer
