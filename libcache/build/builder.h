// `yolocache build`: source dataset -> audit -> decode/resize -> records -> shards or LMDB + manifest.
//
// Per split a bounded TBB pipeline runs
//   [serial]   next source file
//   [parallel] scan (read, hash, decode, orient, resize, parse labels) + encode the record
//   [serial]   append to the cache writer in source order
// with at most 2 x threads images in flight, so memory stays bounded whatever the dataset size.
// Everything is written into a staging directory beside the target and swapped in at the end
// (atomic_dir.h): an interrupted build never leaves a broken cache, and an existing one stays valid
// until it is replaced. With `update`, images whose bytes are unchanged since the previous build
// (same size and XXH3 as its manifest says) are copied from the old cache instead of decoded again,
// once the old record has passed its own checksum.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "libcache/format/manifest.h"
#include "libcache/format/record_format.h"
#include "libcache/source/audit.h"
#include "libcache/source/dataset_spec.h"

namespace yc {

struct BuildOptions {
  std::filesystem::path source;  // data YAML or directory
  std::filesystem::path out;     // cache directory (created or replaced)
  int imgsz = 640;               // long side; 0 keeps originals
  Backend backend = Backend::kShards;
  Codec codec;
  uint64_t shard_size = uint64_t{1} << 30;
  std::vector<std::string> splits;  // empty: every split of the dataset
  bool update = false;           // reuse unchanged images from the cache at `out`
  int threads = 0;               // 0: all cores
  // Called from the writer thread: split name, images done, images in split.
  std::function<void(const std::string&, size_t, size_t)> progress;
  const std::atomic<bool>* cancel = nullptr;  // set (e.g. by SIGINT) to stop; nothing is left behind
};

struct SplitBuildStats {
  std::string split;
  SplitAudit audit;        // per-image results (pixels dropped), problems, summary
  uint64_t records = 0;
  uint64_t reused = 0;     // copied from the previous cache (update)
  uint64_t pixel_bytes = 0;  // decoded pixel bytes stored (before compression)
  uint64_t jpeg_records = 0;  // records stored as JPEG (--compress jpeg or auto; the others raw)
  // --update: unchanged images whose old record failed its own checksum (or was not the record the
  // manifest said), so they were decoded again from the source instead; their paths, in source order.
  std::vector<std::string> redecoded_corrupt;
};

struct BuildReport {
  std::filesystem::path cache_dir;
  std::filesystem::path root;  // the dataset root the source resolved to
  std::string root_from;       // how (DatasetSpec::root_from)
  std::vector<std::string> names;  // as in the manifest (class_0.. for a folder without a YAML)
  std::filesystem::path audit_report;  // <cache>/audit.json
  std::vector<SplitBuildStats> splits;
  AuditSummary total;
  uint64_t records = 0, reused = 0, pixel_bytes = 0, bytes_on_disk = 0;
  uint64_t redecoded_corrupt = 0;  // sum of the splits' redecoded_corrupt
  double seconds = 0;
  double images_per_second() const;
};

// `out` is written only when it is a replaceable cache directory (atomic_dir.h,
// CheckReplaceableCacheDir) that overlaps no source of the dataset (CheckOutputOutsideDataset): both
// are InvalidArgument, checked before any work. With `update`, every reused record is verified against
// its own checksum first; a damaged one is decoded again, so the result equals a fresh build.
Result<BuildReport> BuildCache(const BuildOptions& options);

// InvalidArgument "<out>: is inside <what> <path>; ..." when `out` equals, lies inside or contains the
// dataset root, the data YAML, or any split's image folder, label folder, list file or image (after
// resolving symlinks and "..": weakly_canonical). A cache must never be written into or over a dataset.
Status CheckOutputOutsideDataset(const DatasetSpec& spec, const std::filesystem::path& out);

// The audit report written beside the manifest: {"splits": {...}, "problems": [...]}.
inline constexpr const char* kAuditFileName = "audit.json";

}  // namespace yc
