// `yolocache bench CACHE`: loader throughput on a built cache (img/s, per thread, per-stage times, a
// checksum over every produced batch for determinism checks); `--compare` also runs, in the same
// process on the same records, the naive loader — decode the source JPEG every time + canvas mosaic —
// and prints the speed ratio.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <limits>

#include <nlohmann/json.hpp>
#include <tbb/info.h>
#include <xxhash.h>

#include "libcache/cache.h"
#include "loader/decoding_source.h"
#include "loader/loader.h"
#include "loader/simd.h"
#include "loader/stage_profile.h"
#include "tools/yolocache/cli_util.h"
#include "tools/yolocache/command.h"

namespace yc::cli {
namespace {

struct BenchArgs {
  std::string cache, mode = "train", split, layout = "nchw";
  int batch = 64, imgsz = 0, threads = 0, batches = 50, warmup = -1, profile_samples = 32, prefetch = 4;
  uint64_t seed = 0;
  bool compare = false, json = false, checksum = true;
};

struct RunResult {
  double images_per_second = 0, seconds = 0, wait_fraction = 0;
  double worker_busy = 0, ms_per_sample = 0, render_ms = 0, finish_ms = 0;  // timed batches, Loader::stats()
  size_t images = 0, batches = 0;
  uint64_t checksum = 0;
};

// Runs `batches` batches (after `warmup`), crossing epochs as needed. With `hash`, the checksum chains
// the XXH3 of every batch's image bytes and label table, so equal checksums mean identical output.
// Hashing ~80 MB a batch would make the consumer the bottleneck, so timed runs do not hash: the
// checksum comes from a second, untimed run (batches depend only on seed/epoch/index, so it is the same).
Result<RunResult> Run(std::shared_ptr<const RecordSource> source, const LoaderOptions& options, const BenchArgs& a,
                      bool hash_batches = false) {
  Result<std::unique_ptr<Loader>> created = Loader::Create(std::move(source), options);
  if (!created.ok()) return created.status();
  Loader& loader = *created.value();
  using Clock = std::chrono::steady_clock;
  RunResult r;
  XXH64_state_t* hash = XXH64_createState();
  XXH64_reset(hash, 0);
  int epoch = 0;
  YC_RETURN_IF_ERROR(loader.StartEpoch(epoch));
  double waited = 0;
  Clock::time_point start;
  Loader::Stats before;
  // By default the warm-up outlasts the prefetch, so every pooled batch buffer has been written once
  // (first-touch page faults) before the clock starts.
  const int warmup = a.warmup >= 0 ? a.warmup : options.prefetch + 2;
  for (int i = 0; i < warmup + a.batches; ++i) {
    if (i == warmup) {
      start = Clock::now();
      before = loader.stats();
    }
    std::shared_ptr<Batch> b;
    const auto t0 = Clock::now();
    Status st = loader.Next(&b);
    if (st.ok() && !b) {
      st = loader.StartEpoch(++epoch);
      if (st.ok()) st = loader.Next(&b);
    }
    if (!st.ok()) {
      XXH64_freeState(hash);
      return st;
    }
    if (!b) break;
    if (i < warmup) continue;
    waited += std::chrono::duration<double>(Clock::now() - t0).count();
    r.images += static_cast<size_t>(b->size);
    ++r.batches;
    if (hash_batches) {
      const uint64_t parts[2] = {XXH3_64bits(b->images, b->bytes()),
                                 XXH3_64bits(b->labels.data(), b->labels.size() * sizeof(float))};
      XXH64_update(hash, parts, sizeof parts);
    }
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const Loader::Stats after = loader.stats();
  const double busy = after.sample_seconds - before.sample_seconds;
  r.worker_busy = r.seconds > 0 ? busy / (r.seconds * options.threads) : 0;  // threads resolved by RunBench
  if (after.samples > before.samples) {
    const double per_sample_ms = 1e3 / static_cast<double>(after.samples - before.samples);
    r.ms_per_sample = busy * per_sample_ms;
    r.render_ms = (after.render_seconds - before.render_seconds) * per_sample_ms;
    r.finish_ms = (after.finish_seconds - before.finish_seconds) * per_sample_ms;
  }
  r.images_per_second = r.seconds > 0 ? static_cast<double>(r.images) / r.seconds : 0;
  r.wait_fraction = r.seconds > 0 ? waited / r.seconds : 0;
  r.checksum = XXH64_digest(hash);
  XXH64_freeState(hash);
  return r;
}

int RunBench(const BenchArgs& a) {
  Result<std::unique_ptr<Cache>> opened = Cache::Open(a.cache);
  if (!opened.ok()) return Fail("bench", opened.status());
  std::shared_ptr<Cache> cache(std::move(opened.value()));
  LoaderOptions o;
  if (a.mode != "train" && a.mode != "val") return Fail("bench", Status::InvalidArgument("--mode must be train or val"));
  o.mode = a.mode == "train" ? LoaderMode::kTrain : LoaderMode::kVal;
  o.batch = a.batch;
  o.imgsz = a.imgsz > 0 ? a.imgsz : (cache->manifest().imgsz > 0 ? cache->manifest().imgsz : 640);
  const int threads = a.threads > 0 ? a.threads : tbb::info::default_concurrency();
  o.threads = threads;
  o.prefetch = a.prefetch;
  o.seed = a.seed;
  o.layout = a.layout == "nhwc" ? ImageLayout::kNHWC : ImageLayout::kNCHW;
  // A small cache is crossed many times: every timed batch should be a mosaic batch of an epoch the
  // loader can run ahead into, so no close_mosaic switch and no last epoch.
  o.hyp.close_mosaic = 0;
  o.epochs = std::numeric_limits<int>::max();
  const std::string split = !a.split.empty() ? a.split : a.mode;
  const RecordSource* src = cache->split(split);
  if (src == nullptr) return Fail("bench", Status::InvalidArgument("no split '" + split + "' in " + a.cache));
  std::shared_ptr<const RecordSource> source(cache, src);

  Result<RunResult> cached = Run(source, o, a);
  if (!cached.ok()) return Fail("bench", cached.status());
  if (a.checksum) {
    Result<RunResult> hashed = Run(source, o, a, /*hash_batches=*/true);
    if (!hashed.ok()) return Fail("bench", hashed.status());
    cached->checksum = hashed->checksum;
  }
  StageProfile profile;
  if (o.mode == LoaderMode::kTrain && a.profile_samples > 0) {
    Result<StageProfile> p = ProfileTrainStages(*source, o, a.profile_samples);
    if (!p.ok()) return Fail("bench", p.status());
    profile = *p;
  }
  RunResult naive;
  if (a.compare) {
    Result<std::filesystem::path> root = DecodingSource::DatasetRoot(cache->manifest());
    if (!root.ok()) return Fail("bench", root.status());
    LoaderOptions n = o;
    n.path = LoaderOptions::Path::kReference;
    Result<RunResult> r = Run(std::make_shared<DecodingSource>(source, *root, cache->manifest().imgsz), n, a);
    if (!r.ok()) return Fail("bench", r.status());
    naive = *r;
  }

  const double per_thread = cached->images_per_second / threads;
  if (a.json) {
    nlohmann::ordered_json j;
    j["cache"] = a.cache;
    j["mode"] = a.mode;
    j["split"] = split;
    j["batch"] = o.batch;
    j["imgsz"] = o.imgsz;
    j["threads"] = threads;
    j["simd"] = SimdLevelName(ActiveSimdLevel());
    j["batches"] = cached->batches;
    j["images"] = cached->images;
    j["seconds"] = cached->seconds;
    j["images_per_second"] = cached->images_per_second;
    j["images_per_second_per_thread"] = per_thread;
    j["consumer_wait_fraction"] = cached->wait_fraction;
    j["worker_busy_fraction"] = cached->worker_busy;
    j["ms_per_sample"] = {{"total", cached->ms_per_sample},
                          {"render", cached->render_ms},
                          {"finish", cached->finish_ms}};
    if (a.checksum) {
      char hex[17];
      std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(cached->checksum));
      j["checksum"] = hex;
    }
    if (profile.samples > 0)
      j["stages_ms_per_sample"] = {{"geometry_warp", profile.geometry_warp_ms},
                                   {"hsv_layout", profile.hsv_layout_ms},
                                   {"layout_only", profile.layout_only_ms}};
    if (a.compare) {
      j["naive_images_per_second"] = naive.images_per_second;
      j["speedup_vs_naive"] = naive.images_per_second > 0 ? cached->images_per_second / naive.images_per_second : 0;
    }
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  std::printf("%s mode, split %s, batch %d, imgsz %d, %d threads, %zu batches, %s kernels\n", a.mode.c_str(),
              split.c_str(), o.batch, o.imgsz, threads, cached->batches, SimdLevelName(ActiveSimdLevel()));
  std::printf("cache loader: %.0f img/s (%.0f img/s per thread), consumer waited %.0f%% of the time\n",
              cached->images_per_second, per_thread, 100 * cached->wait_fraction);
  std::printf("workers: busy %.1f%% of the time, %.2f ms per sample (%s %.2f, %s %.2f)\n", 100 * cached->worker_busy,
              cached->ms_per_sample, o.mode == LoaderMode::kTrain ? "geometry+warp" : "letterbox", cached->render_ms,
              o.mode == LoaderMode::kTrain ? "HSV+layout" : "layout", cached->finish_ms);
  if (profile.samples > 0)
    std::printf("per sample, one thread: geometry+warp %.2f ms, HSV+layout %.2f ms (layout alone %.2f ms)\n",
                profile.geometry_warp_ms, profile.hsv_layout_ms, profile.layout_only_ms);
  if (a.compare)
    std::printf("naive loader (decode source + canvas mosaic): %.0f img/s -> yolocache is %.2fx faster\n",
                naive.images_per_second, naive.images_per_second > 0 ? cached->images_per_second / naive.images_per_second : 0);
  if (a.checksum) std::printf("checksum %016llx\n", static_cast<unsigned long long>(cached->checksum));
  return kExitOk;
}

Registration reg("bench", "Measure loader throughput on a cache (img/s, per thread, per stage); --compare against a naive loader",
                 [](CLI::App& app) -> Action {
                   auto a = std::make_shared<BenchArgs>();
                   app.add_option("cache", a->cache, "Cache directory")->required();
                   app.add_option("--mode", a->mode, "train | val")->capture_default_str();
                   app.add_option("--split", a->split, "Split (default: train for train mode, val for val mode)");
                   app.add_option("--batch", a->batch, "Batch size")->capture_default_str();
                   app.add_option("--imgsz", a->imgsz, "Image size (default: the cache's)");
                   app.add_option("--threads", a->threads, "Loader threads (0: all cores)")->capture_default_str();
                   app.add_option("--batches", a->batches, "Timed batches")->capture_default_str();
                   app.add_option("--prefetch", a->prefetch, "Batches in flight")->capture_default_str();
                   app.add_option("--warmup", a->warmup,
                                  "Untimed warm-up batches (default: prefetch + 2, so every batch buffer is written once)");
                   app.add_option("--layout", a->layout, "nchw | nhwc")->capture_default_str();
                   app.add_option("--seed", a->seed, "Seed")->capture_default_str();
                   app.add_option("--profile-samples", a->profile_samples, "Samples for the per-stage profile (0: skip)")
                       ->capture_default_str();
                   app.add_flag("!--no-checksum", a->checksum, "Skip the (untimed) checksum run");
                   app.add_flag("--compare", a->compare, "Also run the naive decode-every-time loader, same records");
                   app.add_flag("--json", a->json, "Print one JSON document");
                   return [a] { return RunBench(*a); };
                 });

}  // namespace
}  // namespace yc::cli
