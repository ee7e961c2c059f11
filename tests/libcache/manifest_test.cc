#include "libcache/format/manifest.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <functional>
#include <random>

#include <gtest/gtest.h>
#include <xxhash.h>

#include "libcache/base/coding.h"
#include "libcache/base/file_read.h"

#include "tests/test_support.h"

namespace yc {
namespace {

using json = nlohmann::ordered_json;
using testing::TempDir;

Manifest SampleManifest(Backend backend = Backend::kShards) {
  Manifest m;
  m.tool_version = "0.1.0";
  m.created = "2024-05-01T12:00:00Z";
  m.dataset_yaml = "/data/coco128/coco128.yaml";
  m.names = {"person", "bicycle", "car"};
  m.imgsz = 640;
  m.backend = backend;
  m.codec = Codec{Codec::Kind::kZstd, 3};
  m.shard_size = uint64_t{1} << 30;
  SplitManifest train;
  train.name = "train";
  train.records = 5;
  train.boxes = 17;
  train.backgrounds = 1;
  train.excluded = 1;
  if (backend == Backend::kShards) {
    train.shards = {{"train-00000.shard", 3, 4096, 0x0123456789abcdefULL}, {"train-00001.shard", 2, 2048, 0xfedcba9876543210ULL}};
  } else {
    train.lmdb = LmdbEntry{"train.lmdb", 5, 65536, 0xdeadbeefcafef00dULL};
  }
  for (int i = 0; i < 6; ++i)
    train.sources.push_back({"images/train/" + std::to_string(i) + ".jpg", 1000u + i, -5 + 1700000000000000000LL * (i % 2),
                             0x1111111111111111ULL * i, i == 5 ? -1 : i});
  SplitManifest val;
  val.name = "val";
  if (backend == Backend::kLmdb) val.lmdb = LmdbEntry{"val.lmdb", 0, 8192, 1};
  m.splits = {train, val};
  m.build_options = json::parse(R"({"workers": 8, "resize": "area", "nested": {"a": [1, 2, 3]}})");
  m.audit = json::parse(R"({"corrupt": 1, "messages": ["images/train/5.jpg: truncated JPEG"]})");
  return m;
}

void ExpectSame(const Manifest& a, const Manifest& b) {
  EXPECT_EQ(a.format_version, b.format_version);
  EXPECT_EQ(a.tool_version, b.tool_version);
  EXPECT_EQ(a.created, b.created);
  EXPECT_EQ(a.dataset_yaml, b.dataset_yaml);
  EXPECT_EQ(a.names, b.names);
  EXPECT_EQ(a.imgsz, b.imgsz);
  EXPECT_EQ(a.backend, b.backend);
  EXPECT_EQ(a.codec.kind, b.codec.kind);
  EXPECT_EQ(a.codec.level, b.codec.level);
  EXPECT_EQ(a.shard_size, b.shard_size);
  ASSERT_EQ(a.splits.size(), b.splits.size());
  for (size_t i = 0; i < a.splits.size(); ++i) {
    const SplitManifest &x = a.splits[i], &y = b.splits[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.records, y.records);
    EXPECT_EQ(x.boxes, y.boxes);
    EXPECT_EQ(x.backgrounds, y.backgrounds);
    EXPECT_EQ(x.excluded, y.excluded);
    ASSERT_EQ(x.shards.size(), y.shards.size());
    for (size_t k = 0; k < x.shards.size(); ++k) {
      EXPECT_EQ(x.shards[k].file, y.shards[k].file);
      EXPECT_EQ(x.shards[k].records, y.shards[k].records);
      EXPECT_EQ(x.shards[k].bytes, y.shards[k].bytes);
      EXPECT_EQ(x.shards[k].checksum, y.shards[k].checksum);
    }
    ASSERT_EQ(x.lmdb.has_value(), y.lmdb.has_value());
    if (x.lmdb) {
      EXPECT_EQ(x.lmdb->file, y.lmdb->file);
      EXPECT_EQ(x.lmdb->records, y.lmdb->records);
      EXPECT_EQ(x.lmdb->bytes, y.lmdb->bytes);
      EXPECT_EQ(x.lmdb->checksum, y.lmdb->checksum);
    }
    ASSERT_EQ(x.sources.size(), y.sources.size());
    for (size_t k = 0; k < x.sources.size(); ++k) {
      EXPECT_EQ(x.sources[k].path, y.sources[k].path);
      EXPECT_EQ(x.sources[k].size, y.sources[k].size);
      EXPECT_EQ(x.sources[k].mtime_ns, y.sources[k].mtime_ns);
      EXPECT_EQ(x.sources[k].hash, y.sources[k].hash);
      EXPECT_EQ(x.sources[k].record, y.sources[k].record);
    }
  }
  EXPECT_EQ(a.build_options, b.build_options);
  EXPECT_EQ(a.audit, b.audit);
}

TEST(ManifestTest, RoundTripBothBackends) {
  for (Backend backend : {Backend::kShards, Backend::kLmdb}) {
    const Manifest m = SampleManifest(backend);
    const std::string text = SerializeManifest(m);
    auto parsed = ParseManifest(text);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString() << "\n" << text;
    ExpectSame(m, parsed.value());
    EXPECT_EQ(SerializeManifest(parsed.value()), text) << "serialization is stable";
    // Split order is the build order, not alphabetical.
    EXPECT_LT(text.find("\"train\""), text.find("\"val\""));
  }
}

TEST(ManifestTest, SourcesAreOneLinePerImage) {
  const std::string text = SerializeManifest(SampleManifest());
  EXPECT_NE(text.find("\n        {\"path\":\"images/train/0.jpg\",\"size\":1000,"), std::string::npos) << text;
}

TEST(ManifestTest, StringsThatMimicTheSpliceMarkerSurvive) {
  Manifest m = SampleManifest();
  m.names.push_back(std::string("\x01yc-sources-0"));
  m.splits[0].sources[0].path = std::string("\x01yc-sources-1");
  auto parsed = ParseManifest(SerializeManifest(m));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ExpectSame(m, parsed.value());
}

TEST(ManifestTest, WriteIsAtomicAndReadable) {
  TempDir dir;
  const Manifest m = SampleManifest();
  ASSERT_TRUE(WriteManifest(dir.path(), m).ok());
  EXPECT_FALSE(std::filesystem::exists(dir / "manifest.json.tmp"));
  auto read = ReadManifest(dir.path());
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ExpectSame(m, read.value());
  EXPECT_EQ(ReadManifest(dir / "nowhere").status().code(), Status::Code::kNotFound);
}

// Applies `edit` to the JSON of a valid manifest and expects Corruption naming `key`.
void ExpectRejected(const std::function<void(json&)>& edit, const std::string& key,
                    Status::Code code = Status::Code::kCorruption, Backend backend = Backend::kShards) {
  json j = json::parse(SerializeManifest(SampleManifest(backend)));
  edit(j);
  // The field checks themselves: ParseManifest would already refuse the edit by its checksum.
  auto parsed = ParseManifestContent(j.dump(), "cache/manifest.json");
  ASSERT_FALSE(parsed.ok()) << "accepted after editing " << key;
  EXPECT_EQ(parsed.status().code(), code) << parsed.status().ToString();
  EXPECT_NE(parsed.status().message().find("cache/manifest.json: " + key), std::string::npos)
      << "expected key '" << key << "' in: " << parsed.status().message();
}

TEST(ManifestTest, RejectsMissingKeys) {
  for (const char* key : {"format", "format_version", "tool_version", "created", "dataset", "names", "imgsz", "backend",
                          "codec", "shard_size", "splits"})
    ExpectRejected([&](json& j) { j.erase(key); }, key);
  for (const char* key : {"records", "boxes", "backgrounds", "excluded", "shards", "sources"})
    ExpectRejected([&](json& j) { j["splits"]["train"].erase(key); }, std::string("splits.train.") + key);
  for (const char* key : {"file", "records", "bytes", "checksum"})
    ExpectRejected([&](json& j) { j["splits"]["train"]["shards"][1].erase(key); },
                   std::string("splits.train.shards[1].") + key);
  for (const char* key : {"path", "size", "mtime_ns", "hash", "record"})
    ExpectRejected([&](json& j) { j["splits"]["train"]["sources"][2].erase(key); },
                   std::string("splits.train.sources[2].") + key);
  ExpectRejected([](json& j) { j["splits"]["train"].erase("lmdb"); }, "splits.train.lmdb", Status::Code::kCorruption,
                 Backend::kLmdb);
}

TEST(ManifestTest, RejectsWrongTypesAndValues) {
  ExpectRejected([](json& j) { j = json::array(); }, "(root)");
  ExpectRejected([](json& j) { j["format"] = "ffcv"; }, "format");
  ExpectRejected([](json& j) { j["format_version"] = 0; }, "format_version");
  ExpectRejected([](json& j) { j["format_version"] = kManifestFormatVersion + 1; }, "format_version",
                 Status::Code::kUnsupported);
  ExpectRejected([](json& j) { j["format_version"] = "1"; }, "format_version");
  ExpectRejected([](json& j) { j["imgsz"] = -640; }, "imgsz");
  ExpectRejected([](json& j) { j["imgsz"] = 640.5; }, "imgsz");
  ExpectRejected([](json& j) { j["imgsz"] = 0; }, "imgsz");
  ExpectRejected([](json& j) { j["names"][1] = 7; }, "names[1]");
  ExpectRejected([](json& j) { j["backend"] = "tar"; }, "backend");
  ExpectRejected([](json& j) { j["codec"]["name"] = "lz4"; }, "codec.name");
  ExpectRejected([](json& j) { j["codec"]["level"] = 99; }, "codec.level");
  ExpectRejected([](json& j) { j["splits"] = json::array(); }, "splits");
  ExpectRejected([](json& j) { j["splits"]["../etc"] = j["splits"]["val"]; }, "splits.../etc");
  ExpectRejected([](json& j) { j["splits"]["train"]["records"] = 6; }, "splits.train.shards");
  ExpectRejected([](json& j) { j["splits"]["train"]["backgrounds"] = 6; }, "splits.train.backgrounds");
  ExpectRejected([](json& j) { j["splits"]["train"]["boxes"] = -1; }, "splits.train.boxes");
  ExpectRejected([](json& j) { j["splits"]["train"]["shards"][0]["file"] = "../../etc/passwd"; },
                 "splits.train.shards[0].file");
  ExpectRejected([](json& j) { j["splits"]["train"]["shards"][0]["file"] = "sub/dir.shard"; },
                 "splits.train.shards[0].file");
  ExpectRejected([](json& j) { j["splits"]["train"]["shards"][1]["file"] = "train-00000.shard"; },
                 "splits.train.shards[1].file");
  ExpectRejected([](json& j) { j["splits"]["train"]["shards"][0]["checksum"] = "xyz"; },
                 "splits.train.shards[0].checksum");
  ExpectRejected([](json& j) { j["splits"]["train"]["shards"][0]["records"] = 1000; },
                 "splits.train.shards[0].records");
  ExpectRejected([](json& j) { j["splits"]["train"]["shards"][0]["bytes"] = 1e30; },
                 "splits.train.shards[0].bytes");
  ExpectRejected([](json& j) { j["splits"]["train"]["sources"][0]["record"] = 5; }, "splits.train.sources[0].record");
  ExpectRejected([](json& j) { j["splits"]["train"]["sources"][0]["record"] = -2; }, "splits.train.sources[0].record");
  ExpectRejected([](json& j) { j["splits"]["train"]["sources"][0]["mtime_ns"] = 18446744073709551615ULL; },
                 "splits.train.sources[0].mtime_ns");
  ExpectRejected([](json& j) { j["splits"]["train"]["lmdb"] = j["splits"]["train"]["shards"][0]; }, "splits.train.lmdb");
  ExpectRejected([](json& j) { j["splits"]["train"]["lmdb"]["records"] = 4; }, "splits.train.lmdb.records",
                 Status::Code::kCorruption, Backend::kLmdb);
  ExpectRejected([](json& j) { j["splits"]["val"]["lmdb"]["file"] = "train.lmdb"; }, "splits.val.lmdb.file",
                 Status::Code::kCorruption, Backend::kLmdb);
}

TEST(ManifestTest, RejectsMalformedJsonAndHostileNesting) {
  for (const std::string& text : {std::string(""), std::string("{"), std::string("{\"format\": yolocache}"),
                                  std::string("\xff\xfe"), std::string(100000, '['), std::string("[") + std::string(70, '{')}) {
    auto parsed = ParseManifest(text, "m.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().code(), Status::Code::kCorruption);
    EXPECT_EQ(parsed.status().message().rfind("m.json: ", 0), 0u) << parsed.status().message();
  }
  // Deep but legal opaque blobs are fine up to the limit.
  json j = json::parse(SerializeManifest(SampleManifest()));
  std::string nested = "1";
  for (int i = 0; i < 40; ++i) nested = "[" + nested + "]";
  j["audit"] = json::parse(nested);
  EXPECT_TRUE(ParseManifestContent(j.dump()).ok());
}

TEST(ManifestTest, UnknownKeysAreIgnored) {
  json j = json::parse(SerializeManifest(SampleManifest()));
  j["future_field"] = {{"x", 1}};
  j["splits"]["train"]["future"] = true;
  EXPECT_TRUE(ParseManifestContent(j.dump()).ok());
  // ... and covered by the checksum like everything else once written by the serializer's rules.
  EXPECT_FALSE(ParseManifest(j.dump()).ok());
}

Manifest WithAuditReport() {
  Manifest m = SampleManifest();
  m.audit_report = MetadataFileEntry{"audit.json", 1234, 0x0badc0ffee0ddf00ULL};
  return m;
}

TEST(ManifestTest, ChecksumIsTheLastLineAndCoversEveryByteBeforeIt) {
  const std::string text = SerializeManifest(WithAuditReport());
  const std::string lead = "\"manifest_checksum\": \"";
  const size_t at = text.rfind(lead);
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_EQ(text.substr(at + lead.size() + 16), "\"\n}\n");
  EXPECT_EQ(text.substr(at + lead.size(), 16), ChecksumToHex(XXH3_64bits(text.data(), at + lead.size())));
  auto parsed = ParseManifest(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ExpectSame(WithAuditReport(), parsed.value());
  ASSERT_TRUE(parsed->audit_report.has_value());
  EXPECT_EQ(parsed->audit_report->file, "audit.json");
  EXPECT_EQ(parsed->audit_report->bytes, 1234u);
  EXPECT_EQ(parsed->audit_report->checksum, 0x0badc0ffee0ddf00ULL);
  EXPECT_EQ(SerializeManifest(parsed.value()), text);
}

// A bit flipped anywhere (content, key, recorded value, the closing lines) must fail the parse: one
// seeded bit in every byte of the file.
TEST(ManifestTest, EveryByteWithAFlippedBitIsRejected) {
  for (Backend backend : {Backend::kShards, Backend::kLmdb}) {
    Manifest m = WithAuditReport();
    if (backend == Backend::kLmdb) m = SampleManifest(Backend::kLmdb);
    const std::string text = SerializeManifest(m);
    std::mt19937 rng(18);
    for (size_t i = 0; i < text.size(); ++i) {
      std::string damaged = text;
      damaged[i] = static_cast<char>(damaged[i] ^ (1 << (rng() % 8)));
      auto parsed = ParseManifest(damaged, "m.json");
      ASSERT_FALSE(parsed.ok()) << "byte " << i << " of " << text.size() << " flipped, still accepted";
      EXPECT_EQ(parsed.status().message().rfind("m.json: ", 0), 0u) << parsed.status().message();
    }
  }
}

TEST(ManifestTest, EditedValuesAreRejectedByTheChecksum) {
  const std::string text = SerializeManifest(WithAuditReport());
  const std::vector<std::pair<std::string, std::string>> edits = {
      {"\"imgsz\": 640", "\"imgsz\": 4096"},
      {"\"bicycle\"", "\"bicyclf\""},
      {"\"boxes\": 17", "\"boxes\": 18"},
      {ChecksumToHex(0x1111111111111111ULL), ChecksumToHex(0x1111111111111112ULL)},
      {"\"bytes\": 1234", "\"bytes\": 1235"},
      {"0badc0ffee0ddf00", "0badc0ffee0ddf01"},
  };
  for (const auto& [from, to] : edits) {
    std::string edited = text;
    const size_t at = edited.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    edited.replace(at, from.size(), to);
    auto parsed = ParseManifest(edited, "c/manifest.json");
    ASSERT_FALSE(parsed.ok()) << from << " -> " << to;
    EXPECT_EQ(parsed.status().code(), Status::Code::kCorruption);
    EXPECT_NE(parsed.status().message().find("c/manifest.json: manifest_checksum"), std::string::npos)
        << parsed.status().message();
  }
  // An uppercase spelling of the same value is one bit away from the lowercase one: refused too.
  std::string upper = text;
  const size_t lead = upper.rfind("\": \"") + 4;
  for (size_t i = lead; i < lead + 16; ++i) upper[i] = static_cast<char>(std::toupper(static_cast<unsigned char>(upper[i])));
  if (upper != text) {
    EXPECT_FALSE(ParseManifest(upper).ok());
  }
}

TEST(ManifestTest, OldFormatWithoutChecksumAsksForARebuild) {
  Manifest m = SampleManifest();
  m.format_version = 1;
  json j = json::parse(SerializeManifest(m));
  j.erase("manifest_checksum");  // format 1 as the previous yolocache wrote it
  auto parsed = ParseManifest(j.dump(2) + "\n", "old/manifest.json");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), Status::Code::kUnsupported);
  const std::string msg = parsed.status().message();
  EXPECT_EQ(msg.rfind("old/manifest.json: ", 0), 0u) << msg;
  EXPECT_NE(msg.find("older yolocache"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rebuild with `yolocache build`"), std::string::npos) << msg;
  EXPECT_TRUE(ParseManifestContent(j.dump()).ok()) << "still recognisable as ours";

  // A current-format manifest whose checksum line was removed is damage, not age.
  json current = json::parse(SerializeManifest(SampleManifest()));
  current.erase("manifest_checksum");
  parsed = ParseManifest(current.dump(2) + "\n", "c/manifest.json");
  EXPECT_EQ(parsed.status().code(), Status::Code::kCorruption);
  EXPECT_NE(parsed.status().message().find("manifest_checksum: missing"), std::string::npos) << parsed.status().message();
}

TEST(ManifestTest, AuditReportEntryIsValidated) {
  const auto rejected = [](const std::function<void(json&)>& edit, const std::string& key) {
    json j = json::parse(SerializeManifest(WithAuditReport()));
    edit(j);
    auto parsed = ParseManifestContent(j.dump(), "c/manifest.json");
    ASSERT_FALSE(parsed.ok()) << key;
    EXPECT_NE(parsed.status().message().find("c/manifest.json: " + key), std::string::npos) << parsed.status().message();
  };
  rejected([](json& j) { j["audit_report"] = 3; }, "audit_report");
  rejected([](json& j) { j["audit_report"]["file"] = "../audit.json"; }, "audit_report.file");
  rejected([](json& j) { j["audit_report"]["file"] = "train-00000.shard"; }, "audit_report.file");
  rejected([](json& j) { j["audit_report"]["file"] = "manifest.json"; }, "audit_report.file");
  rejected([](json& j) { j["audit_report"]["bytes"] = kMaxMetadataBytes + 1; }, "audit_report.bytes");
  rejected([](json& j) { j["audit_report"].erase("checksum"); }, "audit_report.checksum");
}

// manifest.json that is not a regular file, or far too big, is refused before it is read.
TEST(ManifestTest, ReadRefusesWhatIsNotASmallRegularFile) {
  TempDir dir;
  const std::filesystem::path path = dir / "manifest.json";
  EXPECT_EQ(ReadManifest(dir.path()).status().code(), Status::Code::kNotFound);
  std::filesystem::create_directory(path);
  auto read = ReadManifest(dir.path());
  EXPECT_EQ(read.status().code(), Status::Code::kDataError);  // exit 1: a problem with the cache
  EXPECT_NE(read.status().message().find("a directory"), std::string::npos) << read.status().message();
  std::filesystem::remove(path);
  ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0);
  read = ReadManifest(dir.path());  // would block in open(2) without O_NONBLOCK
  EXPECT_NE(read.status().message().find("a FIFO"), std::string::npos) << read.status().message();
  std::filesystem::remove(path);
  std::filesystem::create_symlink("/dev/zero", path);
  read = ReadManifest(dir.path());  // would read forever
  EXPECT_NE(read.status().message().find("character device"), std::string::npos) << read.status().message();
  std::filesystem::remove(path);
  // A valid manifest followed by a 2 GB sparse tail: refused by size, not read.
  testing::WriteFile(path, SerializeManifest(SampleManifest()));
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(uint64_t{2} << 30)), 0);
  read = ReadManifest(dir.path());
  EXPECT_EQ(read.status().code(), Status::Code::kIOError);
  EXPECT_NE(read.status().message().find("bytes, more than"), std::string::npos) << read.status().message();
}

}  // namespace
}  // namespace yc
