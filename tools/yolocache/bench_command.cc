// `yolocache bench CACHE`: loader throughput on a built cache (img/s, per thread, per-stage times, a
// checksum over every produced batch for determinism checks); `--compare` also runs, in the same
// process on the same records, the naive loader — decode the source JPEG every time + canvas mosaic —
// and prints the speed ratio; `--scaling 1,16` compares thread counts side by side in rounds. A cache
// in object storage (s3://, http(s)://) is benched from its local copy, fetched first or reused as
// `yolocache-train train --data URL` does (tools/common/data_arg.h, docs/REMOTE.md).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <limits>
#include <vector>

#include <nlohmann/json.hpp>
#include <tbb/info.h>

#include "libcache/build/prepare_cache.h"
#include "libcache/build/stream_cache.h"
#include "libcache/cache.h"
#include "libcache/remote/object_location.h"
#include "libcache/source/decode.h"
#include "loader/base/core_clock.h"
#include "loader/base/simd.h"
#include "loader/loader.h"
#include "loader/measure/decoding_source.h"
#include "loader/measure/stage_profile.h"
#include "loader/measure/throughput.h"
#include "loader/option_table.h"
#include "tools/common/cli_validators.h"
#include "tools/common/command.h"
#include "tools/common/data_arg.h"
#include "tools/common/loader_flags.h"
#include "tools/yolocache/cli_util.h"
#include "tools/yolocache/order_stats_report.h"

namespace yc::cli {
namespace {

struct BenchArgs {
  std::string cache, mode = "train", split, layout = "nchw", record_check = "first";
  std::string cache_dir;  // --cache-dir: where the local copy of a cache given as a URL goes
  double cache_budget_gib = 0;  // --cache-budget: stream the URL window by window within this much disk
  int batch = 64, imgsz = 0, threads = 0, batches = 50, warmup = -1, profile_samples = 32, prefetch = 4;
  // --rank R --world-size N: this process loads as rank R of N data-parallel ranks would (--batch is the
  // rank's batch); with the windowed order it walks, and streaming fetches, only the windows dealt to it.
  int rank = 0, world_size = 1;
  std::vector<int> scaling;  // thread counts measured side by side, in rounds
  int rounds = 5;
  uint64_t seed = 0;
  bool compare = false, json = false, no_checksum = false;
  // The loader's own options, under its names and defaults (loader/option_table.h).
  std::string order = SampleOrderName(LoaderOptions().order);
  double window_mb = static_cast<double>(LoaderOptions().window_bytes >> 20);
  std::string window_io = "auto";
  int read_ahead_mb = static_cast<int>(LoaderOptions().read_ahead_bytes >> 20);
  int order_stats = 0;  // --order-stats N: compare both orders' statistics over N epochs
  bool cold = false;    // drop the split's pages before the warm-up and before the timed run
};

// The fields every --json document starts with: what was measured, and with which kernels.
nlohmann::ordered_json JsonHeader(const BenchArgs& a, const LoaderOptions& o, const std::string& split) {
  nlohmann::ordered_json j;
  j["cache"] = a.cache;
  j["record_check"] = a.record_check;
  j["mode"] = a.mode;
  j["split"] = split;
  j["batch"] = o.batch;
  j["imgsz"] = o.imgsz;
  j["order"] = a.order;
  if (o.world_size > 1) {
    j["rank"] = o.rank;
    j["world_size"] = o.world_size;
  }
  if (o.order == SampleOrder::kWindowed) {
    j["window_mb"] = a.window_mb;
    j["window_io"] = WindowIoName(o.window_io);
  }
  j["simd"] = SimdLevelName(ActiveSimdLevel());
  return j;
}

// How the timed run read ahead: "read-ahead off", "read-ahead 512 MiB", "window stage (O_DIRECT), 512 MiB ahead".
std::string ReadAheadLabel(const LoaderOptions& o) {
  const std::string mib = std::to_string(o.read_ahead_bytes >> 20) + " MiB";
  if (o.read_ahead_bytes == 0) return "read-ahead off";
  if (o.mode == LoaderMode::kTrain && o.order == SampleOrder::kWindowed && o.window_io == WindowIo::kDirect)
    return "window stage (O_DIRECT), " + mib + " ahead";
  return "read-ahead " + mib;
}

// "2.50 GHz, eff 0.82, per cycle 0.88)" of one --scaling figure; the clock parts only where probed.
void PrintEfficiency(double core_ghz, double efficiency, double cycle_efficiency) {
  if (core_ghz > 0) std::printf("%.2f GHz, ", core_ghz);
  std::printf("eff %.2f", efficiency);
  if (cycle_efficiency > 0) std::printf(", per cycle %.2f", cycle_efficiency);
  std::printf(")");
}

// --scaling: rounds of every thread count, efficiency against the first count of the same round.
int PrintScaling(const BenchArgs& a, std::shared_ptr<const RecordSource> source, const LoaderOptions& o,
                 const std::string& split) {
  ThroughputRun per_thread;
  per_thread.warmup = a.warmup;
  per_thread.batches = a.batches;
  per_thread.cancel = InstallInterruptFlag();
  // All cores busy run at a lower clock than one alone (shared power budget); probing it separates
  // that from the loader's own scaling.
  LoaderOptions probed = o;
  probed.probe_core_clock = CoreClockAvailable();
  Result<Scaling> measured = MeasureScaling(std::move(source), probed, a.scaling, a.rounds, per_thread);
  if (!measured.ok()) return Fail("bench", measured.status());
  const Scaling& s = *measured;
  const char* simd = SimdLevelName(ActiveSimdLevel());
  if (a.json) {
    nlohmann::ordered_json j = JsonHeader(a, o, split);
    j["threads"] = a.scaling;
    j["batches_per_thread"] = a.batches;
    j["median_images_per_second"] = s.median_images_per_second;
    j["median_efficiency"] = s.median_efficiency;
    if (probed.probe_core_clock) {
      j["median_core_ghz"] = s.median_core_ghz;
      j["median_cycle_efficiency"] = s.median_cycle_efficiency;
    }
    nlohmann::ordered_json rounds = nlohmann::ordered_json::array();
    for (const auto& round : s.rounds) {
      nlohmann::ordered_json points = nlohmann::ordered_json::array();
      for (const ScalingPoint& p : round)
        points.push_back({{"threads", p.threads},
                          {"images_per_second", p.run.images_per_second},
                          {"efficiency", p.efficiency},
                          {"core_ghz", p.run.core_ghz},
                          {"cycle_efficiency", p.cycle_efficiency},
                          {"worker_busy_fraction", p.run.worker_busy},
                          {"ms_per_sample", p.run.ms_per_sample}});
      rounds.push_back(points);
    }
    j["rounds"] = rounds;
    std::cout << JsonText(j) << "\n";
    return kExitOk;
  }
  std::printf("%s mode, split %s, batch %d, imgsz %d, %s kernels: %zu rounds, %d timed batches per thread\n",
              a.mode.c_str(), split.c_str(), o.batch, o.imgsz, simd, s.rounds.size(), a.batches);
  for (size_t r = 0; r < s.rounds.size(); ++r) {
    std::printf("round %zu:", r + 1);
    for (const ScalingPoint& p : s.rounds[r]) {
      std::printf("  %d thr %.0f img/s (%.2f ms/sample, ", p.threads, p.run.images_per_second, p.run.ms_per_sample);
      PrintEfficiency(p.run.core_ghz, p.efficiency, p.cycle_efficiency);
    }
    std::printf("\n");
  }
  std::printf("median:");
  for (size_t i = 0; i < a.scaling.size(); ++i) {
    std::printf("  %d thr %.0f img/s (", a.scaling[i], s.median_images_per_second[i]);
    PrintEfficiency(s.median_core_ghz[i], s.median_efficiency[i], s.median_cycle_efficiency[i]);
  }
  std::printf("\n");
  if (probed.probe_core_clock)
    std::printf("GHz: the workers' clock (a multiply chain timed before each sample); per cycle: efficiency with "
                "the clock change taken out\n");
  return kExitOk;
}

// --order-stats: both orders over the same epochs, their histograms side by side.
int PrintOrderComparison(const BenchArgs& a, const std::shared_ptr<const RecordSource>& source, LoaderOptions o,
                         const std::string& split, int classes) {
  o.order = SampleOrder::kShuffle;
  Result<OrderStats> shuffle = MeasureOrderStats(source, o, a.order_stats, classes);
  if (!shuffle.ok()) return Fail("bench", shuffle.status());
  LoaderOptions other = o;
  other.seed = o.seed + 1;
  Result<OrderStats> noise = MeasureOrderStats(source, other, a.order_stats, classes);
  if (!noise.ok()) return Fail("bench", noise.status());
  o.order = SampleOrder::kWindowed;
  Result<OrderStats> windowed = MeasureOrderStats(source, o, a.order_stats, classes);
  if (!windowed.ok()) return Fail("bench", windowed.status());
  if (a.json) {
    nlohmann::ordered_json j = JsonHeader(a, o, split);
    j["epochs"] = a.order_stats;
    j["order_stats"] = OrderStatsJson(*shuffle, *windowed, *noise);
    std::cout << JsonText(j) << "\n";
    return kExitOk;
  }
  std::printf("split %s, batch %d, imgsz %d, %d epochs, window %.0f MiB\n", split.c_str(), o.batch, o.imgsz,
              a.order_stats, a.window_mb);
  PrintOrderStats(*shuffle, *windowed, *noise);
  return kExitOk;
}

// The loader's options for the run: the command's, the cache's imgsz, every core.
Result<LoaderOptions> BenchLoaderOptions(const BenchArgs& a, const Cache& cache) {
  LoaderOptions o;
  YC_ASSIGN_OR_RETURN(o.mode, ParseLoaderMode(a.mode));
  YC_ASSIGN_OR_RETURN(o.order, ParseSampleOrder(a.order));
  o.rank = a.rank;
  o.world_size = a.world_size;
  YC_ASSIGN_OR_RETURN(o.window_io, ParseWindowIo(a.window_io, o.world_size));
  o.batch = a.batch;
  o.imgsz = a.imgsz > 0 ? a.imgsz : (cache.manifest().imgsz > 0 ? cache.manifest().imgsz : 640);
  o.threads = a.threads > 0 ? a.threads : tbb::info::default_concurrency();
  o.prefetch = a.prefetch;
  o.seed = a.seed;
  o.layout = a.layout == "nhwc" ? ImageLayout::kNHWC : ImageLayout::kNCHW;
  o.window_bytes = static_cast<uint64_t>(a.window_mb * (1 << 20));
  o.read_ahead_bytes = static_cast<uint64_t>(a.read_ahead_mb) << 20;
  // A small cache is crossed many times: every timed batch should be a mosaic batch of an epoch the
  // loader can run ahead into, so no close_mosaic switch and no last epoch.
  o.hyp.close_mosaic = 0;
  o.epochs = std::numeric_limits<int>::max();
  return o;
}

// What one timed run measured: the cache loader, and optionally its checksum, stages and the naive loader.
struct BenchFigures {
  Throughput cached, naive;
  StageProfile profile;
  std::string codec;  // the cache's --compress (the record-read stage depends on it)
  // A streamed cache: what the warm-up and timed run fetched, and for how many samples.
  const StreamCache* stream = nullptr;
  StreamCounters fetched;
  uint64_t fetched_samples = 0;
};

Result<BenchFigures> Measure(const BenchArgs& a, const Cache& cache, const std::shared_ptr<const RecordSource>& source,
                             const LoaderOptions& o, const StreamCache* stream) {
  BenchFigures f;
  f.codec = CodecSpec(cache.manifest().codec);
  ThroughputRun run;
  run.warmup = a.warmup;
  run.batches = a.batches;
  run.cancel = InstallInterruptFlag();  // every timed loop below polls it (exit 130)
  run.cold = a.cold;
  const StreamCounters before = stream != nullptr ? stream->counters() : StreamCounters{};
  YC_ASSIGN_OR_RETURN(f.cached, MeasureThroughput(source, o, run));
  if (stream != nullptr) {
    f.stream = stream;
    f.fetched = stream->counters();
    f.fetched.bytes_fetched -= before.bytes_fetched;
    f.fetched.bytes_evicted -= before.bytes_evicted;
    f.fetched.requests -= before.requests;
    const int warmup = a.warmup >= 0 ? a.warmup : DefaultWarmup(o.prefetch);
    f.fetched_samples = f.cached.images + static_cast<uint64_t>(warmup) * static_cast<uint64_t>(o.batch);
  }
  run.cold = false;  // only the timed run starts cold
  if (!a.no_checksum) {
    ThroughputRun hashed_run = run;
    hashed_run.hash = true;
    // The checksum covers the same batches whatever --prefetch and --warmup, which shape only the
    // timing: those after the default warm-up, so checksums from earlier runs stay comparable.
    hashed_run.warmup = DefaultWarmup(LoaderOptions().prefetch);
    YC_ASSIGN_OR_RETURN(const Throughput hashed, MeasureThroughput(source, o, hashed_run));
    f.cached.checksum = hashed.checksum;
  }
  if (o.mode == LoaderMode::kTrain && a.profile_samples > 0) {
    YC_ASSIGN_OR_RETURN(f.profile, ProfileTrainStages(*source, o, a.profile_samples));
  }
  if (a.compare) {
    YC_ASSIGN_OR_RETURN(const std::filesystem::path root, DecodingSource::DatasetRoot(cache.manifest()));
    LoaderOptions n = o;
    n.path = LoaderOptions::Path::kReference;
    YC_ASSIGN_OR_RETURN(f.naive,
                        MeasureThroughput(std::make_shared<DecodingSource>(source, root, cache.manifest().imgsz), n, run));
  }
  return f;
}

std::string ChecksumHex(uint64_t checksum) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(checksum));
  return hex;
}

void PrintJson(const BenchArgs& a, const LoaderOptions& o, const std::string& split, const BenchFigures& f) {
  const Throughput& c = f.cached;
  nlohmann::ordered_json j = JsonHeader(a, o, split);
  j["threads"] = o.threads;
  j["batches"] = c.batches;
  j["images"] = c.images;
  j["codec"] = f.codec;
  j["seconds"] = c.seconds;
  j["images_per_second"] = c.images_per_second;
  j["images_per_second_per_thread"] = c.images_per_second / o.threads;
  j["consumer_wait_fraction"] = c.wait_fraction;
  j["worker_busy_fraction"] = c.worker_busy;
  j["ms_per_sample"] = {{"total", c.ms_per_sample}, {"render", c.render_ms}, {"finish", c.finish_ms}};
  j["cold"] = a.cold;
  j["read_ahead_mb"] = o.read_ahead_bytes >> 20;
  if (c.disk_bytes >= 0) {
    j["disk_bytes_per_sample"] = c.images > 0 ? static_cast<double>(c.disk_bytes) / c.images : 0;
    j["disk_mb_per_second"] = c.seconds > 0 ? static_cast<double>(c.disk_bytes) / c.seconds / 1e6 : 0;
  }
  if (!a.no_checksum) j["checksum"] = ChecksumHex(c.checksum);
  if (f.stream != nullptr)
    j["stream"] = {{"budget_bytes", static_cast<uint64_t>(a.cache_budget_gib * (1ull << 30))},
                   {"fetched_bytes", f.fetched.bytes_fetched},
                   {"fetched_bytes_per_sample", f.fetched_samples > 0 ? static_cast<double>(f.fetched.bytes_fetched) /
                                                                            static_cast<double>(f.fetched_samples)
                                                                      : 0.0},
                   {"samples", f.fetched_samples},
                   {"requests", f.fetched.requests},
                   {"evicted_bytes", f.fetched.bytes_evicted},
                   {"peak_disk_bytes", f.fetched.peak_bytes_on_disk}};
  if (f.profile.samples > 0)
    j["stages_ms_per_sample"] = {{"geometry_warp", f.profile.geometry_warp_ms},
                                 {"hsv_layout", f.profile.hsv_layout_ms},
                                 {"layout_only", f.profile.layout_only_ms},
                                 {"record_read", f.profile.record_read_ms}};
  if (a.compare) {
    j["naive_images_per_second"] = f.naive.images_per_second;
    j["speedup_vs_naive"] = f.naive.images_per_second > 0 ? c.images_per_second / f.naive.images_per_second : 0;
  }
  std::cout << JsonText(j) << "\n";
}

void PrintText(const BenchArgs& a, const LoaderOptions& o, const std::string& split, const BenchFigures& f) {
  const Throughput& c = f.cached;
  const bool train = o.mode == LoaderMode::kTrain;
  std::printf("%s mode, split %s, batch %d, imgsz %d, %d threads, %zu batches, %s kernels\n", a.mode.c_str(),
              split.c_str(), o.batch, o.imgsz, o.threads, c.batches, SimdLevelName(ActiveSimdLevel()));
  if (o.world_size > 1)
    std::printf("rank %d of %d: the rank's own samples%s\n", o.rank, o.world_size,
                o.order == SampleOrder::kWindowed ? ", in the windows dealt to it" : "");
  std::printf("cache loader: %.0f img/s (%.0f img/s per thread), consumer waited %.0f%% of the time\n",
              c.images_per_second, c.images_per_second / o.threads, 100 * c.wait_fraction);
  std::printf("workers: busy %.1f%% of the time, %.2f ms per sample (%s %.2f, %s %.2f)\n", 100 * c.worker_busy,
              c.ms_per_sample, train ? "geometry+warp" : "letterbox", c.render_ms, train ? "HSV+layout" : "layout",
              c.finish_ms);
  if (a.cold)
    std::printf("cold: the split's pages were dropped from the page cache before the warm-up and the timed run, "
                "which starts with nothing read ahead\n");
  if (c.disk_bytes >= 0)
    std::printf("disk: %.2f MB read per sample, %.0f MB/s in the timed run (%s)\n",
                c.images > 0 ? static_cast<double>(c.disk_bytes) / c.images / 1e6 : 0,
                c.seconds > 0 ? static_cast<double>(c.disk_bytes) / c.seconds / 1e6 : 0, ReadAheadLabel(o).c_str());
  if (f.stream != nullptr)
    std::printf("network%s: %.3f MB fetched per sample (%llu samples of the warm-up and timed run, windows read ahead "
                "included): %.1f MB in %llu GETs, %.1f MB evicted, at most %.1f MB on disk (--cache-budget %.1f MB)\n",
                o.world_size > 1 ? (" (rank " + std::to_string(o.rank) + " of " + std::to_string(o.world_size) + ")").c_str()
                                 : "",
                f.fetched_samples > 0 ? static_cast<double>(f.fetched.bytes_fetched) / f.fetched_samples / 1e6 : 0,
                static_cast<unsigned long long>(f.fetched_samples), f.fetched.bytes_fetched / 1e6,
                static_cast<unsigned long long>(f.fetched.requests), f.fetched.bytes_evicted / 1e6,
                f.fetched.peak_bytes_on_disk / 1e6, a.cache_budget_gib * (1ull << 30) / 1e6);
  if (f.profile.samples > 0)
    std::printf("per sample, one thread: geometry+warp %.2f ms, HSV+layout %.2f ms (layout alone %.2f ms); "
                "reading one record %.2f ms (cache codec %s, part of geometry+warp)\n",
                f.profile.geometry_warp_ms, f.profile.hsv_layout_ms, f.profile.layout_only_ms, f.profile.record_read_ms,
                f.codec.c_str());
  if (a.compare)
    std::printf("naive loader (decode source + canvas mosaic): %.0f img/s -> yolocache is %.2fx faster\n",
                f.naive.images_per_second,
                f.naive.images_per_second > 0 ? c.images_per_second / f.naive.images_per_second : 0);
  if (!a.no_checksum) std::printf("checksum %s\n", ChecksumHex(c.checksum).c_str());
}

// --cache-budget: the URL streamed window by window (libcache/build/stream_cache.h) into a disk cache of
// at most the budget, every record checked against its checksum as it is read.
Result<StreamedCache> OpenStream(BenchArgs* a) {
  if (!IsObjectUrl(a->cache))
    return Status::InvalidArgument("--cache-budget streams a cache from object storage: give an s3:// or https:// URL, "
                                   "not " + a->cache);
  if (a->mode != "train" || a->order != "windowed")
    return Status::InvalidArgument("--cache-budget reads the cache window by window: it needs --mode train --order windowed");
  if (a->compare) return Status::InvalidArgument("--compare decodes the source dataset, which a streamed cache does not have");
  if (a->order_stats > 0)
    return Status::InvalidArgument("--order-stats also walks the shuffle order, which a streamed cache cannot serve");
  if (a->window_io == "page-cache")
    return Status::InvalidArgument("--cache-budget reads every window through the loader's window stage: --window-io "
                                   "page-cache would read records that were never fetched");
  a->window_io = "direct";  // auto picks the page cache under several ranks
  StreamOptions o;
  o.cache_root = a->cache_dir.empty() ? DefaultCacheRoot() : std::filesystem::path(a->cache_dir);
  o.budget_bytes = static_cast<uint64_t>(a->cache_budget_gib * (1ull << 30));
  o.window_bytes = static_cast<uint64_t>(a->window_mb * (1 << 20));
  o.cancel = InstallInterruptFlag();
  o.rank = a->rank;  // each emulated rank streams into a folder of its own
  o.world_size = a->world_size;
  // The stage profile reads records through the cache's own mapping, which holds only fetched windows.
  a->profile_samples = 0;
  return OpenStreamedCache(a->cache, o);
}

int RunBench(BenchArgs a) {
  if (a.rank >= a.world_size) {
    return Fail("bench", Status::InvalidArgument("--rank " + std::to_string(a.rank) + " must be below --world-size " +
                                                 std::to_string(a.world_size)));
  }
  StreamedCache streamed;
  if (a.cache_budget_gib > 0) {
    Result<StreamedCache> s = OpenStream(&a);
    if (!s.ok()) return Fail("bench", s.status());
    streamed = std::move(s.value());
  } else if (IsObjectUrl(a.cache)) {  // its local copy: fetched, or reused when the store's manifest is unchanged
    DataArgs data;
    data.program = "yolocache";
    data.cache_dir = a.cache_dir;
    if (int rc = PrepareDataArg("bench", data, &a.cache, a.imgsz, a.json ? std::cerr : std::cout); rc >= 0) return rc;
  }
  OpenOptions open;  // --record-check: what training does (first), or hashing on every read / never
  open.verify_checksums = a.record_check == "every";
  open.verify_first_read = a.record_check == "first";
  std::shared_ptr<Cache> cache = streamed.cache;
  if (cache == nullptr) {
    Result<std::unique_ptr<Cache>> opened = Cache::Open(a.cache, open);
    if (!opened.ok()) return Fail("bench", opened.status());
    cache = std::move(opened.value());
  }
  Result<LoaderOptions> options = BenchLoaderOptions(a, *cache);
  if (!options.ok()) return Fail("bench", options.status());
  options->fetcher = streamed.stream;
  const LoaderOptions& o = *options;
  const std::string split = !a.split.empty() ? a.split : a.mode;
  const RecordSource* src = cache->split(split);
  if (src == nullptr) return Fail("bench", Status::InvalidArgument("no split '" + split + "' in " + a.cache));
  std::shared_ptr<const RecordSource> source(cache, src);

  if (!a.scaling.empty()) return PrintScaling(a, source, o, split);
  if (a.order_stats > 0) {
    if (o.mode != LoaderMode::kTrain) return Fail("bench", Status::InvalidArgument("--order-stats needs --mode train"));
    return PrintOrderComparison(a, source, o, split, static_cast<int>(std::max<size_t>(1, cache->manifest().names.size())));
  }
  Result<BenchFigures> figures = Measure(a, *cache, source, o, streamed.stream.get());
  if (!figures.ok() && streamed.stream != nullptr)  // its shards' local paths are the stream's
    return Fail("bench", figures.status().WithContext("streaming " + a.cache));
  if (!figures.ok()) return Fail("bench", figures.status());
  if (a.json) {
    PrintJson(a, o, split, *figures);
  } else {
    PrintText(a, o, split, *figures);
  }
  return kExitOk;
}

Registration reg("bench", "Measure loader throughput on a cache (img/s, per thread, per stage); --compare against a naive loader",
                 [](CLI::App& app) -> Action {
                   auto a = std::make_shared<BenchArgs>();
                   app.add_option("cache", a->cache,
                                  "Cache directory, or a cache in object storage (s3://bucket/prefix, https://...: "
                                  "fetched into --cache-dir first, reused while unchanged there; docs/REMOTE.md)")
                       ->required();
                   app.add_option("--cache-dir", a->cache_dir,
                                  "Where the local copy of a cache given as a URL goes (default: $YOLOCACHE_CACHE_DIR, "
                                  "else $XDG_CACHE_HOME/yolocache, else ~/.cache/yolocache)");
                   app.add_option("--cache-budget", a->cache_budget_gib,
                                  "GiB: stream a cache given as a URL window by window (--order windowed) into at most "
                                  "this much of --cache-dir instead of fetching it whole; prints the bytes fetched "
                                  "per sample (docs/REMOTE.md, \"Streaming\")")
                       ->check(CLI::PositiveNumber);
                   AddLoaderFlag(app, "mode", &a->mode);
                   app.add_option("--world-size", a->world_size,
                                  "Load as one of N data-parallel ranks (with --rank; --batch is the rank's batch): "
                                  "the windowed order deals each epoch's windows to the ranks, so a rank reads, or "
                                  "with --cache-budget fetches, about 1/N of the cache")
                       ->capture_default_str()
                       ->check(AtLeast(1));
                   app.add_option("--rank", a->rank, "This process's rank among --world-size (0 .. N-1)")
                       ->capture_default_str()
                       ->check(AtLeast(0));
                   app.add_option("--split", a->split, "Split (default: train for train mode, val for val mode)");
                   app.add_option("--batch", a->batch, "Batch size")->capture_default_str()->check(AtLeast(1));
                   // The loader's range; it checks the multiple of 32 itself (exit 2 as well).
                   app.add_option("--imgsz", a->imgsz, "Image size (default: the cache's; at most 8192)")
                       ->check(CLI::Range(32, kMaxImgsz));
                   app.add_option("--threads", a->threads, "Loader threads (0: all cores)")
                       ->capture_default_str()
                       ->check(ThreadCount());
                   app.add_option("--batches", a->batches, "Timed batches (with --scaling: per thread)")
                       ->capture_default_str()
                       ->check(AtLeast(1));
                   app.add_option("--scaling", a->scaling,
                                  "Thread counts to compare side by side, e.g. 1,16: rounds of each, efficiency "
                                  "against the first count of the same round, the workers' clock, medians")
                       ->delimiter(',')
                       ->check(AtLeast(1) & ThreadCount());
                   app.add_option("--rounds", a->rounds, "Rounds for --scaling")->capture_default_str()->check(AtLeast(1));
                   AddLoaderFlag(app, "prefetch", &a->prefetch)->check(AtLeast(1));
                   app.add_option("--warmup", a->warmup,
                                  "Untimed warm-up batches (default: prefetch + 2, so every batch buffer is written once)")
                       ->check(AtLeast(0));
                   app.add_option("--layout", a->layout, "nchw | nhwc")
                       ->capture_default_str()
                       ->check(CLI::IsMember({"nchw", "nhwc"}));
                   app.add_option("--seed", a->seed, "Seed")->capture_default_str()->check(NoMinusSign());
                   app.add_option("--profile-samples", a->profile_samples, "Samples for the per-stage profile (0: skip)")
                       ->capture_default_str()
                       ->check(AtLeast(0));
                   app.add_flag("--no-checksum", a->no_checksum, "Skip the (untimed) checksum run");
                   app.add_option("--record-check", a->record_check,
                                  "Record checksums: first (each record hashed on its first read, as train and val do) "
                                  "| every (on every read: the first epoch's cost) | off")
                       ->capture_default_str()
                       ->check(CLI::IsMember({"first", "every", "off"}));
                   AddLoaderFlag(app, "read_ahead_mb", &a->read_ahead_mb)->check(AtLeast(0));
                   app.add_flag("--cold", a->cold,
                                "Drop the split's pages from the page cache (posix_fadvise DONTNEED, no root needed) "
                                "before the warm-up and the timed run: disk-speed figures")
                       ->excludes(app.get_option("--scaling"));
                   app.add_flag("--compare", a->compare, "Also run the naive decode-every-time loader, same records");
                   AddLoaderFlag(app, "order", &a->order);
                   AddLoaderFlag(app, "window_mb", &a->window_mb)->check(CLI::Range(1.0, 1e9));
                   AddLoaderFlag(app, "window_io", &a->window_io);
                   app.add_option("--order-stats", a->order_stats,
                                  "Compare the augmentation statistics of both orders over N epochs (text bars, "
                                  "total-variation distance) instead of timing")
                       ->check(AtLeast(1));
                   app.add_flag("--json", a->json, "Print one JSON document");
                   return [a] { return RunBench(*a); };
                 });

}  // namespace
}  // namespace yc::cli
