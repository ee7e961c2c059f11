// Builds a small cache directory the way the builder does: CacheWriter for the data files, then a
// manifest composed from the SplitFiles it returns.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <xxhash.h>

#include "libcache/cache.h"
#include "libcache/format/manifest.h"
#include "tests/libcache/storage_test_util.h"
#include "tests/test_support.h"

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

// Adds an audit.json the way the builder does (its size and checksum recorded in the manifest).
inline void AddAuditReport(const std::filesystem::path& dir, TestCache* cache) {
  std::string text = "{\n  \"splits\": {},\n  \"problems\": [\n";
  for (int i = 0; i < 20; ++i)
    text += std::string(i ? ",\n" : "") + "    {\"split\": \"train\", \"file\": \"images/" + std::to_string(i) +
            ".jpg\", \"severity\": \"warning\", \"code\": \"duplicate-image\", \"message\": \"same bytes\"}";
  text += "\n  ]\n}\n";
  WriteFile(dir / "audit.json", text);
  cache->manifest.audit_report = MetadataFileEntry{"audit.json", text.size(), XXH3_64bits(text.data(), text.size())};
  EXPECT_TRUE(WriteManifest(dir, cache->manifest).ok());
}

// What a hostile or unlucky user may leave where a cache file should be.
enum class HostileFile { kMissing, kDirectory, kFifo, kDevZero, kSparseTail };
inline const char* HostileFileName(HostileFile kind) {
  switch (kind) {
    case HostileFile::kMissing: return "missing";
    case HostileFile::kDirectory: return "a directory";
    case HostileFile::kFifo: return "a FIFO";
    case HostileFile::kDevZero: return "a link to /dev/zero";
    case HostileFile::kSparseTail: return "followed by a 2 GB sparse tail";
  }
  return "?";
}
inline constexpr HostileFile kHostileFiles[] = {HostileFile::kMissing, HostileFile::kDirectory, HostileFile::kFifo,
                                               HostileFile::kDevZero, HostileFile::kSparseTail};

// Turns `path` (an existing file) into `kind`; the sparse tail costs no disk.
inline void MakeHostile(const std::filesystem::path& path, HostileFile kind) {
  if (kind == HostileFile::kSparseTail) {
    ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(uint64_t{2} << 30)), 0);
    return;
  }
  std::filesystem::remove(path);
  if (kind == HostileFile::kDirectory) std::filesystem::create_directory(path);
  if (kind == HostileFile::kFifo) {
    ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0);
  }
  if (kind == HostileFile::kDevZero) std::filesystem::create_symlink("/dev/zero", path);
}

// Runs `fn` and fails the test if it takes longer than `limit`. A call stuck opening the FIFO at
// `fifo` (if any) is released by opening its write end, so a hang fails instead of blocking the suite.
inline void ExpectReturnsWithin(std::chrono::seconds limit, const std::filesystem::path& fifo,
                                const std::function<void()>& fn) {
  std::future<void> done = std::async(std::launch::async, fn);
  if (done.wait_for(limit) == std::future_status::ready) return done.get();
  ADD_FAILURE() << "still running after " << limit.count() << " s (blocked on " << fifo << "?)";
  for (int i = 0; i < 100 && done.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready; ++i) {
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
  }
  done.wait();
}

// The file-backed layouts the read-ahead and page-cache tests cover: raw shards, zstd shards, LMDB.
struct StorageCase {
  Backend backend;
  Codec codec;
  std::string name() const { return BackendName(backend) + std::string(codec.kind == Codec::Kind::kZstd ? " zstd" : ""); }
};
inline std::vector<StorageCase> FileBackedCases() {
  return {{Backend::kShards, Codec{}}, {Backend::kShards, Codec{Codec::Kind::kZstd, 1}}, {Backend::kLmdb, Codec{}}};
}

}  // namespace yc::testing
