// The baseline a cache is measured against (`yolocache bench --compare`): a RecordSource that, like a
// plain Ultralytics dataloader without cache, reads and decodes the source image file on every access
// (TurboJPEG, EXIF, Ultralytics resize) instead of mapping pre-decoded pixels. Labels come from the
// cache, so both sources yield the same records.
#pragma once

#include <filesystem>
#include <memory>

#include "libcache/cache.h"
#include "libcache/record_source.h"

namespace yc {

class DecodingSource final : public RecordSource {
 public:
  // `labels`: a split of a cache built from `dataset_root` with long side `imgsz`.
  DecodingSource(std::shared_ptr<const RecordSource> labels, std::filesystem::path dataset_root, int imgsz);
  size_t size() const override { return labels_->size(); }
  Status Read(size_t index, RecordView* out, ScratchBuffer* scratch) const override;

  // The dataset root of a cache (from the data YAML recorded in its manifest).
  static Result<std::filesystem::path> DatasetRoot(const Manifest& manifest);

 private:
  std::shared_ptr<const RecordSource> labels_;
  std::filesystem::path root_;
  int imgsz_;
};

}  // namespace yc
