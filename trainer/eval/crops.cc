#include "trainer/eval/crops.h"

#include <algorithm>
#include <cmath>
#include <system_error>

#include "libcache/build/output_guard.h"
#include "libcache/source/jpeg_encode.h"

namespace yc::trainer {
namespace fs = std::filesystem;
namespace {

constexpr float kGain = 1.02f;  // save_one_box's defaults
constexpr float kPad = 10.0f;
constexpr int kCropQuality = 95;

// torch's .long() of a float32: toward zero, bounded so the conversion is defined.
int64_t ToLong(float v) { return static_cast<int64_t>(std::clamp(static_cast<double>(v), -1e12, 1e12)); }

std::string ClassFolder(const Detection& d, const std::vector<std::string>& names) {
  const std::string name = d.cls >= 0 && static_cast<size_t>(d.cls) < names.size() ? names[static_cast<size_t>(d.cls)] : "";
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) return std::to_string(d.cls);
  return name;
}

// increment_path: <stem>.jpg, else the first free <stem>N.jpg from N = 2 (a link or anything else of
// that name counts as taken).
fs::path FreeName(const fs::path& dir, const std::string& stem) {
  std::error_code ec;
  fs::path p = dir / (stem + ".jpg");
  for (int n = 2; fs::symlink_status(p, ec).type() != fs::file_type::not_found && n < 1000000; ++n) {
    p = dir / (stem + std::to_string(n) + ".jpg");
  }
  return p;
}

}  // namespace

cv::Rect CropRect(const Detection& d, int width, int height) {
  // xyxy -> xywh, wh * gain + pad, -> xyxy, in float32 as the tensors are.
  const float xc = (d.x1 + d.x2) / 2, yc = (d.y1 + d.y2) / 2;
  const float w = (d.x2 - d.x1) * kGain + kPad, h = (d.y2 - d.y1) * kGain + kPad;
  const int64_t x1 = std::clamp<int64_t>(ToLong(xc - w / 2), 0, width), x2 = std::clamp<int64_t>(ToLong(xc + w / 2), 0, width);
  const int64_t y1 = std::clamp<int64_t>(ToLong(yc - h / 2), 0, height), y2 = std::clamp<int64_t>(ToLong(yc + h / 2), 0, height);
  return cv::Rect(static_cast<int>(x1), static_cast<int>(y1), static_cast<int>(std::max<int64_t>(x2 - x1, 0)),
                  static_cast<int>(std::max<int64_t>(y2 - y1, 0)));
}

Status SaveCrops(const std::vector<Detection>& dets, const std::vector<std::string>& names, const cv::Mat& rgb,
                 const fs::path& save_dir, const std::string& stem) {
  for (const Detection& d : dets) {
    const cv::Rect r = CropRect(d, rgb.cols, rgb.rows);
    if (r.width <= 0 || r.height <= 0) continue;  // nothing to cut (Ultralytics' PIL would fail on it)
    const fs::path dir = save_dir / "crops" / ClassFolder(d, names);
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return Status::IOError(Status::At(dir.string(), ec.message()));
    YC_RETURN_IF_ERROR(CheckWithinFolder(dir, save_dir));
    const cv::Mat crop = rgb(r);  // a view: the rows keep the image's stride
    YC_RETURN_IF_ERROR(WriteJpeg(FreeName(dir, stem), crop.data, crop.cols, crop.rows, kCropQuality,
                                 static_cast<int>(crop.step), /*full_chroma=*/true));
  }
  return Status::OK();
}

}  // namespace yc::trainer
