#include "libcache/source/synth.h"

#include "libcache/source/jpeg_encode.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <sstream>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

namespace yc {
namespace fs = std::filesystem;

namespace {

// SplitMix64: tiny, portable, and the same on every platform (std distributions are not).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double Uniform(double lo, double hi) { return lo + (hi - lo) * (Next() >> 11) * (1.0 / 9007199254740992.0); }
  int Int(int lo, int hi) { return lo + static_cast<int>(Next() % static_cast<uint64_t>(hi - lo + 1)); }

 private:
  uint64_t state_;
};

uint64_t Mix(uint64_t a, uint64_t b) { return Rng(a * 0x100000001B3ull ^ b).Next(); }

// Class hues (OpenCV 0..179) far apart so colour alone nearly separates classes.
constexpr int kClassHue[8] = {0, 60, 120, 30, 90, 150, 15, 105};

cv::Scalar ClassColour(int cls, Rng& rng) {
  // Draws are sequenced one per statement: argument evaluation order is unspecified in C++.
  const int hue = (kClassHue[cls % 8] + rng.Int(-4, 4) + 180) % 180;
  const int sat = rng.Int(170, 255);
  const int val = rng.Int(170, 255);
  cv::Mat hsv(1, 1, CV_8UC3, cv::Scalar(hue, sat, val));
  cv::Mat rgb;
  cv::cvtColor(hsv, rgb, cv::COLOR_HSV2RGB);
  const cv::Vec3b c = rgb.at<cv::Vec3b>(0, 0);
  return cv::Scalar(c[0], c[1], c[2]);
}

// Low-contrast texture: a smooth gradient, grey noise, and a few thin distractor lines.
void DrawBackground(cv::Mat& img, Rng& rng) {
  cv::Vec3f a, b;
  for (int k = 0; k < 3; ++k) a[k] = static_cast<float>(rng.Uniform(40, 200));
  for (int k = 0; k < 3; ++k) b[k] = static_cast<float>(rng.Uniform(40, 200));
  const double angle = rng.Uniform(0, 2 * M_PI);
  const float dx = static_cast<float>(std::cos(angle)), dy = static_cast<float>(std::sin(angle));
  const float norm = std::abs(dx) * img.cols + std::abs(dy) * img.rows + 1.0f;
  cv::Mat noise(img.rows, img.cols, CV_8UC1);
  cv::randu(noise, 0, 24);  // seeded below through cv::theRNG
  for (int y = 0; y < img.rows; ++y) {
    auto* row = img.ptr<cv::Vec3b>(y);
    const uint8_t* n = noise.ptr<uint8_t>(y);
    for (int x = 0; x < img.cols; ++x) {
      float t = (dx * x + dy * y) / norm + 0.5f;
      t = std::clamp(t, 0.0f, 1.0f);
      const cv::Vec3f c = a * (1 - t) + b * t;
      for (int k = 0; k < 3; ++k) row[x][k] = cv::saturate_cast<uint8_t>(c[k] + n[x] - 12);
    }
  }
  const int lines = rng.Int(2, 6);
  for (int i = 0; i < lines; ++i) {
    const int g = rng.Int(60, 200);
    const int x0 = rng.Int(0, img.cols), y0 = rng.Int(0, img.rows);
    const int x1 = rng.Int(0, img.cols), y1 = rng.Int(0, img.rows);
    const int thickness = rng.Int(1, 2);
    cv::line(img, {x0, y0}, {x1, y1}, cv::Scalar(g, g, g), thickness, cv::LINE_AA);
  }
}

// Draws one shape of class `cls` centred at c with half-size r; returns its tight box (x1,y1,x2,y2).
cv::Rect2f DrawShape(cv::Mat& img, int cls, cv::Point2f c, float rx, float ry, Rng& rng) {
  const cv::Scalar colour = ClassColour(cls, rng);
  const auto P = [](float x, float y) { return cv::Point(cvRound(x), cvRound(y)); };
  std::vector<cv::Point> poly;
  switch (cls % 8) {
    case 0:  // circle
      ry = rx;
      cv::circle(img, P(c.x, c.y), cvRound(rx), colour, cv::FILLED, cv::LINE_AA);
      break;
    case 1:  // rectangle
      cv::rectangle(img, P(c.x - rx, c.y - ry), P(c.x + rx, c.y + ry), colour, cv::FILLED);
      break;
    case 2:  // triangle
      poly = {P(c.x, c.y - ry), P(c.x + rx, c.y + ry), P(c.x - rx, c.y + ry)};
      cv::fillConvexPoly(img, poly, colour, cv::LINE_AA);
      break;
    case 3: {  // cross
      const float t = std::max(2.0f, std::min(rx, ry) * 0.35f);
      cv::rectangle(img, P(c.x - rx, c.y - t), P(c.x + rx, c.y + t), colour, cv::FILLED);
      cv::rectangle(img, P(c.x - t, c.y - ry), P(c.x + t, c.y + ry), colour, cv::FILLED);
      break;
    }
    case 4:  // ring
      ry = rx;
      cv::circle(img, P(c.x, c.y), cvRound(rx * 0.8f), colour, std::max(2, cvRound(rx * 0.4f)), cv::LINE_AA);
      break;
    case 5:  // diamond
      poly = {P(c.x, c.y - ry), P(c.x + rx, c.y), P(c.x, c.y + ry), P(c.x - rx, c.y)};
      cv::fillConvexPoly(img, poly, colour, cv::LINE_AA);
      break;
    case 6:  // ellipse
      cv::ellipse(img, P(c.x, c.y), cv::Size(cvRound(rx), cvRound(ry * 0.5f)), 0, 0, 360, colour, cv::FILLED,
                  cv::LINE_AA);
      ry = std::round(ry * 0.5f);
      break;
    default: {  // star
      ry = rx;
      for (int k = 0; k < 10; ++k) {
        const double a = -M_PI / 2 + k * M_PI / 5;
        const float rr = (k % 2 == 0) ? rx : rx * 0.45f;
        poly.push_back(P(c.x + rr * static_cast<float>(std::cos(a)), c.y + rr * static_cast<float>(std::sin(a))));
      }
      cv::fillPoly(img, std::vector<std::vector<cv::Point>>{poly}, colour, cv::LINE_AA);
      break;
    }
  }
  if (!poly.empty()) {
    const cv::Rect r = cv::boundingRect(poly);
    return cv::Rect2f(static_cast<float>(r.x), static_cast<float>(r.y), static_cast<float>(r.width),
                      static_cast<float>(r.height));
  }
  return cv::Rect2f(c.x - rx, c.y - ry, 2 * rx, 2 * ry);
}

Status WriteText(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) return Status::IOError(Status::At(path.string(), "cannot write"));
  return Status::OK();
}

struct SplitPlan {
  const char* name;
  int count;
};

}  // namespace

const std::vector<std::string>& SynthClassNames() {
  static const std::vector<std::string> names = {"circle", "rectangle", "triangle", "cross",
                                                 "ring",   "diamond",   "ellipse",  "star"};
  return names;
}

namespace {

bool Cancelled(const SynthOptions& o) { return o.cancel != nullptr && o.cancel->load(std::memory_order_relaxed); }

// Writes the dataset into `out` (empty or absent); stops at the first error or at a cancel.
Status WriteSynthDataset(const fs::path& out, const SynthOptions& o, SynthReport* report_out) {
  SynthReport& report = *report_out;
  std::error_code ec;
  const std::vector<std::string>& all_names = SynthClassNames();
  const SplitPlan plans[] = {{"train", o.train_images}, {"val", o.val_images}};
  for (const SplitPlan& plan : plans) {
    fs::create_directories(out / "images" / plan.name, ec);
    fs::create_directories(out / "labels" / plan.name, ec);
    if (ec) return Status::IOError(Status::At((out / "images" / plan.name).string(), ec.message()));
    for (int i = 0; i < plan.count; ++i) {
      if (Cancelled(o)) return Status::Cancelled("interrupted");
      Rng rng(Mix(Mix(o.seed, plan.name[0]), static_cast<uint64_t>(i)));
      cv::theRNG().state = rng.Next() | 1;
      const int w = rng.Int(o.min_side, o.max_side), h = rng.Int(o.min_side, o.max_side);
      cv::Mat img(h, w, CV_8UC3);
      DrawBackground(img, rng);
      const bool background = rng.Uniform(0, 1) < o.background_fraction;
      const int objects = background ? 0 : rng.Int(1, std::max(1, o.max_objects));
      std::ostringstream labels;
      labels.setf(std::ios::fixed);
      labels.precision(6);
      const float short_side = static_cast<float>(std::min(w, h));
      for (int k = 0; k < objects; ++k) {
        const int cls = rng.Int(0, o.classes - 1);
        const float rx = static_cast<float>(rng.Uniform(0.05, 0.18)) * short_side;
        const float ry = rx * static_cast<float>(rng.Uniform(0.7, 1.4));
        const float cx = static_cast<float>(rng.Uniform(rx, w - rx));
        const float cy = static_cast<float>(rng.Uniform(ry, h - ry));
        const cv::Point2f c(cx, cy);
        cv::Rect2f box = DrawShape(img, cls, c, rx, ry, rng) & cv::Rect2f(0, 0, static_cast<float>(w), static_cast<float>(h));
        if (box.width < 2 || box.height < 2) continue;
        labels << cls << ' ' << (box.x + box.width / 2) / w << ' ' << (box.y + box.height / 2) / h << ' '
               << box.width / w << ' ' << box.height / h << '\n';
        ++report.boxes;
      }
      char stem[32];
      std::snprintf(stem, sizeof stem, "synth_%06d", i);
      Result<std::string> jpeg = EncodeJpeg(img.data, w, h, o.jpeg_quality);
      YC_RETURN_IF_ERROR(jpeg.status());
      YC_RETURN_IF_ERROR(WriteText(out / "images" / plan.name / (std::string(stem) + ".jpg"), *jpeg));
      if (background) {
        ++report.backgrounds;
      } else {
        YC_RETURN_IF_ERROR(WriteText(out / "labels" / plan.name / (std::string(stem) + ".txt"), labels.str()));
      }
      ++report.images;
    }
  }
  // Broken files, one kind after another, each named after what is wrong with it.
  static const char* kKinds[] = {"truncated", "empty-file", "label-columns", "label-class-out-of-range",
                                 "label-orphan", "unsupported-format", "duplicate-image", "label-out-of-range"};
  const fs::path train_img = out / "images" / "train", train_lbl = out / "labels" / "train";
  for (int i = 0; i < o.corrupt; ++i) {
    const std::string kind = kKinds[i % 8];
    const std::string stem = "corrupt_" + std::to_string(i) + "_" + kind;
    Rng rng(Mix(o.seed ^ 0xC0FFEEull, static_cast<uint64_t>(i)));
    cv::theRNG().state = rng.Next() | 1;
    cv::Mat img(o.min_side, o.min_side, CV_8UC3);
    DrawBackground(img, rng);
    Result<std::string> jpeg = EncodeJpeg(img.data, img.cols, img.rows, o.jpeg_quality);
    YC_RETURN_IF_ERROR(jpeg.status());
    const std::string good_label = "0 0.5 0.5 0.2 0.2\n";
    std::string image_bytes = *jpeg, label = good_label;
    fs::path image_path = train_img / (stem + ".jpg");
    if (kind == "truncated") image_bytes.resize(image_bytes.size() / 2);
    if (kind == "empty-file") image_bytes.clear();
    if (kind == "label-columns") label = "0 0.5 0.5 0.2\n";
    if (kind == "label-class-out-of-range") label = std::to_string(o.classes) + " 0.5 0.5 0.2 0.2\n";
    if (kind == "label-out-of-range") label = "0 1.5 0.5 0.2 0.2\n";
    if (kind == "unsupported-format") image_bytes = "this is not an image\n";
    if (kind == "duplicate-image" && o.train_images > 0) {
      std::ifstream in(train_img / "synth_000000.jpg", std::ios::binary);
      image_bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    if (kind != "label-orphan") YC_RETURN_IF_ERROR(WriteText(image_path, image_bytes));
    YC_RETURN_IF_ERROR(WriteText(train_lbl / (stem + ".txt"), label));
    report.corrupt_files.push_back(kind + ": " +
                                   (kind == "label-orphan" ? "labels/train/" + stem + ".txt" : "images/train/" + stem + ".jpg"));
  }
  std::ostringstream yaml;
  // No `path:`: Ultralytics and yolocache then both take the YAML's folder as the root, from any working
  // directory (Ultralytics resolves a relative `path: .` against the working directory).
  yaml << "# Synthetic YOLO dataset written by `yolocache synth` (seed " << o.seed << ").\n"
       << "# The splits are relative to this file's folder (no `path:` key).\n"
       << "train: images/train\nval: images/val\nnc: " << o.classes << "\nnames:\n";
  for (int c = 0; c < o.classes; ++c) yaml << "  " << c << ": " << all_names[c] << "\n";
  report.yaml = out / "data.yaml";
  return WriteText(report.yaml, yaml.str());
}

// Removes what WriteSynthDataset wrote: `out` itself when it did not exist, else its entries (it was
// empty before, so nothing of the user's is touched).
void RemovePartialOutput(const fs::path& out, bool existed) {
  std::error_code ec;
  if (!existed) {
    fs::remove_all(out, ec);
    return;
  }
  for (fs::directory_iterator it(out, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code rec;
    fs::remove_all(it->path(), rec);
  }
}

}  // namespace

Result<SynthReport> GenerateSynthDataset(const fs::path& out, const SynthOptions& o) {
  if (o.classes < 1 || o.classes > 8) return Status::InvalidArgument("synth: --classes must be 1..8");
  if (o.min_side < 16 || o.max_side < o.min_side) return Status::InvalidArgument("synth: need 16 <= min-side <= max-side");
  if (o.train_images < 0 || o.val_images < 0 || o.corrupt < 0) return Status::InvalidArgument("synth: counts must be >= 0");
  std::error_code ec;
  const bool existed = fs::exists(out, ec);
  if (existed && !fs::is_empty(out, ec))
    return Status::InvalidArgument(Status::At(out.string(), "exists and is not empty; synth never overwrites files"));
  SynthReport report;
  const Status st = WriteSynthDataset(out, o, &report);
  if (!st.ok()) {
    RemovePartialOutput(out, existed);  // interrupted or failed: no half-written dataset is left
    return st;
  }
  return report;
}

}  // namespace yc
