// `yolocache synth OUT`: write a deterministic synthetic YOLO dataset (the demo's and tests' default).
#include <iostream>

#include <nlohmann/json.hpp>

#include "libcache/base/path_text.h"
#include "libcache/source/synth.h"
#include "tools/common/command.h"
#include "tools/yolocache/cli_util.h"

namespace yc::cli {
namespace {

struct SynthArgs {
  std::string out;
  SynthOptions options;
  bool json = false;
};

int RunSynth(const SynthArgs& args) {
  SynthOptions options = args.options;
  options.cancel = InstallInterruptFlag();
  Result<SynthReport> report = GenerateSynthDataset(args.out, options);
  if (!report.ok()) {
    std::cerr << "yolocache synth: " << report.status().ToString() << "\n";
    return ExitCodeFor(report.status());
  }
  if (args.json) {
    nlohmann::ordered_json j = {{"yaml", PrintableText(report->yaml.string())},         {"images", report->images},
                        {"boxes", report->boxes},                {"backgrounds", report->backgrounds},
                        {"corrupt_files", report->corrupt_files}};
    std::cout << JsonText(j) << "\n";
  } else {
    std::cout << "wrote " << report->images << " images (" << report->backgrounds << " backgrounds), "
              << report->boxes << " boxes, " << report->corrupt_files.size() << " broken files\n"
              << "data YAML: " << report->yaml.string() << "\n";
  }
  return kExitOk;
}

Registration reg("synth", "Write a deterministic synthetic YOLO dataset (JPEG images, labels, data YAML)",
                 [](CLI::App& app) -> Action {
                   auto args = std::make_shared<SynthArgs>();
                   app.add_option("out", args->out, "Output directory (must not exist or be empty)")->required();
                   app.add_option("--train", args->options.train_images, "Train images")->capture_default_str();
                   app.add_option("--val", args->options.val_images, "Val images")->capture_default_str();
                   app.add_option("--classes", args->options.classes, "Classes (1..8)")->capture_default_str();
                   app.add_option("--min-side", args->options.min_side, "Smallest image side")->capture_default_str();
                   app.add_option("--max-side", args->options.max_side, "Largest image side")->capture_default_str();
                   app.add_option("--max-objects", args->options.max_objects, "Objects per image at most")
                       ->capture_default_str();
                   app.add_option("--corrupt", args->options.corrupt,
                                  "Add N broken files (truncated, empty, bad labels, orphan, duplicate...)")
                       ->capture_default_str();
                   app.add_option("--seed", args->options.seed, "Random seed")->capture_default_str();
                   app.add_flag("--json", args->json, "Print a JSON summary");
                   return [args] { return RunSynth(*args); };
                 });

}  // namespace
}  // namespace yc::cli
