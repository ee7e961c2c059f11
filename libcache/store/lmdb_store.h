// The LMDB backend (docs/FORMAT.md, "LMDB file"): one LMDB environment per split, a single file
// `<split>.lmdb` (MDB_NOSUBDIR, no lock file), main database only; key = 8-byte big-endian record
// index 0..n-1, value = one record in the shared record encoding.
//
// Writer: single thread, MDB_APPEND, commits every batch; on MDB_MAP_FULL the batch's transaction
// is aborted, the map grown (mdb_env_set_mapsize) and the batch replayed from its buffered copy.
//
// Reader: the cache is immutable once built, so the environment is opened MDB_RDONLY | MDB_NOLOCK
// (no lock file, no reader-slot table, works on read-only filesystems, no MDB_READERS_FULL) |
// MDB_NOTLS. Open walks the keys once inside ONE read transaction that stays open for the reader's
// lifetime and keeps each value's pointer; LMDB guarantees values stay valid while their
// transaction is open, and no writer can exist. Read(i) is then a lookup plus DecodeRecord: no
// LMDB call, no lock, thread-safe, zero copy. Fork rules: open readers after fork() (in each
// worker); never carry an environment across fork(); close it in the process that opened it.
// LMDB pages carry no checksums: structural damage may crash LMDB itself, so `verify` runs its
// LMDB walk in a child process (lmdb_verify.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "libcache/base/verified_bits.h"
#include "libcache/format/record_format.h"
#include "libcache/record_source.h"

namespace yc {

struct LmdbWriterOptions {
  uint64_t initial_map_size = uint64_t{1} << 30;  // grown on demand; costs nothing on disk (sparse)
  uint64_t batch_bytes = uint64_t{64} << 20;       // commit once this much is pending...
  size_t batch_records = 512;                      // ...or this many records
};

struct LmdbFileInfo {
  uint64_t records = 0;
  uint64_t bytes = 0;     // file size
  uint64_t checksum = 0;  // XXH3 over the whole file after the final commit
};

class LmdbWriter {
 public:
  // Creates `path` (replacing any file there).
  static Result<std::unique_ptr<LmdbWriter>> Create(const std::filesystem::path& path,
                                                    const LmdbWriterOptions& options = {});
  // An unfinished file is removed.
  ~LmdbWriter();
  LmdbWriter(const LmdbWriter&) = delete;
  LmdbWriter& operator=(const LmdbWriter&) = delete;

  // Appends one encoded record under key = record_count().
  Status Add(std::string_view record);
  uint64_t record_count() const { return committed_ + pending_count_; }
  uint64_t map_size() const { return map_size_; }
  // Commits, syncs to disk, closes, then hashes the file.
  Status Finish(LmdbFileInfo* info);

 private:
  LmdbWriter() = default;
  Status Commit();
  Status Grow(uint64_t at_least);

  std::string path_;
  struct Env;
  std::unique_ptr<Env> env_;
  LmdbWriterOptions options_;
  uint64_t map_size_ = 0;
  uint64_t committed_ = 0;
  std::vector<std::string> pending_;  // reused slots: a batch is replayable after MDB_MAP_FULL
  size_t pending_count_ = 0;
  uint64_t pending_bytes_ = 0;
  bool finished_ = false;
};

struct LmdbReaderOptions {
  bool verify_checksums = false;
  RecordLimits limits;  // what the manifest says about every record (Cache::Open fills it in)
  bool verify_first_read = false;  // hash each record on its first Read by this reader only (verified_bits.h)
};

class LmdbReader : public RecordSource {
 public:
  static Result<std::unique_ptr<LmdbReader>> Open(const std::filesystem::path& path,
                                                  const LmdbReaderOptions& options = {});
  ~LmdbReader() override;
  LmdbReader(const LmdbReader&) = delete;
  LmdbReader& operator=(const LmdbReader&) = delete;

  size_t size() const override { return values_.size(); }
  Status Read(size_t index, RecordView* out, ScratchBuffer* scratch) const override;
  // Extent's file is 0 (data.mdb); the offset is the value's place in the map (values larger than a
  // page sit on contiguous overflow pages).
  bool Extent(size_t index, RecordExtent* out) const override;
  uint64_t data_bytes() const override { return file_size_; }
  // Over LMDB's own read-only map and file descriptor (mapped_file.h's WillNeedPages, DropPages).
  void WillNeedRange(const RecordExtent& range) const override;
  Status DropCachedPages() const override;
  std::string DataFilePath(uint32_t file) const override;  // the store file itself
  Status ReadStored(size_t index, const uint8_t* stored, RecordView* out, ScratchBuffer* scratch) const override;
  // The stored bytes of record i (no decoding), for verify. Empty if out of range.
  std::string_view value(size_t index) const;
  const std::string& path() const { return path_; }

 private:
  LmdbReader() = default;
  std::string path_;
  LmdbReaderOptions options_;
  struct Env;
  std::unique_ptr<Env> env_;
  std::vector<std::string_view> values_;
  const char* map_ = nullptr;  // start of LMDB's read-only map
  uint64_t file_size_ = 0;
  int fd_ = -1;  // LMDB's, owned by the environment
  std::unique_ptr<VerifiedBits> verified_;  // verify_first_read: records already hashed
};

}  // namespace yc
