// Loader::stats()'s accounting: finished samples whole, samples in progress cut at the snapshot.
#include "loader/base/worker_stats.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>

#include "loader/measure/throughput.h"
#include "tests/loader/fake_source.h"

namespace yc {
namespace {

void Sleep(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

TEST(WorkerStatsTest, SampleInProgressCountsOnlyAsBusyUntilItEnds) {
  WorkerStats stats(2);
  const CoreClockSample clock{3000, 1e-6};
  stats.BeginSample(&clock);
  Sleep(30);
  const LoaderStats mid = stats.Snapshot();
  EXPECT_EQ(mid.samples, 0u);
  EXPECT_EQ(mid.sample_seconds, 0.0);
  EXPECT_GE(mid.busy_seconds, 0.029);
  EXPECT_DOUBLE_EQ(mid.clock_cycles, 3000.0);
  Sleep(10);
  stats.EndSample(0.025, 0.01);
  const LoaderStats end = stats.Snapshot();
  EXPECT_EQ(end.samples, 1u);
  EXPECT_GE(end.sample_seconds, 0.039);
  EXPECT_DOUBLE_EQ(end.busy_seconds, end.sample_seconds);  // nothing in progress
  EXPECT_DOUBLE_EQ(end.render_seconds, 0.025);
  EXPECT_DOUBLE_EQ(end.finish_seconds, 0.01);
  EXPECT_DOUBLE_EQ(end.clock_seconds, 1e-6);
  Sleep(10);
  EXPECT_DOUBLE_EQ(stats.Snapshot().busy_seconds, end.busy_seconds) << "an idle worker adds no busy time";
}

// More threads than cores and a short window: each worker's busy time inside the window is at most
// the window (the old accounting counted whole samples that began before it and read 3.7x on CI's
// sanitizer build), and a sample's total is its two stages. One batch in flight, so the window
// starts inside a batch and the next ones render in it (with more in flight a loaded machine can
// have every timed batch ready before the window opens, and 0 busy is then the right answer).
// The total is timed from outside the stages, so a worker preempted in the few instructions between
// them adds to the total alone: the tolerance allows one scheduler slice (a few ms on a loaded 2-core
// machine; CI once read 0.94 ms over 24 samples of 0.2 ms) spread over the window's samples, which are
// large enough (320 px) that a slice stays a small part of the window's work.
TEST(WorkerStatsTest, LoaderBusyFractionStaysWithinTheWindow) {
  auto source = std::make_shared<testing::FakeSource>(testing::FakeSource::Synthetic(24, 320, 5));
  LoaderOptions o;
  o.batch = 8;
  o.imgsz = 320;
  o.threads = 8;
  o.prefetch = 1;
  ThroughputRun run;
  run.batches = 4;
  const double one_slice_per_sample_ms = 4.0 / (run.batches * o.batch);
  for (int i = 0; i < 5; ++i) {
    Result<Throughput> r = MeasureThroughput(source, o, run);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_GT(r->worker_busy, 0.0);
    EXPECT_LE(r->worker_busy, 1.02);
    EXPECT_NEAR(r->ms_per_sample, r->render_ms + r->finish_ms, 0.05 * r->ms_per_sample + one_slice_per_sample_ms);
  }
}

}  // namespace
}  // namespace yc
