#include "loader/io/staged_window.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "libcache/base/box.h"
#include "libcache/format/record_format.h"

namespace yc {

namespace {

constexpr uint64_t kPage = 4096;                  // O_DIRECT's alignment (DirectFile::kAlignment)
constexpr uint64_t kHugePage = uint64_t{2} << 20;  // x86-64's transparent huge page

// At least `bytes` (with 1/8 headroom, windows differ a little in size), aligned for O_DIRECT; huge
// pages asked for when large: O_DIRECT pins the pages of each read and the workers walk them, and
// huge pages need 512x fewer page-table entries for both. nullptr when out of memory.
uint8_t* Allocate(uint64_t bytes, uint64_t* capacity) {
  const uint64_t wanted = std::max<uint64_t>(bytes / 8 * 9, kPage);
  const uint64_t unit = wanted >= 16 * kHugePage ? kHugePage : kPage;
  *capacity = (wanted + unit - 1) / unit * unit;
  void* p = std::aligned_alloc(unit, *capacity);
  if (p == nullptr) {
    *capacity = 0;
    return nullptr;
  }
  if (unit == kHugePage) ::madvise(p, *capacity, MADV_HUGEPAGE);  // a hint: without THP it works the same
  return static_cast<uint8_t*>(p);
}

// Where a kept record's boxes start in its arena bytes: after the pixels, aligned for Box.
uint64_t BoxesAt(uint64_t pixel_bytes) { return (pixel_bytes + alignof(Box) - 1) / alignof(Box) * alignof(Box); }

bool Within(const void* p, const uint8_t* begin, uint64_t length) {
  const auto* q = static_cast<const uint8_t*>(p);
  return q >= begin && q < begin + length;
}

}  // namespace

void StagedWindow::FreeBuffer::operator()(uint8_t* p) const { std::free(p); }

uint8_t* StagedWindow::Reserve(uint64_t bytes, uint64_t window_bytes) {
  entries_.clear();
  if (bytes > buffer_capacity_) {
    buffer_.reset();
    buffer_.reset(Allocate(std::max(bytes, window_bytes), &buffer_capacity_));
    if (buffer_ == nullptr) return nullptr;
  }
  return buffer_.get();
}

void StagedWindow::Seal(uint64_t arena_bytes) {
  std::sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) { return a.record < b.record; });
  // Lay out the arena: compressed records, in record order, while they fit.
  uint64_t arena = 0;
  for (Entry& e : entries_) {  // fresh from Add: no arena yet
    RecordHeader h;
    if (!ParseRecordHeader(buffer_.get() + e.offset, e.length, &h).ok() || h.codec == Codec::Kind::kNone) continue;
    const uint64_t bytes = (BoxesAt(h.raw_pixel_bytes) + uint64_t{h.box_count} * sizeof(Box) + 63) / 64 * 64;
    if (arena + bytes > arena_bytes) break;
    e.arena = arena;
    e.pixel_bytes = h.raw_pixel_bytes;
    e.box_count = h.box_count;
    arena += bytes;
  }
  if (arena > arena_capacity_) {
    arena_.reset();
    arena_.reset(Allocate(std::max(arena, arena_bytes), &arena_capacity_));
    if (arena_ == nullptr)
      for (Entry& e : entries_) e.arena = kNoArena;
  }
  if (entries_.size() > state_capacity_) {
    state_capacity_ = entries_.size() + entries_.size() / 8;
    state_.reset(new std::atomic<uint8_t>[state_capacity_]);
  }
  for (size_t k = 0; k < entries_.size(); ++k) state_[k].store(kNotDecoded, std::memory_order_relaxed);
  views_.resize(entries_.size());
}

Status StagedWindow::Read(size_t index, RecordView* out, ScratchBuffer* scratch) const {
  const auto it = std::lower_bound(entries_.begin(), entries_.end(), index,
                                   [](const Entry& e, size_t i) { return e.record < i; });
  if (it == entries_.end() || it->record != index) return source_->Read(index, out, scratch);
  const size_t k = static_cast<size_t>(it - entries_.begin());
  if (it->arena != kNoArena && state_[k].load(std::memory_order_acquire) == kDecoded) {
    *out = views_[k];
    return Status::OK();
  }
  Status s = source_->ReadStored(index, buffer_.get() + it->offset, out, scratch);
  if (s.ok() && it->arena != kNoArena) Keep(k, *out);
  return s;
}

void StagedWindow::Keep(size_t k, const RecordView& view) const {
  const Entry& e = entries_[k];
  const uint64_t pixels = static_cast<uint64_t>(view.height) * view.width * view.channels;
  if (pixels != e.pixel_bytes || view.box_count > e.box_count) return;  // not what the header said: never kept
  uint8_t expected = kNotDecoded;
  if (!state_[k].compare_exchange_strong(expected, kDecoding, std::memory_order_acq_rel)) return;  // another has it
  uint8_t* dst = arena_.get() + e.arena;
  RecordView kept = view;
  std::memcpy(dst, view.pixels, pixels);
  kept.pixels = dst;
  // Boxes in the stored bytes stay valid with them (shards); copied ones (LMDB's unaligned values)
  // lie in the reader's scratch and are kept too.
  if (view.box_count > 0 && !Within(view.boxes, buffer_.get() + e.offset, e.length)) {
    Box* boxes = reinterpret_cast<Box*>(dst + BoxesAt(pixels));
    std::memcpy(static_cast<void*>(boxes), view.boxes, view.box_count * sizeof(Box));
    kept.boxes = boxes;
  }
  views_[k] = kept;
  state_[k].store(kDecoded, std::memory_order_release);
}

}  // namespace yc
