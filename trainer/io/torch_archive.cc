#include "trainer/io/torch_archive.h"

#include <caffe2/serialize/inline_container.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>

namespace yc::trainer {

namespace fs = std::filesystem;
using Kind = PyValue::Kind;

namespace {

// Element types by torch's storage class names (torch.HalfStorage, ...).
bool StorageDtype(const std::string& name, at::ScalarType* dtype) {
  static const std::map<std::string, at::ScalarType> kTypes = {
      {"HalfStorage", at::kHalf},     {"FloatStorage", at::kFloat}, {"DoubleStorage", at::kDouble},
      {"BFloat16Storage", at::kBFloat16}, {"LongStorage", at::kLong}, {"IntStorage", at::kInt},
      {"ShortStorage", at::kShort},   {"CharStorage", at::kChar},   {"ByteStorage", at::kByte},
      {"BoolStorage", at::kBool},     {"UntypedStorage", at::kByte}};
  auto it = kTypes.find(name);
  if (it == kTypes.end()) return false;
  *dtype = it->second;
  return true;
}

}  // namespace

bool LooksLikeZip(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::memcmp(magic, "PK\3\4", 4) == 0;
}

TorchArchive::~TorchArchive() = default;

Status TorchArchive::Bad(const std::string& why) const { return Status::IOError(path_.string() + ": " + why); }

Result<std::unique_ptr<TorchArchive>> TorchArchive::Open(const fs::path& path) {
  std::unique_ptr<TorchArchive> a(new TorchArchive());
  a->path_ = path;
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return Status::IOError(path.string() + ": no such file");
  if (fs::is_directory(st)) return Status::IOError(path.string() + ": is a directory, not a weights file");
  if (!fs::is_regular_file(st)) return Status::IOError(path.string() + ": not a regular file");
  const auto size = fs::file_size(path, ec);
  if (ec) return Status::IOError(path.string() + ": " + ec.message());
  if (size == 0) return a->Bad("empty file");
  a->budget_ = kMaterializeFactor * size + kMaterializeSlack;
  if (!LooksLikeZip(path)) return a->Bad("not a torch.save zip archive (no zip signature)");
  std::string pickle;
  try {
    a->zip_ = std::make_unique<caffe2::serialize::PyTorchStreamReader>(path.string());
  } catch (const std::exception& e) {
    // LibTorch's message is multi-line with a C++ backtrace; its first line says what was wrong.
    std::string why = e.what();
    why = why.substr(0, why.find('\n'));
    return a->Bad("damaged or truncated zip archive (" + why + ")");
  }
  YC_ASSIGN_OR_RETURN(a->directory_, ReadZipDirectory(path));
  if (!a->HasRecord("data.pkl")) return a->Bad("zip archive without data.pkl: not a torch.save file");
  if (a->HasRecord("byteorder")) {
    YC_ASSIGN_OR_RETURN(std::string order, a->Record("byteorder", 64));
    if (order != "little") return a->Bad("byte order '" + order + "' is not supported");
  }
  YC_ASSIGN_OR_RETURN(pickle, a->Record("data.pkl", std::numeric_limits<uint32_t>::max() - 1));
  YC_ASSIGN_OR_RETURN(a->tree_, Unpickle(pickle, path.string() + " (data.pkl)"));
  return a;
}

bool TorchArchive::HasRecord(const std::string& name) const {
  try {
    return zip_->hasRecord(name);
  } catch (const std::exception&) {
    return false;
  }
}

std::vector<std::string> TorchArchive::RecordsUnder(const std::string& prefix) const {
  const std::string full = directory_.root() + "/" + prefix;
  std::vector<std::string> out;
  for (auto it = directory_.members().lower_bound(full); it != directory_.members().end(); ++it) {
    if (it->first.compare(0, full.size(), full) != 0) break;
    out.push_back(it->first.substr(directory_.root().size() + 1));
  }
  return out;
}

Result<const ZipMember*> TorchArchive::Member(const std::string& name, uint64_t max_bytes) const {
  const ZipMember* m = directory_.Find(directory_.root() + "/" + name);
  if (m == nullptr || !HasRecord(name)) return Bad(name + " is missing from the archive");
  if (m->size > max_bytes) {
    return Bad(name + " holds " + std::to_string(m->size) + " bytes, more than the " + std::to_string(max_bytes) + " expected");
  }
  return m;
}

Status TorchArchive::CheckCrc(const std::string& name, const ZipMember& member, const void* data, size_t n) const {
  if (n != member.size) {
    return Bad(name + " holds " + std::to_string(n) + " bytes, the zip directory says " + std::to_string(member.size));
  }
  const uint32_t crc = Crc32(data, n);
  if (crc != member.crc32) {
    char msg[96];
    std::snprintf(msg, sizeof msg, " fails its CRC-32 check (stored %08x, read %08x): the file is damaged", member.crc32, crc);
    return Bad(name + msg);
  }
  return Status::OK();
}

Result<std::string> TorchArchive::Record(const std::string& name, uint64_t max_bytes) {
  YC_ASSIGN_OR_RETURN(const ZipMember* member, Member(name, max_bytes));
  std::string out;
  try {
    auto [ptr, n] = zip_->getRecord(name);
    out.assign(static_cast<const char*>(ptr.get()), n);
  } catch (const std::exception& e) {
    std::string why = e.what();
    why = why.substr(0, why.find('\n'));
    return Bad("cannot read " + name + " (" + why + ")");
  }
  YC_RETURN_IF_ERROR(CheckCrc(name, *member, out.data(), out.size()));
  return out;
}

bool TorchArchive::IsTensor(ValueId id) const {
  if (id == kNoValue || tree_.at(id).kind != Kind::kObject) return false;
  const std::string cls = tree_.ClassName(id);
  return cls == "torch._utils._rebuild_tensor_v2" || cls == "torch._utils._rebuild_tensor" ||
         cls == "torch._utils._rebuild_parameter" || cls == "torch._utils._rebuild_parameter_with_state" ||
         cls == "torch._tensor._rebuild_from_type_v2";
}

Result<at::Tensor> TorchArchive::Storage(ValueId persid) {
  const PickleTree& t = tree_;
  if (persid == kNoValue || t.at(persid).kind != Kind::kPersId) return Bad("tensor storage is not a persistent id");
  const ValueId pid = t.at(persid).items.at(0);
  const PyValue& tup = t.at(pid);
  if (tup.kind != Kind::kTuple || tup.items.size() != 5) return Bad("storage id is not ('storage', type, key, location, numel)");
  const PyValue& tag = t.at(tup.items[0]);
  const PyValue& type = t.at(tup.items[1]);
  const PyValue& key = t.at(tup.items[2]);
  const PyValue& numel = t.at(tup.items[4]);
  if (tag.kind != Kind::kStr || tag.text != "storage") return Bad("persistent id is not a storage");
  if (key.kind != Kind::kStr || numel.kind != Kind::kInt) return Bad("storage key/numel of the wrong type");
  at::ScalarType dtype;
  if (type.kind != Kind::kGlobal || !StorageDtype(type.name, &dtype)) {
    return Bad("unsupported storage type " + t.Describe(tup.items[1]));
  }
  if (key.text.empty() || key.text.find_first_of("/\\") != std::string::npos || key.text.find("..") != std::string::npos) {
    return Bad("bad storage key '" + key.text + "'");
  }
  if (numel.integer < 0) return Bad("negative storage size");
  auto cached = storages_.find(key.text);
  if (cached != storages_.end()) {
    if (cached->second.scalar_type() != dtype || cached->second.numel() != numel.integer) {
      return Bad("storage " + key.text + " is referenced with two different types or sizes");
    }
    return cached->second;
  }
  const std::string record = "data/" + key.text;
  const int64_t elem = static_cast<int64_t>(c10::elementSize(dtype));
  if (numel.integer > std::numeric_limits<int64_t>::max() / elem) return Bad("storage size overflows");
  const int64_t nbytes = numel.integer * elem;
  YC_ASSIGN_OR_RETURN(const ZipMember* member, Member(record, std::numeric_limits<uint64_t>::max()));
  if (static_cast<int64_t>(member->size) != nbytes) {
    return Bad("storage " + record + " holds " + std::to_string(member->size) + " bytes, its header says " +
               std::to_string(numel.integer) + " x " + std::to_string(elem));
  }
  YC_RETURN_IF_ERROR(Charge(static_cast<uint64_t>(nbytes), "storage " + record));
  at::Tensor storage;
  try {
    auto [ptr, n] = zip_->getRecord(record);
    YC_RETURN_IF_ERROR(CheckCrc(record, *member, ptr.get(), n));
    storage = at::empty({numel.integer}, at::TensorOptions().dtype(dtype));
    if (n > 0) std::memcpy(storage.data_ptr(), ptr.get(), n);
  } catch (const std::exception& e) {
    std::string why = e.what();
    why = why.substr(0, why.find('\n'));
    return Bad("cannot read " + record + " (" + why + ")");
  }
  storages_.emplace(key.text, storage);
  return storage;
}

Status TorchArchive::Charge(uint64_t bytes, const std::string& what) {
  if (bytes > budget_ - charged_) {
    return Bad("reading " + what + " would materialise more than " + std::to_string(budget_) + " bytes (" +
               std::to_string(kMaterializeFactor) + " x the file's size + " + std::to_string(kMaterializeSlack >> 20) +
               " MiB): refused (tensors sharing one storage many times?)");
  }
  charged_ += bytes;
  return Status::OK();
}

Result<at::Tensor> TorchArchive::Materialize(ValueId id) {
  if (auto it = materialized_.find(id); it != materialized_.end()) return it->second;
  YC_ASSIGN_OR_RETURN(at::Tensor v, Tensor(id));
  std::string key = std::to_string(reinterpret_cast<uintptr_t>(v.storage().data())) + ":" +
                    std::to_string(static_cast<int>(v.scalar_type())) + ":" + std::to_string(v.storage_offset());
  for (int64_t s : v.sizes()) key += "," + std::to_string(s);
  key += ":";
  for (int64_t s : v.strides()) key += "," + std::to_string(s);
  auto cached = views_.find(key);
  if (cached == views_.end()) {
    const bool floating = v.is_floating_point();
    const uint64_t elem = floating ? sizeof(float) : c10::elementSize(v.scalar_type());
    YC_RETURN_IF_ERROR(Charge(static_cast<uint64_t>(v.numel()) * elem, "a tensor of " + std::to_string(v.numel()) + " elements"));
    at::Tensor out = floating ? v.to(at::kFloat).contiguous() : v.contiguous().clone();
    cached = views_.emplace(std::move(key), std::move(out)).first;
  }
  materialized_.emplace(id, cached->second);
  return cached->second;
}

Result<at::Tensor> TorchArchive::Tensor(ValueId id) {
  const PickleTree& t = tree_;
  // Unwrapping parameters and subclass rebuilds: bounded (a crafted self-reference must not loop).
  for (int depth = 0; depth < 8; ++depth) {
    if (!IsTensor(id)) return Bad("expected a tensor, found " + t.Describe(id));
    const std::string cls = t.ClassName(id);
    const ValueId args_id = t.at(id).args;
    if (args_id == kNoValue || t.at(args_id).kind != Kind::kTuple) return Bad(cls + " without arguments");
    const std::vector<ValueId>& args = t.at(args_id).items;
    if (cls == "torch._utils._rebuild_parameter" || cls == "torch._utils._rebuild_parameter_with_state") {
      if (args.empty()) return Bad(cls + " without arguments");
      id = args[0];
      continue;
    }
    if (cls == "torch._tensor._rebuild_from_type_v2") {  // (func, type, args, state): func(*args)
      if (args.size() < 3 || t.at(args[0]).kind != Kind::kGlobal || t.at(args[2]).kind != Kind::kTuple) {
        return Bad("bad _rebuild_from_type_v2 arguments");
      }
      // A synthetic call of func(*args) is not in the tree; check what it would be and read it directly.
      const std::string func = t.ClassName(args[0]);
      if (func != "torch._utils._rebuild_tensor_v2") return Bad("_rebuild_from_type_v2 of " + func);
      return View(args[2]);
    }
    return View(args_id);
  }
  return Bad("tensor nested too deeply");
}

Result<at::Tensor> TorchArchive::View(ValueId args_id) {
  const PickleTree& t = tree_;
  const std::vector<ValueId>& args = t.at(args_id).items;
  // _rebuild_tensor(_v2)(storage, storage_offset, size, stride, ...)
  if (args.size() < 4) return Bad("tensor rebuild with " + std::to_string(args.size()) + " arguments");
  YC_ASSIGN_OR_RETURN(at::Tensor storage, Storage(args[0]));
  const PyValue& off = t.at(args[1]);
  const PyValue& size = t.at(args[2]);
  const PyValue& stride = t.at(args[3]);
  if (off.kind != Kind::kInt || size.kind != Kind::kTuple || stride.kind != Kind::kTuple) {
    return Bad("tensor offset/size/stride of the wrong type");
  }
  if (size.items.size() != stride.items.size()) return Bad("tensor size and stride differ in length");
  if (size.items.size() > 16) return Bad("tensor with " + std::to_string(size.items.size()) + " dimensions");
  const int64_t n = storage.numel();
  if (off.integer < 0 || off.integer > n) return Bad("tensor offset " + std::to_string(off.integer) + " outside its storage");
  std::vector<int64_t> sizes, strides;
  int64_t count = 1;
  int64_t last = off.integer;  // index of the last element addressed
  bool empty = false;
  for (size_t i = 0; i < size.items.size(); ++i) {
    const PyValue& s = t.at(size.items[i]);
    const PyValue& st = t.at(stride.items[i]);
    if (s.kind != Kind::kInt || st.kind != Kind::kInt || s.integer < 0 || st.integer < 0) {
      return Bad("tensor size/stride entries must be non-negative integers");
    }
    if (s.integer > n && s.integer > 0 && n >= 0 && st.integer > 0) return Bad("tensor size exceeds its storage");
    sizes.push_back(s.integer);
    strides.push_back(st.integer);
    if (s.integer == 0) empty = true;
  }
  if (!empty) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      // Products stay below 2^63: each factor is at most the storage size (checked above) or, with stride 0,
      // counted against the element bound below.
      if (count > n / std::max<int64_t>(sizes[i], 1)) return Bad("tensor has more elements than its storage");
      count *= sizes[i];
      const int64_t span = sizes[i] - 1;
      if (span > 0 && strides[i] > (n - last) / span) return Bad("tensor view runs past the end of its storage");
      last += span * strides[i];
    }
    if (last >= n) return Bad("tensor view runs past the end of its storage");
  }
  return storage.as_strided(sizes, strides, off.integer);
}

}  // namespace yc::trainer
