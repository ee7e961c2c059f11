// Shared by the CLI tests: a yolov8n (or yolo11n) checkpoint for a synthetic cache's classes (inference at
// imgsz 64), its weights edited first (a NaN, spread BatchNorm scales, ...).
#pragma once

#include <filesystem>
#include <functional>

#include <c10/core/GradMode.h>
#include <gtest/gtest.h>

#include "libcache/cache.h"
#include "trainer/io/checkpoint.h"

namespace yc::trainer::testutil {

inline std::filesystem::path WriteCacheCheckpoint(const std::filesystem::path& cache, const std::filesystem::path& path,
                                                  const std::function<void(DetectionModelImpl&)>& edit = {},
                                                  ModelFamily family = ModelFamily::kV8) {
  Result<std::unique_ptr<Cache>> opened = Cache::Open(cache);
  EXPECT_TRUE(opened.ok()) << opened.status().ToString();
  CheckpointMeta meta;
  meta.model_family = ModelFamilyName(family);
  meta.model_scale = "n";
  meta.names = (*opened)->manifest().names;
  meta.nc = static_cast<int64_t>(meta.names.size());
  meta.options.imgsz = 64;
  meta.options.data = cache.string();
  DetectionModel model(ModelOptions(family, ModelScale::kN, meta.nc));
  if (edit) {
    c10::NoGradGuard no_grad;
    edit(*model);
  }
  CheckpointContents c;
  c.meta = meta;
  c.model = model.get();
  EXPECT_TRUE(WriteCheckpoint(path, c).ok());
  return path;
}

}  // namespace yc::trainer::testutil
