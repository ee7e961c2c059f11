// Record-level check of one LMDB file: keys are 0..n-1, every value decodes, its checksum matches
// and its values are valid. LMDB has no page checksums and trusts its B-tree, so a damaged tree can crash the
// process that walks it; by default the walk runs in a forked child that reports back through a
// pipe, and a crash becomes one reported problem instead of a crashed `verify`.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "libcache/format/record_format.h"

namespace yc {

struct LmdbProblem {
  int64_t record = -1;  // -1: the file or its B-tree as a whole
  std::string source;   // the record's source path, when its header still parses
  std::string message;
};

struct LmdbVerifyResult {
  uint64_t records = 0;  // entries found
  bool walked = false;   // the B-tree walk completed (counts are meaningful)
  uint64_t boxes = 0;        // over the records that decode (all of them when ok())
  uint64_t backgrounds = 0;  // records without boxes, likewise
  std::vector<LmdbProblem> problems;  // ordered by record
  bool ok() const { return problems.empty(); }
};

// isolate=false walks in this process (faster to debug; only for files known to be sound). `limits`:
// what the manifest says about every record (class count, imgsz), checked as DecodeRecord does.
LmdbVerifyResult VerifyLmdbRecords(const std::filesystem::path& path, bool isolate = true,
                                   const RecordLimits& limits = {});

}  // namespace yc
