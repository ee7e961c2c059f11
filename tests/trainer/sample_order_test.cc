// --order auto|shuffle|windowed: the page-cache budget from /proc/meminfo, the choice, and that the
// resolved order survives the checkpoint's options (so --resume walks the same order).
#include "trainer/config/sample_order.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/test_support.h"

namespace yc::trainer {
namespace {

TEST(SampleOrderTest, BudgetIsMemAvailableLessTheMarginOrTheOverride) {
  testing::TempDir dir;
  const std::string meminfo = (dir / "meminfo").string();
  std::ofstream(meminfo) << "MemTotal:       24576000 kB\nMemFree:         1000000 kB\nMemAvailable:   12582912 kB\n";
  Result<uint64_t> available = MemAvailableBytes(meminfo);
  ASSERT_TRUE(available.ok()) << available.status().ToString();
  EXPECT_EQ(*available, 12582912ull * 1024);  // 12 GiB
  EXPECT_EQ(*PageCacheBudget(0, meminfo), (12ull << 30) - kProcessMargin);
  EXPECT_EQ(*PageCacheBudget(1.5, meminfo), 3ull << 29);
  std::ofstream(meminfo, std::ios::trunc) << "MemTotal: 1 kB\n";
  EXPECT_FALSE(MemAvailableBytes(meminfo).ok());
  EXPECT_FALSE(PageCacheBudget(0, (dir / "absent").string()).ok());
}

TEST(SampleOrderTest, AutoPicksWindowedOnlyWhenTheDataExceedsTheBudget) {
  TrainOptions o;
  const uint64_t budget = 8ull << 30;
  OrderChoice c = ChooseSampleOrder(o, budget - 1, budget);
  EXPECT_EQ(c.order, "shuffle");
  EXPECT_NE(c.reason.find("fits"), std::string::npos) << c.reason;
  c = ChooseSampleOrder(o, budget + 1, budget);
  EXPECT_EQ(c.order, "windowed");
  EXPECT_DOUBLE_EQ(c.window_mb, 2048);  // a quarter of 8 GiB
  EXPECT_NE(c.reason.find("does not fit"), std::string::npos) << c.reason;
  c = ChooseSampleOrder(o, budget + 1, budget, /*compressed=*/true);  // zstd: room for decoded records too
  EXPECT_DOUBLE_EQ(c.window_mb, 1024);
  EXPECT_NE(c.reason.find("budget / 8"), std::string::npos) << c.reason;
  c = ChooseSampleOrder(o, 10ull << 30, 512ull << 20);  // small budget: the window's floor
  EXPECT_DOUBLE_EQ(c.window_mb, 256);
  o.order = "shuffle";  // explicit orders win whatever the sizes
  EXPECT_EQ(ChooseSampleOrder(o, 100ull << 30, budget).order, "shuffle");
  o.order = "windowed";
  o.window_mb = 64;
  c = ChooseSampleOrder(o, 1, budget);
  EXPECT_EQ(c.order, "windowed");
  EXPECT_DOUBLE_EQ(c.window_mb, 64);
}

TEST(SampleOrderTest, ResolvedOrderRoundTripsThroughTheTrainArgsAndReachesTheLoader) {
  TrainOptions o;
  o.order = "windowed";
  o.window_mb = 300;
  Result<TrainOptions> back = TrainOptionsFromJson(nlohmann::json::parse(ToJson(o).dump()));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->order, "windowed");
  EXPECT_DOUBLE_EQ(back->window_mb, 300);
  const LoaderOptions lo = TrainLoaderOptions(*back);
  EXPECT_EQ(lo.order, SampleOrder::kWindowed);
  EXPECT_EQ(lo.window_bytes, 300ull << 20);
  EXPECT_EQ(TrainLoaderOptions(TrainOptions()).order, SampleOrder::kShuffle);
  // A checkpoint from before --order existed trained in the shuffle order, and resumes in it.
  Result<TrainOptions> old = TrainOptionsFromJson({{"epochs", 3}});
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->order, "shuffle");
  TrainOptions v;
  v.data = "cache";
  v.order = "windowed";
  EXPECT_TRUE(ValidateTrainOptions(v).ok());
  v.order = "random";
  const Status bad = ValidateTrainOptions(v);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.ToString().find("--order"), std::string::npos) << bad.ToString();
}

// --window-io: auto reads around the page cache in a single process and through it (shared) with
// several ranks; an explicit choice wins; anything else is refused naming the option.
TEST(SampleOrderTest, WindowIoAutoIsDirectAloneAndThePageCacheAcrossRanks) {
  TrainOptions o;
  o.data = "cache";
  o.order = "windowed";
  EXPECT_EQ(o.window_io, "auto");
  EXPECT_EQ(TrainLoaderOptions(o, 0, 1).window_io, WindowIo::kDirect);
  EXPECT_EQ(TrainLoaderOptions(o, 1, 2).window_io, WindowIo::kPageCache);
  o.window_io = "direct";
  EXPECT_EQ(TrainLoaderOptions(o, 1, 2).window_io, WindowIo::kDirect);
  o.window_io = "page-cache";
  EXPECT_EQ(TrainLoaderOptions(o, 0, 1).window_io, WindowIo::kPageCache);
  EXPECT_TRUE(ValidateTrainOptions(o).ok());
  o.window_io = "mmap";
  const Status bad = ValidateTrainOptions(o);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.ToString().find("--window-io"), std::string::npos) << bad.ToString();
}

}  // namespace
}  // namespace yc::trainer
