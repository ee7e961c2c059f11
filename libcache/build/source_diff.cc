#include "libcache/build/source_diff.h"

#include <unordered_map>

#include <tbb/parallel_for.h>

#include "libcache/base/file_read.h"
#include "libcache/base/mapped_file.h"
#include "libcache/source/dataset_spec.h"
#include "libcache/source/discover.h"

namespace yc {
namespace {

// What the build recorded about one file against what is there now.
struct Recorded {
  bool exists;
  uint64_t size, hash;
  int64_t mtime_ns;
};

bool FileChanged(const std::filesystem::path& path, const Recorded& was, bool quick) {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  const bool exists = StatRegularFile(path, &size, &mtime_ns);
  if (exists != was.exists) return true;
  if (!exists) return false;
  if (size != was.size) return true;
  if (quick && mtime_ns == was.mtime_ns) return false;
  uint64_t hash = 0;
  return !HashFile(path, &hash, &size).ok() || size != was.size || hash != was.hash;
}

}  // namespace

const char* SourceChangeKindName(SourceChange::Kind kind) {
  switch (kind) {
    case SourceChange::Kind::kAdded: return "added";
    case SourceChange::Kind::kRemoved: return "removed";
    case SourceChange::Kind::kChanged: return "changed";
  }
  return "?";
}

Result<std::vector<SourceChange>> DiffSources(const Manifest& manifest, const std::filesystem::path& source,
                                              const DiffOptions& options) {
  const std::atomic<bool>* cancel = options.cancel;
  const auto cancelled = [cancel] { return cancel != nullptr && cancel->load(std::memory_order_relaxed); };
  SpecOptions spec_options;
  spec_options.working_dir = options.working_dir;
  YC_ASSIGN_OR_RETURN(const DatasetSpec spec, LoadDatasetSpec(source, spec_options));
  std::vector<SourceChange> changes;
  for (const SplitManifest& sm : manifest.splits) {
    const SplitSpec* split = spec.split(sm.name);
    std::vector<SourceItem> items;
    if (split != nullptr) {
      Result<std::vector<SourceItem>> listed = ListSplitFiles(spec, *split);
      if (!listed.ok()) return listed.status().WithContext("split " + sm.name);
      items = std::move(listed.value());
    }
    std::unordered_map<std::string, const SourceFingerprint*> built;
    for (const SourceFingerprint& fp : sm.sources) built.emplace(fp.path, &fp);

    enum : char { kImage = 1, kLabel = 2 };
    std::vector<char> changed(items.size(), 0);
    tbb::parallel_for(size_t{0}, items.size(), [&](size_t i) {
      const auto it = built.find(items[i].rel);
      if (it == built.end() || cancelled()) return;
      const SourceFingerprint& fp = *it->second;
      if (FileChanged(items[i].image, {true, fp.size, fp.hash, fp.mtime_ns}, options.quick)) changed[i] |= kImage;
      if (FileChanged(items[i].label, {fp.has_label, fp.label_size, fp.label_hash, fp.label_mtime_ns}, options.quick))
        changed[i] |= kLabel;
    });
    if (cancelled()) return Status::Cancelled("interrupted");
    for (size_t i = 0; i < items.size(); ++i) {
      const auto it = built.find(items[i].rel);
      if (it == built.end()) {
        changes.push_back({SourceChange::Kind::kAdded, sm.name, items[i].rel});
      } else {
        if (changed[i] & kImage) changes.push_back({SourceChange::Kind::kChanged, sm.name, items[i].rel});
        if (changed[i] & kLabel)
          changes.push_back({SourceChange::Kind::kChanged, sm.name, items[i].label_rel, /*label=*/true});
        built.erase(it);
      }
    }
    for (const SourceFingerprint& fp : sm.sources) {
      if (built.count(fp.path)) changes.push_back({SourceChange::Kind::kRemoved, sm.name, fp.path});
    }
  }
  return changes;
}

}  // namespace yc
