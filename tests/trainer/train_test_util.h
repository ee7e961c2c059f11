// Shared by the training-loop tests: a synthetic dataset built into a cache, and small-run options.
#pragma once

#include <filesystem>

#include <gtest/gtest.h>

#include "libcache/build/builder.h"
#include "libcache/source/synth.h"
#include "trainer/config/train_options.h"

namespace yc::trainer::testutil {

struct SynthCacheSpec {
  int train = 16, val = 8;
  int min_side = 64, max_side = 96;
  int cache_imgsz = 64;
  int classes = 4;
  uint64_t seed = 0;
};

// A spec with `train` and `val` images and the other fields at their defaults.
inline SynthCacheSpec Images(int train, int val) {
  SynthCacheSpec spec;
  spec.train = train;
  spec.val = val;
  return spec;
}

// <dir>/data (sources) and <dir>/cache (built); returns the cache directory.
inline std::filesystem::path MakeSynthCache(const std::filesystem::path& dir, const SynthCacheSpec& spec) {
  SynthOptions so;
  so.train_images = spec.train;
  so.val_images = spec.val;
  so.min_side = spec.min_side;
  so.max_side = spec.max_side;
  so.classes = spec.classes;
  so.seed = spec.seed;
  Result<SynthReport> synth = GenerateSynthDataset(dir / "data", so);
  EXPECT_TRUE(synth.ok()) << synth.status().ToString();
  BuildOptions bo;
  bo.source = dir / "data" / "data.yaml";
  bo.out = dir / "cache";
  bo.imgsz = spec.cache_imgsz;
  bo.threads = 1;
  Result<BuildReport> built = BuildCache(bo);
  EXPECT_TRUE(built.ok()) << built.status().ToString();
  return bo.out;
}

// A CPU run that is deterministic and light on a shared 2-core machine: one LibTorch thread (more
// threads spin against other processes), one loader thread.
inline TrainOptions TinyRun(const std::filesystem::path& cache, const std::filesystem::path& out) {
  TrainOptions o;
  o.data = cache.string();
  o.out = out.string();
  o.device = "cpu";
  o.imgsz = 64;
  o.batch = 4;
  o.epochs = 2;
  o.threads = 1;
  o.torch_threads = 1;
  o.prefetch = 2;
  o.log_every = 1;
  return o;
}

}  // namespace yc::trainer::testutil
