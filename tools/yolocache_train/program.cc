// `yolocache-train`: train, validate and run YOLOv8 and YOLO11 models on a yolocache cache.
//   yolocache-train train   --data CACHE --model yolov8n|yolo11n --epochs 100 --batch 16 --imgsz 640 ...
//   yolocache-train val     --weights DIR/weights/best.pt --data CACHE [--json]
//   yolocache-train predict --weights best.pt IMAGES/VIDEOS/DIRS... [--save-txt [--save-conf]] [--json]
// Runs go to --project/--name (runs/detect/train, val, predict; train2, train3 ... as Ultralytics), or --out.
//   yolocache-train ceiling --model yolov8n --batch 64 --imgsz 640 --amp [--data CACHE | --nc 80] [--json]
//   yolocache-train export  --weights best.pt --format onnx|torchscript [--imgsz 640] [--dynamic] [--json]
//   yolocache-train prune   --weights best.pt --ratio 0.3 | --threshold 0.01 [--out best-pruned.pt] [--json]
// Distributed training: `train device=0,1` starts one rank per device itself (train_ranks.h), or start one
// `train` per rank with RANK/WORLD_SIZE/LOCAL_RANK/MASTER_ADDR/MASTER_PORT set (torchrun --no-python does
// it; docs/DISTRIBUTED.md); --batch is the global batch.
// One file per subcommand (<name>_command.cc), argument parsing and printing only; the work is in trainer/.
// This file holds what the program itself says (help, version, how it reads Ultralytics' line, errors); main.cc
// runs it, and so does yolocache.YOLO in Python (python/src/commands_binding.cc).
#include <iostream>

#include "tools/common/command.h"
#include "tools/common/rank_output.h"
#include "tools/yolocache_train/train_cli.h"
#include "tools/yolocache_train/ultralytics_line.h"
#include "trainer/runtime/exception_text.h"

namespace yc::cli {
namespace {

Program TrainProgram() {
  Program p;
  p.description = "yolocache-train: train, validate and run YOLOv8 / YOLO11 on a yolocache cache (LibTorch)";
  p.version = "yolocache-train 0.1.0";
  CommandLine& line = p.line;
  line.order = {"train", "ceiling", "val", "predict", "export", "prune"};
  // Ultralytics' line (`yolo detect train data=... model=yolo11n.yaml epochs=3`, cfg=, every
  // default.yaml key) read as ours (ultralytics_line.h); then key=value as --key value and "did you
  // mean" on a typo.
  line.rewrite = [](CLI::App& app, const std::vector<std::string>& args) {
    return ReadUltralyticsLine(app, args, RankStream(std::cerr));  // its notes: once, not once per rank
  };
  line.on_exception = [](const std::string& command, const std::exception& e) {
    // One line with the reason (LibTorch's what() holds a backtrace).
    return Fail(command.c_str(), trainer::ExceptionStatus(e, ""));
  };
  return p;
}

ProgramRegistration program(TrainProgram());

}  // namespace
}  // namespace yc::cli
