#include "trainer/engine/multi_scale.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace yc::trainer {

namespace {

// SplitMix64's finaliser: a well-mixed 64-bit value from (seed, iteration).
uint64_t Mix(uint64_t seed, uint64_t ni) {
  uint64_t z = seed ^ (ni * 0x9E3779B97F4A7C15ULL) ^ 0x6D756C74695F7363ULL;  // "multi_sc": its own stream
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace

int64_t MultiScaleSize(int64_t imgsz, int64_t stride, uint64_t seed, int64_t ni) {
  // int(imgsz * 0.5), int(imgsz * 1.5 + stride): Python's int() truncates these positive values.
  const auto lo = static_cast<int64_t>(static_cast<double>(imgsz) * 0.5);
  const auto hi = static_cast<int64_t>(static_cast<double>(imgsz) * 1.5 + static_cast<double>(stride));
  const int64_t drawn = lo + static_cast<int64_t>(Mix(seed, static_cast<uint64_t>(ni)) % static_cast<uint64_t>(hi - lo));
  return std::max(drawn / stride * stride, stride);
}

at::Tensor MultiScaleImages(const at::Tensor& images, int64_t size, int64_t stride) {
  const int64_t h = images.size(2), w = images.size(3);
  const double sf = static_cast<double>(size) / static_cast<double>(std::max(h, w));
  if (sf == 1) return images;
  // math.ceil(x * sf / stride) * stride, in double as Python computes it.
  auto side = [&](int64_t x) {
    return static_cast<int64_t>(std::ceil(static_cast<double>(x) * sf / static_cast<double>(stride))) * stride;
  };
  const at::MemoryFormat format = images.suggest_memory_format();
  const std::vector<int64_t> out = {side(h), side(w)};
  return at::upsample_bilinear2d(images, at::IntArrayRef(out), /*align_corners=*/false).contiguous(format);
}

}  // namespace yc::trainer
