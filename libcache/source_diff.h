// Which source images were added, removed or changed since a cache was built: the manifest keeps each
// image's size and XXH3; the source is listed again and every file of equal size is hashed (an edit
// that keeps the size, which Ultralytics' size-only cache hash misses, is still found).
#pragma once

#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

#include "libcache/manifest.h"
#include "libcache/status.h"

namespace yc {

struct SourceChange {
  enum class Kind { kAdded, kRemoved, kChanged };
  Kind kind;
  std::string split;
  std::string path;  // relative to the dataset root
};
const char* SourceChangeKindName(SourceChange::Kind kind);  // "added" | "removed" | "changed"

// `source` is the data YAML or directory (usually manifest.dataset_yaml). Only splits present in the
// manifest are compared.
// `cancel` (optional) stops the hashing early: the result is then Cancelled.
Result<std::vector<SourceChange>> DiffSources(const Manifest& manifest, const std::filesystem::path& source,
                                              const std::atomic<bool>* cancel = nullptr);

}  // namespace yc
