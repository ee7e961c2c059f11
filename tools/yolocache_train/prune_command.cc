// `yolocache-train prune`: removes the channels with the smallest BatchNorm scales from a trained model
// (after train --sparsity) and writes the smaller checkpoint, printing what it cost before and after. The
// work is trainer/io/prune_weights.h; this file parses and prints.
#include <cstdio>
#include <iostream>
#include <memory>

#include "libcache/base/path_json.h"
#include "tools/common/command.h"
#include "tools/yolocache_train/result_file.h"
#include "tools/yolocache_train/train_cli.h"
#include "trainer/io/prune_weights.h"

namespace yc::cli {
namespace {

using namespace yc::trainer;

struct PruneArgs {
  PruneRequest r;
  std::string weights, out;
  bool json = false;
  std::string result_file;
};

nlohmann::json CostJson(const ModelCost& c) {
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerCost& l : c.layers) layers.push_back({{"type", l.type}, {"out", l.out}, {"conv_channels", l.conv_channels}});
  return {{"parameters", c.parameters}, {"gflops", c.gflops}, {"layers", layers}};
}

nlohmann::json PruneJson(const PruneArgs& a, const PruneReport& r) {
  nlohmann::json j;
  SetPathField(j, "file", r.out.string());
  SetPathField(j, "weights", a.weights);
  j["model"] = r.model;
  j["source"] = r.source;
  if (r.ratio > 0) j["ratio"] = r.ratio;
  if (a.r.criterion.threshold > 0) j["threshold"] = a.r.criterion.threshold;
  if (a.r.criterion.gflops > 0) j["gflops_target"] = a.r.criterion.gflops;
  j["prunable_channels"] = r.prunable;
  j["removed_channels"] = r.removed;
  j["cut"] = r.cut;
  j["min_keep"] = a.r.criterion.min_keep;
  j["floored"] = r.floored;
  j["multiple_of"] = a.r.criterion.multiple_of;
  j["kept_back"] = r.kept_back;
  j["imgsz"] = a.r.imgsz;
  j["before"] = CostJson(r.before);
  j["after"] = CostJson(r.after);
  j["channels"] = r.channels;
  return j;
}

std::string Change(double before, double after) {
  return F("%+.1f%%", before > 0 ? 100.0 * (after - before) / before : 0.0);
}

void PrintText(const PruneArgs& a, const PruneReport& r) {
  std::cout << "pruned " << r.source << " -> " << r.out.string() << "\n"
            << "  channels removed: " << r.removed << " of " << r.prunable << " prunable ("
            << F("%.1f", r.prunable > 0 ? 100.0 * static_cast<double>(r.removed) / static_cast<double>(r.prunable) : 0.0)
            << "%), |gamma| cut " << F("%.4g", r.cut)
            << (a.r.criterion.gflops > 0 ? " (--ratio " + F("%.3f", r.ratio) + " reaches --gflops " + F("%g", a.r.criterion.gflops) + ")"
                                         : std::string())
            << "\n";
  if (!r.floored.empty()) {
    std::cout << "  held at --min-keep " << F("%g", a.r.criterion.min_keep) << " of their channels (the cut wanted more): "
              << r.floored.size() << " outputs, " << r.floored.front() << (r.floored.size() > 1 ? ", ..." : "") << "\n";
  }
  if (r.kept_back > 0) {
    std::cout << "  kept back for equal C2f/C3k2 halves and multiples of " << a.r.criterion.multiple_of << ": " << r.kept_back
              << " channels the cut chose\n";
  }
  std::cout
            << "  parameters: " << r.before.parameters << " -> " << r.after.parameters << " ("
            << Change(static_cast<double>(r.before.parameters), static_cast<double>(r.after.parameters)) << ")\n"
            << "  GFLOPs at " << a.r.imgsz << ": " << F("%.2f", r.before.gflops) << " -> " << F("%.2f", r.after.gflops)
            << " (" << Change(r.before.gflops, r.after.gflops) << ")\n"
            << "  layer  type      output channels   conv channels\n";
  for (size_t i = 0; i < r.before.layers.size(); ++i) {
    const LayerCost& b = r.before.layers[i];
    const LayerCost& p = r.after.layers[i];
    char line[160];
    std::snprintf(line, sizeof line, "  %5zu  %-8s  %6lld -> %-6lld  %6lld -> %-6lld%s\n", i, b.type.c_str(),
                  static_cast<long long>(b.out), static_cast<long long>(p.out), static_cast<long long>(b.conv_channels),
                  static_cast<long long>(p.conv_channels), b.conv_channels != p.conv_channels ? "" : "  (unchanged)");
    std::cout << line;
  }
  std::cout << "fine-tune it: yolocache-train train --weights " << r.out.string() << " --data ...\n";
}

int RunPrune(PruneArgs& a) {
  a.r.weights = a.weights;
  a.r.out = a.out;
  Result<PruneReport> r = PruneWeights(a.r);
  if (!r.ok()) return Fail("prune", r.status());
  if (a.json) {
    std::cout << JsonText(PruneJson(a, *r)) << "\n";
  } else {
    PrintText(a, *r);
  }
  WriteResultFile(a.result_file, PruneJson(a, *r), "prune");
  return kExitOk;
}

Registration reg("prune",
                 "Remove the channels with the smallest BatchNorm scales (after train --sparsity) and write the smaller "
                 "checkpoint (docs/TRAINER.md, \"Sparsity training and pruning\")",
                 [](CLI::App& app) -> Action {
                   auto a = std::make_shared<PruneArgs>();
                   app.add_option("--weights", a->weights, "Trained weights: a yolocache checkpoint or an Ultralytics .pt (never written)")
                       ->required();
                   CLI::Option* ratio = app.add_option(
                       "--ratio", a->r.criterion.ratio,
                       "Remove this share (0..1) of the prunable channels: those with the smallest |gamma| over the "
                       "whole model");
                   CLI::Option* threshold = app.add_option(
                       "--threshold", a->r.criterion.threshold, "Remove the prunable channels whose |gamma| is below this (0..1)");
                   CLI::Option* gflops = app.add_option(
                       "--gflops", a->r.criterion.gflops,
                       "Remove at least this share (0..1) of the GFLOPs at --imgsz: the smallest --ratio that does");
                   ratio->excludes(threshold)->excludes(gflops);
                   threshold->excludes(gflops);
                   app.add_option("--min-keep", a->r.criterion.min_keep,
                                  "Each output keeps at least this share (0..1] of its channels, its largest |gamma| "
                                  "(at least one); --ratio takes the channels a floor saves from the next smallest elsewhere")
                       ->capture_default_str();
                   app.add_option("--multiple-of", a->r.criterion.multiple_of,
                                  "Each output keeps a multiple of this many channels (rounded up, its largest |gamma| "
                                  "coming back; as Ultralytics' widths; 1: exact counts)")
                       ->capture_default_str()
                       ->check(CLI::PositiveNumber);
                   app.add_option("--out", a->out, "Output checkpoint (default: <weights' stem>-pruned.pt beside them)");
                   app.add_option("--imgsz", a->r.imgsz, "Image size the GFLOPs are counted at")
                       ->capture_default_str()
                       ->check(CLI::Range(32, 8192));
                   app.add_flag("--json", a->json, "Print the result as JSON");
                   AddResultFileOption(app, &a->result_file);
                   return [a] { return RunPrune(*a); };
                 });

}  // namespace
}  // namespace yc::cli
