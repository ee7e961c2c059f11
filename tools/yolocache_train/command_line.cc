#include "tools/yolocache_train/command_line.h"

#include <iostream>

#include "tools/yolocache_train/train_cli.h"
#include "tools/yolocache_train/ultralytics_line.h"
#include "trainer/runtime/exception_text.h"

namespace yc::cli {

CommandLine YolocacheTrainCommandLine() {
  CommandLine line;
  line.order = {"train", "ceiling", "val", "predict", "export"};
  // Ultralytics' line (`yolo detect train data=... model=yolo11n.yaml epochs=3`, cfg=, every
  // default.yaml key) read as ours; then key=value as --key value and "did you mean" on a typo.
  line.rewrite = [](CLI::App& app, const std::vector<std::string>& args) {
    return ReadUltralyticsLine(app, args, std::cerr);
  };
  line.on_exception = [](const std::string& command, const std::exception& e) {
    // One line with the reason (LibTorch's what() holds a backtrace).
    return Fail(command.c_str(), trainer::ExceptionStatus(e, ""));
  };
  return line;
}

}  // namespace yc::cli
