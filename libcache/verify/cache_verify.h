// `yolocache verify`: a full check of a cache directory that keeps going after the first problem
// and reports every one it finds, each located as precisely as the format allows: the manifest, a
// missing or resized file, a shard's header/index/footer/padding, or a record (split index, index
// within its file, and the source image path when the record header is still readable).
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace yc {

struct VerifyProblem {
  std::string split;         // empty for manifest-level problems
  std::string file;          // path of the file concerned (manifest.json, a shard, an LMDB file)
  int64_t record = -1;       // index within the split, -1 when the problem is not one record's
  int64_t file_record = -1;  // index within `file`
  std::string source;        // source image path of the record, when readable
  std::string message;
  std::string ToString() const;  // "file: record 12 (images/x.jpg): checksum mismatch"
};

struct VerifyReport {
  uint64_t files_checked = 0;
  uint64_t records_checked = 0;
  uint64_t bytes_checked = 0;
  std::vector<VerifyProblem> problems;
  bool cancelled = false;  // stopped early through VerifyOptions::cancel (the report is partial)
  bool ok() const { return problems.empty(); }
};

struct VerifyOptions {
  bool isolate_lmdb = true;  // walk LMDB B-trees in a child process (lmdb_verify.h)
  const std::atomic<bool>* cancel = nullptr;  // set to stop early (Ctrl-C): checked between files
};

// Never throws and never stops at the first problem; records are checked in parallel (TBB).
// manifest.json (its own checksum, then every field) and the audit.json it lists are checked first;
// a manifest that is missing, unreadable, not a regular file or damaged is one problem on its own.
VerifyReport VerifyCache(const std::filesystem::path& dir, const VerifyOptions& options = {});

// Whether `dir` is (what is left of) a cache rather than a source dataset: it has a manifest.json
// entry of any kind, or cache files (*.shard, *.lmdb, audit.json, manifest.json.tmp). A cache whose
// manifest was lost must be reported as broken, not audited as an empty dataset.
bool LooksLikeCacheDir(const std::filesystem::path& dir);

}  // namespace yc
