#include "libcache/record_selection.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

#include "libcache/base/coding.h"

namespace yc {

namespace {

// Where the boxes a rule rewrote are put in the scratch buffer: after every byte the base's Read left
// there (decompressed pixels, boxes it copied to align them), on a cache line of their own.
constexpr size_t kBoxAreaAlignment = 64;

uintptr_t Address(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// Room for `count` boxes in *scratch after what the base's Read left in it. The view's pointers into
// the scratch follow it when it has to grow (only then: a warm buffer is never reallocated).
Box* BoxArea(size_t count, RecordView* out, ScratchBuffer* scratch) {
  const uintptr_t begin = Address(scratch->data()), end = begin + scratch->size();
  auto inside = [&](const void* p) { return p != nullptr && Address(p) >= begin && Address(p) < end; };
  const size_t pixel_bytes = static_cast<size_t>(out->height) * out->width * out->channels;
  size_t used = 0;
  if (inside(out->pixels)) used = std::max(used, Address(out->pixels) - begin + pixel_bytes);
  if (inside(out->boxes)) used = std::max(used, Address(out->boxes) - begin + out->box_count * sizeof(Box));
  if (inside(out->source.data())) used = std::max(used, Address(out->source.data()) - begin + out->source.size());
  const size_t at = AlignUp(used, kBoxAreaAlignment);
  const size_t need = at + count * sizeof(Box);
  if (scratch->size() < need) {
    const bool pixels_in = inside(out->pixels), boxes_in = inside(out->boxes), source_in = inside(out->source.data());
    scratch->resize(need);
    uint8_t* moved = scratch->data();
    if (pixels_in) out->pixels = moved + (Address(out->pixels) - begin);
    if (boxes_in) out->boxes = reinterpret_cast<const Box*>(moved + (Address(out->boxes) - begin));
    if (source_in) {
      out->source = std::string_view(reinterpret_cast<const char*>(moved + (Address(out->source.data()) - begin)),
                                     out->source.size());
    }
  }
  return reinterpret_cast<Box*>(scratch->data() + at);
}

auto Geometry(const Box& b) { return std::make_tuple(b.cx, b.cy, b.w, b.h); }

// single_cls makes rows that differed only in their class equal. Ultralytics relabels before its
// duplicate check (ultralytics/data/utils.py verify_image_label: single_cls, then np.unique(axis=0)),
// which keeps one of each and, when it dropped any, leaves the rows in np.unique's sorted order; so do
// we. `sorted` is scratch room for `n` boxes. Returns the new count.
size_t DropCollapsedDuplicates(Box* boxes, size_t n, Box* sorted) {
  std::copy(boxes, boxes + n, sorted);
  std::sort(sorted, sorted + n, [](const Box& a, const Box& b) { return Geometry(a) < Geometry(b); });
  Box* last = std::unique(sorted, sorted + n, [](const Box& a, const Box& b) { return Geometry(a) == Geometry(b); });
  const size_t unique = static_cast<size_t>(last - sorted);
  if (unique < n) std::copy(sorted, last, boxes);
  return unique;
}

}  // namespace

std::vector<std::string> SelectedNames(const std::vector<std::string>& names, const LabelRules& rules) {
  if (rules.single_cls) return {"item"};  // ultralytics/engine/trainer.py get_dataset
  return names;
}

Status CheckLabelRules(const LabelRules& rules, size_t nc) {
  for (const int32_t c : rules.classes) {
    if (c < 0 || static_cast<size_t>(c) >= nc) {
      return Status::InvalidArgument("classes: " + std::to_string(c) + " is not a class of this data (0.." +
                                     std::to_string(nc > 0 ? nc - 1 : 0) + ")");
    }
  }
  return Status::OK();
}

size_t FractionRecords(const SplitManifest& split, double fraction) {
  if (!(fraction < 1)) return split.records;
  const bool sources_known = !split.sources.empty() && split.sources.size() == split.records + split.excluded;
  const size_t listed = sources_known ? split.sources.size() : split.records;
  // Python's round(): to nearest, ties to even, on the same double product (the default rounding mode).
  const size_t cut = static_cast<size_t>(std::nearbyint(static_cast<double>(listed) * std::max(fraction, 0.0)));
  if (!sources_known) return std::min<size_t>(cut, split.records);
  size_t kept = 0;
  for (size_t i = 0; i < cut; ++i) kept += split.sources[i].record >= 0 ? 1 : 0;
  return kept;
}

SelectedSource::SelectedSource(std::shared_ptr<const RecordSource> base, size_t records, LabelRules rules)
    : base_(std::move(base)), size_(std::min(records, base_->size())), rules_(std::move(rules)) {
  data_bytes_ = base_->data_bytes();
  if (size_ == base_->size() || data_bytes_ == 0) return;
  uint64_t selected = 0;
  RecordExtent e;
  for (size_t i = 0; i < size_; ++i) {
    if (!base_->Extent(i, &e)) return;  // not file-backed after all: the base's figure
    selected += e.length;
  }
  data_bytes_ = selected;
}

Status SelectedSource::Read(size_t index, RecordView* out, ScratchBuffer* scratch) const {
  if (index >= size_) {
    return Status::InvalidArgument("record " + std::to_string(index) + ": out of range (" + std::to_string(size_) +
                                   " records selected)");
  }
  YC_RETURN_IF_ERROR(base_->Read(index, out, scratch));
  return Relabel(out, scratch);
}

Status SelectedSource::ReadStored(size_t index, const uint8_t* stored, RecordView* out, ScratchBuffer* scratch) const {
  if (index >= size_) {
    return Status::InvalidArgument("record " + std::to_string(index) + ": out of range (" + std::to_string(size_) +
                                   " records selected)");
  }
  YC_RETURN_IF_ERROR(base_->ReadStored(index, stored, out, scratch));
  return Relabel(out, scratch);
}

bool SelectedSource::Extent(size_t index, RecordExtent* out) const {
  return index < size_ && base_->Extent(index, out);
}

// With both classes and single_cls, boxes are filtered by their stored class, then made 0: what
// update_labels does with labels cached without single_cls. (Ultralytics' own result depends on its
// labels/*.cache: a fresh one is relabelled before the filter, which then keeps all or nothing.)
Status SelectedSource::Relabel(RecordView* out, ScratchBuffer* scratch) const {
  if (!rules_.active() || out->box_count == 0) return Status::OK();
  if (scratch == nullptr) return Status::InvalidArgument("record: a scratch buffer is needed to relabel it");
  const std::vector<int32_t>& classes = rules_.classes;
  auto keep = [&](int32_t c) { return classes.empty() || std::find(classes.begin(), classes.end(), c) != classes.end(); };
  size_t kept = 0;
  bool changed = false;
  for (size_t i = 0; i < out->box_count; ++i) {
    const int32_t c = out->boxes[i].cls;
    if (!keep(c)) {
      changed = true;
      continue;
    }
    ++kept;
    changed = changed || (rules_.single_cls && c != 0);
  }
  if (!changed) return Status::OK();  // the stored labels are the selected ones
  // Twice the room with single_cls: the second half sorts a copy for the duplicate check.
  Box* dst = BoxArea(kept * (rules_.single_cls ? 2 : 1), out, scratch);
  size_t n = 0;
  for (size_t i = 0; i < out->box_count; ++i) {
    if (!keep(out->boxes[i].cls)) continue;
    dst[n] = out->boxes[i];
    if (rules_.single_cls) dst[n].cls = 0;
    ++n;
  }
  if (rules_.single_cls) n = DropCollapsedDuplicates(dst, n, dst + kept);
  out->boxes = n > 0 ? dst : nullptr;
  out->box_count = n;
  return Status::OK();
}

}  // namespace yc
