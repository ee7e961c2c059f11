// `yolocache-train predict`: detections on images and videos, written as annotated JPEGs / AVIs and
// (--save-txt) label files in a run folder, as Ultralytics' predict writes them.
#include <iostream>
#include <memory>
#include <vector>

#include "libcache/base/pid_files.h"
#include "tools/common/command.h"
#include "tools/common/interrupt.h"
#include "tools/yolocache_train/result_file.h"
#include "tools/yolocache_train/train_cli.h"
#include "trainer/config/run_dir.h"
#include "trainer/eval/half_precision.h"
#include "trainer/eval/predictor.h"
#include "trainer/io/torchscript_model.h"
#include "trainer/runtime/device_feed.h"

namespace yc::cli {
namespace {

using namespace yc::trainer;

struct PredictArgs {
  std::string weights, device;
  std::string project = "runs/detect", name = "predict", out;
  bool exist_ok = false;
  std::vector<std::string> images;
  PredictOptions o;
  std::vector<int32_t> classes;  // Ultralytics' classes= (AddClassesOption)
  bool json = false;
  std::string result_file;  // hidden --result-json FILE: {"names", "results": the --json array} (result_file.h)
};

// The run folder, after checking that it cannot hold any input (they would be overwritten).
Result<std::filesystem::path> RunFolder(const PredictArgs& a, const std::vector<PredictInput>& inputs, bool create) {
  YC_ASSIGN_OR_RETURN(const std::filesystem::path planned, ResolveRunDir(a.out, a.project, a.name, a.exist_ok, false));
  if (Status st = CheckPredictOutputs(inputs, planned); !st.ok()) return st;
  if (!create) return planned;
  return ResolveRunDir(a.out, a.project, a.name, a.exist_ok);
}

// A killed run's temp files in crops/<class name>/ (--exist-ok reuses a run folder).
void RemoveStaleCropTempFiles(const std::filesystem::path& save_dir) {
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(save_dir / "crops", ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) RemoveStaleTempFiles(it->path());
  }
}

void PrintResult(const PredictInput& in, const PredictResult& r) {
  std::cout << in.source.string() << ": " << r.width << "x" << r.height << ", "
            << (in.video ? std::to_string(r.frames) + " frames, " : std::string()) << r.detections.size()
            << " detections (" << F("%.1f", r.milliseconds) << " ms) -> " << r.output.string() << "\n";
}

int RunPredict(PredictArgs a) {
  a.o.classes.assign(a.classes.begin(), a.classes.end());
  Result<std::vector<PredictInput>> inputs = ExpandPredictInputs(a.images);
  if (!inputs.ok()) return Fail("predict", inputs.status());
  if (inputs->empty()) return Fail("predict", Status::InvalidArgument("no images or videos given (files or directories)"));
  if (a.o.save_conf && !a.o.save_txt) std::cerr << "yolocache-train predict: --save-conf has no effect without --save-txt\n";
  Result<at::Device> device = ParseDevice(a.device);
  if (!device.ok()) return Fail("predict", device.status());
  ConfigureDevice(*device);
  if (a.o.half && !HalfApplies(true, *device)) std::cerr << HalfOnCpuNote("predict") << "\n";
  // AutoBackend runs an export's graph as traced, without augment (nn/autobackend.py forward).
  if (a.o.augment && IsTorchScriptPath(a.weights)) {
    std::cerr << "yolocache-train predict: augment=True: a TorchScript export runs its traced graph, without "
                 "test-time augmentation (as Ultralytics)\n";
  }
  // The output-path rule before anything is read or written: the run folder must not hold the inputs.
  if (Result<std::filesystem::path> planned = RunFolder(a, *inputs, false); !planned.ok())
    return Fail("predict", planned.status());
  Result<std::unique_ptr<Predictor>> p = Predictor::Load(a.weights, *device, a.o);
  if (!p.ok()) return Fail("predict", p.status());
  Result<std::filesystem::path> save_dir = RunFolder(a, *inputs, true);
  if (!save_dir.ok()) return Fail("predict", save_dir.status());
  for (const auto& dir : {*save_dir, *save_dir / "labels"}) RemoveStaleTempFiles(dir);  // a killed run's (pid_files.h)
  RemoveStaleCropTempFiles(*save_dir);
  // Ctrl-C, kill and SIGHUP stop between images (a video between frames): the results so far are kept.
  InterruptPolling polling;
  int failures = 0;
  size_t done = 0;
  nlohmann::json all = nlohmann::json::array();
  for (const PredictInput& in : *inputs) {
    if (polling.interrupted()) break;
    ++done;
    Result<PredictResult> r = in.video ? (*p)->PredictVideo(in, *save_dir, polling.flag()) : (*p)->PredictFile(in, *save_dir);
    if (!r.ok()) {
      if (r.status().code() == Status::Code::kCancelled) break;
      std::cerr << "yolocache-train predict: " << r.status().ToString() << "\n";
      ++failures;
      continue;
    }
    if (a.json || !a.result_file.empty()) all.push_back(PredictResultToJson(*r, (*p)->names()));
    if (!a.json) PrintResult(in, *r);
  }
  if (a.json) {
    std::cout << JsonText(all) << "\n";
  } else {
    std::cout << "Results saved to " << save_dir->string() << (a.o.save_txt ? " (labels in labels/)" : "") << "\n";
  }
  WriteResultFile(a.result_file, {{"names", (*p)->names()}, {"results", all}}, "predict");
  if (polling.interrupted()) {
    std::cerr << "yolocache-train predict: interrupted after " << done << " of " << inputs->size() << " inputs\n";
    return kExitInterrupted;
  }
  return failures == 0 ? kExitOk : kExitProblems;
}

Registration reg("predict", "Detect objects in images and videos; write annotated JPEGs / AVIs (and label txt files)",
                 [](CLI::App& app) -> Action {
                   auto a = std::make_shared<PredictArgs>();
                   a->o.imgsz = 0;
                   app.add_option("--weights", a->weights,
                                  "Checkpoint (best.pt / last.pt), Ultralytics .pt, or a .torchscript export")
                       ->required();
                   app.add_option("images", a->images, "Image or video files, or directories (searched recursively)")
                       ->required();
                   AddRunFolderOptions(app, a->project, a->name, a->out, a->exist_ok, "the results",
                                       "Reuse PROJECT/NAME instead of incrementing");
                   app.add_flag("--save-txt", a->o.save_txt, "Write labels/<name>.txt rows: cls xc yc w h (normalised)");
                   app.add_flag("--save-conf", a->o.save_conf, "Append each detection's confidence to the --save-txt rows");
                   app.add_option("--imgsz", a->o.imgsz, "Inference size (0: the checkpoint's)")->capture_default_str();
                   app.add_option("--conf", a->o.conf, "Confidence threshold")->capture_default_str();
                   app.add_option("--iou", a->o.iou, "NMS IoU threshold")->capture_default_str();
                   app.add_option("--max-det", a->o.max_det, "Detections per image at most")->capture_default_str();
                   AddClassesOption(app, &a->classes, "Keep only detections of these classes (0 | [0,2] | 0,2; default: all)");
                   app.add_flag("--agnostic-nms", a->o.agnostic, "Class-agnostic NMS (boxes of different classes suppress each other)");
                   app.add_flag("--half", a->o.half, "fp16 inference (GPU; fp32 on the CPU, with a note)");
                   app.add_flag("--augment", a->o.augment,
                                "Test-time augmentation: predict at scales 1, 0.83 (flipped) and 0.67, merged before NMS");
                   app.add_flag("--save-crop", a->o.save_crop, "Save each detection as crops/<class name>/<stem>.jpg");
                   app.add_option("--vid-stride", a->o.vid_stride, "Videos: read every N-th frame (the output keeps the video's fps)")
                       ->capture_default_str();
                   app.add_flag("--save-frames", a->o.save_frames, "Videos: also save each annotated frame as <stem>_frames/<stem>_<frame>.jpg");
                   app.add_flag("--visualize", a->o.visualize,
                                "Save each layer's feature maps as <stem>/stage<i>_<type>_features.png and .npy");
                   app.add_flag_callback("--no-show-boxes", [o = &a->o] { o->show_boxes = false; }, "Draw no boxes on the saved pictures");
                   app.add_flag_callback("--no-show-labels", [o = &a->o] { o->show_labels = false; }, "Draw boxes without their labels");
                   app.add_flag_callback("--no-show-conf", [o = &a->o] { o->show_conf = false; }, "Labels without the confidence");
                   app.add_option("--line-width", a->o.line_width, "Box line width in pixels (0: from the image size)")
                       ->capture_default_str();
                   AddDeviceOption(app, a->device, "cuda:0 when available, else cpu");
                   app.add_flag("--json", a->json, "Print the detections as JSON");
                   AddResultFileOption(app, &a->result_file);
                   return [a] { return RunPredict(*a); };
                 });

}  // namespace
}  // namespace yc::cli
