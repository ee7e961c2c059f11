// libFuzzer target for the record decoder with forged checksums: the input is one record whose
// checksum field is recomputed before decoding, so the fuzzer is never stopped by the hash and only
// the value validation of DecodeRecord stands between a malformed record and its consumers. It
// decodes with hashing on and the limits a cache's manifest gives (class count, imgsz), then
//   - touches every pixel, box and source byte it gets (ASan sees any read outside the record or
//     the scratch buffer),
//   - aborts if an accepted record breaks a rule the consumers rely on (RGB, boxes in range),
//   - re-encodes what it got: whatever a reader accepts, the writer must accept too (a JPEG record
//     also with its stream kept as is, the way build --update keeps one).
// The input is copied to an exact-size heap block, at an odd address on every other run (LMDB
// values have no alignment guarantee, which takes the box-copy path).
//
// Seeds: on start, an empty corpus directory given on the command line is filled with a few valid
// records (raw, zstd, jpeg, background, long path), so mutation starts past the header checks and
// into the JPEG stream's header and entropy-coded data.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "libcache/base/box.h"
#include "libcache/base/coding.h"
#include "libcache/format/record_format.h"

namespace {

constexpr yc::RecordLimits kLimits{/*class_count=*/80, /*max_side=*/512};

std::string SeedRecord(int h, int w, size_t boxes, const std::string& source, yc::Codec::Kind codec) {
  std::vector<uint8_t> pixels(static_cast<size_t>(h) * w * 3);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>((i / 24) * 7 + (i % 3) * 40);
  std::vector<yc::Box> b;
  for (size_t i = 0; i < boxes; ++i)
    b.push_back(yc::Box{static_cast<int32_t>(i % 80), 0.1f + 0.1f * i, 0.5f, 0.2f, 0.3f});
  yc::RecordInput in;
  in.pixels = pixels.data();
  in.h = h;
  in.w = w;
  in.orig_h = h * 2;
  in.orig_w = w * 2;
  in.boxes = b.data();
  in.n = b.size();
  in.source = source;
  std::string out;
  yc::Codec c;
  c.kind = codec;
  if (!yc::EncodeRecord(in, c, &out).ok()) std::abort();
  return out;
}

bool IsEmptyDirectory(const char* path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec) && std::filesystem::is_empty(path, ec) && !ec;
}

void WriteSeeds(const char* dir) {
  const std::string seeds[] = {
      SeedRecord(8, 8, 2, "images/a.jpg", yc::Codec::Kind::kNone),
      SeedRecord(24, 32, 3, "images/smooth.png", yc::Codec::Kind::kZstd),
      SeedRecord(64, 48, 2, "images/photo.jpg", yc::Codec::Kind::kJpeg),
      SeedRecord(3, 5, 0, "", yc::Codec::Kind::kNone),
      SeedRecord(4, 4, 1, std::string(200, 'p') + ".jpg", yc::Codec::Kind::kNone),
  };
  for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); ++i) {
    std::ofstream out(std::string(dir) + "/seed-" + std::to_string(i), std::ios::binary);
    out.write(seeds[i].data(), static_cast<std::streamsize>(seeds[i].size()));
  }
}

// The rules every consumer relies on for an accepted record (docs/FORMAT.md, "Record").
bool Acceptable(const yc::RecordView& v) {
  if (v.channels != static_cast<int>(yc::kRecordChannels) || v.height <= 0 || v.width <= 0) return false;
  if (static_cast<uint32_t>(v.height) > kLimits.max_side || static_cast<uint32_t>(v.width) > kLimits.max_side) return false;
  if (v.pixels == nullptr || (v.box_count > 0 && v.boxes == nullptr)) return false;
  for (size_t i = 0; i < v.box_count; ++i) {
    const yc::Box& b = v.boxes[i];
    if (b.cls < 0 || static_cast<uint32_t>(b.cls) >= kLimits.class_count) return false;
    if (!std::isfinite(b.cx) || !std::isfinite(b.cy) || !(b.w > 0) || !(b.h > 0) || !std::isfinite(b.w) ||
        !std::isfinite(b.h))
      return false;
  }
  return true;
}

// Reads every byte the view points at.
uint64_t Touch(const yc::RecordView& v) {
  uint64_t sum = 0;
  const size_t n = static_cast<size_t>(v.height) * v.width * v.channels;
  for (size_t i = 0; i < n; ++i) sum += v.pixels[i];
  for (size_t i = 0; i < v.box_count; ++i) {
    const yc::Box& b = v.boxes[i];
    sum += static_cast<uint32_t>(b.cls);
    sum += static_cast<uint64_t>(b.cx * 1000) + static_cast<uint64_t>(b.cy * 1000);
    sum += static_cast<uint64_t>(b.w * 1000) + static_cast<uint64_t>(b.h * 1000);
  }
  for (char c : v.source) sum += static_cast<uint8_t>(c);
  return sum;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  for (int i = 1; i < *argc; ++i) {
    const char* arg = (*argv)[i];
    if (arg[0] != '-' && IsEmptyDirectory(arg)) WriteSeeds(arg);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static bool odd = false;
  odd = !odd;
  const size_t shift = odd ? 1 : 0;
  std::unique_ptr<uint8_t[]> copy(new uint8_t[size + shift]);
  if (size > 0) std::memcpy(copy.get() + shift, data, size);
  uint8_t* d = copy.get() + shift;
  // Forge: the checksum a writer would compute, so only validation can refuse the record.
  if (size >= yc::kRecordHeaderSize) yc::EncodeFixed64(d + yc::kRecordChecksumOffset, yc::ComputeRecordChecksum(d, size));

  yc::ScratchBuffer scratch;
  yc::RecordView v;
  const yc::Status s = yc::DecodeRecord(d, size, /*verify_checksum=*/true, &v, &scratch, kLimits);
  if (!s.ok()) {
    if (s.code() != yc::Status::Code::kCorruption) std::abort();
    return 0;
  }
  if (!Acceptable(v)) std::abort();
  volatile uint64_t sink = Touch(v);
  (void)sink;

  yc::RecordInput in;
  in.pixels = v.pixels;
  in.h = v.height;
  in.w = v.width;
  in.c = v.channels;
  in.orig_h = v.orig_height;
  in.orig_w = v.orig_width;
  in.boxes = v.boxes;
  in.n = v.box_count;
  in.source = v.source;
  std::string again;
  if (!yc::EncodeRecord(in, yc::Codec{}, &again).ok()) std::abort();
  if (v.jpeg != nullptr) {
    in.jpeg = v.jpeg;
    in.jpeg_bytes = v.jpeg_bytes;
    if (!yc::EncodeRecord(in, yc::Codec{}, &again).ok()) std::abort();
  }
  return 0;
}
