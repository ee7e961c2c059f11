// Reads a `torch.save` zip archive (PyTorch >= 1.6's default format) without Python: the pickle in
// <root>/data.pkl as a generic tree (trainer/io/pickle.h), and its tensors on demand from the raw
// storages in <root>/data/<key>.
//
//   Result<std::unique_ptr<TorchArchive>> a = TorchArchive::Open("yolov8n.pt");
//   const PickleTree& t = (*a)->tree();
//   Result<at::Tensor> w = (*a)->Tensor(t.Find(params, "weight"));  // _rebuild_tensor_v2 / _rebuild_parameter
//
// The zip is read by LibTorch's caffe2::serialize::PyTorchStreamReader (miniz; stored or deflated entries,
// zip64). A tensor's storage is read once and shared by every view of it, as torch.load does. Every
// storage key, element type, byte size, shape, stride and offset is checked against the storage before
// a view is made; a file that is not such an archive, or is damaged, is IOError naming it. Every member
// read is checked against the CRC-32 its central directory records (trainer/io/zip_directory.h):
// LibTorch's reader does not check them.
//
// Memory stays a small multiple of the file: the bytes of the storages read and of the tensors
// materialised (Materialize) are counted against kMaterializeFactor x the file's size + kMaterializeSlack,
// and a file asking for more is IOError "... would materialise more than N bytes". A view made many
// times (one storage referenced by thousands of parameters) is materialised once.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "base/status.h"
#include "trainer/io/pickle.h"
#include "trainer/io/zip_directory.h"

namespace caffe2::serialize {
class PyTorchStreamReader;
}

namespace yc::trainer {

// Whether `path` starts like a zip archive ("PK\3\4"); false for unreadable files.
bool LooksLikeZip(const std::filesystem::path& path);

class TorchArchive {
 public:
  static Result<std::unique_ptr<TorchArchive>> Open(const std::filesystem::path& path);
  ~TorchArchive();

  const PickleTree& tree() const { return tree_; }
  const std::filesystem::path& path() const { return path_; }
  // Whether the archive holds <root>/<name> (e.g. "constants.pkl": a TorchScript / LibTorch archive).
  bool HasRecord(const std::string& name) const;
  // The names of the records below <root>/<prefix> ("code/"), root stripped, in name order (lowercased).
  std::vector<std::string> RecordsUnder(const std::string& prefix) const;
  // The bytes of <root>/<name>, CRC-checked; IOError naming the file when absent, larger than
  // `max_bytes` (checked before anything is read) or damaged.
  Result<std::string> Record(const std::string& name, uint64_t max_bytes);

  // The tensor a value stands for: torch._utils._rebuild_tensor_v2 / _rebuild_tensor, _rebuild_parameter(
  // _with_state), torch._tensor._rebuild_from_type_v2 of one of those. A CPU tensor of the stored dtype
  // viewing the shared storage.
  Result<at::Tensor> Tensor(ValueId id);
  // Whether `id` is one of those tensor constructions (without reading anything).
  bool IsTensor(ValueId id) const;
  // Tensor(id) as a state_dict holds it: contiguous, floating types as float32, integers copied. One
  // tensor per distinct view (by object and by storage, offset, sizes and strides), shared by every
  // reference to it; the bytes made count against the archive's budget.
  Result<at::Tensor> Materialize(ValueId id);

  static constexpr uint64_t kMaterializeFactor = 4;           // fp16 storage + its float32 copy, with room
  static constexpr uint64_t kMaterializeSlack = uint64_t{64} << 20;

 private:
  TorchArchive() = default;
  Status Bad(const std::string& why) const;
  Result<at::Tensor> Storage(ValueId persid);
  Result<at::Tensor> View(ValueId args);  // _rebuild_tensor_v2's arguments
  // The directory entry of <root>/<name>: IOError when absent or larger than `max_bytes`.
  Result<const ZipMember*> Member(const std::string& name, uint64_t max_bytes) const;
  // IOError unless `n` bytes at `data` are what the directory records for <root>/<name>.
  Status CheckCrc(const std::string& name, const ZipMember& member, const void* data, size_t n) const;
  Status Charge(uint64_t bytes, const std::string& what);  // against budget_

  std::filesystem::path path_;
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> zip_;
  ZipDirectory directory_;
  PickleTree tree_;
  std::map<std::string, at::Tensor> storages_;  // key -> flat storage tensor
  std::map<ValueId, at::Tensor> materialized_;   // by tensor object
  std::map<std::string, at::Tensor> views_;      // by view: storage, dtype, offset, sizes, strides
  uint64_t budget_ = 0, charged_ = 0;
};

}  // namespace yc::trainer
