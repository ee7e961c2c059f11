// Writes a `torch.save` zip archive (the format trainer/io/torch_archive.h reads and Python's torch.load
// opens): archive/data.pkl (a protocol-2 pickle, trainer/io/pickle_writer.h), archive/byteorder
// ("little"), one raw storage per tensor in archive/data/<key>, archive/version, as PyTorch's own
// torch/serialization.py _save lays them out. The zip itself is LibTorch's PyTorchStreamWriter (the writer
// torch.save uses): stored entries, 64-byte aligned.
//
//   TorchSaveWriter w;
//   PickleWriter& p = w.pickle();
//   p.EmptyDict(); p.Mark(); p.Str("w"); w.Tensor(weight); p.SetItems();
//   Result<std::string> zip = w.Finish();
//
// Tensors are pushed as torch._utils._rebuild_tensor_v2 of a persistent storage id ('storage',
// torch.<Type>Storage, key, 'cpu', numel); each gets its own storage, holding a contiguous host copy
// taken when Tensor() is called (the caller's tensor may change afterwards). The same tensor pushed again
// (same data, dtype, sizes and strides: e.g. one EMA weight in two places of the pickle) reuses its storage,
// as torch.save shares the storage of tensors that share it.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "base/status.h"
#include "trainer/io/host_copies.h"
#include "trainer/io/pickle_writer.h"

namespace yc::trainer {

class TorchSaveWriter {
 public:
  PickleWriter& pickle() { return pickle_; }

  // Pushes a tensor (any device) and returns the host copy stored. A device tensor's copy is only queued
  // (trainer/io/host_copies.h): read it after copies().Wait() or EndSharing(). Unsupported dtypes (complex,
  // quantized) throw c10::Error, as LibTorch does for bad tensors.
  at::Tensor Tensor(const at::Tensor& tensor);
  // The queued host copies: more of them (taken with the writer's), and the wait for all of them.
  HostCopies& copies() { return copies_; }
  // torch._utils._rebuild_parameter(tensor, requires_grad, OrderedDict()): an nn.Parameter.
  void Parameter(const at::Tensor& tensor, bool requires_grad);
  // collections.OrderedDict() ready for key, value pairs: push them, then EndOrderedDict().
  void BeginOrderedDict();
  void EndOrderedDict();
  void EmptyOrderedDict();
  // builtins.set() (empty), as nn.Module's _non_persistent_buffers_set.
  void EmptySet();

  // Ends storage sharing: waits for the host copies, and the tensors pushed so far are no longer kept alive
  // (while they are, no other tensor can take their memory and be mistaken for them). Call once the pickle
  // is complete.
  void EndSharing();

  // Host bytes of every tensor so far.
  uint64_t storage_bytes() const { return storage_bytes_; }
  // STOP, and the archive's bytes. IOError when LibTorch's zip writer fails.
  Result<std::string> Finish();

 private:
  PickleWriter pickle_;
  // What identifies a tensor already stored: data pointer, device, dtype, sizes, strides.
  using Identity = std::tuple<const void*, std::string, int, std::vector<int64_t>, std::vector<int64_t>>;
  std::vector<std::pair<std::string, at::Tensor>> storages_;  // key -> contiguous host tensor
  std::map<Identity, size_t> stored_;                         // -> index in storages_
  std::vector<at::Tensor> sources_;                           // the tensors stored_ identifies, kept alive
  uint64_t storage_bytes_ = 0;
  HostCopies copies_;
};

}  // namespace yc::trainer
