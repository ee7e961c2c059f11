// A cache in object storage (libcache/remote/: s3://, http(s)://) as a local cache folder, for
// `yolocache-train train|val|ceiling --data s3://bucket/prefix` and the Python package (both through
// prepare_cache.h). The whole cache is fetched into <cache root>/remote/<bucket or host>-<last path
// part>-<8 hex digits of the URL>: the manifest first, then every data file in ranged GETs of
// `chunk_bytes` from `threads` threads. Every fetched file is checked against the manifest's checksum
// (Cache::Open with verify_files) before the copy is swapped in atomically (StagingDir), so a damaged
// or truncated object fails naming it and a half-fetched copy never appears; a disk without room for
// the cache is refused before the first byte. The local copy is reused when the remote manifest.json
// is byte-identical to it, and when the remote cache was updated only its changed files are fetched
// (a file with the same name, size and checksum is kept from the local copy). `refetch` fetches every
// file regardless, and `check` replaces the default check of the staged copy (both: `verify URL`).
//
//   PullOptions o;  o.cache_root = DefaultCacheRoot();
//   Result<PullReport> r = PullCache(**ObjectStore::Open(location), o);   // r->dir: a local cache
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>

#include "base/status.h"
#include "libcache/remote/object_store.h"

namespace yc {

struct PullOptions {
  std::filesystem::path cache_root;  // required
  int threads = 8;                   // ranged GETs in flight
  uint64_t chunk_bytes = uint64_t{16} << 20;
  std::function<void(uint64_t done, uint64_t total)> progress;  // bytes, from the fetching threads (serialised)
  const std::atomic<bool>* cancel = nullptr;                   // set: stop, Cancelled, nothing left behind
  bool reuse_only = false;  // stop before fetching (ready = false) when the local copy is not up to date
  // Fetch every file again, keeping nothing of the local copy: `verify URL` checks what the store holds
  // now, not what was fetched earlier under the same manifest.
  bool refetch = false;
  // How the fetched copy (the staging folder) is checked before it is swapped in; an error keeps it out.
  // Unset: Cache::Open with every file against the manifest's checksums. `verify URL` runs its full
  // check here, so it reports every problem, as on a local cache, and a damaged copy is never used.
  std::function<Status(const std::filesystem::path& staged)> check;
};

struct PullReport {
  std::filesystem::path dir;
  bool reused = false;  // the local copy was up to date: nothing fetched
  bool ready = true;    // false: reuse_only stopped before fetching
  uint64_t files_fetched = 0, files_kept = 0;
  uint64_t bytes_fetched = 0, bytes_kept = 0;
  double seconds = 0;
};

// Where PullCache keeps the copy of `at` under `cache_root`.
std::filesystem::path PulledCachePath(const std::filesystem::path& cache_root, const ObjectLocation& at);

Result<PullReport> PullCache(const ObjectStore& store, const PullOptions& options);

}  // namespace yc
