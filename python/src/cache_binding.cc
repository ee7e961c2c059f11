// yolocache.Cache: a built cache opened for reading (manifest, splits, class names, labels). The
// loader binding shares the same C++ Cache, so records stay mapped while any loader or batch uses them.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "libcache/cache.h"
#include "libcache/source/dataset_spec.h"
#include "python/src/bindings.h"

namespace yc::py {
namespace {

std::shared_ptr<Cache> OpenCache(const std::string& path, bool verify_checksums) {
  OpenOptions options;
  options.verify_checksums = verify_checksums;
  Result<std::unique_ptr<Cache>> cache = Status::OK();
  {
    pb::gil_scoped_release release;
    cache = Cache::Open(path, options);
  }
  ThrowIfError(cache.status());
  return std::shared_ptr<Cache>(std::move(cache.value()));
}

const RecordSource& Split(const Cache& cache, const std::string& name) {
  const RecordSource* source = cache.split(name);
  if (source == nullptr) ThrowIfError(Status::InvalidArgument(cache.dir().string() + ": no split '" + name + "'"));
  return *source;
}

// Ultralytics' per-image label dicts (YOLODataset.labels): im_file, shape (h, w of the source image),
// cls float32 [n, 1], bboxes float32 [n, 4] normalised xywh, normalized, bbox_format.
pb::list Labels(const Cache& cache, const std::string& name, const std::string& root) {
  const RecordSource& source = Split(cache, name);
  pb::list out;
  ScratchBuffer scratch;
  for (size_t i = 0; i < source.size(); ++i) {
    RecordView v;
    ThrowIfError(source.Read(i, &v, &scratch));
    const auto n = static_cast<pb::ssize_t>(v.box_count);
    pb::array_t<float> cls({n, pb::ssize_t{1}}), boxes({n, pb::ssize_t{4}});
    float* c = cls.mutable_data();
    float* b = boxes.mutable_data();
    for (size_t k = 0; k < v.box_count; ++k) {
      c[k] = static_cast<float>(v.boxes[k].cls);
      b[4 * k] = v.boxes[k].cx, b[4 * k + 1] = v.boxes[k].cy, b[4 * k + 2] = v.boxes[k].w, b[4 * k + 3] = v.boxes[k].h;
    }
    pb::dict d;
    const std::string rel(v.source);
    d["im_file"] = root.empty() ? rel : (std::filesystem::path(root) / rel).string();
    d["shape"] = pb::make_tuple(v.orig_height, v.orig_width);
    d["cls"] = cls;
    d["bboxes"] = boxes;
    d["normalized"] = true;
    d["bbox_format"] = "xywh";
    out.append(std::move(d));
  }
  return out;
}

}  // namespace

// The dataset root the cache was built from, or "" when its data YAML can no longer be read (the
// cache itself does not need it).
std::string DatasetRoot(const Cache& cache) {
  Result<DatasetSpec> spec = LoadDatasetSpec(cache.manifest().dataset_yaml);
  return spec.ok() ? spec->root.string() : std::string();
}

void BindCache(pb::module_& m) {
  pb::class_<Cache, std::shared_ptr<Cache>>(m, "_Cache")
      .def(pb::init(&OpenCache), pb::arg("path"), pb::arg("verify_checksums") = false)
      .def_property_readonly("dir", [](const Cache& c) { return c.dir().string(); })
      .def_property_readonly("names", [](const Cache& c) { return c.manifest().names; })
      .def_property_readonly("imgsz", [](const Cache& c) { return c.manifest().imgsz; })
      .def_property_readonly("data_yaml", [](const Cache& c) { return c.manifest().dataset_yaml; })
      .def_property_readonly("dataset_root", &DatasetRoot)
      .def_property_readonly("splits", &Cache::splits)
      .def("records", [](const Cache& c, const std::string& split) { return Split(c, split).size(); }, pb::arg("split"))
      .def("labels", [](const Cache& c, const std::string& split) { return Labels(c, split, DatasetRoot(c)); },
           pb::arg("split"));
}

}  // namespace yc::py
