// Inference on image files with a trained checkpoint (Ultralytics `predict`): decode (EXIF-oriented,
// libcache/source/decode.h), letterbox to imgsz with stride-32 minimal padding (LetterBox(auto=True)), model in
// eval mode, NMS (conf 0.25, IoU 0.7, best class per box), boxes mapped back to the original image,
// drawn with their class names and confidences ("person 0.87", annotate.h), written as JPEG (videos: frame
// by frame into a Motion-JPEG AVI, video_io.h); save_crop cuts each detection out (crops.h). --save-txt writes Ultralytics' label rows
// `cls xc yc w h [conf]` (normalised to the image, %g) to labels/<name>.txt (videos: <name>_<frame>.txt).
// --save-frames also writes each annotated video frame as <name>_frames/<name>_<frame>.jpg; --visualize
// writes each layer's feature maps (feature_maps.h).
// Every file is written through a temp file + rename (libcache/base/output_file.h); results never replace an
// input (CheckPredictOutputs).
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>

#include "base/status.h"
#include "trainer/io/torchscript_model.h"
#include "trainer/model/detection_model.h"

namespace yc::trainer {

struct PredictOptions {
  int imgsz = 640;       // 0: the checkpoint's training imgsz
  double conf = 0.25;
  double iou = 0.7;
  int max_det = 300;
  bool agnostic = false;     // agnostic_nms: class-agnostic NMS
  std::vector<int64_t> classes{};  // classes: keep only these (empty: all; NmsOptions::classes)
  bool half = false;         // fp16 model and input (a GPU only: half_precision.h)
  bool augment = false;      // test-time augmentation (model/augmented_inference.h); a .torchscript runs its graph
  int jpeg_quality = 90;
  bool save_txt = false;   // labels/<name>.txt per image (per video frame)
  bool save_conf = false;  // append the confidence to each txt row
  bool save_crop = false;  // crops/<class name>/<stem>.jpg per detection (crops.h)
  // How the saved pictures are drawn (annotate.h): Ultralytics' show_boxes, show_labels, show_conf,
  // line_width (0: its default for the image's size).
  bool show_boxes = true, show_labels = true, show_conf = true;
  int line_width = 0;
  int vid_stride = 1;        // videos: every vid_stride-th frame is read (Ultralytics' LoadImagesAndVideos)
  bool save_frames = false;  // videos: each annotated frame also as <stem>_frames/<stem>_<frame>.jpg
  bool visualize = false;    // each layer's feature maps as PNG + .npy in <stem>/ (feature_maps.h)
};

// One input and where its result goes, relative to the run directory: `output` is the annotated picture
// (or video); its labels go to labels/<output without extension>.txt.
struct PredictInput {
  std::filesystem::path source;
  std::filesystem::path output;
  bool video = false;
};

struct Detection {
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;  // original image pixels
  float conf = 0;
  int cls = 0;
};

struct PredictResult {
  std::filesystem::path source, output;
  std::filesystem::path labels;  // the txt file (images) or folder prefix (videos); empty without --save-txt
  int frames = 0;                // videos: frames processed
  int width = 0, height = 0;  // original (oriented) image size
  std::vector<Detection> detections;
  double milliseconds = 0;     // letterbox + forward + NMS
};

class Predictor {
 public:
  // `checkpoint`: .pt weights (pretrained.h LoadInferenceModel), or a .torchscript export, run at its traced
  // imgsz with a square letterbox (LetterBox(auto=False), as Ultralytics predicts with a fixed-shape
  // export). An .onnx file is Unsupported, saying what to give instead.
  static Result<std::unique_ptr<Predictor>> Load(const std::filesystem::path& checkpoint, const at::Device& device,
                                                 PredictOptions options);
  ~Predictor();

  // Detections on an RGB image (CV_8UC3, any size). With `observe`, each layer's output is handed to it
  // (DetectionModel::ForwardObserved; a TorchScript export has no layers to see and ignores it).
  Result<std::vector<Detection>> Predict(const cv::Mat& rgb, const LayerObserver* observe = nullptr);
  // Reads and decodes the image, predicts, and writes <save_dir>/<input.output> with the boxes drawn (and
  // the txt rows). Anything but a regular file (a FIFO, a device) is an IOError naming it, returned at once
  // (libcache/base/file_read.h).
  Result<PredictResult> PredictFile(const PredictInput& input, const std::filesystem::path& save_dir);
  // Every frame of a video (every vid_stride-th: frames vid_stride, 2 * vid_stride, ... of the file, written
  // at the file's frame rate, as Ultralytics writes them); `cancel` stops between frames (Cancelled
  // returned, the partial video discarded: an earlier complete result of that name stays).
  // Unsupported naming the file when the build has no videoio.
  Result<PredictResult> PredictVideo(const PredictInput& input, const std::filesystem::path& save_dir,
                                     const std::atomic<bool>* cancel = nullptr);

  const std::vector<std::string>& names() const { return names_; }
  int imgsz() const { return options_.imgsz; }

 private:
  Predictor() = default;
  // Predict, and with options_.visualize the feature maps of that image into <save_dir>/<output stem>.
  Result<std::vector<Detection>> PredictAndVisualize(const cv::Mat& rgb, const PredictInput& input,
                                                     const std::filesystem::path& save_dir);
  at::Device device_{at::kCPU};
  PredictOptions options_;
  std::vector<std::string> names_;
  DetectionModel model_{nullptr};
  std::unique_ptr<TorchScriptModel> script_;  // set instead of model_ for a .torchscript export
};

// Files as given, and the images (jpg, jpeg, png, bmp, tif, tiff, webp) and videos (video_io.h) below
// directories, recursively, sorted. Output names never collide: below a directory the relative path is
// kept (a/img.jpg -> a/img.jpg); a file given directly keeps its name; a picture is written as
// <stem>.jpg, a video as <stem>.avi. When two inputs would still share an output, or their label files
// would (an image clip_1.jpg's labels/clip_1.txt is frame 1 of a video clip.mp4 in Ultralytics' naming),
// the later one (in input order) gets <stem>_<ext> (img.png -> img_png.jpg), then <stem>_2, _3 ...:
// deterministic for the same command line. NotFound naming a path that does not exist.
Result<std::vector<PredictInput>> ExpandPredictInputs(const std::vector<std::string>& inputs);

// The output-path rule (libcache/build/output_guard.h) for a run folder: InvalidArgument naming both paths when
// `save_dir` holds one of the inputs (--out DIR of the photos themselves: their results would replace
// them, or an unrelated photo.jpg beside photo.png), when an output is an input through a link, or when
// `save_dir` is inside a yolocache cache. Reads only.
Status CheckPredictOutputs(const std::vector<PredictInput>& inputs, const std::filesystem::path& save_dir);

// The label drawn on a box: "<name> <conf with 2 decimals>" ("person 0.87"), as Ultralytics draws it.
std::string DetectionLabel(const Detection& detection, const std::vector<std::string>& names);

// Ultralytics' txt rows for detections in an image of width x height: "cls xc yc w h[ conf]\n" each.
std::string FormatLabelRows(const std::vector<Detection>& detections, int width, int height, bool save_conf);

nlohmann::json PredictResultToJson(const PredictResult& result, const std::vector<std::string>& names);

}  // namespace yc::trainer
