// `yolocache-train ceiling`: the model's own fwd + bwd + optimizer step throughput on device-resident
// random data, with the train options (the probe --synthetic-input runs after training, without a run).
#include <iomanip>
#include <iostream>
#include <memory>

#include "tools/common/command.h"
#include "tools/yolocache_train/train_cli.h"
#include "trainer/engine/ceiling_probe.h"

namespace yc::cli {
namespace {

using namespace yc::trainer;

struct CeilingArgs {
  TrainArgs train;
  int64_t nc = 80;
  bool json = false;
  bool profile = false;
};

// ms per batch of each part, their sum, and the unprofiled batch for comparison.
nlohmann::json ProfileJson(const TrainOptions& o, const SyntheticThroughput& r) {
  nlohmann::json j;
  double sum = 0;
  for (int p = 0; p < kStepParts; ++p) {
    j[std::string(StepPartName(static_cast<StepPart>(p))) + "_ms"] = r.part_ms[static_cast<size_t>(p)];
    sum += r.part_ms[static_cast<size_t>(p)];
  }
  j["sum_ms"] = sum;
  j["unprofiled_ms"] = r.images_per_second > 0 ? 1e3 * static_cast<double>(o.batch) / r.images_per_second : 0.0;
  return j;
}

void PrintProfile(const TrainOptions& o, const SyntheticThroughput& r) {
  const nlohmann::json j = ProfileJson(o, r);
  const double sum = j["sum_ms"].get<double>();
  std::cout << "step profile, ms per batch (each part ends with a device synchronisation, so nothing of its\n"
               "neighbours overlaps it and the parts sum above the unprofiled batch of "
            << F("%.2f", j["unprofiled_ms"].get<double>()) << " ms):\n";
  for (int p = 0; p < kStepParts; ++p) {
    const double ms = r.part_ms[static_cast<size_t>(p)];
    std::cout << "  " << std::left << std::setw(10) << StepPartName(static_cast<StepPart>(p)) << std::right
              << F("%9.2f", ms) << "  "
              << F("%5.1f", sum > 0 ? 100.0 * ms / sum : 0.0) << "%\n";
  }
  std::cout << "  " << std::left << std::setw(10) << "sum" << std::right << F("%9.2f", sum) << "\n";
}

void Print(const CeilingArgs& a, const TrainOptions& o, int64_t nc, size_t label_tables, const SyntheticThroughput& r) {
  if (a.json) {
    nlohmann::json j = {{"model", o.model},
                        {"batch", o.batch},
                        {"imgsz", o.imgsz},
                        {"nc", nc},
                        {"iterations", o.synthetic_iters},
                        {"fused_optimizer", r.fused_optimizer},
                        {"cuda_graphs", r.cuda_graphs},
                        {"channels_last", o.channels_last},
                        {"label_tables", label_tables},
                        {"warmup_seconds", r.warmup_seconds},
                        {"conv_warmup", r.conv_warmup},
                        {"images_per_second", r.images_per_second}};
    if (r.profiled) j["profile"] = ProfileJson(o, r);
    std::cout << JsonText(j) << "\n";
    return;
  }
  std::cout << "ceiling: " << F("%.1f", r.images_per_second) << " img/s (" << o.model << ", batch " << o.batch
            << ", imgsz " << o.imgsz << ", nc " << nc << ", " << o.synthetic_iters << " iterations, "
            << (label_tables == 0 ? std::string("4 random boxes per image, ")
                                  : std::to_string(label_tables) + " real label tables, ")
            << (r.fused_optimizer ? "fused" : "torch::optim") << " optimizer step, "
            << (r.cuda_graphs ? "CUDA graphs" : "eager") << "; warm-up "
            << F("%.1f", r.warmup_seconds) << " s)\n";
  if (!r.conv_warmup.empty()) std::cout << r.conv_warmup << "\n";  // made before the warm-up iterations
  if (r.profiled) PrintProfile(o, r);
}

int RunCeiling(const CLI::App& app, const CeilingArgs& a) {
  TrainOptions o = a.train.o;
  if (Status amp = ApplyAmpFlags(a.train, &o); !amp.ok()) return Fail("ceiling", amp);
  int64_t nc = a.nc;
  std::vector<ProbeLabels> labels;  // empty: 4 random boxes per image
  if (!o.data.empty()) {  // the classes and the label tables of real batches
    std::ostream& log = a.json ? std::cerr : std::cout;
    if (const int rc = PrepareDataArg("ceiling", a.train.data_args, &o.data, o.imgsz, log); rc >= 0) return rc;
    if (app.count("--nc") > 0) std::cerr << "yolocache-train ceiling: --nc is ignored with --data\n";
    Result<TrainLabelSample> sampled = SampleTrainLabels(o, 8);
    if (!sampled.ok()) return Fail("ceiling", sampled.status());
    nc = sampled->nc;
    labels = std::move(sampled->labels);
  }
  if (nc < 1) return Fail("ceiling", Status::InvalidArgument("--nc must be >= 1"));
  TrainOptions check = o;
  if (check.data.empty()) check.data = "(none: random data)";  // the probe reads no cache
  if (Status valid = ValidateTrainOptions(check); !valid.ok()) return Fail("ceiling", valid);
  Result<SyntheticThroughput> r = MeasureSyntheticThroughput(o, nc, o.synthetic_iters, labels, a.profile);
  if (!r.ok()) return Fail("ceiling", r.status());
  Print(a, o, nc, labels.size(), *r);
  return kExitOk;
}

Registration reg("ceiling", "Measure the model's fwd+bwd+step throughput on device-resident random data (no loader)",
                 [](CLI::App& app) -> Action {
                   auto a = std::make_shared<CeilingArgs>();
                   AddTrainOptions(app, a->train);
                   app.add_option("--nc", a->nc, "Classes (without --data)")->capture_default_str();
                   app.add_flag("--json", a->json, "Print the result as JSON");
                   app.add_flag("--profile", a->profile,
                                "Then time the step's parts (forward, loss, its assigner, backward, optimizer) in as "
                                "many iterations again");
                   return [a, &app] { return RunCeiling(app, *a); };
                 });

}  // namespace
}  // namespace yc::cli
