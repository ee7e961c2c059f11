// Which source images and label files were added, removed or changed since a cache was built:
//
//   DiffOptions o;  o.quick = true;                  // stat first, hash only what differs
//   Result<std::vector<SourceChange>> d = DiffSources(manifest, manifest.dataset_yaml, o);
//
// The manifest keeps each image's and its label file's size, mtime and XXH3; the source is listed again
// and compared. A full diff (`verify --source`) hashes every file of equal size, so an edit that keeps
// the size (which Ultralytics' size-only cache hash misses) is still found. A quick diff (`train`'s
// check before it starts) takes a file whose size and mtime both equal the manifest's as unchanged and
// hashes only the others: one stat per file when nothing changed.
#pragma once

#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

#include "base/status.h"
#include "libcache/format/manifest.h"

namespace yc {

struct SourceChange {
  enum class Kind { kAdded, kRemoved, kChanged };
  Kind kind;
  std::string split;
  std::string path;    // relative to the dataset root: the image, or its label file when `label`
  bool label = false;  // the image's label file changed (was added, removed or edited)
};
const char* SourceChangeKindName(SourceChange::Kind kind);  // "added" | "removed" | "changed"

struct DiffOptions {
  bool quick = false;  // size and mtime equal to the manifest's -> unchanged, without hashing
  // The working directory a relative `path:` in the YAML resolves against (dataset_spec.h); empty: the
  // process's. Pass the manifest's working_dir to compare the files the build read.
  std::filesystem::path working_dir;
  const std::atomic<bool>* cancel = nullptr;  // stops the hashing early: the result is then Cancelled
};

// `source` is the data YAML or directory (usually manifest.dataset_yaml). Only splits present in the
// manifest are compared. Changes come per split: added, changed (image, then label), removed.
Result<std::vector<SourceChange>> DiffSources(const Manifest& manifest, const std::filesystem::path& source,
                                              const DiffOptions& options = {});

}  // namespace yc
