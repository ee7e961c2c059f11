// `yolocache`: entry point. Builds the CLI11 app from the registered subcommands and runs the one chosen.
#include <iostream>

#include <opencv2/core/utils/logger.hpp>

#include "base/status.h"
#include "tools/common/command.h"
#include "tools/common/interrupt.h"

int main(int argc, char** argv) {
  yc::cli::InstallInterruptHandling("yolocache");  // first: a signal from here on exits 130 (interrupt.h)
  // Damaged images are reported through the audit with file and reason; OpenCV's own stderr
  // chatter about them would only interleave with the progress bar.
  cv::utils::logging::setLogLevel(cv::utils::logging::LOG_LEVEL_SILENT);
  CLI::App app{"yolocache: decode a YOLO dataset once, audit it, and feed training from mmap'd shards"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "yolocache 0.1.0");
  yc::cli::CommandLine line;  // commands by name; key=value as Ultralytics writes it (imgsz=320 == --imgsz 320)
  line.on_exception = [](const std::string& command, const std::exception& e) {
    std::cerr << "yolocache " << command << ": fatal: " << e.what() << "\n";
    return yc::kExitFatal;
  };
  return yc::cli::RunRegisteredCommand(app, argc, argv, line);
}
