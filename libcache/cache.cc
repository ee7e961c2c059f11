#include "libcache/cache.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>

#include <xxhash.h>

#include "libcache/base/coding.h"
#include "libcache/base/file_read.h"
#include "libcache/store/lmdb_store.h"
#include "libcache/store/shard_reader.h"
#include "libcache/store/shard_writer.h"

namespace yc {
namespace {

namespace fs = std::filesystem;

// A split stored as consecutive shards: record i lives in the shard whose first index is the
// largest one <= i.
class ShardSetSource : public RecordSource {
 public:
  explicit ShardSetSource(std::vector<std::unique_ptr<ShardReader>> shards) : shards_(std::move(shards)) {
    starts_.reserve(shards_.size() + 1);
    uint64_t total = 0;
    starts_.push_back(0);
    for (const auto& s : shards_) {
      total += s->size();
      starts_.push_back(total);
    }
  }
  size_t size() const override { return static_cast<size_t>(starts_.back()); }
  Status Read(size_t index, RecordView* out, ScratchBuffer* scratch) const override {
    if (index >= size())
      return Status::InvalidArgument("record " + std::to_string(index) + " out of range (" + std::to_string(size()) +
                                     " records)");
    const size_t shard = ShardOf(index);
    YC_RETURN_IF_ERROR(shards_[shard]->Read(index - starts_[shard], out, scratch));
    out->index = index;
    return Status::OK();
  }
  bool Extent(size_t index, RecordExtent* out) const override {
    if (index >= size()) return false;
    const size_t shard = ShardOf(index);
    if (!shards_[shard]->Extent(index - starts_[shard], out)) return false;
    out->file = static_cast<uint32_t>(shard);
    return true;
  }
  void WillNeedRange(const RecordExtent& range) const override {
    if (range.file < shards_.size()) shards_[range.file]->WillNeedRange(range);
  }
  Status DropCachedPages() const override {
    for (const auto& s : shards_) YC_RETURN_IF_ERROR(s->DropCachedPages());
    return Status::OK();
  }
  std::string DataFilePath(uint32_t file) const override {
    return file < shards_.size() ? shards_[file]->DataFilePath(0) : std::string();
  }
  Status ReadStored(size_t index, const uint8_t* stored, RecordView* out, ScratchBuffer* scratch) const override {
    if (index >= size())
      return Status::InvalidArgument("record " + std::to_string(index) + " out of range (" + std::to_string(size()) +
                                     " records)");
    const size_t shard = ShardOf(index);
    YC_RETURN_IF_ERROR(shards_[shard]->ReadStored(index - starts_[shard], stored, out, scratch));
    out->index = index;
    return Status::OK();
  }
  uint64_t data_bytes() const override {
    uint64_t total = 0;
    for (const auto& s : shards_) total += s->data_bytes();
    return total;
  }

 private:
  size_t ShardOf(size_t index) const {
    return static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), index) - starts_.begin()) - 1;
  }
  std::vector<std::unique_ptr<ShardReader>> shards_;
  std::vector<uint64_t> starts_;  // starts_[j] = split index of shard j's first record; back() = total
};

Status CheckDataFile(const fs::path& path, const std::string& split, uint64_t expected_bytes) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return Status::NotFound(Status::At(path.string(), "listed in manifest.json for split '" + split + "' but missing"));
  // Before any reader opens it: LMDB would block on a FIFO and map a device.
  if (!S_ISREG(st.st_mode))
    return Status::DataError(Status::At(path.string(), std::string("not a regular file (") + FileKindName(st.st_mode) + ")"));
  if (static_cast<uint64_t>(st.st_size) != expected_bytes)
    return Status::Corruption(Status::At(path.string(), "size " + std::to_string(st.st_size) + " bytes, manifest.json says " +
                                                            std::to_string(expected_bytes)));
  return Status::OK();
}

Result<std::unique_ptr<RecordSource>> OpenShardSplit(const fs::path& dir, const SplitManifest& split,
                                                     const RecordLimits& limits, const OpenOptions& options) {
  std::vector<std::unique_ptr<ShardReader>> readers;
  ShardReaderOptions ro;
  ro.verify_checksums = options.verify_checksums;
  ro.verify_first_read = options.verify_first_read;
  ro.advice = options.advice;
  ro.willneed = options.willneed;
  ro.limits = limits;
  for (const ShardEntry& e : split.shards) {
    const fs::path path = dir / e.file;
    YC_RETURN_IF_ERROR(CheckDataFile(path, split.name, e.bytes));
    YC_ASSIGN_OR_RETURN(std::unique_ptr<ShardReader> reader, ShardReader::Open(path, ro));
    const ShardReader& r = *reader;
    if (r.footer().record_count != e.records)
      return Status::Corruption(Status::At(path.string(), "holds " + std::to_string(r.footer().record_count) +
                                                              " records, manifest.json says " + std::to_string(e.records)));
    if (r.footer().shard_checksum != e.checksum)
      return Status::Corruption(Status::At(path.string(), "shard checksum " + ChecksumToHex(r.footer().shard_checksum) +
                                                              " differs from manifest.json's " + ChecksumToHex(e.checksum) +
                                                              " (stale or replaced file)"));
    if (options.verify_files) {
      const uint64_t actual = XXH3_64bits(r.data(), r.file_size() - kShardFooterSize);
      if (actual != e.checksum)
        return Status::Corruption(Status::At(path.string(), "content checksum mismatch (computed " + ChecksumToHex(actual) +
                                                                ", expected " + ChecksumToHex(e.checksum) + ")"));
    }
    readers.push_back(std::move(reader));
  }
  return std::unique_ptr<RecordSource>(new ShardSetSource(std::move(readers)));
}

Result<std::unique_ptr<RecordSource>> OpenLmdbSplit(const fs::path& dir, const SplitManifest& split,
                                                    const RecordLimits& limits, const OpenOptions& options) {
  const LmdbEntry& e = *split.lmdb;
  const fs::path path = dir / e.file;
  YC_RETURN_IF_ERROR(CheckDataFile(path, split.name, e.bytes));
  if (options.verify_files) {
    uint64_t actual = 0;
    YC_RETURN_IF_ERROR(HashFile(path, &actual, nullptr));
    if (actual != e.checksum)
      return Status::Corruption(Status::At(path.string(), "content checksum mismatch (computed " + ChecksumToHex(actual) +
                                                              ", expected " + ChecksumToHex(e.checksum) + ")"));
  }
  YC_ASSIGN_OR_RETURN(std::unique_ptr<LmdbReader> reader,
                      LmdbReader::Open(path, LmdbReaderOptions{options.verify_checksums, limits, options.verify_first_read}));
  if (reader->size() != e.records)
    return Status::Corruption(Status::At(path.string(), "holds " + std::to_string(reader->size()) +
                                                            " records, manifest.json says " + std::to_string(e.records)));
  return std::unique_ptr<RecordSource>(std::move(reader));
}

std::string ShardFileName(const std::string& split, int number) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "-%05d.shard", number);
  return split + buf;
}

bool IsPlainSplitName(const std::string& name) {
  if (name.empty() || name.size() > 64 || name == "." || name == "..") return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
  });
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Cache

RecordLimits ManifestRecordLimits(const Manifest& m) {
  RecordLimits limits;
  limits.class_count = static_cast<uint32_t>(m.names.size());
  limits.max_side = m.imgsz > 0 ? static_cast<uint32_t>(m.imgsz) : 0;
  return limits;
}

Cache::~Cache() = default;

Result<std::unique_ptr<Cache>> Cache::Open(const fs::path& dir, const OpenOptions& options) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status::NotFound(Status::At(dir.string(), "not a cache directory"));
  YC_ASSIGN_OR_RETURN(Manifest manifest, ReadManifest(dir));
  if (manifest.audit_report) YC_RETURN_IF_ERROR(CheckMetadataFile(dir, *manifest.audit_report));
  std::unique_ptr<Cache> cache(new Cache());
  cache->dir_ = dir;
  cache->manifest_ = std::move(manifest);
  const RecordLimits limits = ManifestRecordLimits(cache->manifest_);
  for (const SplitManifest& split : cache->manifest_.splits) {
    YC_ASSIGN_OR_RETURN(std::unique_ptr<RecordSource> source,
                        cache->manifest_.backend == Backend::kLmdb ? OpenLmdbSplit(dir, split, limits, options)
                                                                   : OpenShardSplit(dir, split, limits, options));
    if (source->size() != split.records)
      return Status::Corruption(Status::At((dir / kManifestFileName).string(),
                                           "split '" + split.name + "' lists " + std::to_string(split.records) +
                                               " records, its files hold " + std::to_string(source->size())));
    cache->sources_[split.name] = std::move(source);
  }
  return cache;
}

std::vector<std::string> Cache::splits() const {
  std::vector<std::string> names;
  for (const SplitManifest& s : manifest_.splits) names.push_back(s.name);
  return names;
}

const RecordSource* Cache::split(const std::string& name) const {
  auto it = sources_.find(name);
  return it == sources_.end() ? nullptr : it->second.get();
}

// ---------------------------------------------------------------------------------------------
// CacheWriter

struct CacheWriter::Backends {
  std::unique_ptr<ShardWriter> shard;
  int shard_number = 0;
  std::unique_ptr<LmdbWriter> lmdb;
};

CacheWriter::~CacheWriter() = default;  // unfinished writers remove their own incomplete files

Result<std::unique_ptr<CacheWriter>> CacheWriter::Create(const fs::path& tmp_dir, const WriterOptions& options) {
  std::error_code ec;
  fs::create_directories(tmp_dir, ec);
  if (ec) return Status::IOError(Status::At(tmp_dir.string(), "cannot create directory: " + ec.message()));
  if (options.backend == Backend::kShards && options.shard_size < kShardHeaderSize + kShardFooterSize)
    return Status::InvalidArgument("shard size " + std::to_string(options.shard_size) + " is too small");
  std::unique_ptr<CacheWriter> w(new CacheWriter());
  w->dir_ = tmp_dir;
  w->options_ = options;
  w->backends_ = std::make_unique<Backends>();
  return w;
}

Status CacheWriter::BeginSplit(const std::string& name) {
  if (in_split_) return Status::InvalidArgument("BeginSplit(" + name + ") while split '" + split_ + "' is open");
  if (!IsPlainSplitName(name)) return Status::InvalidArgument("split name '" + name + "' must match [A-Za-z0-9._-]+");
  split_ = name;
  in_split_ = true;
  records_ = 0;
  files_ = SplitFiles();
  files_.split = name;
  backends_->shard_number = 0;
  if (options_.backend == Backend::kLmdb) {
    LmdbWriterOptions lo;
    lo.initial_map_size = options_.lmdb_initial_map_size;
    YC_ASSIGN_OR_RETURN(backends_->lmdb, LmdbWriter::Create(dir_ / (name + ".lmdb"), lo));
  }
  return Status::OK();
}

Status CacheWriter::StartShard() {
  const std::string file = ShardFileName(split_, backends_->shard_number++);
  YC_ASSIGN_OR_RETURN(backends_->shard, ShardWriter::Create(dir_ / file));
  return Status::OK();
}

Status CacheWriter::FinishShard() {
  if (!backends_->shard) return Status::OK();
  ShardInfo info;
  YC_RETURN_IF_ERROR(backends_->shard->Finish(&info));
  files_.shards.push_back(
      ShardEntry{fs::path(backends_->shard->path()).filename().string(), info.records, info.bytes, info.checksum});
  backends_->shard.reset();
  return Status::OK();
}

Status CacheWriter::Add(const RecordInput& input, uint64_t* record_index) {
  YC_RETURN_IF_ERROR(EncodeRecord(input, options_.codec, &encode_buffer_));
  return AddEncoded(encode_buffer_, record_index);
}

Status CacheWriter::AddEncoded(std::string_view record, uint64_t* record_index) {
  if (!in_split_) return Status::InvalidArgument("AddEncoded outside BeginSplit/EndSplit");
  RecordHeader header;  // refuse before any file is touched (a shard is started lazily)
  Status valid = ParseRecordHeader(reinterpret_cast<const uint8_t*>(record.data()), record.size(), &header);
  if (!valid.ok()) return Status::InvalidArgument("split '" + split_ + "': refusing a malformed record: " + valid.message());
  if (options_.backend == Backend::kLmdb) {
    YC_RETURN_IF_ERROR(backends_->lmdb->Add(record));
  } else {
    ShardWriter* w = backends_->shard.get();
    if (w != nullptr && w->record_count() > 0) {
      // Size of the finished file if this record went in: pad + record + one more index entry.
      const uint64_t after = AlignUp(w->bytes_written(), kShardRecordAlignment) + record.size() + w->finish_overhead() +
                             kShardIndexEntrySize + kShardRecordAlignment;
      if (after > options_.shard_size) YC_RETURN_IF_ERROR(FinishShard());
    }
    if (!backends_->shard) YC_RETURN_IF_ERROR(StartShard());
    YC_RETURN_IF_ERROR(backends_->shard->Add(record));
  }
  if (record_index != nullptr) *record_index = records_;
  ++records_;
  return Status::OK();
}

Status CacheWriter::EndSplit(SplitFiles* out) {
  if (!in_split_) return Status::InvalidArgument("EndSplit without BeginSplit");
  if (options_.backend == Backend::kLmdb) {
    LmdbFileInfo info;
    YC_RETURN_IF_ERROR(backends_->lmdb->Finish(&info));
    files_.lmdb = LmdbEntry{split_ + ".lmdb", info.records, info.bytes, info.checksum};
    backends_->lmdb.reset();
  } else {
    YC_RETURN_IF_ERROR(FinishShard());
  }
  files_.records = records_;
  in_split_ = false;
  if (out != nullptr) *out = std::move(files_);
  files_ = SplitFiles();
  return Status::OK();
}

Status CacheWriter::Finish() {
  if (in_split_) return Status::InvalidArgument("Finish while split '" + split_ + "' is open");
  return SyncPath(dir_);
}

}  // namespace yc
