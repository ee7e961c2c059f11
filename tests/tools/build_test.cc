// The build pipeline end to end through the library: synth -> BuildCache -> Cache / VerifyCache, on
// every backend and codec, plus --update, source diffs, damage detection and coco128's known quirks.
#include <cstring>
#include <fstream>
#include <map>

#include <gtest/gtest.h>

#include "libcache/build/builder.h"
#include "libcache/build/source_diff.h"
#include "libcache/cache.h"
#include "libcache/source/labels.h"
#include "libcache/source/synth.h"
#include "libcache/verify/cache_verify.h"
#include "tests/test_support.h"

namespace yc {
namespace {
namespace fs = std::filesystem;
using testing::TempDir;

SynthOptions SmallSynth(int corrupt = 0) {
  SynthOptions o;
  o.train_images = 24;
  o.val_images = 8;
  o.min_side = 64;
  o.max_side = 160;
  o.corrupt = corrupt;
  return o;
}

BuildOptions Options(const fs::path& source, const fs::path& out) {
  BuildOptions b;
  b.source = source;
  b.out = out;
  b.imgsz = 128;
  b.threads = 2;
  return b;
}

void FlipByte(const fs::path& file, uint64_t offset) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x10);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(&c, 1);
}

// Offset of the n-th occurrence of the record magic "YCRD" in a file (records in shards and LMDB).
uint64_t FindRecord(const fs::path& file, int n) {
  const std::string bytes = testing::ReadFile(file);
  size_t pos = 0;
  for (int i = 0; i <= n; ++i) {
    pos = bytes.find("YCRD", i == 0 ? 0 : pos + 1);
    if (pos == std::string::npos) return 0;
  }
  return pos;
}

struct Backendcase {
  Backend backend;
  Codec::Kind codec;
};

class BuildAllBackends : public ::testing::TestWithParam<Backendcase> {
 protected:
  // Builds the synthetic set in `tmp` with the parameter's backend and codec, then flips one byte inside
  // val record 3 (its boxes or pixels). Returns the options it was built with.
  BuildOptions BuildThenFlipARecordByte(const TempDir& tmp) {
    EXPECT_TRUE(GenerateSynthDataset(tmp / "data", SmallSynth()).ok());
    BuildOptions b = Options(tmp / "data" / "data.yaml", tmp / "cache");
    b.backend = GetParam().backend;
    b.codec.kind = GetParam().codec;
    EXPECT_TRUE(BuildCache(b).ok());
    const fs::path file = tmp / "cache" / (b.backend == Backend::kShards ? "val-00000.shard" : "val.lmdb");
    const uint64_t record3 = FindRecord(file, 3);
    EXPECT_GT(record3, 0u);
    FlipByte(file, record3 + 300);
    return b;
  }
};

TEST_P(BuildAllBackends, RoundTripsEveryImageAndLabel) {
  TempDir tmp;
  ASSERT_TRUE(GenerateSynthDataset(tmp / "data", SmallSynth(8)).ok());
  BuildOptions b = Options(tmp / "data" / "data.yaml", tmp / "cache");
  b.backend = GetParam().backend;
  b.codec.kind = GetParam().codec;
  Result<BuildReport> report = BuildCache(b);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  // 8 broken kinds: truncated, empty, bad columns, class range, out-of-range are excluded (5 of them
  // are images that exist), orphan and duplicate are warnings, unsupported-format is excluded.
  EXPECT_EQ(report->splits[0].audit.summary.excluded, 6u);
  EXPECT_EQ(report->splits[0].records, report->splits[0].audit.summary.images - 6);
  EXPECT_EQ(report->splits[1].records, 8u);
  EXPECT_TRUE(fs::exists(tmp / "cache" / kAuditFileName));

  Result<std::unique_ptr<Cache>> cache = Cache::Open(tmp / "cache", OpenOptions{true});
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();
  const RecordSource* train = cache.value()->split("train");
  ASSERT_NE(train, nullptr);
  ASSERT_EQ(train->size(), report->splits[0].records);
  ScratchBuffer scratch;
  for (size_t i = 0; i < train->size(); ++i) {
    RecordView v;
    ASSERT_TRUE(train->Read(i, &v, &scratch).ok());
    EXPECT_EQ(std::max(v.height, v.width), 128);
    EXPECT_EQ(v.channels, 3);
    // Stored boxes are exactly the parsed label file of the stored source.
    const fs::path label = tmp / "data" / "labels" / "train" / fs::path(std::string(v.source)).filename().replace_extension(".txt");
    ParsedLabels parsed = ParseLabels(testing::ReadFile(label), 4);
    ASSERT_EQ(parsed.boxes.size(), v.box_count) << v.source;
    for (size_t k = 0; k < v.box_count; ++k) {
      EXPECT_EQ(parsed.boxes[k].cls, v.boxes[k].cls);
      EXPECT_FLOAT_EQ(parsed.boxes[k].cx, v.boxes[k].cx);
      EXPECT_FLOAT_EQ(parsed.boxes[k].h, v.boxes[k].h);
    }
  }
  EXPECT_TRUE(VerifyCache(tmp / "cache").ok());
}

TEST_P(BuildAllBackends, VerifyNamesTheRecordWhoseByteFlipped) {
  TempDir tmp;
  BuildThenFlipARecordByte(tmp);
  ASSERT_FALSE(HasFailure());
  VerifyReport report = VerifyCache(tmp / "cache");
  ASSERT_FALSE(report.ok());
  bool named = false;
  for (const VerifyProblem& p : report.problems) named = named || (p.split == "val" && p.record >= 0 && !p.source.empty());
  EXPECT_TRUE(named) << report.problems.front().ToString();
}

// Every record of `split` in caches `a` and `b` decodes to the same pixels, boxes and source.
void ExpectSameRecords(const fs::path& a, const fs::path& b, const std::string& split) {
  Result<std::unique_ptr<Cache>> ca = Cache::Open(a, OpenOptions{true}), cb = Cache::Open(b, OpenOptions{true});
  ASSERT_TRUE(ca.ok() && cb.ok());
  const RecordSource *ra = ca.value()->split(split), *rb = cb.value()->split(split);
  ASSERT_EQ(ra->size(), rb->size());
  ScratchBuffer sa, sb;
  for (size_t i = 0; i < ra->size(); ++i) {
    RecordView va, vb;
    ASSERT_TRUE(ra->Read(i, &va, &sa).ok());
    ASSERT_TRUE(rb->Read(i, &vb, &sb).ok());
    EXPECT_EQ(va.source, vb.source);
    ASSERT_EQ(va.height * va.width * va.channels, vb.height * vb.width * vb.channels);
    EXPECT_EQ(std::memcmp(va.pixels, vb.pixels, static_cast<size_t>(va.height * va.width * va.channels)), 0) << i;
    ASSERT_EQ(va.box_count, vb.box_count);
    if (va.box_count > 0) {  // a background record's boxes may be null: memcmp must not see it
      EXPECT_EQ(std::memcmp(va.boxes, vb.boxes, va.box_count * sizeof(Box)), 0) << i;
    }
  }
}

TEST_P(BuildAllBackends, UpdateDecodesARecordThatFailsItsChecksumAgain) {
  TempDir tmp;
  BuildOptions b = BuildThenFlipARecordByte(tmp);
  ASSERT_FALSE(HasFailure());
  b.update = true;
  Result<BuildReport> report = BuildCache(b);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->redecoded_corrupt, 1u);
  ASSERT_EQ(report->splits[1].redecoded_corrupt.size(), 1u);
  EXPECT_EQ(report->splits[1].redecoded_corrupt[0], "images/val/synth_000003.jpg");
  EXPECT_EQ(report->splits[1].reused, 7u);
  EXPECT_TRUE(report->splits[0].redecoded_corrupt.empty());
  EXPECT_TRUE(VerifyCache(tmp / "cache").ok());
  b.update = false;
  b.out = tmp / "fresh";
  ASSERT_TRUE(BuildCache(b).ok());
  ExpectSameRecords(tmp / "cache", tmp / "fresh", "val");
}

INSTANTIATE_TEST_SUITE_P(Backends, BuildAllBackends,
                         ::testing::Values(Backendcase{Backend::kShards, Codec::Kind::kNone},
                                           Backendcase{Backend::kShards, Codec::Kind::kZstd},
                                           Backendcase{Backend::kShards, Codec::Kind::kJpeg},
                                           Backendcase{Backend::kShards, Codec::Kind::kAuto},
                                           Backendcase{Backend::kLmdb, Codec::Kind::kNone},
                                           Backendcase{Backend::kLmdb, Codec::Kind::kZstd},
                                           Backendcase{Backend::kLmdb, Codec::Kind::kJpeg}));

TEST(Build, UpdateReusesUnchangedImagesAndSourceDiffSeesEdits) {
  TempDir tmp;
  ASSERT_TRUE(GenerateSynthDataset(tmp / "data", SmallSynth()).ok());
  const BuildOptions b = Options(tmp / "data" / "data.yaml", tmp / "cache");
  ASSERT_TRUE(BuildCache(b).ok());
  // Same-size edit (Ultralytics' size-only hash misses these), a removal and an addition.
  const fs::path img = tmp / "data" / "images" / "train";
  std::string bytes = testing::ReadFile(img / "synth_000002.jpg");
  bytes[bytes.size() / 2] ^= 0x01;
  testing::WriteFile(img / "synth_000002.jpg", bytes);
  fs::remove(img / "synth_000003.jpg");
  fs::copy_file(tmp / "data" / "images" / "val" / "synth_000001.jpg", img / "zz_new.jpg");

  Result<Manifest> manifest = ReadManifest(tmp / "cache");
  ASSERT_TRUE(manifest.ok());
  Result<std::vector<SourceChange>> diff = DiffSources(*manifest, b.source);
  ASSERT_TRUE(diff.ok());
  std::map<std::string, std::string> seen;
  for (const SourceChange& c : *diff) seen[c.path] = SourceChangeKindName(c.kind);
  EXPECT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen["images/train/synth_000002.jpg"], "changed");
  EXPECT_EQ(seen["images/train/synth_000003.jpg"], "removed");
  EXPECT_EQ(seen["images/train/zz_new.jpg"], "added");

  BuildOptions u = b;
  u.update = true;
  Result<BuildReport> report = BuildCache(u);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  // 24 train images - 1 removed + 1 added; the changed and the added one are decoded, 22 reused.
  EXPECT_EQ(report->splits[0].records, 24u);
  EXPECT_EQ(report->splits[0].reused, 22u);
  EXPECT_EQ(report->splits[1].reused, 8u);
  EXPECT_TRUE(VerifyCache(tmp / "cache").ok());
  manifest = ReadManifest(tmp / "cache");
  ASSERT_TRUE(manifest.ok());
  diff = DiffSources(*manifest, b.source);
  ASSERT_TRUE(diff.ok());
  EXPECT_TRUE(diff->empty());
}

TEST(Build, UpdateMatchesAFreshBuildByteForByte) {
  TempDir tmp;
  ASSERT_TRUE(GenerateSynthDataset(tmp / "data", SmallSynth()).ok());
  BuildOptions b = Options(tmp / "data" / "data.yaml", tmp / "fresh");
  ASSERT_TRUE(BuildCache(b).ok());
  b.out = tmp / "updated";
  ASSERT_TRUE(BuildCache(b).ok());
  // A label edit must be picked up even though the image bytes did not change.
  testing::WriteFile(tmp / "data" / "labels" / "train" / "synth_000001.txt", "1 0.5 0.5 0.25 0.25\n");
  b.update = true;
  ASSERT_TRUE(BuildCache(b).ok());
  b.update = false;
  b.out = tmp / "fresh";
  ASSERT_TRUE(BuildCache(b).ok());
  EXPECT_EQ(testing::ReadFile(tmp / "fresh" / "train-00000.shard"), testing::ReadFile(tmp / "updated" / "train-00000.shard"));
}

// JPEG records are never encoded twice: --update keeps an old stream when a fresh build would write the
// same one (same quality; auto only from auto) and decodes the source again otherwise, so every step
// below ends byte for byte equal to a fresh build with the same --compress.
TEST(Build, UpdateKeepsJpegStreamsOnlyWhereAFreshBuildWouldWriteThem) {
  TempDir tmp;
  ASSERT_TRUE(GenerateSynthDataset(tmp / "data", SmallSynth()).ok());
  BuildOptions b = Options(tmp / "data" / "data.yaml", tmp / "updated");
  ASSERT_TRUE(ParseCodecSpec("jpeg:90", &b.codec).ok());
  Result<BuildReport> first = BuildCache(b);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  const uint64_t jpeg = first->splits[0].jpeg_records;
  EXPECT_GT(jpeg, 20u);  // the synthetic photos at 128 shrink
  testing::WriteFile(tmp / "data" / "labels" / "train" / "synth_000001.txt", "1 0.5 0.5 0.25 0.25\n");
  struct Step {
    const char* compress;
    bool keeps_jpeg;  // reuses the previous step's JPEG records too (else only its raw ones: exact pixels)
  };
  uint64_t previous_jpeg = jpeg;
  for (const Step& step : {Step{"jpeg:90", true}, Step{"jpeg:70", false}, Step{"auto:70", false}, Step{"auto:70", true},
                           Step{"none", false}}) {
    SCOPED_TRACE(step.compress);
    ASSERT_TRUE(ParseCodecSpec(step.compress, &b.codec).ok());
    b.update = true;
    b.out = tmp / "updated";
    Result<BuildReport> report = BuildCache(b);
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    EXPECT_EQ(report->splits[0].reused, step.keeps_jpeg ? 24u : 24u - previous_jpeg);
    previous_jpeg = report->splits[0].jpeg_records;
    b.update = false;
    b.out = tmp / "fresh";
    ASSERT_TRUE(BuildCache(b).ok());
    EXPECT_EQ(testing::ReadFile(tmp / "fresh" / "train-00000.shard"), testing::ReadFile(tmp / "updated" / "train-00000.shard"));
    EXPECT_TRUE(VerifyCache(tmp / "updated").ok());
  }
}

TEST(Build, RefusesToReplaceADirectoryThatIsNotACache) {
  TempDir tmp;
  ASSERT_TRUE(GenerateSynthDataset(tmp / "data", SmallSynth()).ok());
  testing::WriteFile(tmp / "precious" / "thesis.tex", "do not delete");
  Result<BuildReport> report = BuildCache(Options(tmp / "data" / "data.yaml", tmp / "precious"));
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(report.status().message().find("not a yolocache cache"), std::string::npos);
  EXPECT_EQ(testing::ReadFile(tmp / "precious" / "thesis.tex"), "do not delete");
}

TEST(Build, RefusesAnOutputThatOverlapsTheDataset) {
  TempDir tmp;
  const fs::path ds = tmp / "ds";
  ASSERT_TRUE(GenerateSynthDataset(ds, SmallSynth()).ok());
  // A second dataset whose YAML lies outside its root and whose val split is a list file.
  testing::WriteFile(tmp / "y" / "listed.yaml", "path: " + ds.string() + "\ntrain: images/train\nval: val.txt\nnames: [a, b, c, d]\n");
  testing::WriteFile(ds / "val.txt", "./images/val/synth_000001.jpg\n");
  fs::create_directory_symlink(ds / "images", tmp / "link");
  const auto before = testing::TreeSnapshot(tmp.path());
  struct Case {
    fs::path source, out;
    std::string reason;
  };
  const fs::path yaml = ds / "data.yaml";
  const std::vector<Case> cases = {
      {yaml, ds, "is the dataset root"},
      {yaml, ds / "images" / "train", "is split 'train' image folder"},
      {yaml, ds / "labels" / "val" / "cache", "is inside split 'val' label folder"},
      {yaml, ds / "cache", "is inside the dataset root"},  // a new folder inside the dataset
      {yaml, ds / "images" / ".." / "labels" / "train", "is split 'train' label folder"},  // ".." cannot dodge it
      {yaml, tmp / "link" / "train" / "x", "is inside split 'train' image folder"},      // nor can a symlink
      {yaml, tmp.path(), "contains split 'train' image folder"},
      {ds, ds / "images" / "val", "is split 'val' image folder"},  // a bare dataset folder
      {tmp / "y" / "listed.yaml", tmp / "y", "contains the data YAML"},
      {tmp / "y" / "listed.yaml", ds / "val.txt", "is split 'val' image list"},
  };
  for (const Case& c : cases) {
    Result<BuildReport> report = BuildCache(Options(c.source, c.out));
    ASSERT_FALSE(report.ok()) << c.out;
    EXPECT_EQ(report.status().code(), Status::Code::kInvalidArgument) << report.status().ToString();
    EXPECT_EQ(report.status().message().rfind(c.out.string() + ": " + c.reason, 0), 0u) << report.status().message();
  }
  EXPECT_EQ(testing::TreeSnapshot(tmp.path()), before);
  // Beside the dataset is fine.
  EXPECT_TRUE(BuildCache(Options(yaml, tmp / "cache")).ok());
}

TEST(Build, CancelLeavesTheOldCacheAndNoStagingDir) {
  TempDir tmp;
  ASSERT_TRUE(GenerateSynthDataset(tmp / "data", SmallSynth()).ok());
  BuildOptions b = Options(tmp / "data" / "data.yaml", tmp / "cache");
  ASSERT_TRUE(BuildCache(b).ok());
  const std::string before = testing::ReadFile(tmp / "cache" / "manifest.json");
  std::atomic<bool> cancel{false};
  b.cancel = &cancel;
  b.imgsz = 96;
  b.progress = [&](const std::string&, size_t done, size_t) { if (done == 5) cancel = true; };
  Result<BuildReport> report = BuildCache(b);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), Status::Code::kCancelled);
  EXPECT_EQ(testing::ReadFile(tmp / "cache" / "manifest.json"), before);
  for (const auto& e : fs::directory_iterator(tmp.path()))
    EXPECT_EQ(e.path().filename().string().find(".cache.building"), std::string::npos) << e.path();
}

TEST(Build, SourcesAreNeverModified) {
  TempDir tmp;
  ASSERT_TRUE(GenerateSynthDataset(tmp / "data", SmallSynth(8)).ok());
  std::map<std::string, std::string> before;
  for (const auto& e : fs::recursive_directory_iterator(tmp / "data"))
    if (e.is_regular_file()) before[e.path().string()] = testing::ReadFile(e.path());
  ASSERT_TRUE(BuildCache(Options(tmp / "data" / "data.yaml", tmp / "cache")).ok());
  size_t after = 0;
  for (const auto& e : fs::recursive_directory_iterator(tmp / "data")) {
    if (!e.is_regular_file()) continue;
    ++after;
    EXPECT_EQ(before[e.path().string()], testing::ReadFile(e.path())) << e.path();
  }
  EXPECT_EQ(after, before.size());
}

TEST(Coco128, BuildFindsTheKnownQuirksAndVerifiesClean) {
  YC_REQUIRE_SHARED(coco, "coco128");
  TempDir tmp;
  BuildOptions b = Options(coco / "coco128.yaml", tmp / "cache");
  b.imgsz = 320;
  Result<BuildReport> report = BuildCache(b);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const SplitBuildStats& train = report->splits[0];
  EXPECT_EQ(train.split, "train");
  EXPECT_EQ(train.audit.summary.images, 128u);
  EXPECT_EQ(train.audit.summary.backgrounds, 2u);
  EXPECT_EQ(train.audit.summary.excluded, 0u);
  EXPECT_EQ(report->total.errors, 0u);
  EXPECT_EQ(train.audit.summary.problem_counts[static_cast<size_t>(ProblemCode::kLabelOrphan)], 2u);
  EXPECT_EQ(report->records, 256u);
  EXPECT_TRUE(VerifyCache(tmp / "cache").ok());

  Result<std::unique_ptr<Cache>> cache = Cache::Open(tmp / "cache");
  ASSERT_TRUE(cache.ok());
  ScratchBuffer scratch;
  int grey_checked = 0;
  for (const std::string split : {"train", "val"}) {
    const RecordSource* src = cache.value()->split(split);
    for (size_t i = 0; i < src->size(); ++i) {
      RecordView v;
      ASSERT_TRUE(src->Read(i, &v, &scratch).ok());
      if (v.source.find("000000000086.jpg") == std::string::npos && v.source.find("000000007888.jpg") == std::string::npos) continue;
      ++grey_checked;
      ASSERT_EQ(v.channels, 3);  // grayscale JPEG stored as RGB with R == G == B
      for (int p = 0; p < v.height * v.width; p += 97) {
        EXPECT_EQ(v.pixels[3 * p], v.pixels[3 * p + 1]);
        EXPECT_EQ(v.pixels[3 * p], v.pixels[3 * p + 2]);
      }
    }
  }
  EXPECT_EQ(grey_checked, 2);
}

}  // namespace
}  // namespace yc
