// Forged records for the validation tests, as a hostile editor would make them: a record assembled
// field by field with any values (EncodeRecord refuses invalid ones) and its checksum recomputed,
// and a cache "re-sealed" after one record was replaced: the shard's index, index checksum, shard
// checksum and footer (or the LMDB file) and the manifest's entry for the file are recomputed too,
// the manifest through ReadManifest/WriteManifest so that any manifest-level checksum follows. Only
// the validation of the record's values can then tell the forgery apart.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <xxhash.h>

#include "libcache/base/coding.h"
#include "libcache/format/manifest.h"
#include "libcache/format/record_format.h"
#include "libcache/format/shard_format.h"
#include "libcache/store/lmdb_store.h"
#include "tests/test_support.h"

namespace yc::testing {

// A record's fields, encoded as docs/FORMAT.md lays them out with no validation at all.
struct RecordParts {
  uint8_t codec = 0;  // 0 none, 1 zstd
  uint8_t channels = 3;
  uint32_t height = 1, width = 1, orig_height = 1, orig_width = 1;
  std::vector<Box> boxes;
  std::string source;
  std::string pixels;                        // the stored pixel bytes (raw, or one zstd frame)
  std::optional<uint64_t> raw_pixel_bytes;   // default height * width * channels

  // Raw pixels of the current size, every byte `value`.
  void ResizePixels(uint8_t value = 7) {
    pixels.assign(static_cast<size_t>(height) * width * channels, static_cast<char>(value));
  }

  std::string Encode() const {
    const uint64_t pixel_offset = AlignUp(kRecordHeaderSize + boxes.size() * sizeof(Box) + source.size(), 64);
    std::string out(pixel_offset, '\0');
    out += pixels;
    uint8_t* p = reinterpret_cast<uint8_t*>(out.data());
    EncodeFixed32(p + 0, kRecordMagic);
    EncodeFixed16(p + 4, kRecordVersion);
    p[6] = codec;
    p[7] = channels;
    EncodeFixed32(p + 8, height);
    EncodeFixed32(p + 12, width);
    EncodeFixed32(p + 16, orig_height);
    EncodeFixed32(p + 20, orig_width);
    EncodeFixed32(p + 24, static_cast<uint32_t>(boxes.size()));
    EncodeFixed32(p + 28, static_cast<uint32_t>(source.size()));
    EncodeFixed64(p + 32, raw_pixel_bytes ? *raw_pixel_bytes : uint64_t{height} * width * channels);
    EncodeFixed64(p + 40, pixels.size());
    EncodeFixed32(p + 56, static_cast<uint32_t>(pixel_offset));
    if (!boxes.empty()) std::memcpy(p + kRecordHeaderSize, boxes.data(), boxes.size() * sizeof(Box));
    std::memcpy(p + kRecordHeaderSize + boxes.size() * sizeof(Box), source.data(), source.size());
    EncodeFixed64(p + kRecordChecksumOffset, ComputeRecordChecksum(p, out.size()));
    return out;
  }
};

// The fields of a valid record (pixels decoded to raw).
inline RecordParts PartsOf(const std::string& record) {
  RecordParts parts;
  RecordView v;
  ScratchBuffer scratch;
  const Status s = DecodeRecord(reinterpret_cast<const uint8_t*>(record.data()), record.size(), true, &v, &scratch);
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (!s.ok()) return parts;
  parts.channels = static_cast<uint8_t>(v.channels);
  parts.height = static_cast<uint32_t>(v.height);
  parts.width = static_cast<uint32_t>(v.width);
  parts.orig_height = static_cast<uint32_t>(v.orig_height);
  parts.orig_width = static_cast<uint32_t>(v.orig_width);
  parts.boxes.assign(v.boxes, v.boxes + v.box_count);
  parts.source = std::string(v.source);
  parts.pixels.assign(reinterpret_cast<const char*>(v.pixels), static_cast<size_t>(v.height) * v.width * v.channels);
  return parts;
}

// A well-formed zstd frame that decompresses to `content_size` zero bytes and says so in its
// header, built from RLE blocks of 128 KiB (4 bytes each): 4 GiB take a 128 KiB frame.
inline std::string ZstdFrameOfZeros(uint64_t content_size) {
  constexpr uint64_t kBlock = 128 * 1024;
  std::string f;
  f.reserve(14 + 4 * (content_size / kBlock + 1));
  uint8_t head[14];
  EncodeFixed32(head, 0xFD2FB528u);  // frame magic
  head[4] = 0xC0;                    // descriptor: 8-byte content size, not single-segment, no checksum
  head[5] = (17 - 10) << 3;          // window 2^17 = the block size
  EncodeFixed64(head + 6, content_size);
  f.append(reinterpret_cast<const char*>(head), sizeof(head));
  uint64_t left = content_size;
  do {
    const uint64_t n = std::min(left, kBlock);
    left -= n;
    const uint32_t block = (left == 0 ? 1u : 0u) | (1u << 1) | static_cast<uint32_t>(n << 3);  // last | RLE | size
    const char bytes[4] = {static_cast<char>(block & 0xff), static_cast<char>((block >> 8) & 0xff),
                           static_cast<char>((block >> 16) & 0xff), 0};  // 3-byte header, then the byte to repeat
    f.append(bytes, 4);
  } while (left > 0);
  return f;
}

// The ways a record is forged in the tests. Each keeps the record structurally consistent where it
// can (sizes that add up, a recomputed checksum) so that only the value checks stop it.
enum class Forgery {
  kChannels1,      // 1 channel, pixels resized to match
  kChannels4,      // 4 channels, pixels resized to match
  kHuge1Channel,   // 4000x4000x1, pixels resized to match (the inspect overread)
  kOversized,      // RGB, consistent, one side larger than the cache's imgsz
  kSizesDisagree,  // raw_pixel_bytes != height x width x channels
  kClassIntMin,    // a box of class INT_MIN
  kClassNc,        // a box of class = the cache's class count
  kNanBox,         // a NaN centre
  kInfBox,         // an infinite width
  kBoxOutside,     // a centre at 1.5
  kZeroWidth,      // a box without area
  kZstdBomb,       // codec zstd, a real frame declaring 4 GiB; the header keeps the true raw size
};

inline std::vector<Forgery> AllForgeries() {
  // The 16 MB one last: a test that forges them in turn into one shard copies it least often.
  return {Forgery::kChannels1,   Forgery::kChannels4, Forgery::kOversized, Forgery::kSizesDisagree,
          Forgery::kClassIntMin, Forgery::kClassNc,   Forgery::kNanBox,    Forgery::kInfBox,
          Forgery::kBoxOutside,  Forgery::kZeroWidth, Forgery::kZstdBomb,  Forgery::kHuge1Channel};
}

// Forgeries whose header still parses: the LMDB writer (which checks headers) accepts them.
inline bool HeaderParses(Forgery f) {
  return f != Forgery::kChannels1 && f != Forgery::kChannels4 && f != Forgery::kHuge1Channel &&
         f != Forgery::kSizesDisagree;
}

inline const char* ForgeryName(Forgery f) {
  switch (f) {
    case Forgery::kChannels1: return "channels-1";
    case Forgery::kChannels4: return "channels-4";
    case Forgery::kHuge1Channel: return "4000x4000x1";
    case Forgery::kOversized: return "larger-than-imgsz";
    case Forgery::kSizesDisagree: return "sizes-disagree";
    case Forgery::kClassIntMin: return "class-INT_MIN";
    case Forgery::kClassNc: return "class-nc";
    case Forgery::kNanBox: return "nan-box";
    case Forgery::kInfBox: return "inf-box";
    case Forgery::kBoxOutside: return "box-outside";
    case Forgery::kZeroWidth: return "zero-width";
    case Forgery::kZstdBomb: return "zstd-4GiB";
  }
  return "?";
}

// Applies `f` to `parts` for a reader with `limits` (class count and imgsz must be known for
// kClassNc and kOversized); returns a piece of the message the reader must give.
inline std::string Forge(Forgery f, const RecordLimits& limits, RecordParts* parts) {
  if (parts->boxes.empty()) parts->boxes.push_back(Box{0, 0.5f, 0.5f, 0.25f, 0.25f});
  Box& box = parts->boxes.front();
  switch (f) {
    case Forgery::kChannels1:
      parts->channels = 1;
      parts->ResizePixels();
      return "channels 1,";
    case Forgery::kChannels4:
      parts->channels = 4;
      parts->ResizePixels();
      return "channels 4,";
    case Forgery::kHuge1Channel:
      parts->channels = 1;
      parts->height = parts->width = 4000;
      parts->ResizePixels();
      return "channels 1,";
    case Forgery::kOversized:
      parts->height = limits.max_side + 1;
      parts->ResizePixels();
      return "exceeds the cache's imgsz " + std::to_string(limits.max_side);
    case Forgery::kSizesDisagree:
      parts->raw_pixel_bytes = uint64_t{parts->height} * parts->width * parts->channels + 1;
      return "raw pixel bytes do not match";
    case Forgery::kClassIntMin:
      box.cls = std::numeric_limits<int32_t>::min();
      return "box 0: class -2147483648 < 0";
    case Forgery::kClassNc:
      box.cls = static_cast<int32_t>(limits.class_count);
      return "box 0: class " + std::to_string(limits.class_count) + " >= the cache's";
    case Forgery::kNanBox:
      box.cx = std::numeric_limits<float>::quiet_NaN();
      return "box 0: centre nan";
    case Forgery::kInfBox:
      box.w = std::numeric_limits<float>::infinity();
      return "box 0: size inf";
    case Forgery::kBoxOutside:
      box.cy = 1.5f;
      return "box 0: centre 1.5 outside";
    case Forgery::kZeroWidth:
      box.w = 0;
      return "box 0: size 0 outside";
    case Forgery::kZstdBomb:
      parts->codec = 1;
      parts->pixels = ZstdFrameOfZeros(uint64_t{1} << 32);
      return "zstd frame declares 4294967296 decompressed bytes";
  }
  return "?";
}

// The split's record `index` as (shard file, index within it), from the manifest.
inline std::pair<size_t, size_t> LocateShardRecord(const SplitManifest& split, size_t index) {
  size_t first = 0;
  for (size_t s = 0; s < split.shards.size(); ++s) {
    if (index < first + split.shards[s].records) return {s, index - first};
    first += split.shards[s].records;
  }
  ADD_FAILURE() << "record " << index << " is not in split " << split.name;
  return {0, 0};
}

inline SplitManifest* FindSplit(Manifest* m, const std::string& name) {
  for (SplitManifest& s : m->splits)
    if (s.name == name) return &s;
  ADD_FAILURE() << "no split " << name;
  return nullptr;
}

// The stored bytes of record `index` of `split` (either backend).
inline std::string ReadStoredRecord(const std::filesystem::path& dir, const std::string& split, size_t index) {
  auto m = ReadManifest(dir);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return {};
  SplitManifest* sm = FindSplit(&m.value(), split);
  if (sm == nullptr) return {};
  if (m.value().backend == Backend::kLmdb) {
    auto reader = LmdbReader::Open(dir / sm->lmdb->file);
    EXPECT_TRUE(reader.ok()) << reader.status().ToString();
    return reader.ok() ? std::string(reader.value()->value(index)) : std::string();
  }
  const auto [shard, local] = LocateShardRecord(*sm, index);
  const std::string bytes = ReadFile(dir / sm->shards[shard].file);
  const uint8_t* d = reinterpret_cast<const uint8_t*>(bytes.data());
  ShardFooter footer;
  std::vector<ShardIndexEntry> entries;
  const Status s = ParseShardLayout(d, bytes.size(), &footer, &entries);
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (!s.ok() || local >= entries.size()) return {};
  return bytes.substr(entries[local].offset, entries[local].size);
}

// Replaces record `index` of `split` with `record` (stored as is) and re-seals the shard and the
// manifest. Returns the shard's path.
inline std::filesystem::path ReplaceShardRecord(const std::filesystem::path& dir, const std::string& split,
                                                size_t index, const std::string& record) {
  auto m = ReadManifest(dir);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return {};
  SplitManifest* sm = FindSplit(&m.value(), split);
  if (sm == nullptr) return {};
  const auto [shard, local] = LocateShardRecord(*sm, index);
  ShardEntry& entry = sm->shards[shard];
  const std::filesystem::path path = dir / entry.file;
  const std::string old = ReadFile(path);
  ShardFooter footer;
  std::vector<ShardIndexEntry> entries;
  const Status parsed = ParseShardLayout(reinterpret_cast<const uint8_t*>(old.data()), old.size(), &footer, &entries);
  EXPECT_TRUE(parsed.ok()) << parsed.ToString();
  if (!parsed.ok()) return {};

  std::string out(kShardHeaderSize, '\0');
  EncodeShardHeader(reinterpret_cast<uint8_t*>(out.data()));
  std::string index_bytes;
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string rec = i == local ? record : old.substr(entries[i].offset, entries[i].size);
    ShardIndexEntry e;
    e.offset = out.size();
    e.size = rec.size();
    e.checksum = rec.size() >= kRecordHeaderSize ? DecodeFixed64(reinterpret_cast<const uint8_t*>(rec.data()) + kRecordChecksumOffset) : 0;
    out += rec;
    out.resize(AlignUp(out.size(), kShardRecordAlignment), '\0');
    uint8_t buf[kShardIndexEntrySize];
    EncodeShardIndexEntry(e, buf);
    index_bytes.append(reinterpret_cast<const char*>(buf), sizeof(buf));
  }
  ShardFooter f;
  f.index_offset = out.size();
  f.record_count = entries.size();
  f.index_checksum = XXH3_64bits(index_bytes.data(), index_bytes.size());
  out += index_bytes;
  f.shard_checksum = XXH3_64bits(out.data(), out.size());
  uint8_t foot[kShardFooterSize];
  EncodeShardFooter(f, foot);
  out.append(reinterpret_cast<const char*>(foot), sizeof(foot));
  WriteFile(path, out);

  entry.bytes = out.size();
  entry.checksum = f.shard_checksum;
  const Status written = WriteManifest(dir, m.value());
  EXPECT_TRUE(written.ok()) << written.ToString();
  return path;
}

// The same for the LMDB backend: the file is rewritten with LmdbWriter (which checks only the
// record's header) and its size and checksum go into the manifest. Returns the file's path.
inline std::filesystem::path ReplaceLmdbRecord(const std::filesystem::path& dir, const std::string& split,
                                               size_t index, const std::string& record) {
  auto m = ReadManifest(dir);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return {};
  SplitManifest* sm = FindSplit(&m.value(), split);
  if (sm == nullptr || !sm->lmdb) return {};
  const std::filesystem::path path = dir / sm->lmdb->file;
  std::vector<std::string> values;
  {
    auto reader = LmdbReader::Open(path);
    EXPECT_TRUE(reader.ok()) << reader.status().ToString();
    if (!reader.ok()) return {};
    for (size_t i = 0; i < reader.value()->size(); ++i) values.emplace_back(reader.value()->value(i));
  }
  values.at(index) = record;
  auto writer = LmdbWriter::Create(path);
  EXPECT_TRUE(writer.ok()) << writer.status().ToString();
  if (!writer.ok()) return {};
  for (const std::string& v : values) {
    const Status s = writer.value()->Add(v);
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  LmdbFileInfo info;
  const Status finished = writer.value()->Finish(&info);
  EXPECT_TRUE(finished.ok()) << finished.ToString();
  sm->lmdb->bytes = info.bytes;
  sm->lmdb->checksum = info.checksum;
  const Status written = WriteManifest(dir, m.value());
  EXPECT_TRUE(written.ok()) << written.ToString();
  return path;
}

}  // namespace yc::testing
