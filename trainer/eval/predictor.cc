#include "trainer/eval/predictor.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>

#include <c10/core/GradMode.h>

#include "libcache/decode.h"
#include "libcache/file_read.h"
#include "libcache/jpeg_encode.h"
#include "loader/draw.h"
#include "loader/letterbox.h"
#include "trainer/io/checkpoint.h"
#include "trainer/io/pretrained.h"
#include "trainer/eval/nms.h"

namespace yc::trainer {

namespace fs = std::filesystem;

// An image file is read whole; the decoders take int sizes (as the build's audit, libcache/audit.cc).
constexpr uint64_t kMaxImageFileBytes = (uint64_t{1} << 31) - 1;

Predictor::~Predictor() = default;

Result<std::unique_ptr<Predictor>> Predictor::Load(const fs::path& checkpoint, const at::Device& device,
                                                   PredictOptions options) {
  // Either kind of weights file (a yolocache checkpoint or an Ultralytics .pt), with its class names.
  Result<InferenceModel> loaded = LoadInferenceModel(checkpoint, device);
  if (!loaded.ok()) return loaded.status();
  if (options.imgsz == 0) options.imgsz = loaded->info.imgsz > 0 ? loaded->info.imgsz : 640;
  if (options.imgsz < 32 || options.imgsz % 32 != 0) {
    return Status::InvalidArgument("--imgsz must be a multiple of 32, >= 32");
  }
  if (!(options.conf >= 0 && options.conf < 1) || !(options.iou > 0 && options.iou <= 1) || options.max_det < 1) {
    return Status::InvalidArgument("predict: need 0 <= conf < 1, 0 < iou <= 1, max_det >= 1");
  }
  std::unique_ptr<Predictor> p(new Predictor());
  p->device_ = device;
  p->options_ = options;
  p->names_ = loaded->info.names;
  p->model_ = loaded->model;
  return p;
}

Result<std::vector<Detection>> Predictor::Predict(const cv::Mat& rgb) {
  if (rgb.empty() || rgb.type() != CV_8UC3) return Status::InvalidArgument("predict: expected a non-empty RGB image");
  const int h = rgb.rows, w = rgb.cols, s = options_.imgsz;
  // LetterBox(auto=True): scale the long side to imgsz, pad each side only up to the next multiple of 32.
  const double r = std::min(static_cast<double>(s) / h, static_cast<double>(s) / w);
  const int uh = std::max(1, static_cast<int>(PyRound(h * r))), uw = std::max(1, static_cast<int>(PyRound(w * r)));
  const int th = (uh + 31) / 32 * 32, tw = (uw + 31) / 32 * 32;
  const LetterboxGeometry g = ComputeLetterbox(h, w, th, tw, /*scaleup=*/true);
  cv::Mat boxed;
  LetterboxImage(rgb, g, &boxed);
  std::vector<Detection> out;
  try {
    c10::NoGradGuard no_grad;
    // HWC uint8 -> (1, 3, H, W) float / 255.
    auto x = at::from_blob(boxed.data, {1, boxed.rows, boxed.cols, 3}, at::kByte)
                 .permute({0, 3, 1, 2})
                 .to(device_, at::kFloat)
                 .div_(255.0)
                 .contiguous();
    DetectOutput y = model_->forward(x);
    NmsOptions nms;
    nms.conf = options_.conf;
    nms.iou = options_.iou;
    nms.max_det = options_.max_det;
    nms.multi_label = false;
    nms.agnostic = options_.agnostic;
    std::vector<at::Tensor> dets = NonMaxSuppression(y.pred.to(at::kFloat), nms);
    if (dets.empty()) return out;
    auto d = dets[0].to(at::kCPU).contiguous();
    const float* p = d.data_ptr<float>();
    const float inv = static_cast<float>(1.0 / g.r);
    for (int64_t i = 0; i < d.size(0); ++i, p += 6) {
      Detection det;
      // Letterboxed pixels -> original pixels (Ultralytics scale_boxes), clipped to the image.
      det.x1 = std::clamp((p[0] - static_cast<float>(g.left)) * inv, 0.0f, static_cast<float>(w));
      det.y1 = std::clamp((p[1] - static_cast<float>(g.top)) * inv, 0.0f, static_cast<float>(h));
      det.x2 = std::clamp((p[2] - static_cast<float>(g.left)) * inv, 0.0f, static_cast<float>(w));
      det.y2 = std::clamp((p[3] - static_cast<float>(g.top)) * inv, 0.0f, static_cast<float>(h));
      det.conf = p[4];
      det.cls = static_cast<int>(p[5]);
      out.push_back(det);
    }
  } catch (const std::exception& e) {
    return Status::IOError(std::string("predict: inference failed: ") + e.what());
  }
  return out;
}

Result<PredictResult> Predictor::PredictFile(const fs::path& image, const fs::path& out_dir) {
  // A FIFO, device or directory is refused without blocking (an ifstream would wait on a FIFO forever).
  std::string bytes;
  YC_RETURN_IF_ERROR(ReadRegularFile(image, kMaxImageFileBytes, &bytes));
  DecodeOptions dopt;  // full size, EXIF applied: detections are reported in the original image
  DecodedImage decoded = DecodeImage(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), dopt);
  if (!decoded.out_of_memory.empty()) {
    return Status::ResourceExhausted("out of memory while decoding " + image.string() + " (" + decoded.out_of_memory + ")");
  }
  if (decoded.has_error() || decoded.rgb.empty()) {
    std::string why = "cannot decode";
    for (const Issue& issue : decoded.issues) why += std::string("; ") + ProblemCodeName(issue.code) + ": " + issue.message;
    return Status::DataError(Status::At(image.string(), why));
  }
  PredictResult result;
  result.source = image;
  result.width = decoded.rgb.cols;
  result.height = decoded.rgb.rows;
  const auto t0 = std::chrono::steady_clock::now();
  Result<std::vector<Detection>> dets = Predict(decoded.rgb);
  if (!dets.ok()) return Status(dets.status()).WithContext(image.string());
  result.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  result.detections = std::move(*dets);

  std::vector<BoxXyxy> boxes;
  for (const Detection& d : result.detections) boxes.push_back({d.x1, d.y1, d.x2, d.y2, d.cls});
  cv::Mat canvas = decoded.rgb;
  DrawBoxes(boxes, names_, &canvas);
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return Status::IOError(Status::At(out_dir.string(), ec.message()));
  result.output = out_dir / (image.stem().string() + ".jpg");
  YC_RETURN_IF_ERROR(WriteJpeg(result.output, canvas.data, canvas.cols, canvas.rows, options_.jpeg_quality,
                               static_cast<int>(canvas.step)));
  return result;
}

Result<std::vector<fs::path>> ExpandImagePaths(const std::vector<std::string>& inputs) {
  static const char* kExt[] = {".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp"};
  std::vector<fs::path> out;
  for (const std::string& in : inputs) {
    std::error_code ec;
    const fs::path p(in);
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> found;
      for (const auto& e : fs::directory_iterator(p, ec)) {
        if (!e.is_regular_file(ec)) continue;
        std::string ext = e.path().extension().string();
        std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        if (std::find(std::begin(kExt), std::end(kExt), ext) != std::end(kExt)) found.push_back(e.path());
      }
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else if (fs::exists(p, ec)) {
      out.push_back(p);
    } else {
      return Status::NotFound(Status::At(in, "no such file or directory"));
    }
  }
  return out;
}

nlohmann::json PredictResultToJson(const PredictResult& r, const std::vector<std::string>& names) {
  nlohmann::json dets = nlohmann::json::array();
  for (const Detection& d : r.detections) {
    dets.push_back({{"class", d.cls},
                    {"name", d.cls >= 0 && static_cast<size_t>(d.cls) < names.size() ? names[static_cast<size_t>(d.cls)]
                                                                                     : std::to_string(d.cls)},
                    {"confidence", d.conf},
                    {"box", {d.x1, d.y1, d.x2, d.y2}}});
  }
  return {{"source", r.source.string()}, {"output", r.output.string()}, {"width", r.width},
          {"height", r.height},          {"ms", r.milliseconds},        {"detections", dets}};
}

}  // namespace yc::trainer
