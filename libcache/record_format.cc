#include "libcache/record_format.h"

#include <cstring>
#include <limits>
#include <memory>

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack: no allocation per checksum
#include <xxhash.h>
#include <zstd.h>

#include "libcache/coding.h"

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

}  // namespace

const char* CodecKindName(Codec::Kind kind) { return kind == Codec::Kind::kZstd ? "zstd" : "none"; }

bool ParseCodecKind(std::string_view name, Codec::Kind* out) {
  if (name == "none") *out = Codec::Kind::kNone;
  else if (name == "zstd") *out = Codec::Kind::kZstd;
  else return false;
  return true;
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
  if (in.c < 1 || in.c > 4) return Status::InvalidArgument("record: channels must be 1..4, got " + std::to_string(in.c));
  if (in.orig_h <= 0 || in.orig_w <= 0 || static_cast<uint32_t>(in.orig_h) > kMaxOrigSide ||
      static_cast<uint32_t>(in.orig_w) > kMaxOrigSide)
    return Status::InvalidArgument("record: original size " + std::to_string(in.orig_h) + "x" +
                                   std::to_string(in.orig_w) + " out of range");
  if (in.n > kMaxRecordBoxes) return Status::InvalidArgument("record: too many boxes (" + std::to_string(in.n) + ")");
  if (in.n > 0 && in.boxes == nullptr) return Status::InvalidArgument("record: boxes pointer is null");
  if (in.source.size() > kMaxRecordSourceLength)
    return Status::InvalidArgument("record: source path longer than " + std::to_string(kMaxRecordSourceLength));
  if (in.pixels == nullptr) return Status::InvalidArgument("record: pixels pointer is null");
  if (codec.kind != Codec::Kind::kNone && codec.kind != Codec::Kind::kZstd)
    return Status::InvalidArgument("record: unknown codec");

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
  }
  if (stored_kind == Codec::Kind::kNone) {
    // Raw storage, either asked for or because zstd did not shrink these pixels (noise-like images).
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
  if (codec > static_cast<uint8_t>(Codec::Kind::kZstd)) return Bad("unknown codec " + std::to_string(codec));
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

  if (h.channels < 1 || h.channels > 4) return Bad("channels " + std::to_string(h.channels) + " not in 1..4");
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
  if (h.pixel_offset != PixelOffsetFor(h.box_count, h.source_length)) return Bad("pixel offset does not match layout");
  if (DecodeFixed32(data + kOffReserved) != 0) return Bad("reserved header bytes are not zero");
  if (h.pixel_offset > size || h.stored_pixel_bytes != size - h.pixel_offset)
    return Bad("size " + std::to_string(size) + " does not match header (pixels at " + std::to_string(h.pixel_offset) +
               " + " + std::to_string(h.stored_pixel_bytes) + " bytes)");
  *out = h;
  return Status::OK();
}

Status DecodeRecord(const uint8_t* data, size_t size, bool verify_checksum, RecordView* out,
                    ScratchBuffer* scratch) {
  RecordHeader h;
  YC_RETURN_IF_ERROR(ParseRecordHeader(data, size, &h));
  if (verify_checksum) {
    const uint64_t actual = ComputeRecordChecksum(data, size);
    if (actual != h.checksum)
      return Bad("checksum mismatch (stored " + ChecksumToHex(h.checksum) + ", computed " + ChecksumToHex(actual) + ")");
  }

  const uint8_t* boxes = data + kRecordHeaderSize;
  const bool copy_boxes = h.box_count > 0 && reinterpret_cast<uintptr_t>(boxes) % alignof(Box) != 0;
  const size_t box_bytes = static_cast<size_t>(h.box_count) * sizeof(Box);
  // Scratch layout: [boxes, if copied, padded to 64][decompressed pixels]. vector storage from
  // operator new is aligned well beyond alignof(Box).
  const size_t box_area = copy_boxes ? AlignUp(box_bytes, 64) : 0;
  const size_t need = box_area + (h.codec == Codec::Kind::kZstd ? h.raw_pixel_bytes : 0);
  if (need > 0) {
    if (scratch == nullptr) return Status::InvalidArgument("record: a scratch buffer is needed for this record");
    if (scratch->size() < need) scratch->resize(need);  // grows only: no re-zeroing once warm
  }

  const uint8_t* pixels = data + h.pixel_offset;
  if (h.codec == Codec::Kind::kZstd) {
    ZSTD_DCtx* dctx = ThreadDCtx();
    if (dctx == nullptr) return Status::IOError("record: cannot allocate a zstd decompression context");
    uint8_t* dst = scratch->data() + box_area;
    const size_t n = ZSTD_decompressDCtx(dctx, dst, h.raw_pixel_bytes, pixels, h.stored_pixel_bytes);
    if (ZSTD_isError(n)) return Bad(std::string("zstd: ") + ZSTD_getErrorName(n));
    if (n != h.raw_pixel_bytes)
      return Bad("zstd frame decodes to " + std::to_string(n) + " bytes, expected " + std::to_string(h.raw_pixel_bytes));
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
  out->source = std::string_view(reinterpret_cast<const char*>(data) + kRecordHeaderSize + box_bytes, h.source_length);
  return Status::OK();
}

std::string_view RecordSourcePath(const uint8_t* data, size_t size) {
  RecordHeader h;
  if (!ParseRecordHeader(data, size, &h).ok()) return {};
  return std::string_view(reinterpret_cast<const char*>(data) + kRecordHeaderSize + h.box_count * sizeof(Box),
                          h.source_length);
}

}  // namespace yc
