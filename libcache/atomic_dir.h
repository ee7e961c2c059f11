// Build-then-swap for cache directories: a build writes into a hidden sibling staging directory and
// only a complete cache ever appears at the target path. Replacing an existing cache uses
// renameat2(RENAME_EXCHANGE), one atomic step, so a kill -9 at any moment leaves either the old or the
// new cache in place, never a mix and never nothing.
#pragma once

#include <filesystem>

#include "libcache/status.h"

namespace yc {

class StagingDir {
 public:
  // Creates `.<name>.building-<pid>` beside `target` (same filesystem, so the final rename is atomic),
  // after removing staging dirs of earlier builds whose process is gone (killed builds).
  static Result<StagingDir> Create(const std::filesystem::path& target);
  StagingDir(StagingDir&& other) noexcept;
  StagingDir& operator=(StagingDir&&) = delete;
  ~StagingDir();  // removes the staging dir unless Commit succeeded

  const std::filesystem::path& path() const { return path_; }

  // Puts the staging dir at `target`. An existing target must be a yolocache cache (manifest.json)
  // or an empty dir; it is swapped out atomically and then deleted.
  Status Commit();

 private:
  StagingDir(std::filesystem::path staging, std::filesystem::path target)
      : path_(std::move(staging)), target_(std::move(target)) {}
  std::filesystem::path path_, target_;
  bool committed_ = false;
};

}  // namespace yc
