// Builds a small cache directory the way the builder does: CacheWriter for the data files, then a
// manifest composed from the SplitFiles it returns.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "libcache/cache.h"
#include "libcache/manifest.h"
#include "tests/libcache/storage_test_util.h"

namespace yc::testing {

struct TestCache {
  Manifest manifest;
  std::map<std::string, std::vector<SynthRecord>> records;  // by split
};

inline TestCache BuildTestCache(const std::filesystem::path& dir, const WriterOptions& options,
                                const std::vector<std::pair<std::string, size_t>>& splits, int max_side = 24,
                                bool smooth = false) {
  TestCache out;
  auto writer = CacheWriter::Create(dir, options);
  EXPECT_TRUE(writer.ok()) << writer.status().ToString();
  Manifest& m = out.manifest;
  m.tool_version = "test";
  m.created = ManifestTimestampNow();
  m.dataset_yaml = "synthetic.yaml";
  for (int c = 0; c < 80; ++c) m.names.push_back("class" + std::to_string(c));  // MakeRecord draws classes 0..79
  m.imgsz = max_side;
  m.backend = options.backend;
  m.codec = options.codec;
  m.shard_size = options.shard_size;
  uint32_t seed = 1;
  for (const auto& [name, count] : splits) {
    auto& records = out.records[name];
    records = MakeRecords(count, seed++, max_side, smooth);
    EXPECT_TRUE(writer.value()->BeginSplit(name).ok());
    SplitManifest split;
    split.name = name;
    for (size_t i = 0; i < records.size(); ++i) {
      uint64_t index = 0;
      const Status s = (i % 2 == 0) ? writer.value()->Add(records[i].input(), &index)
                                    : writer.value()->AddEncoded(records[i].Encode(options.codec), &index);
      EXPECT_TRUE(s.ok()) << s.ToString();
      EXPECT_EQ(index, i);
      split.boxes += records[i].boxes.size();
      split.backgrounds += records[i].boxes.empty();
      split.sources.push_back({records[i].source, 100 + i, 1, i, static_cast<int64_t>(i)});
    }
    SplitFiles files;
    const Status s = writer.value()->EndSplit(&files);
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(files.split, name);
    EXPECT_EQ(files.records, count);
    split.records = files.records;
    split.shards = files.shards;
    split.lmdb = files.lmdb;
    m.splits.push_back(std::move(split));
  }
  EXPECT_TRUE(writer.value()->Finish().ok());
  EXPECT_TRUE(WriteManifest(dir, m).ok());
  return out;
}

}  // namespace yc::testing
