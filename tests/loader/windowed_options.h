// What the windowed-order tests share (window_order_test.cc, window_deal_test.cc): loader options for records
// of kImgsz pixels a side from a FakeSource, windows of `window_bytes`, two threads; an epoch's batch hashes.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "loader/loader.h"
#include "tests/loader/test_util.h"

namespace yc::testing {

constexpr int kImgsz = 64;
constexpr uint64_t kRecordBytes = 3ull * kImgsz * kImgsz;  // one in-memory record

inline LoaderOptions WindowedOptions(uint64_t window_bytes, uint64_t seed, int batch = 4, int rank = 0, int world = 1) {
  LoaderOptions o;
  o.imgsz = kImgsz, o.batch = batch, o.rank = rank, o.world_size = world;
  o.order = SampleOrder::kWindowed;
  o.window_bytes = window_bytes;
  o.seed = seed;
  o.threads = 2, o.prefetch = 2;
  return o;
}

// The hash of every batch an epoch hands out from batch `first` on; each record is added to `records` where
// given (a record met twice fails the test).
inline std::vector<uint64_t> EpochHashes(const std::shared_ptr<const RecordSource>& src, const LoaderOptions& o,
                                         int epoch, size_t first = 0, std::set<uint64_t>* records = nullptr) {
  auto loader = Loader::Create(src, o);
  EXPECT_TRUE(loader.ok()) << loader.status().ToString();
  if (!loader.ok()) return {};
  EXPECT_TRUE(loader.value()->StartEpoch(epoch, first).ok());
  std::vector<uint64_t> out;
  std::shared_ptr<Batch> b;
  while (loader.value()->Next(&b).ok() && b) {
    out.push_back(HashBatch(*b));
    if (records != nullptr) {
      for (const SampleInfo& s : b->samples) EXPECT_TRUE(records->insert(s.record).second) << s.record << " twice";
    }
  }
  return out;
}

}  // namespace yc::testing
