// The one record encoding shared by the shard and LMDB backends (docs/FORMAT.md, "Record"):
//
//   [64-byte header][boxes: box_count x yc::Box][source path][zero pad to 64][pixels]
//
// Pixels are raw HWC uint8, one zstd frame of them, or one JPEG stream of them (lossy, encoded once
// at the training size: libcache/format/jpeg_pixels.h). The header's checksum is XXH3_64 over the
// whole record with the checksum field zeroed, so a record verifies itself wherever it is stored.
// Records are produced on builder worker threads (EncodeRecord) and read on loader threads
// (DecodeRecord); both are thread-safe and reuse thread-local zstd contexts and TurboJPEG handles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "libcache/base/box.h"
#include "libcache/record_source.h"

namespace yc {

inline constexpr uint32_t kRecordMagic = 0x44524359;  // "YCRD" as little-endian bytes
inline constexpr uint16_t kRecordVersion = 1;
inline constexpr size_t kRecordHeaderSize = 64;
inline constexpr size_t kRecordPixelAlignment = 64;  // pixel offset within the record
inline constexpr size_t kRecordChecksumOffset = 48;  // byte offset of the checksum field

// Limits enforced on both sides: a record that passes them cannot make a reader allocate or read
// absurd amounts, whatever its bytes say.
inline constexpr uint32_t kMaxRecordSide = 65535;                 // stored height / width
inline constexpr uint32_t kMaxOrigSide = 1u << 30;                // source image height / width
inline constexpr uint32_t kMaxRecordBoxes = 1u << 20;
inline constexpr uint32_t kMaxRecordSourceLength = 4096;
inline constexpr uint64_t kMaxRecordPixelBytes = uint64_t{1} << 32;  // 4 GiB decoded
// Version-1 records hold RGB only: the builder always writes 3 channels and every consumer (loader,
// inspect, bench) reads HWC RGB, so a record claiming any other count is refused, not guessed at.
inline constexpr uint32_t kRecordChannels = 3;
// Box values the builder can store: labels.cc accepts each label value in [-0.01, 1.01] without
// clipping, and a polygon's bounding box can be up to 1.02 wide. A stored box outside these ranges
// (or non-finite, or without area) was not written by a builder.
inline constexpr float kMinBoxCentre = -0.01f, kMaxBoxCentre = 1.01f;
inline constexpr float kMaxBoxSide = 1.0201f;  // 1.01 - (-0.01), plus float rounding of that difference

// The JPEG quality of `--compress jpeg` and `auto` without one: the measured knee on coco128 at 640
// (BENCHMARKS.md, "JPEG records"; docs/FORMAT.md says why).
inline constexpr int kDefaultJpegQuality = 90;
// `auto` keeps an image's JPEG only when it is at most 1/kAutoMinShrink of the raw pixels and decodes
// to within kAutoMinPsnrDb of them; otherwise the image stays raw. Size alone cannot tell: JPEG
// "shrinks" white noise to a third at quality 90 by throwing it away (PSNR ~15 dB), while a photo
// keeps 35+ dB at a ninth. So noise, line art and tiny images stay exact, photos go to JPEG.
inline constexpr uint64_t kAutoMinShrink = 2;
inline constexpr double kAutoMinPsnrDb = 30.0;

struct Codec {
  // kNone, kZstd and kJpeg are also a record's codec byte (0, 1, 2); kAuto is a build policy only:
  // each image as JPEG when that pays (AutoKeepsJpeg), else raw (after FFCV's "smart" write mode).
  enum class Kind : uint8_t { kNone = 0, kZstd = 1, kJpeg = 2, kAuto = 3 };
  Kind kind = Kind::kNone;
  int level = 3;                        // zstd level (ZSTD_minCLevel()..ZSTD_maxCLevel(), 0 = zstd's default)
  int quality = kDefaultJpegQuality;    // jpeg and auto: JPEG quality 1..100
};
const char* CodecKindName(Codec::Kind kind);                    // "none" | "zstd" | "jpeg" | "auto"
bool ParseCodecKind(std::string_view name, Codec::Kind* out);  // inverse of CodecKindName
// `--compress` text: none | zstd[:LEVEL] | jpeg[:QUALITY] | auto[:QUALITY]. InvalidArgument naming
// the text otherwise (levels -7..22, qualities 1..100). Fields the kind does not use keep their defaults.
Status ParseCodecSpec(std::string_view text, Codec* out);
std::string CodecSpec(const Codec& codec);  // "none", "zstd:3", "jpeg:90", "auto:90": ParseCodecSpec's inverse
// Whether `auto` stores an image as a JPEG of `jpeg_bytes`, decoding at `psnr_db` against the image,
// rather than its `raw_bytes` of pixels.
inline bool AutoKeepsJpeg(uint64_t jpeg_bytes, uint64_t raw_bytes, double psnr_db) {
  return jpeg_bytes * kAutoMinShrink <= raw_bytes && psnr_db >= kAutoMinPsnrDb;
}

// What a builder worker hands in: the decoded, resized image and its labels.
struct RecordInput {
  const uint8_t* pixels = nullptr;  // HWC uint8, rows contiguous (stride = w * c)
  int h = 0, w = 0, c = 3;
  int orig_h = 0, orig_w = 0;
  const Box* boxes = nullptr;
  size_t n = 0;                // box count (0 = background image)
  std::string_view source;     // path relative to the dataset root
  // A JPEG stream of exactly these pixels from an earlier build (build --update keeps it instead of
  // encoding the decoded pixels again, which would lose quality twice): stored as is, as codec jpeg,
  // whatever the codec asked for. Must declare h x w (CheckJpegPixels).
  const uint8_t* jpeg = nullptr;
  uint64_t jpeg_bytes = 0;
};

// The parsed fixed header, after structural validation.
struct RecordHeader {
  Codec::Kind codec = Codec::Kind::kNone;
  uint32_t channels = 0, height = 0, width = 0, orig_height = 0, orig_width = 0;
  uint32_t box_count = 0, source_length = 0;
  uint64_t raw_pixel_bytes = 0, stored_pixel_bytes = 0;
  uint64_t checksum = 0;
  uint32_t pixel_offset = 0;
  uint64_t record_size() const { return pixel_offset + stored_pixel_bytes; }
};

// What a reader knows about the records of a cache beyond the format's own limits (from the
// manifest); 0 = unknown, not checked.
struct RecordLimits {
  uint32_t class_count = 0;  // box classes must be < this (the manifest's class names)
  uint32_t max_side = 0;     // stored height and width at most this (the manifest's imgsz)
};

// Encodes `in` into *out (cleared first; its capacity is reused across calls). With zstd or jpeg,
// pixels that do not shrink are stored raw; with auto, pixels whose JPEG does not pay (AutoKeepsJpeg:
// the JPEG is decoded once to measure it) are (the record's own codec byte says which). InvalidArgument on inputs outside
// the limits above (channels other than 3, boxes a reader would refuse).
Status EncodeRecord(const RecordInput& in, const Codec& codec, std::string* out);

// Validates every header field against `size` (magic, version, channels, limits, lengths, exact
// record size, reserved bytes) without touching boxes, pixels or the checksum. Corruption on any
// mismatch.
Status ParseRecordHeader(const uint8_t* data, size_t size, RecordHeader* out);

// XXH3_64 of the record with its checksum field taken as zero. Requires size >= kRecordHeaderSize.
uint64_t ComputeRecordChecksum(const uint8_t* data, size_t size);

// Decodes a record. Raw pixels point into `data` (zero copy); zstd and jpeg pixels are decoded into
// *scratch, which only ever grows (out->jpeg then points at the stored stream in `data`). Boxes point
// into `data` when it is aligned for yc::Box (shards), otherwise they are copied into *scratch (LMDB
// values have no alignment guarantee). With verify_checksum the whole record is hashed first.
// out->index is left for the caller to set. Every value is validated before use, checksum or not:
// the header (ParseRecordHeader), stored sides against limits.max_side, every box (class in
// 0..limits.class_count-1, values finite and in the ranges above, positive size), a zstd frame's
// declared content size against the header's raw size and a JPEG stream's declared sides against the
// header's, both before anything is allocated. So a record with a forged (recomputed) checksum can
// neither crash a consumer nor make it allocate more than the header's bounded raw size.
// Corruption on any malformed or mismatching record; never reads outside [data, data + size).
Status DecodeRecord(const uint8_t* data, size_t size, bool verify_checksum, RecordView* out,
                    ScratchBuffer* scratch, const RecordLimits& limits = {});

// The source path of a record whose header parses, else empty: lets reports name a damaged record.
std::string_view RecordSourcePath(const uint8_t* data, size_t size);

}  // namespace yc
