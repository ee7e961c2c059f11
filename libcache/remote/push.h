// `yolocache push CACHE s3://bucket/prefix`: a built cache's files into object storage, so that any
// machine can train from it (docs/REMOTE.md). Data files first (shards or data.mdb, then audit.json),
// each with its XXH3 from the manifest as user metadata (x-amz-meta-xxh3); a file whose object already
// has that size and checksum is skipped, so pushing an updated cache sends only what changed. Before
// the first changed file goes up, the remote manifest.json is deleted, and the new one is uploaded
// last: a reader never finds a manifest naming files that are not (yet) what it says.
//
//   PushOptions o; o.threads = 4;
//   Result<PushReport> r = PushCache("caches/coco128-640", **store, o);
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>

#include "base/status.h"
#include "libcache/remote/object_store.h"

namespace yc {

struct PushOptions {
  int threads = 4;             // files uploaded at once
  bool create_bucket = false;  // create the bucket first (it is otherwise expected to exist)
  // Called after each file with the bytes done and in all (from the uploading threads, serialised).
  std::function<void(uint64_t done, uint64_t total)> progress;
};

struct PushReport {
  uint64_t files_uploaded = 0, files_skipped = 0;
  uint64_t bytes_uploaded = 0, bytes_skipped = 0;
};

// The cache must open cleanly (its manifest and files as Cache::Open checks them cheaply). Errors name
// the file or object.
Result<PushReport> PushCache(const std::filesystem::path& cache_dir, const ObjectStore& store, const PushOptions& options);

// The metadata value push writes and compares: the XXH3 as 16 lower-case hex digits.
std::string ChecksumText(uint64_t checksum);

}  // namespace yc
