// yolocache._Loader: the C++ loader (loader/loader.h) behind yolocache.Loader. Each batch comes out as
// Ultralytics' collate dict; `img` is the batch's own pool buffer wrapped as a tensor (no copy), whose
// deleter hands the buffer back to the pool when Python frees the tensor. Tensors cross into Python
// through DLPack, so only ATen is compiled here (no torch Python headers): the module works with the
// LibTorch of whichever torch it was built against. next() waits with the GIL released; the workers
// are TBB threads that never touch Python.
//
// Sharing: calls into one C++ loader are serialised by a mutex (taken with the GIL released, so a waiting
// thread never blocks the one inside); yolocache.Loader refuses a second concurrent iteration on top.
// Fork: a Loader made before os.fork() is unusable in the child (its TBB workers exist only in the
// parent); every call there raises yolocache.Error, and the child never waits on the parent's workers.
// A new Loader in such a child is refused too (thread_pool_guard.cc).
#include <ATen/ATen.h>
#include <ATen/DLConvertor.h>
#include <pybind11/pybind11.h>

#include <unistd.h>

#include <map>
#include <mutex>

#include "loader/loader.h"
#include "python/src/bindings.h"

namespace yc::py {
namespace {

// Page-locked host memory from torch's CUDA host allocator, so `img.to('cuda', non_blocking=True)` is
// an asynchronous copy. Each buffer is a byte tensor kept alive here until the pool frees it.
class PinnedBuffers final : public BufferAllocator {
 public:
  void* Allocate(size_t bytes) override {
    try {
      at::Tensor block = at::empty({static_cast<int64_t>(bytes)}, at::dtype(at::kByte).pinned_memory(true));
      std::lock_guard<std::mutex> lock(mu_);
      return blocks_.emplace(block.data_ptr(), std::move(block)).first->first;
    } catch (const std::exception&) {  // no CUDA: the loader reports the failed allocation
      return nullptr;
    }
  }
  void Free(void* ptr, size_t) override {
    std::lock_guard<std::mutex> lock(mu_);
    blocks_.erase(ptr);
  }

 private:
  std::mutex mu_;
  std::map<void*, at::Tensor> blocks_;
};

// A tensor as a "dltensor" capsule (consumed by torch.utils.dlpack.from_dlpack). A capsule never
// consumed (an exception in between) still releases the tensor.
pb::object Capsule(const at::Tensor& t) {
  DLManagedTensor* managed = at::toDLPack(t);
  PyObject* capsule = PyCapsule_New(managed, "dltensor", [](PyObject* self) {
    if (!PyCapsule_IsValid(self, "dltensor")) return;  // renamed "used_dltensor": torch owns it now
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(self, "dltensor"));
    if (m != nullptr && m->deleter != nullptr) m->deleter(m);
  });
  if (capsule == nullptr) {
    managed->deleter(managed);
    throw pb::error_already_set();
  }
  return pb::reinterpret_steal<pb::object>(capsule);
}

// The Loader's keywords, pin_memory (page-locked batches: torch's CUDA host allocator) among them.
LoaderOptions ParseOptions(const pb::dict& keywords) {
  pb::dict options = keywords;  // a copy: pin_memory is taken out
  const bool pin_memory = options.contains("pin_memory") && pb::cast<bool>(options.attr("pop")("pin_memory"));
  LoaderOptions o = LoaderOptionsFromDict(options);
  if (pin_memory) o.allocator = std::make_shared<PinnedBuffers>();
  return o;
}

class PyLoader {
 public:
  PyLoader(std::shared_ptr<Cache> cache, const std::string& split, const pb::dict& options)
      : cache_(std::move(cache)), root_(DatasetRoot(*cache_)), creator_pid_(getpid()) {
    const RecordSource* source = cache_->split(split);
    if (source == nullptr) ThrowIfError(Status::InvalidArgument(cache_->dir().string() + ": no split '" + split + "'"));
    LoaderOptions o = ParseOptions(options);
    UseThreadPool("yolocache.Loader");
    Result<std::unique_ptr<Loader>> loader = Status::OK();
    {
      pb::gil_scoped_release release;  // val rect reads every record once
      loader = Loader::Create(std::shared_ptr<const RecordSource>(cache_, source), std::move(o));
    }
    ThrowIfError(loader.status());
    loader_ = std::move(loader.value());
    from_dlpack_ = pb::module_::import("torch.utils.dlpack").attr("from_dlpack");
  }

  // In a forked child the loader's worker threads are gone: destroying it would wait for them forever,
  // so the child leaves it to the OS (the parent's copy is unaffected).
  ~PyLoader() {
    if (Forked()) static_cast<void>(loader_.release());
  }

  void StartEpoch(int epoch, size_t first_batch) {
    ThrowIfForked();
    Status st;
    {
      pb::gil_scoped_release release;  // may wait for cancelled work
      std::lock_guard<std::mutex> lock(mu_);
      st = loader_->StartEpoch(epoch, first_batch);
    }
    ThrowIfError(st);
  }

  // The next batch as Ultralytics' collate dict, or None at the end of the epoch.
  pb::object Next() {
    ThrowIfForked();
    std::shared_ptr<Batch> batch;
    Status st;
    {
      pb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mu_);
      st = loader_->Next(&batch);
    }
    ThrowIfError(st);
    if (!batch) return pb::none();
    return ToDict(std::move(batch));
  }

  size_t batches_per_epoch() const { return loader_->batches_per_epoch(); }
  size_t dataset_size() const { return loader_->dataset_size(); }

  // Raises yolocache.Error in a process forked after this loader was made.
  void ThrowIfForked() const {
    if (!Forked()) return;
    ThrowIfError(Status::IOError(
        "yolocache.Loader was created in process " + std::to_string(creator_pid_) +
        " and cannot be used after os.fork() (its worker threads exist only in that process): create the Loader "
        "in the process that iterates it (with torch's DataLoader: num_workers=0; the Loader has its own threads)"));
  }

 private:
  bool Forked() const { return getpid() != creator_pid_; }
  pb::object Tensor(const at::Tensor& t) const { return from_dlpack_(Capsule(t)); }

  pb::dict ToDict(std::shared_ptr<Batch> batch) const {
    const Batch& b = *batch;
    const auto n = static_cast<int64_t>(b.label_count());
    at::Tensor batch_idx = at::empty({n}, at::kFloat), cls = at::empty({n, 1}, at::kFloat),
               boxes = at::empty({n, 4}, at::kFloat);
    float* bi = batch_idx.data_ptr<float>();
    float* c = cls.data_ptr<float>();
    float* xywh = boxes.data_ptr<float>();
    for (int64_t r = 0; r < n; ++r) {
      const float* row = &b.labels[static_cast<size_t>(r) * 6];
      bi[r] = row[0], c[r] = row[1];
      std::copy(row + 2, row + 6, xywh + 4 * r);
    }
    pb::tuple files(b.size), ori(b.size), resized(b.size), ratio_pad(b.size);
    for (int i = 0; i < b.size; ++i) {
      const SampleInfo& s = b.samples[static_cast<size_t>(i)];
      files[i] = root_.empty() ? s.source : (std::filesystem::path(root_) / s.source).string();
      ori[i] = pb::make_tuple(s.orig_h, s.orig_w);
      resized[i] = pb::make_tuple(b.height, b.width);  // Ultralytics: the shape after LetterBox / affine
      ratio_pad[i] = pb::make_tuple(pb::make_tuple(s.ratio_h, s.ratio_w), pb::make_tuple(s.pad_w, s.pad_h));
    }
    const std::vector<int64_t> sizes = b.layout == ImageLayout::kNCHW
                                           ? std::vector<int64_t>{b.size, 3, b.height, b.width}
                                           : std::vector<int64_t>{b.size, b.height, b.width, 3};
    uint8_t* pixels = batch->images;
    // The tensor owns a reference to the batch: its buffer returns to the pool when the tensor dies.
    auto* owner = new std::shared_ptr<Batch>(std::move(batch));
    at::Tensor img = at::from_blob(pixels, sizes, [owner](void*) { delete owner; }, at::dtype(at::kByte));
    pb::dict d;
    d["im_file"] = files;
    d["ori_shape"] = ori;
    d["resized_shape"] = resized;
    d["ratio_pad"] = ratio_pad;
    d["img"] = Tensor(img);
    d["cls"] = Tensor(cls);
    d["bboxes"] = Tensor(boxes);
    d["batch_idx"] = Tensor(batch_idx);
    return d;
  }

  std::shared_ptr<Cache> cache_;
  std::string root_;
  pid_t creator_pid_;
  std::mutex mu_;  // one call into loader_ at a time
  std::unique_ptr<Loader> loader_;
  pb::object from_dlpack_;
};

}  // namespace

void BindLoader(pb::module_& m) {
  pb::class_<PyLoader>(m, "_Loader")
      .def(pb::init<std::shared_ptr<Cache>, const std::string&, const pb::dict&>(), pb::arg("cache"),
           pb::arg("split"), pb::arg("options"))
      .def("start_epoch", &PyLoader::StartEpoch, pb::arg("epoch"), pb::arg("first_batch") = 0)
      .def("next", &PyLoader::Next)
      .def("check_process", &PyLoader::ThrowIfForked)
      .def_property_readonly("batches_per_epoch", &PyLoader::batches_per_epoch)
      .def_property_readonly("dataset_size", &PyLoader::dataset_size);
}

}  // namespace yc::py
