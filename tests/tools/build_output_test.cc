// `yolocache build` as a user runs it, where it could destroy or corrupt something: an --out folder that is
// not a cache (or is the dataset itself), and --update over an old cache whose records were damaged.
#include <chrono>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "libcache/base/coding.h"
#include "libcache/format/record_format.h"
#include "libcache/source/synth.h"
#include "tests/test_support.h"

namespace yc {
namespace {
namespace fs = std::filesystem;
using testing::CliRun;
using testing::TempDir;

using testing::Yolocache;

void Synth(const fs::path& dir) {
  SynthOptions o;
  o.train_images = 16;
  o.val_images = 8;
  o.min_side = 64;
  o.max_side = 160;
  ASSERT_TRUE(GenerateSynthDataset(dir, o).ok());
}

CliRun Build(const TempDir& tmp, const fs::path& data, const fs::path& out, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"build", data.string(), "-o", out.string(), "--imgsz", "64", "-j", "2"};
  args.insert(args.end(), extra.begin(), extra.end());
  return Yolocache(tmp, args);
}

// No staging directory of a refused build is left beside its target.
void ExpectNoStagingDirs(const fs::path& parent) {
  for (const auto& e : fs::directory_iterator(parent))
    EXPECT_EQ(e.path().filename().string().find(".building-"), std::string::npos) << e.path();
}

TEST(BuildOutput, RefusesAFolderWhoseManifestJsonIsNotOurs) {
  TempDir tmp;
  Synth(tmp / "ds");
  const fs::path victim = tmp / "victim";
  testing::WriteFile(victim / "manifest.json", "{\"name\":\"webapp\"}\n");
  testing::WriteFile(victim / "src" / "main.c", "int main() { return 0; }\n");
  const auto before = testing::TreeSnapshot(victim);
  CliRun r = Build(tmp, tmp / "ds" / "data.yaml", victim);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(victim.string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("not a yolocache manifest"), std::string::npos) << r.err;
  EXPECT_EQ(testing::TreeSnapshot(victim), before);
  ExpectNoStagingDirs(tmp.path());
}

TEST(BuildOutput, RefusesTheDatasetAFolderInsideItAndItsParent) {
  TempDir tmp;
  const fs::path parent = tmp / "work";
  const fs::path ds = parent / "ds";
  Synth(ds);
  // The dataset holds a manifest.json of its own, as in the issue: that alone once made it "a cache".
  testing::WriteFile(ds / "manifest.json", "{\"name\":\"webapp\"}\n");
  const auto before = testing::TreeSnapshot(parent);
  // More places (symlinks, "..", list files, bare folders): Build.RefusesAnOutputThatOverlapsTheDataset.
  const std::vector<std::pair<fs::path, std::string>> outs = {
      {ds, "is the dataset root"},
      {ds / "images", "is inside the dataset root"},
      {parent, "contains split 'train' image folder"},
  };
  for (const auto& [out, reason] : outs) {
    CliRun r = Build(tmp, ds / "data.yaml", out);
    EXPECT_EQ(r.exit_code, 2) << out << ": " << r.err;
    EXPECT_NE(r.err.find(out.string() + ": " + reason), std::string::npos) << r.err;
  }
  EXPECT_EQ(testing::TreeSnapshot(parent), before);
  ExpectNoStagingDirs(parent);
  ExpectNoStagingDirs(ds);
}

TEST(BuildOutput, ReplacesACacheButNotOneWithAForeignFileInside) {
  TempDir tmp;
  Synth(tmp / "ds");
  const fs::path yaml = tmp / "ds" / "data.yaml";
  const fs::path cache = tmp / "cache";
  ASSERT_EQ(Build(tmp, yaml, cache).exit_code, 0);
  // Over an existing cache, even one of another backend: replaced whole, nothing stale left.
  CliRun r = Build(tmp, yaml, cache, {"--backend", "lmdb"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(cache)) names.insert(e.path().filename().string());
  EXPECT_EQ(names, (std::set<std::string>{"audit.json", "manifest.json", "train.lmdb", "val.lmdb"}));

  testing::WriteFile(cache / "notes.txt", "my notes");
  const auto before = testing::TreeSnapshot(cache);
  r = Build(tmp, yaml, cache);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(cache.string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'notes.txt'"), std::string::npos) << r.err;
  EXPECT_EQ(testing::TreeSnapshot(cache), before);
  ExpectNoStagingDirs(tmp.path());
  // An empty folder is fine.
  fs::create_directory(tmp / "empty");
  EXPECT_EQ(Build(tmp, yaml, tmp / "empty").exit_code, 0);
}

// Offset of record `n` in a shard (found by its magic; synth pixels never spell "YCRD").
size_t RecordOffset(const std::string& shard, int n) {
  size_t at = 0;
  for (int i = 0; i <= n; ++i) at = shard.find("YCRD", i == 0 ? 0 : at + 1);
  return at;
}

// Flips one pixel byte of record `n` of an uncompressed shard; returns the record's source path.
std::string FlipPixelByte(const fs::path& shard, int n) {
  std::string bytes = testing::ReadFile(shard);
  const size_t at = RecordOffset(bytes, n);
  const uint8_t* record = reinterpret_cast<const uint8_t*>(bytes.data()) + at;
  // Header fields (docs/FORMAT.md): box_count at 24, source_length at 28, pixel_offset at 56.
  const std::string source(reinterpret_cast<const char*>(record) + kRecordHeaderSize + DecodeFixed32(record + 24) * sizeof(Box),
                           DecodeFixed32(record + 28));
  bytes[at + DecodeFixed32(record + 56) + 7] ^= 0x20;  // pixel_offset + 7
  testing::WriteFile(shard, bytes);
  return source;
}

TEST(BuildOutput, UpdateDecodesACorruptOldRecordAgainAndMatchesAFreshBuild) {
  TempDir tmp;
  Synth(tmp / "ds");
  const fs::path yaml = tmp / "ds" / "data.yaml";
  const fs::path cache = tmp / "cache";
  ASSERT_EQ(Build(tmp, yaml, cache).exit_code, 0);
  // One pixel byte of record 0: the shard's own checksums now disagree, but --update used to copy the
  // pixels into the new cache under a freshly computed, valid checksum.
  const fs::path shard = cache / "train-00000.shard";
  const std::string damaged = FlipPixelByte(shard, 0);
  ASSERT_FALSE(damaged.empty());
  const fs::path image = tmp / "ds" / "images" / "train" / "synth_000001.jpg";
  fs::last_write_time(image, fs::last_write_time(image) + std::chrono::seconds(5));  // touched, same bytes

  CliRun r = Build(tmp, yaml, cache, {"--update", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["redecoded_corrupt"], 1);
  EXPECT_EQ(j["splits"]["train"]["redecoded_corrupt"], 1);
  EXPECT_EQ(j["splits"]["train"]["reused"], 15);
  EXPECT_EQ(j["splits"]["val"]["reused"], 8);
  EXPECT_EQ(j["splits"]["train"]["redecoded_corrupt_sources"], nlohmann::json::array({damaged}));
  EXPECT_NE(r.err.find(damaged + ": its record in the old cache was corrupt"), std::string::npos) << r.err;

  // The text report counts them too (a pixel of record 3 this time).
  const std::string damaged3 = FlipPixelByte(shard, 3);
  r = Build(tmp, yaml, cache, {"--update"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("15 reused, 1 re-decoded because their old record was corrupt"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find(damaged3), std::string::npos) << r.err;

  CliRun v = Yolocache(tmp, {"verify", cache.string(), "--strict"});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  ASSERT_EQ(Build(tmp, yaml, tmp / "fresh").exit_code, 0);
  for (const char* file : {"train-00000.shard", "val-00000.shard"})
    EXPECT_EQ(testing::ReadFile(cache / file), testing::ReadFile(tmp / "fresh" / file)) << file;
}

}  // namespace
}  // namespace yc
