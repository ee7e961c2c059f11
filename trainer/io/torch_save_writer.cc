#include "trainer/io/torch_save_writer.h"
#include "trainer/runtime/exception_text.h"

#include <caffe2/serialize/inline_container.h>
#include <c10/util/Exception.h>

namespace yc::trainer {

namespace {

// torch.<Type>Storage: the storage class torch.load maps each element type from.
const char* StorageClass(at::ScalarType type) {
  switch (type) {
    case at::kHalf: return "HalfStorage";
    case at::kFloat: return "FloatStorage";
    case at::kDouble: return "DoubleStorage";
    case at::kBFloat16: return "BFloat16Storage";
    case at::kLong: return "LongStorage";
    case at::kInt: return "IntStorage";
    case at::kShort: return "ShortStorage";
    case at::kChar: return "CharStorage";
    case at::kByte: return "ByteStorage";
    case at::kBool: return "BoolStorage";
    default: break;
  }
  TORCH_CHECK(false, "torch.save writer: no storage class for dtype ", type);
  return "";
}

}  // namespace

at::Tensor TorchSaveWriter::Tensor(const at::Tensor& tensor) {
  const char* storage_class = StorageClass(tensor.scalar_type());
  const Identity id{tensor.data_ptr(), tensor.device().str(), static_cast<int>(tensor.scalar_type()),
                    tensor.sizes().vec(), tensor.strides().vec()};
  auto [it, fresh] = stored_.emplace(id, storages_.size());
  if (fresh) {
    sources_.push_back(tensor);  // its address stays its own while stored_ names it
    at::Tensor host = copies_.Queue(tensor);
    storage_bytes_ += host.nbytes();
    storages_.emplace_back(std::to_string(storages_.size()), std::move(host));
  }
  const auto& [key, host] = storages_[it->second];
  PickleWriter& p = pickle_;
  p.Global("torch._utils", "_rebuild_tensor_v2");
  p.Mark();
  {  // the storage: a persistent id
    p.Mark();
    p.Str("storage");
    p.Global("torch", storage_class);
    p.Str(key);
    p.Str("cpu");
    p.Int(host.numel());
    p.Tuple();
    p.BinPersId();
  }
  p.Int(0);  // storage offset
  p.Mark();
  for (int64_t s : host.sizes()) p.Int(s);
  p.Tuple();
  p.Mark();
  for (int64_t s : host.strides()) p.Int(s);
  p.Tuple();
  p.Bool(false);  // requires_grad (parameters set theirs through _rebuild_parameter)
  EmptyOrderedDict();  // backward hooks
  p.Tuple();
  p.Reduce();
  return host;
}

void TorchSaveWriter::Parameter(const at::Tensor& tensor, bool requires_grad) {
  pickle_.Global("torch._utils", "_rebuild_parameter");
  pickle_.Mark();
  Tensor(tensor);
  pickle_.Bool(requires_grad);
  EmptyOrderedDict();
  pickle_.Tuple();
  pickle_.Reduce();
}

void TorchSaveWriter::BeginOrderedDict() {
  pickle_.Global("collections", "OrderedDict");
  pickle_.EmptyTuple();
  pickle_.Reduce();
  pickle_.Mark();
}

void TorchSaveWriter::EndOrderedDict() { pickle_.SetItems(); }

void TorchSaveWriter::EmptyOrderedDict() {
  pickle_.Global("collections", "OrderedDict");
  pickle_.EmptyTuple();
  pickle_.Reduce();
}

void TorchSaveWriter::EmptySet() {
  pickle_.Global("__builtin__", "set");  // protocol 2 names builtins as Python 2 did; Python 3 maps it
  pickle_.Mark();
  pickle_.EmptyList();
  pickle_.Tuple();
  pickle_.Reduce();
}

void TorchSaveWriter::EndSharing() {
  copies_.Wait();
  stored_.clear();
  sources_.clear();
}

Result<std::string> TorchSaveWriter::Finish() {
  EndSharing();
  const std::string pkl = pickle_.Finish();
  std::string out;
  try {
    caffe2::serialize::PyTorchStreamWriter zip([&out](const void* data, size_t n) -> size_t {
      out.append(static_cast<const char*>(data), n);
      return n;
    });
    zip.writeRecord("data.pkl", pkl.data(), pkl.size());
    static constexpr char kLittle[] = "little";
    zip.writeRecord("byteorder", kLittle, sizeof kLittle - 1);
    for (const auto& [key, t] : storages_) zip.writeRecord("data/" + key, t.data_ptr(), t.nbytes());
    zip.writeEndOfFile();
  } catch (const std::exception& e) {
    return Status::IOError(std::string("cannot write the torch.save archive: ") + ExceptionLine(e));
  }
  storages_.clear();
  return out;
}

}  // namespace yc::trainer
