// A cache split as one run uses it: the records Ultralytics' `fraction` keeps and the labels its
// `classes` and `single_cls` leave, chosen when the run opens the data, so that neither needs the cache
// rebuilt. Every reader of the run (train and val loaders, labels.jpg) reads through it and sees the
// same labels.
//
//   LabelRules rules{{0, 2}, /*single_cls=*/true};
//   size_t n = FractionRecords(*manifest.FindSplit("train"), 0.5);    // Ultralytics' first round(N * 0.5) images
//   auto train = std::make_shared<SelectedSource>(split, n, rules);    // records 0..n-1, relabelled
//
// Ultralytics' meanings (8.3): ultralytics/data/base.py get_img_files (fraction: the first
// round(len(im_files) * fraction) of the sorted image files, before corrupt ones are dropped; train only,
// ultralytics/data/build.py), update_labels (classes: only labels of the listed classes are kept, the
// images stay, as backgrounds when none is left; then single_cls: every label becomes class 0) and
// ultralytics/engine/trainer.py get_dataset (single_cls: names {0: "item"}, nc 1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "libcache/format/manifest.h"
#include "libcache/record_source.h"

namespace yc {

struct LabelRules {
  std::vector<int32_t> classes;  // keep only boxes of these classes; empty: every class
  bool single_cls = false;       // every kept box becomes class 0

  bool active() const { return single_cls || !classes.empty(); }
};

// The class names a run trains on: {"item"} with single_cls (Ultralytics' name), else `names`.
std::vector<std::string> SelectedNames(const std::vector<std::string>& names, const LabelRules& rules);

// InvalidArgument naming the class when `rules` lists one the data does not have (0..nc-1): Ultralytics
// would silently keep no label of it.
Status CheckLabelRules(const LabelRules& rules, size_t nc);

// How many of split `split`'s records Ultralytics' fraction keeps: those among the first
// round(images * fraction) source images (Python's round, half to even), where `images` counts the
// split's listed images, excluded ones included, as Ultralytics cuts its file list before it checks
// the images. The records are in source order, so they are the first ones. A manifest that does not
// list the split's sources (a bare cache) cuts its records instead. fraction >= 1: all.
size_t FractionRecords(const SplitManifest& split, double fraction);

// The first `records` records of `base` (at most its size), their boxes filtered and relabelled by
// `rules` on every read. Records whose labels the rules leave as they are are returned as the base
// returns them (zero copy); the others' boxes are written into the caller's scratch buffer after what
// the base put there, so a warm reader still allocates nothing. Thread-safe as the base is.
class SelectedSource final : public RecordSource {
 public:
  SelectedSource(std::shared_ptr<const RecordSource> base, size_t records, LabelRules rules);

  size_t size() const override { return size_; }
  Status Read(size_t index, RecordView* out, ScratchBuffer* scratch) const override;
  bool Extent(size_t index, RecordExtent* out) const override;
  void WillNeedRange(const RecordExtent& range) const override { base_->WillNeedRange(range); }
  Status DropCachedPages() const override { return base_->DropCachedPages(); }
  // The selected records' bytes (all of the base's when it is not file-backed).
  uint64_t data_bytes() const override { return data_bytes_; }
  std::string DataFilePath(uint32_t file) const override { return base_->DataFilePath(file); }
  Status ReadStored(size_t index, const uint8_t* stored, RecordView* out, ScratchBuffer* scratch) const override;

  const LabelRules& rules() const { return rules_; }

 private:
  Status Relabel(RecordView* out, ScratchBuffer* scratch) const;

  std::shared_ptr<const RecordSource> base_;
  size_t size_ = 0;
  uint64_t data_bytes_ = 0;
  LabelRules rules_;
};

}  // namespace yc
