#include "loader/measure/throughput.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <memory>

#include <xxhash.h>

#include "loader/loader.h"

namespace yc {

int64_t ProcessDiskReadBytes() {
  std::ifstream io("/proc/self/io");
  std::string key;
  int64_t value = 0;
  while (io >> key >> value)
    if (key == "read_bytes:") return value;
  return -1;
}

Result<Throughput> MeasureThroughput(std::shared_ptr<const RecordSource> source, const LoaderOptions& options,
                                     const ThroughputRun& run) {
  if (run.cold) YC_RETURN_IF_ERROR(source->DropCachedPages());
  YC_ASSIGN_OR_RETURN(const std::unique_ptr<Loader> created, Loader::Create(source, options));
  Loader& loader = *created;
  using Clock = std::chrono::steady_clock;
  Throughput r;
  const std::unique_ptr<XXH64_state_t, decltype(&XXH64_freeState)> hash(XXH64_createState(), XXH64_freeState);
  XXH64_reset(hash.get(), 0);
  int epoch = 0;
  YC_RETURN_IF_ERROR(loader.StartEpoch(epoch));
  double waited = 0;
  Clock::time_point start;
  Loader::Stats before;
  int64_t disk_before = -1;
  const int warmup = run.warmup >= 0 ? run.warmup : DefaultWarmup(options.prefetch);
  for (int i = 0; i < warmup + run.batches; ++i) {
    if (run.cancel != nullptr && run.cancel->load(std::memory_order_relaxed)) return Status::Cancelled("interrupted");
    if (i == warmup) {
      if (run.cold) {
        YC_RETURN_IF_ERROR(source->DropCachedPages());
        loader.RestartPipeline();
      }
      disk_before = ProcessDiskReadBytes();
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
    if (!st.ok()) return st;
    if (!b) break;
    if (i < warmup) continue;
    waited += std::chrono::duration<double>(Clock::now() - t0).count();
    r.images += static_cast<size_t>(b->size);
    ++r.batches;
    if (run.hash) {
      const uint64_t parts[2] = {XXH3_64bits(b->images, b->bytes()),
                                 XXH3_64bits(b->labels.data(), b->labels.size() * sizeof(float))};
      XXH64_update(hash.get(), parts, sizeof parts);
    }
  }
  // The workers' snapshot before the window's end: busy time is then cut inside the window (a worker
  // preempted between the two would otherwise add time past it).
  const Loader::Stats after = loader.stats();
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const int64_t disk_after = ProcessDiskReadBytes();
  if (disk_before >= 0 && disk_after >= disk_before) r.disk_bytes = disk_after - disk_before;
  const double busy = after.busy_seconds - before.busy_seconds;
  r.worker_busy = r.seconds > 0 ? busy / (r.seconds * options.threads) : 0;
  if (after.samples > before.samples) {
    const double per_sample_ms = 1e3 / static_cast<double>(after.samples - before.samples);
    r.ms_per_sample = (after.sample_seconds - before.sample_seconds) * per_sample_ms;
    r.render_ms = (after.render_seconds - before.render_seconds) * per_sample_ms;
    r.finish_ms = (after.finish_seconds - before.finish_seconds) * per_sample_ms;
  }
  const double probed = after.clock_seconds - before.clock_seconds;
  if (probed > 0) r.core_ghz = (after.clock_cycles - before.clock_cycles) / probed * 1e-9;
  r.images_per_second = r.seconds > 0 ? static_cast<double>(r.images) / r.seconds : 0;
  r.wait_fraction = r.seconds > 0 ? waited / r.seconds : 0;
  r.checksum = XXH64_digest(hash.get());
  return r;
}

namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

Result<Scaling> MeasureScaling(std::shared_ptr<const RecordSource> source, LoaderOptions options,
                               const std::vector<int>& threads, int rounds, const ThroughputRun& per_thread) {
  if (threads.empty() || rounds < 1 || per_thread.batches < 1)
    return Status::InvalidArgument("scaling needs thread counts, >= 1 round and >= 1 batch per thread");
  for (int t : threads)
    if (t < 1) return Status::InvalidArgument("scaling: thread counts must be >= 1");
  Scaling s;
  for (int r = 0; r < rounds; ++r) {
    std::vector<ScalingPoint> round;
    for (int t : threads) {
      options.threads = t;
      ThroughputRun run = per_thread;
      run.batches = per_thread.batches * t;
      ScalingPoint p;
      p.threads = t;
      YC_ASSIGN_OR_RETURN(p.run, MeasureThroughput(source, options, run));
      const ScalingPoint& first = round.empty() ? p : round.front();
      const double base = first.run.images_per_second / first.threads;
      p.efficiency = base > 0 ? p.run.images_per_second / t / base : 0;
      if (p.run.core_ghz > 0 && first.run.core_ghz > 0)
        p.cycle_efficiency = p.efficiency * first.run.core_ghz / p.run.core_ghz;
      round.push_back(p);
    }
    s.rounds.push_back(std::move(round));
  }
  for (size_t i = 0; i < threads.size(); ++i) {
    // The median over rounds of one figure of thread count i.
    auto median = [&](auto figure) {
      std::vector<double> v;
      for (const auto& round : s.rounds) v.push_back(figure(round[i]));
      return Median(std::move(v));
    };
    s.median_images_per_second.push_back(median([](const ScalingPoint& p) { return p.run.images_per_second; }));
    s.median_efficiency.push_back(median([](const ScalingPoint& p) { return p.efficiency; }));
    s.median_core_ghz.push_back(median([](const ScalingPoint& p) { return p.run.core_ghz; }));
    s.median_cycle_efficiency.push_back(median([](const ScalingPoint& p) { return p.cycle_efficiency; }));
  }
  return s;
}

}  // namespace yc
