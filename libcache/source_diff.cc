#include "libcache/source_diff.h"

#include <unordered_map>

#include <tbb/parallel_for.h>

#include "libcache/dataset_spec.h"
#include "libcache/discover.h"
#include "libcache/mapped_file.h"

namespace yc {

const char* SourceChangeKindName(SourceChange::Kind kind) {
  switch (kind) {
    case SourceChange::Kind::kAdded: return "added";
    case SourceChange::Kind::kRemoved: return "removed";
    case SourceChange::Kind::kChanged: return "changed";
  }
  return "?";
}

Result<std::vector<SourceChange>> DiffSources(const Manifest& manifest, const std::filesystem::path& source,
                                              const std::atomic<bool>* cancel) {
  const auto cancelled = [cancel] { return cancel != nullptr && cancel->load(std::memory_order_relaxed); };
  Result<DatasetSpec> spec = LoadDatasetSpec(source);
  if (!spec.ok()) return spec.status();
  std::vector<SourceChange> changes;
  for (const SplitManifest& sm : manifest.splits) {
    const SplitSpec* split = spec->split(sm.name);
    std::vector<SourceItem> items;
    if (split != nullptr) {
      Result<std::vector<SourceItem>> listed = ListSplitFiles(*spec, *split);
      if (!listed.ok()) return listed.status().WithContext("split " + sm.name);
      items = std::move(listed.value());
    }
    std::unordered_map<std::string, const SourceFingerprint*> built;
    for (const SourceFingerprint& fp : sm.sources) built.emplace(fp.path, &fp);

    std::vector<char> changed(items.size(), 0);
    tbb::parallel_for(size_t{0}, items.size(), [&](size_t i) {
      const auto it = built.find(items[i].rel);
      if (it == built.end() || cancelled()) return;
      uint64_t hash = 0, size = 0;
      const Status st = HashFile(items[i].image, &hash, &size);
      changed[i] = !st.ok() || size != it->second->size || hash != it->second->hash;
    });
    if (cancelled()) return Status::Cancelled("interrupted");
    for (size_t i = 0; i < items.size(); ++i) {
      const auto it = built.find(items[i].rel);
      if (it == built.end()) {
        changes.push_back({SourceChange::Kind::kAdded, sm.name, items[i].rel});
      } else {
        if (changed[i]) changes.push_back({SourceChange::Kind::kChanged, sm.name, items[i].rel});
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
