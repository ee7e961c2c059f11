// Loader options shared by the windowed-order tests (window_order_test.cc, window_deal_test.cc): records of
// kWindowTestImgsz pixels a side from a FakeSource, windows of `window_bytes`, two threads.
#pragma once

#include <cstdint>

#include "loader/loader.h"

namespace yc::testing {

constexpr int kWindowTestImgsz = 64;
constexpr uint64_t kWindowTestRecordBytes = 3ull * kWindowTestImgsz * kWindowTestImgsz;  // one in-memory record

inline LoaderOptions WindowedOptions(uint64_t window_bytes, uint64_t seed, int batch = 4, int rank = 0, int world = 1) {
  LoaderOptions o;
  o.imgsz = kWindowTestImgsz, o.batch = batch, o.rank = rank, o.world_size = world;
  o.order = SampleOrder::kWindowed;
  o.window_bytes = window_bytes;
  o.seed = seed;
  o.threads = 2, o.prefetch = 2;
  return o;
}

}  // namespace yc::testing
