// In-memory RecordSource with synthetic images for the loader tests and benchmark: smooth gradients
// plus solid rectangles where the boxes are (realistic edges for interpolation), deterministic per
// seed. Records can be told to fail, to test error propagation.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "libcache/record_source.h"
#include "loader/options.h"

namespace yc::testing {

struct FakeRecord {
  int height = 0, width = 0;
  int orig_height = 0, orig_width = 0;
  int channels = 3;
  std::vector<uint8_t> pixels;  // HWC RGB
  std::vector<Box> boxes;
  std::string source;
};

class FakeSource : public RecordSource {
 public:
  size_t size() const override { return records_.size(); }

  Status Read(size_t index, RecordView* out, ScratchBuffer*) const override {
    if (index >= records_.size())
      return Status::InvalidArgument("fake: record " + std::to_string(index) + " out of range");
    auto fail = failures_.find(index);
    if (fail != failures_.end()) return fail->second;
    const FakeRecord& r = records_[index];
    out->index = index;
    out->pixels = r.pixels.empty() ? nullptr : r.pixels.data();
    out->height = r.height;
    out->width = r.width;
    out->channels = r.channels;
    out->orig_height = r.orig_height;
    out->orig_width = r.orig_width;
    out->boxes = r.boxes.data();
    out->box_count = r.boxes.size();
    out->source = r.source;
    return Status::OK();
  }

  void Add(FakeRecord record) { records_.push_back(std::move(record)); }
  FakeRecord& record(size_t i) { return records_[i]; }
  void FailAt(size_t index, Status status) { failures_[index] = std::move(status); }

  // An h x w image with `boxes` random boxes drawn as solid rectangles over a smooth background.
  // orig size = 2x the stored size (as if the cache had downscaled it).
  static FakeRecord MakeImage(int h, int w, int boxes, uint32_t seed, const std::string& name) {
    FakeRecord r;
    r.height = h, r.width = w, r.orig_height = 2 * h, r.orig_width = 2 * w;
    r.source = name;
    r.pixels.resize(static_cast<size_t>(h) * w * 3);
    uint64_t state = 0x9E3779B97F4A7C15ull * (seed + 1);
    auto next = [&state] {
      state ^= state << 13, state ^= state >> 7, state ^= state << 17;
      return state;
    };
    auto uniform = [&] { return static_cast<double>(next() >> 11) * 0x1.0p-53; };
    const double fx = 2 + 6 * uniform(), fy = 2 + 6 * uniform(), phase = 6.28 * uniform();
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        uint8_t* p = &r.pixels[(static_cast<size_t>(y) * w + x) * 3];
        const double u = static_cast<double>(x) / w, v = static_cast<double>(y) / h;
        p[0] = static_cast<uint8_t>(127.5 + 120 * std::sin(fx * u + phase));
        p[1] = static_cast<uint8_t>(127.5 + 120 * std::cos(fy * v + phase));
        p[2] = static_cast<uint8_t>(255 * (0.5 * u + 0.5 * v));
      }
    for (int i = 0; i < boxes; ++i) {
      Box b;
      b.cls = static_cast<int32_t>(next() % 80);
      b.w = static_cast<float>(0.05 + 0.4 * uniform());
      b.h = static_cast<float>(0.05 + 0.4 * uniform());
      b.cx = static_cast<float>(b.w / 2 + (1 - b.w) * uniform());
      b.cy = static_cast<float>(b.h / 2 + (1 - b.h) * uniform());
      r.boxes.push_back(b);
      const int x1 = static_cast<int>((b.cx - b.w / 2) * w), x2 = static_cast<int>((b.cx + b.w / 2) * w);
      const int y1 = static_cast<int>((b.cy - b.h / 2) * h), y2 = static_cast<int>((b.cy + b.h / 2) * h);
      const uint8_t c[3] = {static_cast<uint8_t>(next()), static_cast<uint8_t>(next()), static_cast<uint8_t>(next())};
      for (int y = std::max(0, y1); y < std::min(h, y2); ++y)
        for (int x = std::max(0, x1); x < std::min(w, x2); ++x)
          for (int k = 0; k < 3; ++k) r.pixels[(static_cast<size_t>(y) * w + x) * 3 + k] = c[k];
    }
    return r;
  }

  // n images with a 640 long side and mixed aspect ratios (landscape, portrait, square).
  static FakeSource Synthetic(size_t n, int long_side = 640, uint32_t seed = 1) {
    FakeSource s;
    static const double kAspects[] = {0.75, 1.0, 1.333, 0.5625, 0.6, 1.5};
    for (size_t i = 0; i < n; ++i) {
      const double a = kAspects[i % 6];  // h / w
      const int h = a <= 1 ? static_cast<int>(std::ceil(long_side * a)) : long_side;
      const int w = a <= 1 ? long_side : static_cast<int>(std::ceil(long_side / a));
      s.Add(MakeImage(h, w, 1 + static_cast<int>(i % 5), seed * 7919u + static_cast<uint32_t>(i),
                      "images/img" + std::to_string(i) + ".jpg"));
    }
    return s;
  }

 private:
  std::vector<FakeRecord> records_;
  std::map<size_t, Status> failures_;
};

// The train options the loader suites start from: a small batch, 2 threads, a fixed seed.
inline LoaderOptions SmallTrainOptions(int batch = 4, int imgsz = 128) {
  LoaderOptions o;
  o.batch = batch;
  o.imgsz = imgsz;
  o.threads = 2;
  o.prefetch = 2;
  o.seed = 42;
  return o;
}

}  // namespace yc::testing
