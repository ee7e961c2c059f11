// The C++ API in 30 lines: open a cache, read one record zero-copy, and iterate augmented batches.
//   loader_example CACHE [--batch 16] [--batches 3]
#include <cstdio>

#include <CLI/CLI.hpp>

#include "libcache/cache.h"
#include "loader/loader.h"

int main(int argc, char** argv) {
  CLI::App app{"Read a yolocache cache and print a few augmented train batches"};
  std::string dir;
  int batch = 16, batches = 3;
  app.add_option("cache", dir, "Cache directory (yolocache build ... -o CACHE)")->required();
  app.add_option("--batch", batch, "Batch size")->capture_default_str();
  app.add_option("--batches", batches, "Batches to print")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  yc::Result<std::unique_ptr<yc::Cache>> opened = yc::Cache::Open(dir);
  if (!opened.ok()) {
    std::fprintf(stderr, "%s\n", opened.status().ToString().c_str());
    return 3;
  }
  std::shared_ptr<yc::Cache> cache(std::move(opened.value()));
  const yc::RecordSource* train = cache->split("train");
  if (train == nullptr || train->size() == 0) {
    std::fprintf(stderr, "%s: no train records\n", dir.c_str());
    return 1;
  }

  // One record, straight from the mapping: pixels are HWC RGB uint8, boxes normalised xywh.
  yc::ScratchBuffer scratch;
  yc::RecordView record;
  if (yc::Status st = train->Read(0, &record, &scratch); !st.ok()) return std::fprintf(stderr, "%s\n", st.ToString().c_str()), 1;
  std::printf("record 0: %.*s, stored %dx%d (original %dx%d), %zu boxes\n", static_cast<int>(record.source.size()),
              record.source.data(), record.width, record.height, record.orig_width, record.orig_height, record.box_count);

  // Augmented batches with Ultralytics' default hyperparameters.
  yc::LoaderOptions options;
  options.batch = batch;
  options.imgsz = cache->manifest().imgsz;
  yc::Result<std::unique_ptr<yc::Loader>> loader =
      yc::Loader::Create(std::shared_ptr<const yc::RecordSource>(cache, train), options);
  if (!loader.ok()) return std::fprintf(stderr, "%s\n", loader.status().ToString().c_str()), 1;
  (*loader)->StartEpoch(0);
  for (int i = 0; i < batches; ++i) {
    std::shared_ptr<yc::Batch> b;
    if (yc::Status st = (*loader)->Next(&b); !st.ok()) return std::fprintf(stderr, "%s\n", st.ToString().c_str()), 1;
    if (!b) break;
    std::printf("batch %zu: %d images %dx%d, %zu labels (batch_idx, cls, cx, cy, w, h)\n", b->index, b->size, b->width,
                b->height, b->label_count());
  }
  return 0;
}
