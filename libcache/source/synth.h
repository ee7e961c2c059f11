// A deterministic synthetic YOLO dataset: K classes of simple coloured shapes on textured backgrounds,
// JPEG images of varied sizes, YOLO label files and an Ultralytics data YAML. Learnable by a detector
// (each class has its own shape and hue), so it is the embedded default of the demo and of the tests.
// With `corrupt` > 0 it also adds broken files of several kinds, for exercising the audit.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "base/status.h"

namespace yc {

struct SynthOptions {
  int train_images = 256;
  int val_images = 64;
  int classes = 4;         // 1..8 (circle, rectangle, triangle, cross, ring, diamond, ellipse, star)
  int min_side = 256;      // image sides are drawn from [min_side, max_side]
  int max_side = 640;
  int max_objects = 6;     // per image, at least 1 (except background images)
  double background_fraction = 0.05;  // images with no objects and no label file
  int corrupt = 0;         // broken files added to the train split (cycled through the kinds below)
  int jpeg_quality = 90;
  uint64_t seed = 0;
  const std::atomic<bool>* cancel = nullptr;  // set to stop (Ctrl-C): the partial output is removed
};

struct SynthReport {
  std::filesystem::path yaml;
  int images = 0, boxes = 0, backgrounds = 0;
  std::vector<std::string> corrupt_files;  // "kind: relative path"
};

// Writes <out>/data.yaml, <out>/images/{train,val}/*.jpg, <out>/labels/{train,val}/*.txt.
// Fails if <out> exists and is not empty (never overwrites a user's files). On any failure, and when
// cancelled (Status::Cancelled), what was written is removed again.
Result<SynthReport> GenerateSynthDataset(const std::filesystem::path& out, const SynthOptions& options);

// Class names used by the generator, in class-id order.
const std::vector<std::string>& SynthClassNames();

}  // namespace yc
