// Build-then-swap for cache directories: a build writes into a hidden sibling staging directory and
// only a complete cache ever appears at the target path. Replacing an existing cache uses
// renameat2(RENAME_EXCHANGE), one atomic step, so a kill -9 at any moment leaves either the old or the
// new cache in place, never a mix and never nothing.
//
// A target is replaced only when CheckReplaceableCacheDir says it is an empty directory or a
// yolocache cache; anything else (a project that happens to hold a manifest.json, a cache somebody put
// notes into) is refused, and even then only files with cache names are ever deleted.
#pragma once

#include <filesystem>

#include "base/status.h"

namespace yc {

// Whether a build may delete `dir` to put a cache there. OK when `dir` does not exist, is an empty
// directory, or is a yolocache cache: its manifest.json parses as our format (ParseManifest) and every
// other entry is a regular file a cache is made of (audit.json, manifest.json.tmp, the data files the
// manifest names, <split>-NNNNN.shard or <split>.lmdb of its splits). Otherwise InvalidArgument
// "<dir>: <why>", naming the first unexpected entry. Reads only; never modifies anything.
Status CheckReplaceableCacheDir(const std::filesystem::path& dir);

class StagingDir {
 public:
  // Checks `target` with CheckReplaceableCacheDir, then creates `.<name>.building-<pid>` beside it
  // (same filesystem, so the final rename is atomic), after removing staging dirs of earlier builds
  // whose process is gone (killed builds).
  static Result<StagingDir> Create(const std::filesystem::path& target);
  StagingDir(StagingDir&& other) noexcept;
  StagingDir& operator=(StagingDir&&) = delete;
  ~StagingDir();  // removes the staging dir unless Commit succeeded

  const std::filesystem::path& path() const { return path_; }

  // Puts the staging dir at `target`. An existing target is checked again (it may have changed during
  // the build), swapped out atomically, and its cache files deleted.
  Status Commit();

 private:
  StagingDir(std::filesystem::path staging, std::filesystem::path target)
      : path_(std::move(staging)), target_(std::move(target)) {}
  std::filesystem::path path_, target_;
  bool committed_ = false;
};

}  // namespace yc
