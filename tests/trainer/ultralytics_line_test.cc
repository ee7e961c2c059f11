// Ultralytics' command lines read by yolocache-train (tools/yolocache_train/ultralytics_line.h), through the
// built binary: `--explain` prints the line as it is read and runs nothing, `train --dry-run` checks every
// argument and prints args.yaml. Every key of the default.yaml in ../shared/ultralytics (read at test time,
// so that a key added upstream fails here) is accepted by every command; the model=, task=/mode=, cfg=,
// resume=True, list and AutoBatch forms; arguments checked before any cache is built.
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/test_support.h"
#include "tests/trainer/train_test_util.h"

namespace yc::trainer {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::TempDir;
using testing::YolocacheTrain;

// (key, default) of every key of Ultralytics' cfg/default.yaml, in order; empty when it is absent.
std::vector<std::pair<std::string, std::string>> DefaultYamlKeys() {
  const fs::path file = fs::path(YOLOCACHE_SOURCE_DIR) / ".." / "shared" / "ultralytics" / "ultralytics" / "cfg" / "default.yaml";
  std::ifstream in(file);
  std::vector<std::pair<std::string, std::string>> keys;
  static const std::regex line("^([a-z_0-9]+):[ \\t]*([^#]*?)[ \\t]*(#.*)?$");
  for (std::string text; std::getline(in, text);) {
    std::smatch m;
    if (!std::regex_match(text, m, line)) continue;
    std::string value = m[2];
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
    keys.emplace_back(m[1], value);
  }
  return keys;
}

using testing::Has;

class UltralyticsLine : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(tmp_ / "w.pt") << "weights";  // model= must name a file; --explain opens none
    std::ofstream(tmp_ / "img.jpg") << "image";
  }
  CliRun Explain(std::vector<std::string> args) {
    args.insert(args.begin(), "--explain");
    return YolocacheTrain(tmp_, args);
  }
  TempDir tmp_;
};

TEST_F(UltralyticsLine, EveryDefaultYamlKeyIsReadByEveryCommand) {
  const auto keys = DefaultYamlKeys();
  if (keys.empty()) GTEST_SKIP() << "no ../shared/ultralytics/ultralytics/cfg/default.yaml";
  EXPECT_GT(keys.size(), 100u);
  for (const std::string mode : {"train", "val", "predict", "export"}) {
    std::vector<std::string> args = {mode};
    for (const auto& [key, value] : keys) {
      if (key == "mode") continue;  // the command says it
      // What each command needs given; a key it does not use but is set would be named as ignored.
      if (key == "model") args.push_back(mode == "train" ? "model=yolov8n.yaml" : "model=w.pt");
      else if (key == "data") args.push_back(mode == "train" || mode == "val" ? "data=d.yaml" : "data=");
      else if (key == "source") args.push_back(mode == "predict" ? "source=img.jpg" : "source=");
      else args.push_back(key + "=" + value);
    }
    const CliRun r = Explain(args);
    ASSERT_EQ(r.exit_code, 0) << mode << "\n" << r.out << r.err;
    // Defaults are read silently: nothing ignored, refused or unexpected.
    EXPECT_EQ(r.err, "") << mode;
    EXPECT_TRUE(Has(r.out, "yolocache-train " + mode + " ")) << r.out;
    if (mode == "train") {
      for (const char* part : {"--model yolov8n", "--data=d.yaml", "--epochs=100", "--threads=8", "--close-mosaic=10",
                               "--lr0=0.01", "--hsv-h=0.015", "--batch 16", "--imgsz 640", "--iou=0.7", "--max-det=300"}) {
        EXPECT_TRUE(Has(r.out, part)) << part << "\n" << r.out;
      }
      EXPECT_FALSE(Has(r.out, "--no-val")) << r.out;
    }
    if (mode == "val") {
      for (const char* part : {"--weights w.pt", "--split=val", "--batch 16", "--iou=0.7"}) {
        EXPECT_TRUE(Has(r.out, part)) << part << "\n" << r.out;
      }
      EXPECT_TRUE(Has(r.out, "--no-rect")) << "rect=False (default.yaml's) is square val batches\n" << r.out;
    }
    if (mode == "predict") {
      EXPECT_TRUE(Has(r.out, " img.jpg")) << r.out;
    }
    if (mode == "export") {
      EXPECT_TRUE(Has(r.out, "--format=torchscript")) << r.out;
    }
  }
}

TEST_F(UltralyticsLine, KeysOfOtherTasksAndModesAreIgnoredAloud) {
  CliRun r = Explain({"train", "data=d.yaml", "overlap_mask=False", "pose=10", "show=True"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.err, "'overlap_mask=False' is ignored: a segmentation setting")) << r.err;
  EXPECT_TRUE(Has(r.err, "'pose=10' is ignored: a pose setting")) << r.err;
  EXPECT_TRUE(Has(r.err, "'show=True' is ignored")) << r.err;
  r = Explain({"val", "model=w.pt", "data=d.yaml", "lr0=0.02"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.err, "'lr0' is not used by val")) << r.err;
  EXPECT_FALSE(Has(r.out, "lr0")) << r.out;
  r = Explain({"train", "data=d.yaml", "augment=True"});  // val's and predict's: train goes on, saying so
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.err, "'augment' is not used by train")) << r.err;
  r = Explain({"train", "data=d.yaml", "rect"});  // a bare boolean key is key=True
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, " --rect")) << r.out;
  r = Explain({"train", "data=d.yaml", "no_such_key=3"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Has(r.err, "no-such-key")) << r.err;
}

// Export's NMS keys are its options; int8=True reaches export, which refuses it as Ultralytics does
// (tests/trainer/export_test.cc), rather than being refused as unimplemented here.
TEST_F(UltralyticsLine, ExportNmsKeysBecomeItsOptions) {
  CliRun r = Explain({"export", "model=w.pt", "format=onnx", "nms=True", "conf=0.4", "iou=0.5", "max_det=10",
                      "agnostic_nms=True", "int8=True"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* want : {"--format=onnx", "--nms", "--conf=0.4", "--iou=0.5", "--max-det=10", "--agnostic-nms", "--int8"}) {
    EXPECT_TRUE(Has(r.out, want)) << want << "\n" << r.out;
  }
  EXPECT_EQ(r.err, "");
}

TEST_F(UltralyticsLine, ValAndPredictKeysBecomeTheirOptions) {
  CliRun r = Explain({"predict", "model=w.pt", "source=img.jpg", "half=True", "classes=[0,2]", "agnostic_nms=True",
                      "save_crop=True", "show_labels=False", "show_conf=False", "show_boxes=False", "line_width=3",
                      "vid_stride=2", "save_frames=True", "visualize=True", "augment=True"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* want : {"--half", "--classes=[0,2]", "--agnostic-nms", "--save-crop", "--no-show-labels", "--no-show-conf",
                           "--no-show-boxes", "--line-width=3", "--vid-stride=2", "--save-frames", "--visualize",
                           "--augment"}) {
    EXPECT_TRUE(Has(r.out, want)) << want << "\n" << r.out;
  }
  r = Explain({"val", "model=w.pt", "data=d.yaml", "half=True", "save_json=True", "agnostic_nms=True", "show_labels=False",
               "augment=True"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* want : {"--half", "--save-json", "--agnostic-nms", "--augment"}) {
    EXPECT_TRUE(Has(r.out, want)) << want << "\n" << r.out;
  }
  EXPECT_TRUE(Has(r.err, "'show_labels' is not used by val")) << r.err;  // a predict drawing key
  // A bad class list is refused by predict before anything runs.
  r = YolocacheTrain(tmp_, {"predict", "model=w.pt", "source=img.jpg", "classes=[0,cat]"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Has(r.err, "'cat' is not a class index")) << r.err;
}

// rect=True (train), cutmix, copy_paste and copy_paste_mode reach their options and args.yaml; bad
// values are refused with exit 2 before any work, naming the value.
TEST_F(UltralyticsLine, RectCutmixAndCopyPasteAreTrainOptions) {
  CliRun r = Explain({"train", "data=d.yaml", "rect=True", "cutmix=0.3", "copy_paste=0.5", "copy_paste_mode=mixup"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  for (const char* part : {" --rect", "--cutmix=0.3", "--copy-paste=0.5", "--copy-paste-mode=mixup"}) {
    EXPECT_TRUE(Has(r.out, part)) << part << "\n" << r.out;
  }

  testutil::MakeSynthCache(tmp_.path(), testutil::Images(2, 1));
  const std::string yaml = (tmp_ / "data" / "data.yaml").string();
  r = YolocacheTrain(tmp_, {"train", "data=" + yaml, "rect=True", "cutmix=0.25", "copy_paste=0.5",
                            "copy_paste_mode=mixup", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* line : {"\nrect: true\n", "\ncutmix: 0.25\n", "\ncopy_paste: 0.5\n", "\ncopy_paste_mode: mixup\n"}) {
    EXPECT_TRUE(Has(r.out, line)) << line << "\n" << r.out;
  }
  r = YolocacheTrain(tmp_, {"train", "data=" + yaml, "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* line : {"\nrect: false\n", "\ncutmix: 0.0\n", "\ncopy_paste: 0.0\n", "\ncopy_paste_mode: flip\n"}) {
    EXPECT_TRUE(Has(r.out, line)) << line << "\n" << r.out;
  }
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"cutmix=1.5", "cutmix must be a probability in [0, 1], got 1.5"},
      {"copy_paste_mode=paste", "paste not in {flip,mixup}"},
      {"order=windowed", "--rect (rect=True) walks the records in aspect-ratio order"},
  };
  for (const auto& [arg, message] : refused) {
    std::vector<std::string> args = {"train", "data=" + yaml, arg, "--dry-run"};
    if (arg == "order=windowed") args.push_back("rect=True");
    r = YolocacheTrain(tmp_, args);
    EXPECT_EQ(r.exit_code, 2) << arg << "\n" << r.err;
    EXPECT_TRUE(Has(r.err, message)) << arg << "\n" << r.err;
  }
}

TEST_F(UltralyticsLine, ModelIsAnArchitectureOrWeightsLookedUpWithoutDownloads) {
  CliRun r = Explain({"train", "data=d.yaml", "model=yolov8s.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "--model yolov8s")) << r.out;
  r = Explain({"train", "data=d.yaml", "model=yolo11x.yaml"});
  EXPECT_TRUE(Has(r.out, "--model yolo11x")) << r.out;
  r = Explain({"train", "data=d.yaml", "model=yolov8.yaml"});
  EXPECT_TRUE(Has(r.out, "--model yolov8n")) << r.out;
  EXPECT_TRUE(Has(r.err, "names no scale")) << r.err;

  // model=yolov8n means yolov8n.pt, as in Ultralytics: never a silent run from scratch.
  r = Explain({"train", "data=d.yaml", "model=yolov8n"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Has(r.err, "model=yolov8n.pt: no such weights file")) << r.err;
  EXPECT_TRUE(Has(r.err, "downloads nothing")) << r.err;
  EXPECT_TRUE(Has(r.err, "model=yolov8n.yaml")) << r.err;
  std::ofstream(tmp_ / "yolov8n.pt") << "weights";
  r = Explain({"train", "data=d.yaml", "model=yolov8n"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "--weights yolov8n.pt")) << r.out;

  // Ultralytics' weights_dir (its settings.json under YOLO_CONFIG_DIR).
  fs::create_directories(tmp_ / "cfg");
  fs::create_directories(tmp_ / "store");
  std::ofstream(tmp_ / "store" / "yolo11n.pt") << "weights";
  std::ofstream(tmp_ / "cfg" / "settings.json") << "{\"weights_dir\": \"" << (tmp_ / "store").string() << "\"}";
  setenv("YOLO_CONFIG_DIR", (tmp_ / "cfg").c_str(), 1);
  r = Explain({"val", "model=yolo11n.pt", "data=d.yaml"});
  unsetenv("YOLO_CONFIG_DIR");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "--weights " + (tmp_ / "store" / "yolo11n.pt").string())) << r.out;

  r = Explain({"val", "model=yolov8n.yaml", "data=d.yaml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Has(r.err, "val needs trained weights")) << r.err;
}

TEST_F(UltralyticsLine, TaskModeAndCfgAsUltralyticsReadsThem) {
  CliRun r = Explain({"detect", "train", "data=d.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "yolocache-train train --data=d.yaml")) << r.out;
  r = Explain({"task=detect", "mode=val", "model=w.pt", "data=d.yaml", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "yolocache-train val --weights w.pt --data=d.yaml --json")) << r.out;
  for (const std::vector<std::string>& refused : std::vector<std::vector<std::string>>{
           {"segment", "train", "data=d.yaml"}, {"train", "task=pose", "data=d.yaml"}, {"track", "model=w.pt"},
           {"train", "mode=val", "data=d.yaml"}}) {
    r = Explain(refused);
    EXPECT_EQ(r.exit_code, 2) << refused[0] << " " << refused[1];
    EXPECT_NE(r.err, "");
  }

  // cfg=: the file's keys replace the ones before it; the line's later keys win over the file's.
  std::ofstream(tmp_ / "custom.yaml") << "epochs: 7\nimgsz: 320\nlr0: 0.02\nconf: null\nsave_dir: elsewhere\n";
  r = Explain({"train", "data=d.yaml", "epochs=3", "cfg=custom.yaml", "imgsz=256"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "--epochs=7")) << r.out;
  EXPECT_TRUE(Has(r.out, "--imgsz 256")) << r.out;
  EXPECT_TRUE(Has(r.out, "--lr0=0.02")) << r.out;
  EXPECT_FALSE(Has(r.out, "data=d.yaml")) << "cfg= replaces the keys before it, as Ultralytics' entrypoint\n" << r.out;

  // Our own args.yaml is a cfg= file every command reads back.
  r = YolocacheTrain(tmp_, {"train", "data=d.yaml", "model=yolov8s.yaml", "epochs=5", "batch=8", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ofstream(tmp_ / "args.yaml") << r.out;
  r = Explain({"train", "cfg=args.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  for (const char* part : {"--model yolov8s", "--epochs=5", "--batch 8", "--data=d.yaml"}) {
    EXPECT_TRUE(Has(r.out, part)) << r.out;
  }
}

TEST_F(UltralyticsLine, ResumeTrueTakesTheNewestLastPt) {
  CliRun r = Explain({"train", "resume=True"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Has(r.err, "no last.pt found below runs")) << r.err;
  for (const char* run : {"train", "train2"}) {
    fs::create_directories(tmp_ / "runs" / "detect" / run / "weights");
    std::ofstream(tmp_ / "runs" / "detect" / run / "weights" / "last.pt") << "ckpt";
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // distinct modification times
  }
  fs::last_write_time(tmp_ / "runs/detect/train/weights/last.pt", fs::file_time_type::clock::now() - std::chrono::hours(1));
  r = Explain({"train", "resume=True"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "--resume runs/detect/train2/weights/last.pt")) << r.out;
  r = Explain({"train", "resume", "model=runs/detect/train/weights/last.pt"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "--resume runs/detect/train/weights/last.pt")) << r.out;
  r = Explain({"train", "resume=runs/detect/train/weights/last.pt", "batch=8"});
  EXPECT_TRUE(Has(r.out, "--resume runs/detect/train/weights/last.pt")) << r.out;
}

TEST_F(UltralyticsLine, ListsAutoBatchAndDevices) {
  CliRun r = Explain({"train", "data=d.yaml", "imgsz=[320,256]", "freeze=[0,1,2]", "batch=-1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "--imgsz 320")) << r.out;
  EXPECT_TRUE(Has(r.err, "using imgsz=320")) << r.err;
  EXPECT_TRUE(Has(r.out, "--freeze '[0,1,2]'")) << r.out;  // a list stays a list (args.yaml writes it back)
  EXPECT_TRUE(Has(r.out, "--autobatch 0.6")) << r.out;
  r = Explain({"train", "data=d.yaml", "batch=0.7", "device=0"});
  EXPECT_TRUE(Has(r.out, "--autobatch 0.7")) << r.out;
  EXPECT_TRUE(Has(r.out, "--device 0")) << r.out;
  r = Explain({"train", "data=d.yaml", "freeze=[1,3]", "time=0.5", "multi_scale=True", "optimizer=NAdam"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* part : {"--freeze '[1,3]'", "--time", "0.5", "--multi-scale", "--optimizer", "NAdam"}) {
    EXPECT_TRUE(Has(r.out, part)) << part << " in " << r.out;
  }
  r = Explain({"train", "data=d.yaml", "freeze=10"});
  EXPECT_TRUE(Has(r.out, "--freeze 10")) << r.out;
  // A device list is one --device value for train (it starts a rank per device), the first device
  // for the other modes.
  r = Explain({"train", "data=d.yaml", "device=[0, 1]"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "--device 0,1")) << r.out;
  r = Explain({"val", "model=w.pt", "data=d.yaml", "device=2,3"});
  EXPECT_TRUE(Has(r.out, "--device 2")) << r.out;
  EXPECT_TRUE(Has(r.err, "val runs on one device, the first (2)")) << r.err;
}

// fraction, single_cls, classes and bgr: options of the commands that use them (train; val: classes and
// single_cls), dropped aloud by the others; classes in each of Ultralytics' forms, checked at parse time.
TEST_F(UltralyticsLine, DataSelectionKeysAreOptions) {
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> rows = {
      {{"train", "data=d.yaml", "fraction=0.5", "single_cls", "classes=0,2", "bgr=0.3"},
       {"--fraction=0.5", "--single-cls", "--classes=0,2", "--bgr=0.3"}},
      {{"val", "model=w.pt", "data=d.yaml", "single_cls=True", "classes=[1]"}, {"--single-cls", "--classes=[1]"}},
  };
  for (const auto& [line, parts] : rows) {
    const CliRun r = Explain(line);
    ASSERT_EQ(r.exit_code, 0) << line[2] << "\n" << r.err;
    for (const std::string& part : parts) EXPECT_TRUE(Has(r.out, part)) << part << "\n" << r.out;
  }
  CliRun r = Explain({"train", "data=d.yaml", "classes=[0, 2]", "single_cls=False"});
  EXPECT_TRUE(Has(r.out, "--classes=[0, 2]")) << r.out;
  EXPECT_FALSE(Has(r.out, "single-cls")) << r.out;
  // Ultralytics' val: fraction 1, no augmentation.
  r = Explain({"val", "model=w.pt", "data=d.yaml", "single_cls=False", "fraction=0.5", "bgr=0.5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "--no-single-cls")) << r.out;
  EXPECT_TRUE(Has(r.err, "'fraction' is not used by val")) << r.err;
  EXPECT_TRUE(Has(r.err, "'bgr' is not used by val")) << r.err;

  // Refused before anything runs, naming the value (class_list_test.cc and train_support_test.cc hold
  // the other values); args.yaml holds the rest with Ultralytics' keys.
  for (const auto& [arg, why] : std::vector<std::pair<std::string, std::string>>{
           {"classes=person", "classes 'person': 'person' is not a class index"},
           {"fraction=0", "--fraction 0.0: must be in (0, 1]"},
           {"bgr=2", "bgr must be a probability"}}) {
    r = YolocacheTrain(tmp_, {"train", "data=d.yaml", arg, "--dry-run"});
    EXPECT_EQ(r.exit_code, 2) << arg << "\n" << r.out;
    EXPECT_TRUE(Has(r.err, why)) << arg << "\n" << r.err;
  }
  r = YolocacheTrain(tmp_, {"train", "data=d.yaml", "fraction=0.25", "single_cls", "classes=0,2", "bgr=0.5", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* line : {"\nfraction: 0.25\n", "\nsingle_cls: true\n", "\nclasses:\n- 0\n- 2\n", "\nbgr: 0.5\n"}) {
    EXPECT_TRUE(Has(r.out, line)) << line << "\n" << r.out;
  }
}

// One short CPU run: fraction and single_cls train a 1-class model on the first half of the train images,
// val of its best.pt validates single-class as the checkpoint was trained (Ultralytics' val keeps
// train_args.single_cls), classes names the labels it keeps.
TEST_F(UltralyticsLine, FractionAndSingleClsTrainAOneClassModel) {
  const fs::path cache = testutil::MakeSynthCache(tmp_.path(), testutil::Images(8, 4));
  CliRun r = YolocacheTrain(tmp_, {"train", "data=" + cache.string(), "model=yolov8n.yaml", "epochs=1", "imgsz=64",
                                   "batch=4", "device=cpu", "workers=1", "plots=False", "fraction=0.5", "single_cls",
                                   "classes=[0,2]", "--torch-threads", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(Has(r.out, "data: train: fraction 0.5: 4 of its 8 images used")) << r.out;
  EXPECT_TRUE(Has(r.out, "4 train images, 4 val images")) << r.out;
  EXPECT_TRUE(Has(r.out, "model: yolov8n, 1 classes")) << r.out;
  EXPECT_TRUE(Has(r.out, "data: classes 0,2: only their labels are used")) << r.out;
  const fs::path run = tmp_ / "runs" / "detect" / "train";
  const std::string args = testing::ReadFile(run / "args.yaml");
  for (const char* line : {"\nfraction: 0.5\n", "\nsingle_cls: true\n", "\nclasses:\n- 0\n- 2\n"}) {
    EXPECT_TRUE(Has(args, line)) << line << "\n" << args;
  }
  r = YolocacheTrain(tmp_, {"val", "model=" + (run / "weights" / "best.pt").string(), "data=" + cache.string(),
                            "device=cpu", "workers=1", "plots=False", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["names"], nlohmann::json::array({"item"}));
  for (const auto& c : j["per_class"]) EXPECT_EQ(c["class"], 0) << j.dump();
  r = YolocacheTrain(tmp_, {"val", "model=" + (run / "weights" / "best.pt").string(), "data=" + cache.string(),
                            "single_cls=False", "device=cpu", "workers=1", "plots=False"});
  EXPECT_NE(r.exit_code, 0) << "a 1-class checkpoint on 4-class labels without single_cls";
  EXPECT_TRUE(Has(r.err, "class names differ")) << r.err;
}

TEST_F(UltralyticsLine, ArgumentsAreCheckedBeforeAnyCacheIsBuilt) {
  testutil::MakeSynthCache(tmp_.path(), testutil::Images(4, 2));
  const std::string yaml = (tmp_ / "data" / "data.yaml").string();
  const fs::path cache_dir = tmp_ / "caches";
  CliRun r = YolocacheTrain(tmp_, {"train", "data=" + yaml, "epochs=-1", "--cache-dir", cache_dir.string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Has(r.err, "--epochs must be >= 1")) << r.err;
  EXPECT_FALSE(fs::exists(cache_dir)) << "a refused run built a cache";
  r = YolocacheTrain(tmp_, {"train", "data=" + yaml, "imgsz=100", "--cache-dir", cache_dir.string(), "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.err, "imgsz=100 must be a multiple of max stride 32, updating to 128")) << r.err;
  EXPECT_TRUE(Has(r.out, "\nimgsz: 128\n")) << r.out;
  EXPECT_FALSE(fs::exists(cache_dir)) << "--dry-run built a cache";
}

// A real CPU run: batch=-1 logs Ultralytics' AutoBatch CPU line and trains at 16; amp=True is fp32 there.
TEST_F(UltralyticsLine, AutoBatchOnTheCpuAndAmpMeanWhatUltralyticsMeans) {
  const fs::path cache = testutil::MakeSynthCache(tmp_.path(), testutil::Images(16, 4));
  CliRun r = YolocacheTrain(tmp_, {"train", "data=" + cache.string(), "model=yolov8n.yaml", "batch=-1", "epochs=1",
                                   "imgsz=64", "device=cpu", "amp=True", "workers=1", "plots=False", "val=False",
                                   "--torch-threads", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(Has(r.out, "AutoBatch: intended for CUDA devices, using default batch-size 16")) << r.out;
  EXPECT_TRUE(Has(r.out, "batch 16, 1 batches/epoch")) << r.out;
  EXPECT_TRUE(Has(r.out, "amp: off (fp32)")) << r.out;
  const std::string args = testing::ReadFile(tmp_ / "runs" / "detect" / "train" / "args.yaml");
  EXPECT_TRUE(Has(args, "\nbatch: -1\n")) << "args.yaml holds batch=-1 as Ultralytics' does\n" << args;
}

}  // namespace
}  // namespace yc::trainer
