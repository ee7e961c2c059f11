#include "libcache/format/shard_format.h"

#include <cstring>

#include <xxhash.h>

#include "libcache/base/coding.h"

namespace yc {
namespace {

// Header fields.
constexpr size_t kHdrVersion = 8, kHdrHeaderSize = 12, kHdrAlignment = 16, kHdrFlags = 20;
// Footer fields.
constexpr size_t kFtIndexOffset = 0, kFtRecordCount = 8, kFtIndexChecksum = 16, kFtShardChecksum = 24,
                 kFtVersion = 32, kFtReserved32 = 36, kFtReserved64 = 40, kFtFooterChecksum = 48, kFtMagic = 56;

}  // namespace

void EncodeShardHeader(uint8_t* dst) {
  std::memset(dst, 0, kShardHeaderSize);
  std::memcpy(dst, kShardMagic, sizeof(kShardMagic));
  EncodeFixed32(dst + kHdrVersion, kShardVersion);
  EncodeFixed32(dst + kHdrHeaderSize, kShardHeaderSize);
  EncodeFixed32(dst + kHdrAlignment, static_cast<uint32_t>(kShardRecordAlignment));
  EncodeFixed32(dst + kHdrFlags, 0);
}

Status CheckShardHeader(const uint8_t* data, size_t size) {
  if (size < kShardHeaderSize) return Status::Corruption("header: file shorter than the 64-byte header");
  if (std::memcmp(data, kShardMagic, sizeof(kShardMagic)) != 0) return Status::Corruption("header: bad magic (not a yolocache shard)");
  const uint32_t version = DecodeFixed32(data + kHdrVersion);
  if (version != kShardVersion)
    return Status::Corruption("header: unsupported shard version " + std::to_string(version) + " (this build reads 1)");
  uint8_t canonical[kShardHeaderSize];
  EncodeShardHeader(canonical);
  if (std::memcmp(data, canonical, kShardHeaderSize) != 0)
    return Status::Corruption("header: fields differ from the version-1 header (damaged header)");
  return Status::OK();
}

void EncodeShardFooter(const ShardFooter& f, uint8_t* dst) {
  std::memset(dst, 0, kShardFooterSize);
  EncodeFixed64(dst + kFtIndexOffset, f.index_offset);
  EncodeFixed64(dst + kFtRecordCount, f.record_count);
  EncodeFixed64(dst + kFtIndexChecksum, f.index_checksum);
  EncodeFixed64(dst + kFtShardChecksum, f.shard_checksum);
  EncodeFixed32(dst + kFtVersion, kShardVersion);
  EncodeFixed64(dst + kFtFooterChecksum, XXH3_64bits(dst, kFtFooterChecksum));
  std::memcpy(dst + kFtMagic, kShardFooterMagic, sizeof(kShardFooterMagic));
}

Status ParseShardFooter(const uint8_t* p, uint64_t file_size, ShardFooter* out) {
  if (std::memcmp(p + kFtMagic, kShardFooterMagic, sizeof(kShardFooterMagic)) != 0)
    return Status::Corruption("footer: bad magic (truncated or incomplete shard)");
  if (XXH3_64bits(p, kFtFooterChecksum) != DecodeFixed64(p + kFtFooterChecksum))
    return Status::Corruption("footer: checksum mismatch");
  if (DecodeFixed32(p + kFtVersion) != kShardVersion) return Status::Corruption("footer: unsupported version");
  if (DecodeFixed32(p + kFtReserved32) != 0 || DecodeFixed64(p + kFtReserved64) != 0)
    return Status::Corruption("footer: reserved bytes are not zero");
  ShardFooter f;
  f.index_offset = DecodeFixed64(p + kFtIndexOffset);
  f.record_count = DecodeFixed64(p + kFtRecordCount);
  f.index_checksum = DecodeFixed64(p + kFtIndexChecksum);
  f.shard_checksum = DecodeFixed64(p + kFtShardChecksum);
  const uint64_t footer_offset = file_size - kShardFooterSize;
  // Overflow-safe: bound the count by the file size before multiplying.
  if (f.index_offset < kShardHeaderSize || f.index_offset > footer_offset ||
      f.record_count > (footer_offset - f.index_offset) / kShardIndexEntrySize ||
      f.index_offset + f.record_count * kShardIndexEntrySize != footer_offset)
    return Status::Corruption("footer: index position or record count inconsistent with the file size");
  if (f.index_offset % kShardRecordAlignment != 0) return Status::Corruption("footer: index offset is not 64-byte aligned");
  *out = f;
  return Status::OK();
}

void EncodeShardIndexEntry(const ShardIndexEntry& e, uint8_t* dst) {
  EncodeFixed64(dst, e.offset);
  EncodeFixed64(dst + 8, e.size);
  EncodeFixed64(dst + 16, e.checksum);
}

Status ParseShardIndex(const uint8_t* data, size_t size, const ShardFooter& f, std::vector<ShardIndexEntry>* out,
                       int64_t* bad_entry) {
  if (bad_entry != nullptr) *bad_entry = -1;
  const uint8_t* index = data + f.index_offset;
  const size_t index_bytes = static_cast<size_t>(f.record_count) * kShardIndexEntrySize;
  if (XXH3_64bits(index, index_bytes) != f.index_checksum) return Status::Corruption("index: checksum mismatch");
  out->clear();
  out->reserve(static_cast<size_t>(f.record_count));
  uint64_t expected = kShardHeaderSize;
  for (uint64_t i = 0; i < f.record_count; ++i) {
    const uint8_t* p = index + i * kShardIndexEntrySize;
    ShardIndexEntry e{DecodeFixed64(p), DecodeFixed64(p + 8), DecodeFixed64(p + 16)};
    if (e.offset != expected || e.size == 0 || e.size > f.index_offset - e.offset) {
      if (bad_entry != nullptr) *bad_entry = static_cast<int64_t>(i);
      return Status::Corruption("index: entry " + std::to_string(i) + " (offset " + std::to_string(e.offset) + ", size " +
                                std::to_string(e.size) + ") breaks the record layout");
    }
    expected = AlignUp(e.offset + e.size, kShardRecordAlignment);
    out->push_back(e);
  }
  if (expected != f.index_offset) return Status::Corruption("index: records do not end where the index starts");
  (void)size;
  return Status::OK();
}

Status ParseShardLayout(const uint8_t* data, size_t size, ShardFooter* footer, std::vector<ShardIndexEntry>* index) {
  if (size < kShardHeaderSize + kShardFooterSize)
    return Status::Corruption("file too short for a shard (" + std::to_string(size) + " bytes)");
  YC_RETURN_IF_ERROR(CheckShardHeader(data, size));
  YC_RETURN_IF_ERROR(ParseShardFooter(data + size - kShardFooterSize, size, footer));
  return ParseShardIndex(data, size, *footer, index);
}

}  // namespace yc
