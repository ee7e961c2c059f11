// `yolocache-train`: train, validate and run YOLOv8 and YOLO11 models on a yolocache cache.
//   yolocache-train train   --data CACHE --model yolov8n|yolo11n --epochs 100 --batch 16 --imgsz 640 ...
//   yolocache-train val     --weights DIR/weights/best.pt --data CACHE [--json]
//   yolocache-train predict --weights best.pt IMAGES/VIDEOS/DIRS... [--save-txt [--save-conf]] [--json]
// Runs go to --project/--name (runs/detect/train, val, predict; train2, train3 ... as Ultralytics), or --out.
//   yolocache-train ceiling --model yolov8n --batch 64 --imgsz 640 --amp [--data CACHE | --nc 80] [--json]
//   yolocache-train export  --weights best.pt --format onnx|torchscript [--imgsz 640] [--dynamic] [--json]
// Distributed training: start one `train` per rank with RANK/WORLD_SIZE/LOCAL_RANK/MASTER_ADDR/MASTER_PORT
// set (torchrun --no-python does it; docs/DISTRIBUTED.md); --batch is the global batch.
// One file per subcommand (<name>_command.cc), argument parsing and printing only; the work is in trainer/.
#include "tools/common/interrupt.h"
#include "tools/yolocache_train/command_line.h"

int main(int argc, char** argv) {
  yc::cli::InstallInterruptHandling("yolocache-train");  // first: a signal from here on exits 130 (interrupt.h)
  CLI::App app{"yolocache-train: train, validate and run YOLOv8 / YOLO11 on a yolocache cache (LibTorch)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "yolocache-train 0.1.0");
  return yc::cli::RunRegisteredCommand(app, argc, argv, yc::cli::YolocacheTrainCommandLine());
}
