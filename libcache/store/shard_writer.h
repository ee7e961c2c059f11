// Streams encoded records into one shard file (docs/FORMAT.md). The builder decides when to start a
// new shard (CacheWriter cuts at --shard-size using bytes_written()); a writer only appends. The
// whole-shard checksum is computed while writing, so Finish never re-reads the file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "libcache/format/shard_format.h"

namespace yc {

// What the manifest records about a finished shard.
struct ShardInfo {
  uint64_t records = 0;
  uint64_t bytes = 0;     // file size
  uint64_t checksum = 0;  // the footer's shard checksum: XXH3 over every byte before the footer
};

class ShardWriter {
 public:
  // Creates (truncates) `path` and writes the header.
  static Result<std::unique_ptr<ShardWriter>> Create(const std::filesystem::path& path);
  // An unfinished shard is incomplete by construction (no footer): the destructor removes it.
  ~ShardWriter();
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  // Appends one record produced by EncodeRecord. Its header is validated (cheap) and its stored
  // checksum copied into the index; the pixels are not re-hashed.
  Status Add(std::string_view record);

  uint64_t record_count() const { return index_.size(); }
  // Bytes of the file so far (header, records, padding); Finish adds the index and footer.
  uint64_t bytes_written() const { return offset_; }
  // What Finish will add on top of bytes_written() (padding, index, footer), for size-based cuts.
  uint64_t finish_overhead() const;

  // Writes index and footer, fsyncs and closes the file.
  Status Finish(ShardInfo* info);
  const std::string& path() const { return path_; }

 private:
  ShardWriter(std::string path, int fd);
  Status Append(const void* data, size_t n);  // buffered, hashed
  Status Flush();
  Status PadTo(uint64_t alignment);
  void StartWriteback();
  static constexpr uint64_t kWritebackChunk = uint64_t{8} << 20;

  std::string path_;
  int fd_;
  bool finished_ = false;
  uint64_t offset_ = 0;
  uint64_t writeback_from_ = 0;  // bytes before this offset were handed to the kernel's writeback
  std::vector<ShardIndexEntry> index_;
  std::vector<uint8_t> buffer_;
  size_t buffered_ = 0;
  struct HashState;
  std::unique_ptr<HashState> hash_;
};

}  // namespace yc
