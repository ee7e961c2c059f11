#include "libcache/store/shard_reader.h"

#include "libcache/base/coding.h"
#include "libcache/format/record_format.h"

namespace yc {

Result<std::unique_ptr<ShardReader>> ShardReader::Open(const std::filesystem::path& path,
                                                       const ShardReaderOptions& options) {
  std::unique_ptr<ShardReader> r(new ShardReader());
  YC_ASSIGN_OR_RETURN(r->file_, MappedFile::Open(path, options.advice, options.willneed));
  r->data_ = r->file_->data();
  r->size_ = r->file_->size();
  r->name_ = path.string();
  r->options_ = options;
  YC_RETURN_IF_ERROR(r->Init());
  return r;
}

Result<std::unique_ptr<ShardReader>> ShardReader::OpenBuffer(const uint8_t* data, size_t size, std::string name,
                                                             const ShardReaderOptions& options) {
  std::unique_ptr<ShardReader> r(new ShardReader());
  r->data_ = data;
  r->size_ = size;
  r->name_ = std::move(name);
  r->options_ = options;
  YC_RETURN_IF_ERROR(r->Init());
  return r;
}

Status ShardReader::Init() {
  Status s = ParseShardLayout(data_, size_, &footer_, &index_);
  if (!s.ok()) return Status::Corruption(Status::At(name_, s.message()));
  if (options_.verify_first_read && !options_.verify_checksums) verified_ = std::make_unique<VerifiedBits>(index_.size());
  return Status::OK();
}

Status ShardReader::Read(size_t i, RecordView* out, ScratchBuffer* scratch) const {
  if (i >= index_.size())
    return Status::InvalidArgument(Status::At(name_, "record " + std::to_string(i) + " out of range (" +
                                                         std::to_string(index_.size()) + " records)"));
  return Decode(i, data_ + index_[i].offset, out, scratch);
}

Status ShardReader::ReadStored(size_t i, const uint8_t* stored, RecordView* out, ScratchBuffer* scratch) const {
  if (i >= index_.size())
    return Status::InvalidArgument(Status::At(name_, "record " + std::to_string(i) + " out of range (" +
                                                         std::to_string(index_.size()) + " records)"));
  return Decode(i, stored, out, scratch);
}

Status ShardReader::Decode(size_t i, const uint8_t* rec, RecordView* out, ScratchBuffer* scratch) const {
  const ShardIndexEntry& e = index_[i];
  // The index's copy of the checksum must agree with the record's: a cheap check that catches a
  // record swapped or shifted under an intact index, even with hashing off.
  if (e.size >= kRecordHeaderSize && DecodeFixed64(rec + kRecordChecksumOffset) != e.checksum)
    return Status::Corruption(Status::At(name_, "record " + std::to_string(i) + ": checksum field disagrees with the index"));
  const bool hash = options_.verify_checksums || (verified_ != nullptr && !verified_->Test(i));
  Status s = DecodeRecord(rec, e.size, hash, out, scratch, options_.limits);
  if (!s.ok()) return s.WithContext(name_ + ": record " + std::to_string(i));
  if (hash && verified_ != nullptr) verified_->Set(i);
  out->index = i;
  return Status::OK();
}

bool ShardReader::Extent(size_t i, RecordExtent* out) const {
  if (i >= index_.size()) return false;
  *out = RecordExtent{0, index_[i].offset, index_[i].size};
  return true;
}

void ShardReader::WillNeedRange(const RecordExtent& range) const {
  if (file_ != nullptr) file_->WillNeed(range.offset, range.length);
}

Status ShardReader::DropCachedPages() const { return file_ != nullptr ? file_->DropCachedPages() : Status::OK(); }

}  // namespace yc
