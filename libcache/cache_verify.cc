#include "libcache/cache_verify.h"

#include <sys/stat.h>

#include "libcache/cache.h"
#include "libcache/coding.h"
#include "libcache/lmdb_verify.h"
#include "libcache/manifest.h"
#include "libcache/mapped_file.h"
#include "libcache/shard_verify.h"

namespace yc {
namespace {

namespace fs = std::filesystem;

VerifyProblem FileProblem(const std::string& split, const fs::path& file, const std::string& message) {
  VerifyProblem p;
  p.split = split;
  p.file = file.string();
  // Statuses already say "path: reason"; the report prints the file itself.
  const std::string prefix = p.file + ": ";
  p.message = message.compare(0, prefix.size(), prefix) == 0 ? message.substr(prefix.size()) : message;
  return p;
}

// False (and a problem) when the file is missing; a size mismatch is reported but checking goes on,
// since the content checks will say where the file differs.
bool CheckPresence(const std::string& split, const fs::path& path, uint64_t expected_bytes, VerifyReport* report) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    report->problems.push_back(FileProblem(split, path, "missing (listed in manifest.json)"));
    return false;
  }
  if (static_cast<uint64_t>(st.st_size) != expected_bytes)
    report->problems.push_back(FileProblem(split, path, "size " + std::to_string(st.st_size) +
                                                            " bytes, manifest.json says " + std::to_string(expected_bytes)));
  report->bytes_checked += static_cast<uint64_t>(st.st_size);
  ++report->files_checked;
  return true;
}

void VerifyShardSplit(const fs::path& dir, const SplitManifest& split, const RecordLimits& limits, VerifyReport* report) {
  uint64_t first = 0;  // split index of the current shard's first record, per the manifest
  for (const ShardEntry& e : split.shards) {
    const fs::path path = dir / e.file;
    if (CheckPresence(split.name, path, e.bytes, report)) {
      const ShardVerifyResult r = VerifyShard(path, limits);
      for (const ShardProblem& sp : r.problems) {
        VerifyProblem p = FileProblem(split.name, path, "");
        if (sp.where == ShardProblem::Where::kRecord) {
          p.file_record = sp.record;
          p.record = static_cast<int64_t>(first) + sp.record;
          p.source = sp.source;
          p.message = sp.message;
        } else {
          p.message = std::string(ShardProblemWhereName(sp.where)) + ": " + sp.message;
        }
        report->problems.push_back(std::move(p));
      }
      report->records_checked += r.records;
      if (r.records != e.records && r.stored_checksum != 0)
        report->problems.push_back(FileProblem(split.name, path, "holds " + std::to_string(r.records) +
                                                                     " records, manifest.json says " + std::to_string(e.records)));
      if (r.ok() && r.computed_checksum != e.checksum)
        report->problems.push_back(FileProblem(split.name, path, "intact, but its checksum " + ChecksumToHex(r.computed_checksum) +
                                                                     " differs from manifest.json's " + ChecksumToHex(e.checksum) +
                                                                     " (stale or replaced file)"));
    }
    first += e.records;
  }
}

void VerifyLmdbSplit(const fs::path& dir, const SplitManifest& split, const RecordLimits& limits,
                     const VerifyOptions& options, VerifyReport* report) {
  const LmdbEntry& e = *split.lmdb;
  const fs::path path = dir / e.file;
  if (!CheckPresence(split.name, path, e.bytes, report)) return;
  uint64_t hash = 0;
  Status s = HashFile(path, &hash, nullptr);
  if (!s.ok()) {
    report->problems.push_back(FileProblem(split.name, path, s.message()));
    return;
  }
  if (hash != e.checksum)
    report->problems.push_back(FileProblem(split.name, path, "file checksum " + ChecksumToHex(hash) +
                                                                 " differs from manifest.json's " + ChecksumToHex(e.checksum)));
  const LmdbVerifyResult r = VerifyLmdbRecords(path, options.isolate_lmdb, limits);
  report->records_checked += r.records;
  for (const LmdbProblem& lp : r.problems) {
    VerifyProblem p = FileProblem(split.name, path, lp.message);
    // Reader errors name the record themselves ("<file>: record 3: ..."): keep the reason only.
    const std::string rec_prefix = "record " + std::to_string(lp.record) + ": ";
    if (lp.record >= 0 && p.message.compare(0, rec_prefix.size(), rec_prefix) == 0) p.message = p.message.substr(rec_prefix.size());
    p.record = lp.record;
    p.file_record = lp.record;
    p.source = lp.source;
    report->problems.push_back(std::move(p));
  }
  // A count mismatch only means something when the walk itself succeeded.
  if (r.walked && r.records != e.records)
    report->problems.push_back(FileProblem(split.name, path, "holds " + std::to_string(r.records) +
                                                                 " records, manifest.json says " + std::to_string(e.records)));
}

}  // namespace

std::string VerifyProblem::ToString() const {
  std::string s = file;
  if (record >= 0) {
    s += ": record " + std::to_string(record);
    if (file_record >= 0 && file_record != record) s += " (#" + std::to_string(file_record) + " in file)";
    if (!source.empty()) s += " [" + source + "]";
  }
  return s + ": " + message;
}

VerifyReport VerifyCache(const fs::path& dir, const VerifyOptions& options) {
  VerifyReport report;
  auto manifest = ReadManifest(dir);
  if (!manifest.ok()) {
    report.problems.push_back(FileProblem("", dir / kManifestFileName, manifest.status().message()));
    return report;
  }
  ++report.files_checked;
  const RecordLimits limits = ManifestRecordLimits(manifest.value());
  for (const SplitManifest& split : manifest.value().splits) {
    if (manifest.value().backend == Backend::kLmdb) VerifyLmdbSplit(dir, split, limits, options, &report);
    else VerifyShardSplit(dir, split, limits, &report);
  }
  return report;
}

}  // namespace yc
