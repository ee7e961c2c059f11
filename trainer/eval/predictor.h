// Inference on image files with a trained checkpoint (Ultralytics `predict`): decode (EXIF-oriented,
// libcache/decode.h), letterbox to imgsz with stride-32 minimal padding (LetterBox(auto=True)), model in
// eval mode, NMS (conf 0.25, IoU 0.7, best class per box), boxes mapped back to the original image,
// drawn with their class names, written as JPEG.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>

#include "libcache/status.h"
#include "trainer/model/detection_model.h"

namespace yc::trainer {

struct PredictOptions {
  int imgsz = 640;       // 0: the checkpoint's training imgsz
  double conf = 0.25;
  double iou = 0.7;
  int max_det = 300;
  bool agnostic = false;  // class-agnostic NMS
  int jpeg_quality = 90;
};

struct Detection {
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;  // original image pixels
  float conf = 0;
  int cls = 0;
};

struct PredictResult {
  std::filesystem::path source, output;
  int width = 0, height = 0;  // original (oriented) image size
  std::vector<Detection> detections;
  double milliseconds = 0;     // letterbox + forward + NMS
};

class Predictor {
 public:
  static Result<std::unique_ptr<Predictor>> Load(const std::filesystem::path& checkpoint, const at::Device& device,
                                                 PredictOptions options);
  ~Predictor();

  // Detections on an RGB image (CV_8UC3, any size).
  Result<std::vector<Detection>> Predict(const cv::Mat& rgb);
  // Reads and decodes `image`, predicts, and writes <out_dir>/<stem>.jpg with the boxes drawn. Anything
  // but a regular file (a FIFO, a device) is an IOError naming it, returned at once (libcache/file_read.h).
  Result<PredictResult> PredictFile(const std::filesystem::path& image, const std::filesystem::path& out_dir);

  const std::vector<std::string>& names() const { return names_; }
  int imgsz() const { return options_.imgsz; }

 private:
  Predictor() = default;
  at::Device device_{at::kCPU};
  PredictOptions options_;
  std::vector<std::string> names_;
  DetectionModel model_{nullptr};
};

// Files as given, and the images (by extension: jpg, jpeg, png, bmp, tif, tiff, webp) directly inside
// directories, sorted. NotFound naming a path that does not exist.
Result<std::vector<std::filesystem::path>> ExpandImagePaths(const std::vector<std::string>& inputs);

nlohmann::json PredictResultToJson(const PredictResult& result, const std::vector<std::string>& names);

}  // namespace yc::trainer
