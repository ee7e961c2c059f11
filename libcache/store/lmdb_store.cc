#include "libcache/store/lmdb_store.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <lmdb.h>

#include "libcache/base/coding.h"
#include "libcache/base/file_read.h"
#include "libcache/base/mapped_file.h"
#include "libcache/format/record_format.h"

namespace yc {
namespace {

// Where the kernel mapped the file behind `fd` (LMDB's read-only map), read from /proc/self/maps:
// LMDB does not expose its map address (MDB_envinfo.me_mapaddr is only set with MDB_FIXEDMAP), and
// Extent needs it to turn value pointers into file offsets. nullptr when not found.
const char* MapStartOf(int fd) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return nullptr;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    // "start-end perms offset dev inode path"
    std::istringstream in(line);
    std::string range, perms, offset, dev;
    unsigned long long inode = 0;
    if (!(in >> range >> perms >> offset >> dev >> inode)) continue;
    if (inode != static_cast<unsigned long long>(st.st_ino) || std::stoull(offset, nullptr, 16) != 0) continue;
    const unsigned major = std::stoul(dev.substr(0, dev.find(':')), nullptr, 16);
    const unsigned minor = std::stoul(dev.substr(dev.find(':') + 1), nullptr, 16);
    if (major != major(st.st_dev) || minor != minor(st.st_dev)) continue;
    return reinterpret_cast<const char*>(std::stoull(range.substr(0, range.find('-')), nullptr, 16));
  }
  return nullptr;
}

Status LmdbError(const std::string& path, const std::string& what, int rc) {
  const std::string msg = Status::At(path, what + ": " + mdb_strerror(rc));
  if (rc == ENOENT) return Status::NotFound(msg);
  if (rc == MDB_INVALID || rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND || rc == MDB_BAD_TXN)
    return Status::Corruption(msg);
  if (rc == MDB_VERSION_MISMATCH) return Status::Unsupported(msg);
  return Status::IOError(msg);
}

constexpr uint64_t kMaxMapSize = uint64_t{1} << 46;  // 64 TiB: beyond this growing is a bug, not a dataset

}  // namespace

// ---------------------------------------------------------------------------------------------
// Writer

struct LmdbWriter::Env {
  MDB_env* env = nullptr;
  ~Env() {
    if (env != nullptr) mdb_env_close(env);
  }
};

Result<std::unique_ptr<LmdbWriter>> LmdbWriter::Create(const std::filesystem::path& path,
                                                       const LmdbWriterOptions& options) {
  std::unique_ptr<LmdbWriter> w(new LmdbWriter());
  w->path_ = path.string();
  w->options_ = options;
  w->map_size_ = std::max<uint64_t>(options.initial_map_size, 64 * 1024);
  std::error_code ec;
  std::filesystem::remove(path, ec);
  w->env_ = std::make_unique<Env>();
  int rc = mdb_env_create(&w->env_->env);
  if (rc != 0) return LmdbError(w->path_, "mdb_env_create", rc);
  rc = mdb_env_set_mapsize(w->env_->env, w->map_size_);
  if (rc != 0) return LmdbError(w->path_, "mdb_env_set_mapsize", rc);
  // NOLOCK: one writer thread, nobody reads until the build is published. NOSYNC: durability comes
  // from one mdb_env_sync in Finish instead of an fsync per batch.
  rc = mdb_env_open(w->env_->env, w->path_.c_str(), MDB_NOSUBDIR | MDB_NOLOCK | MDB_NOSYNC, 0644);
  if (rc != 0) return LmdbError(w->path_, "mdb_env_open", rc);
  return w;
}

LmdbWriter::~LmdbWriter() {
  if (!finished_) {
    env_.reset();
    ::unlink(path_.c_str());
  }
}

Status LmdbWriter::Add(std::string_view record) {
  if (finished_) return Status::InvalidArgument(Status::At(path_, "Add after Finish"));
  RecordHeader h;
  Status s = ParseRecordHeader(reinterpret_cast<const uint8_t*>(record.data()), record.size(), &h);
  if (!s.ok()) return Status::InvalidArgument(Status::At(path_, "refusing a malformed record: " + s.message()));
  if (pending_count_ == pending_.size()) pending_.emplace_back();
  pending_[pending_count_].assign(record.data(), record.size());
  ++pending_count_;
  pending_bytes_ += record.size();
  if (pending_count_ >= options_.batch_records || pending_bytes_ >= options_.batch_bytes) return Commit();
  return Status::OK();
}

Status LmdbWriter::Grow(uint64_t at_least) {
  uint64_t next = std::max(map_size_ * 2, map_size_ + at_least);
  if (next > kMaxMapSize) return Status::IOError(Status::At(path_, "LMDB map would exceed 64 TiB"));
  const int rc = mdb_env_set_mapsize(env_->env, next);  // legal: no transaction is open here
  if (rc != 0) return LmdbError(path_, "mdb_env_set_mapsize", rc);
  map_size_ = next;
  return Status::OK();
}

Status LmdbWriter::Commit() {
  if (pending_count_ == 0) return Status::OK();
  for (;;) {
    MDB_txn* txn = nullptr;
    int rc = mdb_txn_begin(env_->env, nullptr, 0, &txn);
    if (rc != 0) return LmdbError(path_, "mdb_txn_begin", rc);
    MDB_dbi dbi;
    rc = mdb_dbi_open(txn, nullptr, 0, &dbi);
    for (size_t k = 0; rc == 0 && k < pending_count_; ++k) {
      uint8_t key_bytes[8];
      EncodeBigEndian64(key_bytes, committed_ + k);
      MDB_val key{sizeof(key_bytes), key_bytes};
      MDB_val val{pending_[k].size(), pending_[k].data()};
      rc = mdb_put(txn, dbi, &key, &val, MDB_APPEND);
    }
    if (rc == 0) {
      rc = mdb_txn_commit(txn);  // frees txn whatever the outcome
    } else {
      mdb_txn_abort(txn);
    }
    if (rc == MDB_MAP_FULL) {
      // Replay the batch in a larger map. Leave room for B-tree pages beyond the raw value bytes.
      YC_RETURN_IF_ERROR(Grow(2 * pending_bytes_ + (uint64_t{1} << 20)));
      continue;
    }
    if (rc != 0) return LmdbError(path_, "writing batch at record " + std::to_string(committed_), rc);
    committed_ += pending_count_;
    pending_count_ = 0;
    pending_bytes_ = 0;
    return Status::OK();
  }
}

Status LmdbWriter::Finish(LmdbFileInfo* info) {
  if (finished_) return Status::InvalidArgument(Status::At(path_, "Finish called twice"));
  YC_RETURN_IF_ERROR(Commit());
  int rc = mdb_env_sync(env_->env, 1);
  if (rc != 0) return LmdbError(path_, "mdb_env_sync", rc);
  env_.reset();  // mdb_env_close
  finished_ = true;
  pending_.clear();
  pending_.shrink_to_fit();
  LmdbFileInfo out;
  out.records = committed_;
  YC_RETURN_IF_ERROR(HashFile(path_, &out.checksum, &out.bytes));
  if (info != nullptr) *info = out;
  return Status::OK();
}

// ---------------------------------------------------------------------------------------------
// Reader

struct LmdbReader::Env {
  MDB_env* env = nullptr;
  MDB_txn* txn = nullptr;  // the one long-lived read transaction that keeps values valid
  ~Env() {
    if (txn != nullptr) mdb_txn_abort(txn);
    if (env != nullptr) mdb_env_close(env);
  }
};

Result<std::unique_ptr<LmdbReader>> LmdbReader::Open(const std::filesystem::path& path,
                                                     const LmdbReaderOptions& options) {
  std::unique_ptr<LmdbReader> r(new LmdbReader());
  r->path_ = path.string();
  r->options_ = options;
  const std::string& p = r->path_;

  // Opened through OpenRegularFile first: a FIFO or device is refused here, without blocking, instead
  // of hanging inside mdb_env_open.
  uint64_t file_size = 0;
  YC_RETURN_IF_ERROR(OpenRegularFile(p, &file_size).status());

  r->env_ = std::make_unique<Env>();
  int rc = mdb_env_create(&r->env_->env);
  if (rc != 0) return LmdbError(p, "mdb_env_create", rc);
  rc = mdb_env_open(r->env_->env, p.c_str(), MDB_RDONLY | MDB_NOLOCK | MDB_NOSUBDIR | MDB_NOTLS, 0444);
  if (rc != 0) return LmdbError(p, "mdb_env_open", rc);

  // A truncated file would let LMDB hand out pointers past its end (SIGBUS on first touch): the
  // meta page's last page number must lie inside the file.
  MDB_envinfo info;
  MDB_stat est;
  mdb_env_info(r->env_->env, &info);
  r->file_size_ = file_size;
  mdb_filehandle_t fd;
  if (mdb_env_get_fd(r->env_->env, &fd) == 0) {
    r->map_ = MapStartOf(fd);
    r->fd_ = fd;
  }
  rc = mdb_env_stat(r->env_->env, &est);
  if (rc != 0) return LmdbError(p, "mdb_env_stat", rc);
  const uint64_t needed = (static_cast<uint64_t>(info.me_last_pgno) + 1) * est.ms_psize;
  if (needed > file_size)
    return Status::Corruption(Status::At(p, "truncated: LMDB pages end at " + std::to_string(needed) +
                                                " bytes but the file has " + std::to_string(file_size)));

  rc = mdb_txn_begin(r->env_->env, nullptr, MDB_RDONLY, &r->env_->txn);
  if (rc != 0) return LmdbError(p, "mdb_txn_begin", rc);
  MDB_dbi dbi;
  rc = mdb_dbi_open(r->env_->txn, nullptr, 0, &dbi);
  if (rc != 0) return LmdbError(p, "mdb_dbi_open", rc);
  MDB_stat dst;
  rc = mdb_stat(r->env_->txn, dbi, &dst);
  if (rc != 0) return LmdbError(p, "mdb_stat", rc);
  // Each entry occupies at least a few bytes of the file: a larger count is a damaged meta page.
  if (dst.ms_entries > file_size / 8)
    return Status::Corruption(Status::At(p, "entry count larger than the file can hold"));
  r->values_.reserve(dst.ms_entries);

  MDB_cursor* cursor = nullptr;
  rc = mdb_cursor_open(r->env_->txn, dbi, &cursor);
  if (rc != 0) return LmdbError(p, "mdb_cursor_open", rc);
  MDB_val key, val;
  Status status;
  for (rc = mdb_cursor_get(cursor, &key, &val, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cursor, &key, &val, MDB_NEXT)) {
    const uint64_t expected = r->values_.size();
    if (key.mv_size != 8 || DecodeBigEndian64(static_cast<const uint8_t*>(key.mv_data)) != expected) {
      status = Status::Corruption(Status::At(p, "keys are not the record indexes 0..n-1 (at entry " +
                                                    std::to_string(expected) + ")"));
      break;
    }
    r->values_.emplace_back(static_cast<const char*>(val.mv_data), val.mv_size);
  }
  mdb_cursor_close(cursor);
  if (!status.ok()) return status;
  if (rc != MDB_NOTFOUND) return LmdbError(p, "reading keys", rc);
  if (r->values_.size() != dst.ms_entries)
    return Status::Corruption(Status::At(p, "walked " + std::to_string(r->values_.size()) + " entries, the database says " +
                                                std::to_string(dst.ms_entries)));
  if (options.verify_first_read && !options.verify_checksums) r->verified_ = std::make_unique<VerifiedBits>(r->values_.size());
  return r;
}

LmdbReader::~LmdbReader() = default;

bool LmdbReader::Extent(size_t i, RecordExtent* out) const {
  if (i >= values_.size() || map_ == nullptr) return false;
  if (values_[i].data() < map_ || values_[i].data() + values_[i].size() > map_ + file_size_) return false;
  *out = RecordExtent{0, static_cast<uint64_t>(values_[i].data() - map_), values_[i].size()};
  return true;
}

void LmdbReader::WillNeedRange(const RecordExtent& range) const {
  WillNeedPages(reinterpret_cast<const uint8_t*>(map_), file_size_, range.offset, range.length);
}

Status LmdbReader::DropCachedPages() const {
  if (fd_ < 0) return Status::OK();
  return DropPages(reinterpret_cast<const uint8_t*>(map_), file_size_, fd_, path_);
}

std::string_view LmdbReader::value(size_t i) const { return i < values_.size() ? values_[i] : std::string_view(); }

Status LmdbReader::Read(size_t i, RecordView* out, ScratchBuffer* scratch) const {
  if (i >= values_.size())
    return Status::InvalidArgument(Status::At(path_, "record " + std::to_string(i) + " out of range (" +
                                                         std::to_string(values_.size()) + " records)"));
  return ReadStored(i, reinterpret_cast<const uint8_t*>(values_[i].data()), out, scratch);
}

std::string LmdbReader::DataFilePath(uint32_t file) const {
  return file == 0 && map_ != nullptr ? path_ : std::string();  // MDB_NOSUBDIR: the path is the data file
}

Status LmdbReader::ReadStored(size_t i, const uint8_t* stored, RecordView* out, ScratchBuffer* scratch) const {
  if (i >= values_.size())
    return Status::InvalidArgument(Status::At(path_, "record " + std::to_string(i) + " out of range (" +
                                                         std::to_string(values_.size()) + " records)"));
  const bool hash = options_.verify_checksums || (verified_ != nullptr && !verified_->Test(i));
  Status s = DecodeRecord(stored, values_[i].size(), hash, out, scratch, options_.limits);
  if (!s.ok()) return s.WithContext(path_ + ": record " + std::to_string(i));
  if (hash && verified_ != nullptr) verified_->Set(i);
  out->index = i;
  return Status::OK();
}

}  // namespace yc
