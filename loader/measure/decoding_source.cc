#include "loader/measure/decoding_source.h"

#include <cstring>

#include "libcache/base/file_read.h"
#include "libcache/source/dataset_spec.h"
#include "libcache/source/decode.h"

namespace yc {

DecodingSource::DecodingSource(std::shared_ptr<const RecordSource> labels, std::filesystem::path dataset_root, int imgsz)
    : labels_(std::move(labels)), root_(std::move(dataset_root)), imgsz_(imgsz) {}

Result<std::filesystem::path> DecodingSource::DatasetRoot(const Manifest& manifest) {
  if (!manifest.dataset_root.empty()) return std::filesystem::path(manifest.dataset_root);  // as built
  Result<DatasetSpec> spec = LoadDatasetSpec(manifest.dataset_yaml, SpecOptions{manifest.working_dir});
  if (!spec.ok()) return spec.status().WithContext("the cache's source dataset");
  return spec->root;
}

Status DecodingSource::Read(size_t index, RecordView* out, ScratchBuffer* scratch) const {
  thread_local ScratchBuffer label_scratch;
  thread_local std::vector<uint8_t> file;
  thread_local DecodedImage decoded;
  RecordView labels;
  YC_RETURN_IF_ERROR(labels_->Read(index, &labels, &label_scratch));
  const std::filesystem::path path = root_ / std::string(labels.source);
  // Never blocks on a FIFO left where the image was, and never reads a device without end.
  const Status read = ReadRegularFile(path, kMaxImageFileBytes, &file);
  if (!read.ok()) return read.WithContext("source image");
  DecodeOptions options;
  options.imgsz = imgsz_;
  DecodeImage(file.data(), file.size(), options, &decoded);
  if (decoded.has_error() || decoded.rgb.empty())
    return Status::Corruption(Status::At(path.string(), "decode failed"));

  // scratch = [pixels][boxes][source path]: one buffer, so the view lives as long as the scratch.
  const size_t pixel_bytes = decoded.rgb.total() * 3, box_bytes = labels.box_count * sizeof(Box);
  const size_t box_offset = (pixel_bytes + alignof(Box) - 1) / alignof(Box) * alignof(Box);
  scratch->resize(box_offset + box_bytes + labels.source.size());
  uint8_t* p = scratch->data();
  std::memcpy(p, decoded.rgb.data, pixel_bytes);
  if (box_bytes) std::memcpy(p + box_offset, labels.boxes, box_bytes);
  if (!labels.source.empty()) std::memcpy(p + box_offset + box_bytes, labels.source.data(), labels.source.size());
  *out = labels;
  out->pixels = p;
  out->height = decoded.rgb.rows;
  out->width = decoded.rgb.cols;
  out->channels = 3;
  out->boxes = reinterpret_cast<const Box*>(p + box_offset);
  out->source = std::string_view(reinterpret_cast<const char*>(p + box_offset + box_bytes), labels.source.size());
  return Status::OK();
}

}  // namespace yc
