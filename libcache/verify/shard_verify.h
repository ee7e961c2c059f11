// Full integrity check of one shard: header bytes, footer checksum, index checksum and layout,
// every record's checksum, values and decode (zstd frames are decompressed and their size checked), the
// zero padding between records, and the whole-shard checksum. Every problem is located: a flipped
// byte anywhere in the file is reported as the header, the footer, the index, the padding after a
// given record, or the record whose bytes changed (with its source path when readable).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "libcache/format/record_format.h"

namespace yc {

struct ShardProblem {
  enum class Where { kFile, kHeader, kFooter, kIndex, kRecord, kPadding };
  Where where = Where::kFile;
  int64_t record = -1;  // kRecord: the damaged record; kPadding: the record the padding follows
  std::string source;   // the record's source path, when its header still parses
  std::string message;
};
const char* ShardProblemWhereName(ShardProblem::Where where);  // "file", "header", ...

struct ShardVerifyResult {
  uint64_t records = 0;               // records listed by the footer (0 if it is unreadable)
  uint64_t stored_checksum = 0;       // the footer's shard checksum (0 if unreadable)
  uint64_t computed_checksum = 0;     // XXH3 over the bytes before the footer
  uint64_t boxes = 0;                 // over the records that decode (all of them when ok())
  uint64_t backgrounds = 0;           // records without boxes, likewise
  std::vector<ShardProblem> problems;  // in file order
  bool ok() const { return problems.empty(); }
};

// Records are checked in parallel (TBB); the call itself is blocking and thread-safe. `limits`: what
// the manifest says about every record (class count, imgsz), checked as DecodeRecord does.
ShardVerifyResult VerifyShard(const std::filesystem::path& path, const RecordLimits& limits = {});
ShardVerifyResult VerifyShardBytes(const uint8_t* data, size_t size, const RecordLimits& limits = {});

}  // namespace yc
