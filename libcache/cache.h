// The public API over a built cache directory:
//
//   auto cache = yc::Cache::Open(dir);            // manifest + every data file validated (cheaply)
//   const yc::RecordSource* train = cache.value()->split("train");
//   train->Read(i, &view, &scratch);               // from any number of threads
//
// and the CacheWriter that the builder fills: workers call EncodeRecord, one ordered writer thread
// calls AddEncoded; files go into a temporary directory that the builder renames into place after
// writing the manifest.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "libcache/base/mapped_file.h"
#include "libcache/format/manifest.h"
#include "libcache/format/record_format.h"
#include "libcache/record_source.h"

namespace yc {

struct OpenOptions {
  // Hash every record on every Read (`build --update` re-encodes what it reads; `verify` is the place
  // for full checks of a whole cache).
  bool verify_checksums = false;
  // Hash every data file at open and compare with the manifest (one full read of the cache).
  bool verify_files = false;
  // Hash each record on its first Read in this process (one bit per record remembers it): a damaged
  // record fails loudly, naming its file and index, the first time training or validation touches it,
  // and later epochs cost nothing. On by default for every reader of a cache (train, val, bench).
  bool verify_first_read = true;
  AccessAdvice advice = AccessAdvice::kNormal;
  bool willneed = false;  // start reading every shard into the page cache at open
};

// What a manifest says about every record of its cache (class count, imgsz), for the readers and
// verify to check each record against.
RecordLimits ManifestRecordLimits(const Manifest& manifest);

class Cache {
 public:
  // NotFound naming a missing manifest or data file; Corruption naming the file and what disagrees
  // (size, checksum, record count, layout; manifest.json's own checksum, audit.json's size and
  // checksum); IOError for a path that is not a regular file (a directory, FIFO, device: refused
  // before it is read); Unsupported for a newer format or one from an older yolocache (rebuild).
  static Result<std::unique_ptr<Cache>> Open(const std::filesystem::path& dir, const OpenOptions& options = {});
  ~Cache();
  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;

  const Manifest& manifest() const { return manifest_; }
  const std::filesystem::path& dir() const { return dir_; }
  std::vector<std::string> splits() const;  // in manifest order
  // nullptr when the split does not exist. The source lives as long as the Cache; thread-safe.
  const RecordSource* split(const std::string& name) const;

 private:
  Cache() = default;
  std::filesystem::path dir_;
  Manifest manifest_;
  std::map<std::string, std::unique_ptr<RecordSource>> sources_;
};

struct WriterOptions {
  Backend backend = Backend::kShards;
  Codec codec;
  uint64_t shard_size = uint64_t{1} << 30;  // a new shard starts before this size would be exceeded
  uint64_t lmdb_initial_map_size = uint64_t{1} << 30;
};

// What EndSplit hands back for the manifest.
struct SplitFiles {
  std::string split;
  uint64_t records = 0;
  std::vector<ShardEntry> shards;  // shards backend
  std::optional<LmdbEntry> lmdb;   // lmdb backend
};

class CacheWriter {
 public:
  // `tmp_dir` is created if needed; data files are written into it as <split>-<NNNNN>.shard or
  // <split>.lmdb. The caller writes manifest.json there (WriteManifest) and renames the directory.
  static Result<std::unique_ptr<CacheWriter>> Create(const std::filesystem::path& tmp_dir,
                                                     const WriterOptions& options);
  ~CacheWriter();
  CacheWriter(const CacheWriter&) = delete;
  CacheWriter& operator=(const CacheWriter&) = delete;

  // Split names must be plain names ([A-Za-z0-9._-]); one split at a time.
  Status BeginSplit(const std::string& name);
  // Encodes with options().codec on the calling thread, then AddEncoded.
  Status Add(const RecordInput& input, uint64_t* record_index = nullptr);
  // Appends a record produced by EncodeRecord (on any thread); calls must come in record order.
  Status AddEncoded(std::string_view record, uint64_t* record_index = nullptr);
  Status EndSplit(SplitFiles* out);
  // Syncs the directory. Every data file was fsynced when it was closed.
  Status Finish();

  const WriterOptions& options() const { return options_; }

 private:
  CacheWriter() = default;
  Status StartShard();
  Status FinishShard();

  std::filesystem::path dir_;
  WriterOptions options_;
  std::string split_;
  bool in_split_ = false;
  uint64_t records_ = 0;
  std::string encode_buffer_;
  SplitFiles files_;
  struct Backends;
  std::unique_ptr<Backends> backends_;
};

}  // namespace yc
