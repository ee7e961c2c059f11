#include "libcache/store/shard_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "libcache/base/coding.h"
#include "libcache/format/record_format.h"

namespace yc {
namespace {

constexpr size_t kBufferSize = 1 << 20;  // small pieces (header, pads) batch up; big records go straight through

Status WriteAll(int fd, const uint8_t* p, size_t n, const std::string& path) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::IOError(Status::At(path, std::string("write: ") + std::strerror(errno)));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::OK();
}

}  // namespace

struct ShardWriter::HashState {
  XXH3_state_t state;
};

ShardWriter::ShardWriter(std::string path, int fd) : path_(std::move(path)), fd_(fd), buffer_(kBufferSize) {
  hash_ = std::make_unique<HashState>();
  XXH3_64bits_reset(&hash_->state);
}

ShardWriter::~ShardWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!finished_) ::unlink(path_.c_str());
}

Result<std::unique_ptr<ShardWriter>> ShardWriter::Create(const std::filesystem::path& path) {
  const std::string p = path.string();
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IOError(Status::At(p, std::string("create: ") + std::strerror(errno)));
  std::unique_ptr<ShardWriter> w(new ShardWriter(p, fd));
  uint8_t header[kShardHeaderSize];
  EncodeShardHeader(header);
  YC_RETURN_IF_ERROR(w->Append(header, sizeof(header)));
  return w;
}

Status ShardWriter::Append(const void* data, size_t n) {
  if (n == 0) return Status::OK();  // an empty index has data() == nullptr
  const uint8_t* p = static_cast<const uint8_t*>(data);
  XXH3_64bits_update(&hash_->state, p, n);
  offset_ += n;
  if (buffered_ + n <= buffer_.size()) {
    std::memcpy(buffer_.data() + buffered_, p, n);
    buffered_ += n;
    return Status::OK();
  }
  YC_RETURN_IF_ERROR(Flush());
  if (n >= buffer_.size() / 2) {
    YC_RETURN_IF_ERROR(WriteAll(fd_, p, n, path_));
    StartWriteback();
    return Status::OK();
  }
  std::memcpy(buffer_.data(), p, n);
  buffered_ = n;
  return Status::OK();
}

// Asks the kernel to start writing back what we wrote so far, without waiting (RocksDB's
// bytes_per_sync): the disk works while we keep decoding, and Finish's fsync has little left to do.
void ShardWriter::StartWriteback() {
  const uint64_t written = offset_ - buffered_;
  if (written - writeback_from_ < kWritebackChunk) return;
  ::sync_file_range(fd_, static_cast<off_t>(writeback_from_), static_cast<off_t>(written - writeback_from_),
                    SYNC_FILE_RANGE_WRITE);  // best effort: failures surface at fsync
  writeback_from_ = written;
}

Status ShardWriter::Flush() {
  if (buffered_ == 0) return Status::OK();
  Status s = WriteAll(fd_, buffer_.data(), buffered_, path_);
  buffered_ = 0;
  if (s.ok()) StartWriteback();
  return s;
}

Status ShardWriter::PadTo(uint64_t alignment) {
  static const uint8_t kZeros[kShardRecordAlignment] = {};
  const uint64_t pad = AlignUp(offset_, alignment) - offset_;
  return pad == 0 ? Status::OK() : Append(kZeros, pad);
}

uint64_t ShardWriter::finish_overhead() const {
  return (AlignUp(offset_, kShardRecordAlignment) - offset_) + index_.size() * kShardIndexEntrySize + kShardFooterSize;
}

Status ShardWriter::Add(std::string_view record) {
  if (finished_ || fd_ < 0) return Status::InvalidArgument(Status::At(path_, "Add after Finish"));
  RecordHeader h;
  Status s = ParseRecordHeader(reinterpret_cast<const uint8_t*>(record.data()), record.size(), &h);
  if (!s.ok()) return Status::InvalidArgument(Status::At(path_, "refusing a malformed record: " + s.message()));
  YC_RETURN_IF_ERROR(PadTo(kShardRecordAlignment));
  ShardIndexEntry e{offset_, record.size(), h.checksum};
  YC_RETURN_IF_ERROR(Append(record.data(), record.size()));
  index_.push_back(e);
  return Status::OK();
}

Status ShardWriter::Finish(ShardInfo* info) {
  if (finished_ || fd_ < 0) return Status::InvalidArgument(Status::At(path_, "Finish called twice"));
  YC_RETURN_IF_ERROR(PadTo(kShardRecordAlignment));
  ShardFooter f;
  f.index_offset = offset_;
  f.record_count = index_.size();
  std::vector<uint8_t> index(index_.size() * kShardIndexEntrySize);
  for (size_t i = 0; i < index_.size(); ++i) EncodeShardIndexEntry(index_[i], index.data() + i * kShardIndexEntrySize);
  f.index_checksum = XXH3_64bits(index.data(), index.size());
  YC_RETURN_IF_ERROR(Append(index.data(), index.size()));
  f.shard_checksum = XXH3_64bits_digest(&hash_->state);
  uint8_t footer[kShardFooterSize];
  EncodeShardFooter(f, footer);
  YC_RETURN_IF_ERROR(Append(footer, sizeof(footer)));
  YC_RETURN_IF_ERROR(Flush());
  // Durable before the manifest can name it.
  if (::fsync(fd_) != 0) return Status::IOError(Status::At(path_, std::string("fsync: ") + std::strerror(errno)));
  if (::close(fd_) != 0) {
    fd_ = -1;
    return Status::IOError(Status::At(path_, std::string("close: ") + std::strerror(errno)));
  }
  fd_ = -1;
  finished_ = true;
  if (info != nullptr) *info = ShardInfo{f.record_count, offset_, f.shard_checksum};
  return Status::OK();
}

}  // namespace yc
