// `yolocache-train val`: P, R, mAP50 and mAP50-95 of a checkpoint on a cache split, per class, with the
// validation plots in a run folder.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

#include "libcache/base/path_json.h"
#include "tools/common/cli_validators.h"
#include "tools/common/command.h"
#include "tools/common/data_report.h"
#include "tools/common/loader_flags.h"
#include "tools/common/progress_bar.h"
#include "tools/yolocache_train/result_file.h"
#include "tools/yolocache_train/train_cli.h"
#include "trainer/eval/class_table.h"
#include "trainer/eval/validator.h"

namespace yc::cli {
namespace {

using namespace yc::trainer;

struct ValArgs {
  CheckpointValOptions o;
  DataArgs data_args;
  bool json = false;
  bool no_rect = false;
  std::string result_file;  // hidden --result-json FILE: the --json document (result_file.h)
};

nlohmann::json ValJson(const CheckpointValOptions& o, const CheckpointValReport& r) {
  const ValResult& v = r.result;
  nlohmann::json j = MetricsToJson(v.metrics, r.names);
  j["names"] = r.names;
  SetPathField(j, "save_dir", r.save_dir.string());
  SetPathField(j, "weights", o.weights);
  SetPathField(j, "data", o.data);
  j["split"] = o.split;
  j["imgsz"] = r.imgsz;
  if (!r.predictions_json.empty()) SetPathField(j, "predictions_json", r.predictions_json.string());
  j["seconds"] = v.seconds;
  j["stage_seconds"] = {{"data", v.data_seconds}, {"model", v.model_seconds}, {"nms", v.nms_seconds},
                        {"metrics", v.metrics_seconds}};
  if (v.has_loss) j["loss"] = {{"box", v.loss[0]}, {"cls", v.loss[1]}, {"dfl", v.loss[2]}};
  return j;
}

void PrintTable(const CheckpointValReport& r) {
  const ValResult& v = r.result;
  for (const std::string& line : ClassTableLines(v.metrics, r.names)) std::printf("%s\n", line.c_str());
  std::printf("%lld images in %.2f s on %s, imgsz %d (data %.3f s, model %.3f s, NMS %.3f s, metrics %.3f s)\n",
              static_cast<long long>(v.images), v.seconds, r.device.c_str(), r.imgsz, v.data_seconds, v.model_seconds,
              v.nms_seconds, v.metrics_seconds);
  if (!r.plots.empty()) std::printf("%s\n", r.plots.c_str());
  std::printf("Results saved to %s\n", r.save_dir.c_str());
}

int RunVal(const ValArgs& a) {
  CheckpointValOptions o = a.o;
  o.rect = !a.no_rect;
  std::error_code ec;  // no cache is built for weights that are not there
  if (!std::filesystem::exists(o.weights, ec)) return Fail("val", Status::NotFound(Status::At(o.weights, "no such file")));
  std::ostream& log = a.json ? std::cerr : std::cout;  // stdout stays one JSON document
  // A YAML or folder is cached at the size val runs at: the checkpoint's imgsz when none is given.
  Result<int> imgsz = CheckpointValImgsz(o.weights, o.imgsz);
  if (!imgsz.ok()) return Fail("val", imgsz.status());
  o.imgsz = *imgsz;
  if (const int rc = PrepareDataArg("val", a.data_args, &o.data, o.imgsz, log); rc >= 0) return rc;
  if (const int rc = ReportDataProblems("val", o.data, {o.split}, log); rc >= 0) return rc;
  std::unique_ptr<ProgressBar> bar;
  if (!a.json) bar = std::make_unique<ProgressBar>("val", 0, "batch");
  auto progress = [&](size_t done, size_t total) {
    if (!bar) return;
    bar->SetTotal(total);
    bar->Update(done);
  };
  Result<CheckpointValReport> r = ValidateCheckpoint(o, progress);
  if (bar) bar->Finish();
  if (!r.ok()) return Fail("val", r.status());
  for (const std::string& note : r->notes) log << note << "\n";
  if (a.json) {
    std::cout << JsonText(ValJson(o, *r)) << "\n";
  } else {
    PrintTable(*r);
  }
  WriteResultFile(a.result_file, ValJson(o, *r), "val");
  return kExitOk;
}

Registration reg("val", "Validate a checkpoint on a cache split (P, R, mAP50, mAP50-95)", [](CLI::App& app) -> Action {
  auto a = std::make_shared<ValArgs>();
  CheckpointValOptions& o = a->o;
  app.add_option("--weights", o.weights,
                 "Checkpoint (best.pt / last.pt), Ultralytics .pt, or a .torchscript export (ours or Ultralytics')")
      ->required();
  app.add_option("--data", o.data, "Cache directory, or a data YAML or dataset folder to cache first")->required();
  AddDataOptions(app, a->data_args);
  app.add_option("--split", o.split, "Split to validate on")->capture_default_str();
  app.add_option("--batch", o.batch, "Batch size")->capture_default_str();
  app.add_option("--imgsz", o.imgsz, "Image size (0: the checkpoint's)")->capture_default_str();
  AddDeviceOption(app, o.device, "cuda:0 when available, else cpu");
  app.add_option("--conf", o.nms.conf, "NMS confidence threshold")->capture_default_str();
  app.add_option("--iou", o.nms.iou, "NMS IoU threshold")->capture_default_str();
  app.add_option("--max-det", o.nms.max_det, "Detections per image at most")->capture_default_str();
  AddLoaderFlag(app, "threads", &o.threads)->check(ThreadCount());
  app.add_flag("--agnostic-nms", o.nms.agnostic, "Class-agnostic NMS (boxes of different classes suppress each other)");
  app.add_flag("--half", o.half, "fp16 inference (GPU; fp32 on the CPU, with a note)");
  app.add_flag("--augment", o.augment,
               "Test-time augmentation: predict at scales 1, 0.83 (flipped) and 0.67, merged before NMS");
  app.add_flag("--save-json", o.save_json,
               "Write predictions.json (COCO results format) in the run folder (always for a COCO val2017.txt split)");
  app.add_flag("--no-rect", a->no_rect, "Square imgsz batches instead of rectangular ones");
  app.add_flag_callback("--single-cls", [&o] { o.single_cls = true; },
                        "Every label class 0, class-agnostic NMS, every detection class 0 (default: as the checkpoint "
                        "was trained)");
  app.add_flag_callback("--no-single-cls", [&o] { o.single_cls = false; },
                        "Classes as labelled, even for a checkpoint trained with --single-cls");
  AddClassesOption(app, &o.classes, "Only labels of these classes are validated against (0 | [0,2] | 0,2; default: all)");
  app.add_flag("--json", a->json, "Print the metrics as JSON");
  AddResultFileOption(app, &a->result_file);
  AddRunFolderOptions(app, o.project, o.name, o.out, o.exist_ok, "the plots", "Reuse PROJECT/NAME instead of incrementing");
  app.add_flag_callback("--no-plots", [&o] { o.plots = false; }, "No PR/F1/P/R curves or confusion matrices");
  return [a] { return RunVal(*a); };
});

}  // namespace
}  // namespace yc::cli
