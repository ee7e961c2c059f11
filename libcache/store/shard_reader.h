// Read side of one shard file: mmap'd once (MAP_SHARED, read-only), header/footer/index validated
// at open, then Read(i) is a bounds check plus DecodeRecord on the mapping: zero copy for raw
// pixels, no locks, no allocation once the caller's scratch buffer is warm. Thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "libcache/base/mapped_file.h"
#include "libcache/base/verified_bits.h"
#include "libcache/format/record_format.h"
#include "libcache/format/shard_format.h"
#include "libcache/record_source.h"

namespace yc {

struct ShardReaderOptions {
  bool verify_checksums = false;  // hash every record on Read (costs one extra pass over its bytes)
  bool verify_first_read = false;  // hash each record on its first Read by this reader only (verified_bits.h)
  AccessAdvice advice = AccessAdvice::kNormal;
  bool willneed = false;  // start reading the whole file into the page cache at open
  RecordLimits limits;    // what the manifest says about every record (Cache::Open fills it in)
};

class ShardReader : public RecordSource {
 public:
  static Result<std::unique_ptr<ShardReader>> Open(const std::filesystem::path& path,
                                                   const ShardReaderOptions& options = {});
  // Over bytes owned by the caller, which must outlive the reader (tests, fuzzing).
  static Result<std::unique_ptr<ShardReader>> OpenBuffer(const uint8_t* data, size_t size, std::string name,
                                                         const ShardReaderOptions& options = {});

  size_t size() const override { return index_.size(); }
  // out->index = i. Errors name the file and the record.
  Status Read(size_t index, RecordView* out, ScratchBuffer* scratch) const override;

  // Extent's file is 0 (one file); data_bytes() is the file size.
  bool Extent(size_t index, RecordExtent* out) const override;
  uint64_t data_bytes() const override { return size_; }
  // range.file is ignored (one file). No-ops over a caller's buffer (OpenBuffer).
  void WillNeedRange(const RecordExtent& range) const override;
  Status DropCachedPages() const override;
  std::string DataFilePath(uint32_t file) const override { return file_ != nullptr ? name_ : std::string(); }
  Status ReadStored(size_t index, const uint8_t* stored, RecordView* out, ScratchBuffer* scratch) const override;

  const ShardFooter& footer() const { return footer_; }
  const std::vector<ShardIndexEntry>& index() const { return index_; }
  const uint8_t* data() const { return data_; }  // start of the mapping
  size_t file_size() const { return size_; }
  const std::string& path() const { return name_; }

 private:
  ShardReader() = default;
  Status Init();
  // Read and ReadStored: record i decoded from `rec` (its bytes, wherever they are).
  Status Decode(size_t i, const uint8_t* rec, RecordView* out, ScratchBuffer* scratch) const;

  std::unique_ptr<MappedFile> file_;  // null for OpenBuffer
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string name_;
  ShardReaderOptions options_;
  ShardFooter footer_;
  std::vector<ShardIndexEntry> index_;
  std::unique_ptr<VerifiedBits> verified_;  // verify_first_read: records already hashed
};

}  // namespace yc
