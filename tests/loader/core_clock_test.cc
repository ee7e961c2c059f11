// The core-clock probe: a chain of known length in cycles, timed; the loader reports it per worker.
#include "loader/base/core_clock.h"

#include <gtest/gtest.h>

#include <memory>

#include "loader/loader.h"
#include "loader/measure/throughput.h"
#include "tests/loader/fake_source.h"

namespace yc {
namespace {

TEST(CoreClockTest, ChainLengthIsKnownAndTheClockPlausible) {
  if (!CoreClockAvailable()) GTEST_SKIP() << "the multiply chain's latency is known on x86-64 only";
  const CoreClockSample s = SampleCoreClock(1 << 20);
  EXPECT_DOUBLE_EQ(s.cycles, 3.0 * (1 << 20));
  ASSERT_GT(s.seconds, 0.0);
  const double ghz = s.cycles / s.seconds * 1e-9;
  // Any x86-64 core of the last decade, throttled or turbo; a wrong latency or a chain the compiler
  // shortened would land far outside.
  EXPECT_GT(ghz, 0.3);
  EXPECT_LT(ghz, 7.0);
  EXPECT_DOUBLE_EQ(SampleCoreClock(5).cycles, 3.0 * 8);  // rounded up to whole steps of 4
}

TEST(CoreClockTest, LoaderProbesOnlyWhenAskedAndBatchesStayTheSame) {
  auto source = std::make_shared<testing::FakeSource>(testing::FakeSource::Synthetic(12, 96, 3));
  LoaderOptions o;
  o.batch = 4;
  o.imgsz = 96;
  o.threads = 2;
  o.prefetch = 2;
  ThroughputRun run;
  run.batches = 6;
  run.hash = true;
  Result<Throughput> plain = MeasureThroughput(source, o, run);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->core_ghz, 0.0);
  o.probe_core_clock = true;
  Result<Throughput> probed = MeasureThroughput(source, o, run);
  ASSERT_TRUE(probed.ok()) << probed.status().ToString();
  EXPECT_EQ(probed->checksum, plain->checksum) << "the probe must not touch the batches";
  if (CoreClockAvailable()) {
    EXPECT_GT(probed->core_ghz, 0.3);
    EXPECT_LT(probed->core_ghz, 7.0);
  }
}

}  // namespace
}  // namespace yc
