#include "libcache/format/record_format.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack: no allocation per checksum
#include <xxhash.h>
#include <zstd.h>

#include "libcache/base/coding.h"
#include "libcache/format/jpeg_pixels.h"

namespace yc {

static_assert(std::numeric_limits<float>::is_iec559, "boxes are stored as IEEE-754 binary32");
static_assert(sizeof(Box) == 20 && alignof(Box) == 4, "Box layout is part of the record format");

namespace {

// Header field offsets (docs/FORMAT.md, "Record header").
constexpr size_t kOffMagic = 0, kOffVersion = 4, kOffCodec = 6, kOffChannels = 7, kOffHeight = 8,
                 kOffWidth = 12, kOffOrigHeight = 16, kOffOrigWidth = 20, kOffBoxCount = 24,
                 kOffSourceLength = 28, kOffRawBytes = 32, kOffStoredBytes = 40,
                 kOffChecksum = kRecordChecksumOffset, kOffPixelOffset = 56, kOffReserved = 60;
static_assert(kOffReserved + 4 == kRecordHeaderSize, "header is 64 bytes");

uint64_t PixelOffsetFor(uint64_t box_count, uint64_t source_length) {
  return AlignUp(kRecordHeaderSize + box_count * sizeof(Box) + source_length, kRecordPixelAlignment);
}

struct ZstdDCtxDeleter {
  void operator()(ZSTD_DCtx* c) const { ZSTD_freeDCtx(c); }
};
struct ZstdCCtxDeleter {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};

// One context per thread, created on first use and reused: zstd contexts are large (~100s of KB)
// and not thread-safe, and allocating one per record would put malloc in the hot path.
ZSTD_DCtx* ThreadDCtx() {
  thread_local std::unique_ptr<ZSTD_DCtx, ZstdDCtxDeleter> ctx(ZSTD_createDCtx());
  return ctx.get();
}
ZSTD_CCtx* ThreadCCtx() {
  thread_local std::unique_ptr<ZSTD_CCtx, ZstdCCtxDeleter> ctx(ZSTD_createCCtx());
  return ctx.get();
}

Status Bad(const std::string& reason) { return Status::Corruption("record: " + reason); }

std::string FloatText(float v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(v));
  return buf;
}

// Why a reader refuses box `b` (docs/FORMAT.md, "Record"), or empty. The negated comparisons are
// false for NaN, so NaN fails every range test.
std::string BoxProblem(const Box& b, uint32_t class_count) {
  if (b.cls < 0) return "class " + std::to_string(b.cls) + " < 0";
  if (class_count > 0 && static_cast<uint32_t>(b.cls) >= class_count)
    return "class " + std::to_string(b.cls) + " >= the cache's " + std::to_string(class_count) + " classes";
  const float centre[2] = {b.cx, b.cy}, side[2] = {b.w, b.h};
  for (float v : centre)
    if (!(v >= kMinBoxCentre && v <= kMaxBoxCentre))
      return "centre " + FloatText(v) + " outside [" + FloatText(kMinBoxCentre) + ", " + FloatText(kMaxBoxCentre) + "]";
  for (float v : side)
    if (!(v > 0 && v <= kMaxBoxSide)) return "size " + FloatText(v) + " outside (0, " + FloatText(kMaxBoxSide) + "]";
  return {};
}

// Boxes are read through memcpy: LMDB values (and so `p`) carry no alignment guarantee.
Status CheckBoxes(const uint8_t* p, size_t count, uint32_t class_count) {
  for (size_t i = 0; i < count; ++i) {
    Box b;
    std::memcpy(&b, p + i * sizeof(Box), sizeof(Box));
    const std::string problem = BoxProblem(b, class_count);
    if (!problem.empty()) return Bad("box " + std::to_string(i) + ": " + problem);
  }
  return Status::OK();
}

// A zstd pixel area must be exactly one frame that declares exactly the header's raw size. Checked
// from the frame header before any allocation: a small forged frame can claim gigabytes.
Status CheckZstdFrame(const uint8_t* frame, uint64_t size, uint64_t raw) {
  const unsigned long long declared = ZSTD_getFrameContentSize(frame, size);
  if (declared == ZSTD_CONTENTSIZE_ERROR) return Bad("zstd: pixel bytes do not start with a zstd frame header");
  if (declared == ZSTD_CONTENTSIZE_UNKNOWN) return Bad("zstd frame does not declare its decompressed size");
  if (declared != raw)
    return Bad("zstd frame declares " + std::to_string(declared) + " decompressed bytes, the header " + std::to_string(raw));
  const size_t frame_size = ZSTD_findFrameCompressedSize(frame, size);
  if (ZSTD_isError(frame_size) || frame_size != size) return Bad("zstd: pixel bytes are not exactly one zstd frame");
  return Status::OK();
}

}  // namespace

const char* CodecKindName(Codec::Kind kind) {
  switch (kind) {
    case Codec::Kind::kZstd: return "zstd";
    case Codec::Kind::kJpeg: return "jpeg";
    case Codec::Kind::kAuto: return "auto";
    case Codec::Kind::kNone: break;
  }
  return "none";
}

bool ParseCodecKind(std::string_view name, Codec::Kind* out) {
  if (name == "none") *out = Codec::Kind::kNone;
  else if (name == "zstd") *out = Codec::Kind::kZstd;
  else if (name == "jpeg") *out = Codec::Kind::kJpeg;
  else if (name == "auto") *out = Codec::Kind::kAuto;
  else return false;
  return true;
}

Status ParseCodecSpec(std::string_view text, Codec* out) {
  const size_t colon = text.find(':');
  Codec c;
  if (!ParseCodecKind(text.substr(0, colon), &c.kind))
    return Status::InvalidArgument("'" + std::string(text) + "' is not none, zstd[:LEVEL], jpeg[:QUALITY] or auto[:QUALITY]");
  if (colon != std::string_view::npos) {
    const bool jpeg = c.kind == Codec::Kind::kJpeg || c.kind == Codec::Kind::kAuto;
    if (c.kind == Codec::Kind::kNone) return Status::InvalidArgument("'" + std::string(text) + "': none takes no level");
    const std::string number(text.substr(colon + 1));
    int value = 0;
    size_t used = 0;
    try {
      value = std::stoi(number, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (number.empty() || used != number.size())
      return Status::InvalidArgument("bad " + std::string(jpeg ? "JPEG quality" : "zstd level") + " in '" + std::string(text) + "'");
    if (jpeg && (value < kMinJpegQuality || value > kMaxJpegQuality))
      return Status::InvalidArgument("JPEG quality must be 1..100, got " + number);
    // The range `--compress zstd:LEVEL` always took: zstd's fast levels below -7 save almost nothing.
    if (!jpeg && (value < -7 || value > ZSTD_maxCLevel()))
      return Status::InvalidArgument("zstd level must be -7.." + std::to_string(ZSTD_maxCLevel()) + ", got " + number);
    (jpeg ? c.quality : c.level) = value;
  }
  *out = c;
  return Status::OK();
}

std::string CodecSpec(const Codec& codec) {
  const std::string name = CodecKindName(codec.kind);
  switch (codec.kind) {
    case Codec::Kind::kZstd: return name + ":" + std::to_string(codec.level);
    case Codec::Kind::kJpeg:
    case Codec::Kind::kAuto: return name + ":" + std::to_string(codec.quality);
    case Codec::Kind::kNone: break;
  }
  return name;
}

uint64_t ComputeRecordChecksum(const uint8_t* data, size_t size) {
  static const uint8_t kZero[8] = {};
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  XXH3_64bits_update(&state, data, kOffChecksum);
  XXH3_64bits_update(&state, kZero, sizeof(kZero));
  XXH3_64bits_update(&state, data + kOffChecksum + 8, size - kOffChecksum - 8);
  return XXH3_64bits_digest(&state);
}

Status EncodeRecord(const RecordInput& in, const Codec& codec, std::string* out) {
  if (in.h <= 0 || in.w <= 0 || static_cast<uint32_t>(in.h) > kMaxRecordSide ||
      static_cast<uint32_t>(in.w) > kMaxRecordSide)
    return Status::InvalidArgument("record: image size " + std::to_string(in.h) + "x" + std::to_string(in.w) +
                                   " outside 1.." + std::to_string(kMaxRecordSide));
  if (in.c != static_cast<int>(kRecordChannels))
    return Status::InvalidArgument("record: channels must be 3 (RGB), got " + std::to_string(in.c));
  if (in.orig_h <= 0 || in.orig_w <= 0 || static_cast<uint32_t>(in.orig_h) > kMaxOrigSide ||
      static_cast<uint32_t>(in.orig_w) > kMaxOrigSide)
    return Status::InvalidArgument("record: original size " + std::to_string(in.orig_h) + "x" +
                                   std::to_string(in.orig_w) + " out of range");
  if (in.n > kMaxRecordBoxes) return Status::InvalidArgument("record: too many boxes (" + std::to_string(in.n) + ")");
  if (in.n > 0 && in.boxes == nullptr) return Status::InvalidArgument("record: boxes pointer is null");
  if (in.source.size() > kMaxRecordSourceLength)
    return Status::InvalidArgument("record: source path longer than " + std::to_string(kMaxRecordSourceLength));
  if (in.source.find('\0') != std::string_view::npos)
    return Status::InvalidArgument("record: source path contains a NUL byte");
  if (in.n > 0) {
    // A reader refuses such boxes (DecodeRecord), so they are never written.
    const Status boxes = CheckBoxes(reinterpret_cast<const uint8_t*>(in.boxes), in.n, 0);
    if (!boxes.ok()) return Status::InvalidArgument(boxes.message());
  }
  if (in.pixels == nullptr) return Status::InvalidArgument("record: pixels pointer is null");
  if (codec.kind > Codec::Kind::kAuto) return Status::InvalidArgument("record: unknown codec");
  if (in.jpeg != nullptr) {
    const Status given = CheckJpegPixels(in.jpeg, in.jpeg_bytes, static_cast<uint32_t>(in.h), static_cast<uint32_t>(in.w));
    if (!given.ok()) return Status::InvalidArgument(given.message());
  }

  const uint64_t raw = static_cast<uint64_t>(in.h) * static_cast<uint64_t>(in.w) * static_cast<uint64_t>(in.c);
  if (raw > kMaxRecordPixelBytes) return Status::InvalidArgument("record: image larger than 4 GiB");
  const uint64_t pixel_offset = PixelOffsetFor(in.n, in.source.size());

  Codec::Kind stored_kind = Codec::Kind::kNone;
  uint64_t stored = raw;
  out->clear();
  if (codec.kind == Codec::Kind::kZstd) {
    const size_t bound = ZSTD_compressBound(raw);
    out->resize(pixel_offset + bound);  // zero-filled: header, pads and the path area start clean
    ZSTD_CCtx* cctx = ThreadCCtx();
    if (cctx == nullptr) return Status::IOError("record: cannot allocate a zstd compression context");
    const size_t n = ZSTD_compressCCtx(cctx, out->data() + pixel_offset, bound, in.pixels, raw, codec.level);
    if (ZSTD_isError(n)) return Status::InvalidArgument(std::string("record: zstd: ") + ZSTD_getErrorName(n));
    if (n < raw) {
      stored_kind = Codec::Kind::kZstd;
      stored = n;
    }
  } else if (in.jpeg != nullptr) {
    out->assign(pixel_offset, '\0');
    out->append(reinterpret_cast<const char*>(in.jpeg), in.jpeg_bytes);
    stored_kind = Codec::Kind::kJpeg;
    stored = in.jpeg_bytes;
  } else if ((codec.kind == Codec::Kind::kJpeg || codec.kind == Codec::Kind::kAuto) && in.h <= kMaxJpegSide &&
             in.w <= kMaxJpegSide) {  // a larger image (imgsz 0 keeps originals) stays raw
    const uint64_t bound = JpegPixelsBound(in.h, in.w);
    out->resize(pixel_offset + bound);
    uint64_t n = 0;
    YC_RETURN_IF_ERROR(EncodeJpegPixels(in.pixels, in.h, in.w, codec.quality,
                                        reinterpret_cast<uint8_t*>(out->data()) + pixel_offset, bound, &n));
    const uint8_t* jpeg = reinterpret_cast<const uint8_t*>(out->data()) + pixel_offset;
    bool keep = n < raw;
    if (keep && codec.kind == Codec::Kind::kAuto) {
      thread_local std::vector<uint8_t> decoded;  // the JPEG decoded once, to measure what it lost
      decoded.resize(raw);
      YC_RETURN_IF_ERROR(DecodeJpegPixels(jpeg, n, static_cast<uint32_t>(in.h), static_cast<uint32_t>(in.w), decoded.data()));
      keep = AutoKeepsJpeg(n, raw, PixelPsnr(in.pixels, decoded.data(), raw));
    }
    if (keep) {
      stored_kind = Codec::Kind::kJpeg;
      stored = n;
    }
  }
  if (stored_kind == Codec::Kind::kNone) {
    // Raw storage: asked for, or the codec did not shrink these pixels (enough, for auto).
    // Only the header area is zero-filled; the pixels are copied once (no memset of ~1 MB first).
    out->assign(pixel_offset, '\0');
    out->append(reinterpret_cast<const char*>(in.pixels), raw);
  } else {
    out->resize(pixel_offset + stored);
  }

  uint8_t* p = reinterpret_cast<uint8_t*>(out->data());
  EncodeFixed32(p + kOffMagic, kRecordMagic);
  EncodeFixed16(p + kOffVersion, kRecordVersion);
  p[kOffCodec] = static_cast<uint8_t>(stored_kind);
  p[kOffChannels] = static_cast<uint8_t>(in.c);
  EncodeFixed32(p + kOffHeight, static_cast<uint32_t>(in.h));
  EncodeFixed32(p + kOffWidth, static_cast<uint32_t>(in.w));
  EncodeFixed32(p + kOffOrigHeight, static_cast<uint32_t>(in.orig_h));
  EncodeFixed32(p + kOffOrigWidth, static_cast<uint32_t>(in.orig_w));
  EncodeFixed32(p + kOffBoxCount, static_cast<uint32_t>(in.n));
  EncodeFixed32(p + kOffSourceLength, static_cast<uint32_t>(in.source.size()));
  EncodeFixed64(p + kOffRawBytes, raw);
  EncodeFixed64(p + kOffStoredBytes, stored);
  EncodeFixed64(p + kOffChecksum, 0);
  EncodeFixed32(p + kOffPixelOffset, static_cast<uint32_t>(pixel_offset));
  EncodeFixed32(p + kOffReserved, 0);
  if (in.n > 0) std::memcpy(p + kRecordHeaderSize, in.boxes, in.n * sizeof(Box));
  if (!in.source.empty()) std::memcpy(p + kRecordHeaderSize + in.n * sizeof(Box), in.source.data(), in.source.size());
  EncodeFixed64(p + kOffChecksum, ComputeRecordChecksum(p, out->size()));
  return Status::OK();
}

Status ParseRecordHeader(const uint8_t* data, size_t size, RecordHeader* out) {
  if (data == nullptr || size < kRecordHeaderSize)
    return Bad("truncated: " + std::to_string(size) + " bytes, the header alone is 64");
  if (DecodeFixed32(data + kOffMagic) != kRecordMagic) return Bad("bad magic");
  const uint16_t version = DecodeFixed16(data + kOffVersion);
  if (version != kRecordVersion)
    return Bad("unsupported record version " + std::to_string(version) + " (this build reads 1)");
  RecordHeader h;
  const uint8_t codec = data[kOffCodec];
  if (codec > static_cast<uint8_t>(Codec::Kind::kJpeg)) return Bad("unknown codec " + std::to_string(codec));
  h.codec = static_cast<Codec::Kind>(codec);
  h.channels = data[kOffChannels];
  h.height = DecodeFixed32(data + kOffHeight);
  h.width = DecodeFixed32(data + kOffWidth);
  h.orig_height = DecodeFixed32(data + kOffOrigHeight);
  h.orig_width = DecodeFixed32(data + kOffOrigWidth);
  h.box_count = DecodeFixed32(data + kOffBoxCount);
  h.source_length = DecodeFixed32(data + kOffSourceLength);
  h.raw_pixel_bytes = DecodeFixed64(data + kOffRawBytes);
  h.stored_pixel_bytes = DecodeFixed64(data + kOffStoredBytes);
  h.checksum = DecodeFixed64(data + kOffChecksum);
  h.pixel_offset = DecodeFixed32(data + kOffPixelOffset);

  if (h.channels != kRecordChannels)
    return Bad("channels " + std::to_string(h.channels) + ", version-1 records are RGB (3 channels)");
  if (h.height == 0 || h.width == 0 || h.height > kMaxRecordSide || h.width > kMaxRecordSide)
    return Bad("image size " + std::to_string(h.height) + "x" + std::to_string(h.width) + " out of range");
  if (h.orig_height == 0 || h.orig_width == 0 || h.orig_height > kMaxOrigSide || h.orig_width > kMaxOrigSide)
    return Bad("original size out of range");
  if (h.box_count > kMaxRecordBoxes) return Bad("box count " + std::to_string(h.box_count) + " out of range");
  if (h.source_length > kMaxRecordSourceLength) return Bad("source path length out of range");
  // All products below fit in 64 bits because every factor was bounded above.
  const uint64_t raw = uint64_t{h.height} * h.width * h.channels;
  if (h.raw_pixel_bytes != raw) return Bad("raw pixel bytes do not match height x width x channels");
  if (raw > kMaxRecordPixelBytes) return Bad("image larger than 4 GiB");
  if (h.codec == Codec::Kind::kNone && h.stored_pixel_bytes != raw) return Bad("stored bytes != raw bytes for codec none");
  if (h.codec == Codec::Kind::kZstd && (h.stored_pixel_bytes == 0 || h.stored_pixel_bytes > size))
    return Bad("zstd frame size out of range");
  if (h.codec == Codec::Kind::kJpeg && (h.stored_pixel_bytes == 0 || h.stored_pixel_bytes > size))
    return Bad("jpeg stream size out of range");
  if (h.pixel_offset != PixelOffsetFor(h.box_count, h.source_length)) return Bad("pixel offset does not match layout");
  if (DecodeFixed32(data + kOffReserved) != 0) return Bad("reserved header bytes are not zero");
  if (h.pixel_offset > size || h.stored_pixel_bytes != size - h.pixel_offset)
    return Bad("size " + std::to_string(size) + " does not match header (pixels at " + std::to_string(h.pixel_offset) +
               " + " + std::to_string(h.stored_pixel_bytes) + " bytes)");
  *out = h;
  return Status::OK();
}

Status DecodeRecord(const uint8_t* data, size_t size, bool verify_checksum, RecordView* out,
                    ScratchBuffer* scratch, const RecordLimits& limits) {
  RecordHeader h;
  YC_RETURN_IF_ERROR(ParseRecordHeader(data, size, &h));
  // The checksum first: random damage is then reported as such; the checks below stop a record
  // whose checksum was recomputed after editing (or a reader that does not hash).
  if (verify_checksum) {
    const uint64_t actual = ComputeRecordChecksum(data, size);
    if (actual != h.checksum)
      return Bad("checksum mismatch (stored " + ChecksumToHex(h.checksum) + ", computed " + ChecksumToHex(actual) + ")");
  }
  if (limits.max_side > 0 && (h.height > limits.max_side || h.width > limits.max_side))
    return Bad("image size " + std::to_string(h.height) + "x" + std::to_string(h.width) + " exceeds the cache's imgsz " +
               std::to_string(limits.max_side));
  const uint8_t* boxes = data + kRecordHeaderSize;
  YC_RETURN_IF_ERROR(CheckBoxes(boxes, h.box_count, limits.class_count));
  const size_t box_bytes = static_cast<size_t>(h.box_count) * sizeof(Box);
  const char* source = reinterpret_cast<const char*>(data) + kRecordHeaderSize + box_bytes;
  if (std::memchr(source, 0, h.source_length) != nullptr) return Bad("source path contains a NUL byte");
  const uint8_t* pixels = data + h.pixel_offset;
  if (h.codec == Codec::Kind::kZstd) YC_RETURN_IF_ERROR(CheckZstdFrame(pixels, h.stored_pixel_bytes, h.raw_pixel_bytes));
  if (h.codec == Codec::Kind::kJpeg) YC_RETURN_IF_ERROR(CheckJpegPixels(pixels, h.stored_pixel_bytes, h.height, h.width));

  const bool copy_boxes = h.box_count > 0 && reinterpret_cast<uintptr_t>(boxes) % alignof(Box) != 0;
  // Scratch layout: [boxes, if copied, padded to 64][decoded pixels]. vector storage from
  // operator new is aligned well beyond alignof(Box).
  const size_t box_area = copy_boxes ? AlignUp(box_bytes, 64) : 0;
  const size_t need = box_area + (h.codec != Codec::Kind::kNone ? h.raw_pixel_bytes : 0);
  if (need > 0) {
    if (scratch == nullptr) return Status::InvalidArgument("record: a scratch buffer is needed for this record");
    if (scratch->size() < need) scratch->resize(need);  // grows only: no re-zeroing once warm
  }

  if (h.codec == Codec::Kind::kZstd) {
    ZSTD_DCtx* dctx = ThreadDCtx();
    if (dctx == nullptr) return Status::IOError("record: cannot allocate a zstd decompression context");
    uint8_t* dst = scratch->data() + box_area;
    // Bounded: zstd writes at most the raw size it is given, whatever the frame goes on to claim.
    const size_t n = ZSTD_decompressDCtx(dctx, dst, h.raw_pixel_bytes, pixels, h.stored_pixel_bytes);
    if (ZSTD_isError(n)) return Bad(std::string("zstd: ") + ZSTD_getErrorName(n));
    if (n != h.raw_pixel_bytes)
      return Bad("zstd frame decodes to " + std::to_string(n) + " bytes, expected " + std::to_string(h.raw_pixel_bytes));
    pixels = dst;
  } else if (h.codec == Codec::Kind::kJpeg) {
    uint8_t* dst = scratch->data() + box_area;
    YC_RETURN_IF_ERROR(DecodeJpegPixels(pixels, h.stored_pixel_bytes, h.height, h.width, dst));
    pixels = dst;
  }
  if (copy_boxes) {
    std::memcpy(scratch->data(), boxes, box_bytes);
    boxes = scratch->data();
  }

  out->pixels = pixels;
  out->height = static_cast<int>(h.height);
  out->width = static_cast<int>(h.width);
  out->channels = static_cast<int>(h.channels);
  out->orig_height = static_cast<int>(h.orig_height);
  out->orig_width = static_cast<int>(h.orig_width);
  out->boxes = h.box_count > 0 ? reinterpret_cast<const Box*>(boxes) : nullptr;
  out->box_count = h.box_count;
  out->source = std::string_view(source, h.source_length);
  const bool jpeg = h.codec == Codec::Kind::kJpeg;
  out->jpeg = jpeg ? data + h.pixel_offset : nullptr;
  out->jpeg_bytes = jpeg ? h.stored_pixel_bytes : 0;
  return Status::OK();
}

std::string_view RecordSourcePath(const uint8_t* data, size_t size) {
  RecordHeader h;
  if (!ParseRecordHeader(data, size, &h).ok()) return {};
  return std::string_view(reinterpret_cast<const char*>(data) + kRecordHeaderSize + h.box_count * sizeof(Box),
                          h.source_length);
}

}  // namespace yc
