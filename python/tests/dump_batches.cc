// The C++ loader's batches as raw bytes, for test_loader.py to compare yolocache.Loader with:
//   yolocache_dump_batches CACHE SPLIT MODE BATCH IMGSZ THREADS SEED EPOCH OUT
// OUT holds, per batch of the epoch: int32 size, height, width, label rows; the label rows (6 float32
// each: batch_idx, cls, cx, cy, w, h); the NCHW uint8 pixels; size x int32 (orig_h, orig_w).
// Default Ultralytics hyperparameters, epochs 100. Exit 1 with the message on stderr on any failure.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include "libcache/cache.h"
#include "loader/loader.h"

namespace {

int Fail(const yc::Status& st) {
  std::cerr << "dump_batches: " << st.ToString() << "\n";
  return 1;
}

template <typename T>
void Put(std::ofstream& out, T value) {
  out.write(reinterpret_cast<const char*>(&value), sizeof value);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 10) {
    std::cerr << "usage: yolocache_dump_batches CACHE SPLIT MODE BATCH IMGSZ THREADS SEED EPOCH OUT\n";
    return 2;
  }
  auto opened = yc::Cache::Open(argv[1]);
  if (!opened.ok()) return Fail(opened.status());
  std::shared_ptr<yc::Cache> cache(std::move(opened.value()));
  const yc::RecordSource* split = cache->split(argv[2]);
  if (split == nullptr) return Fail(yc::Status::InvalidArgument(std::string("no split ") + argv[2]));
  yc::LoaderOptions o;
  o.mode = std::string(argv[3]) == "val" ? yc::LoaderMode::kVal : yc::LoaderMode::kTrain;
  o.batch = std::atoi(argv[4]);
  o.imgsz = std::atoi(argv[5]);
  o.threads = std::atoi(argv[6]);
  o.seed = std::strtoull(argv[7], nullptr, 10);
  auto loader = yc::Loader::Create(std::shared_ptr<const yc::RecordSource>(cache, split), o);
  if (!loader.ok()) return Fail(loader.status());
  if (yc::Status st = (*loader)->StartEpoch(std::atoi(argv[8])); !st.ok()) return Fail(st);
  std::ofstream out(argv[9], std::ios::binary);
  std::shared_ptr<yc::Batch> b;
  while (true) {
    if (yc::Status st = (*loader)->Next(&b); !st.ok()) return Fail(st);
    if (!b) break;
    Put<int32_t>(out, b->size), Put<int32_t>(out, b->height), Put<int32_t>(out, b->width);
    Put<int32_t>(out, static_cast<int32_t>(b->label_count()));
    out.write(reinterpret_cast<const char*>(b->labels.data()), static_cast<std::streamsize>(b->labels.size() * sizeof(float)));
    out.write(reinterpret_cast<const char*>(b->images), static_cast<std::streamsize>(b->bytes()));
    for (const yc::SampleInfo& s : b->samples) Put<int32_t>(out, s.orig_h), Put<int32_t>(out, s.orig_w);
  }
  out.close();
  if (!out) return Fail(yc::Status::IOError(std::string(argv[9]) + ": cannot write"));
  return 0;
}
