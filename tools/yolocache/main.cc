// `yolocache`: entry point. Builds the CLI11 app from the registered subcommands and runs the one chosen.
#include <algorithm>
#include <iostream>
#include <map>

#include <opencv2/core/utils/logger.hpp>

#include "base/status.h"
#include "tools/common/cli_args.h"
#include "tools/common/interrupt.h"
#include "tools/yolocache/command.h"

namespace yc::cli {
std::vector<CommandInfo>& Registry() {
  static std::vector<CommandInfo> commands;
  return commands;
}
}  // namespace yc::cli

int main(int argc, char** argv) {
  yc::cli::InstallInterruptHandling("yolocache");  // first: a signal from here on exits 130 (interrupt.h)
  // Damaged images are reported through the audit with file and reason; OpenCV's own stderr
  // chatter about them would only interleave with the progress bar.
  cv::utils::logging::setLogLevel(cv::utils::logging::LOG_LEVEL_SILENT);
  CLI::App app{"yolocache: decode a YOLO dataset once, audit it, and feed training from mmap'd shards"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "yolocache 0.1.0");
  auto& commands = yc::cli::Registry();
  std::sort(commands.begin(), commands.end(), [](auto& a, auto& b) { return a.name < b.name; });
  std::map<CLI::App*, yc::cli::Action> actions;
  for (auto& command : commands) {
    CLI::App* sub = app.add_subcommand(command.name, command.description);
    actions[sub] = command.setup(*sub);
  }
  app.name(argv[0]);
  // key=value as Ultralytics writes it (imgsz=320 == --imgsz 320); "did you mean" on a typo.
  if (const int rc = yc::cli::ParseCommandLine(app, argc, argv); rc >= 0) return rc;
  for (auto& [sub, action] : actions) {
    if (sub->parsed()) {
      try {
        return action();
      } catch (const std::exception& e) {
        std::cerr << "yolocache " << sub->get_name() << ": fatal: " << e.what() << "\n";
        return yc::kExitFatal;
      }
    }
  }
  return yc::kExitUsage;
}
