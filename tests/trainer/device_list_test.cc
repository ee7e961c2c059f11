// Ultralytics' multi-GPU device argument (trainer/runtime/device_list.h): how a list is read, which rank
// takes which item, and what is refused.
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include "trainer/runtime/device_feed.h"
#include "trainer/runtime/device_list.h"

namespace yc::trainer {
namespace {

using Items = std::vector<std::string>;

TEST(DeviceList, ReadAsSelectDeviceReadsIt) {
  EXPECT_EQ(DeviceListItems("0,1"), (Items{"0", "1"}));
  EXPECT_EQ(DeviceListItems("[0, 1, 2, 3]"), (Items{"0", "1", "2", "3"}));
  EXPECT_EQ(DeviceListItems("(0,1)"), (Items{"0", "1"}));
  EXPECT_EQ(DeviceListItems("cuda:0,1"), (Items{"0", "1"}));
  EXPECT_EQ(DeviceListItems("'2', '3'"), (Items{"2", "3"}));
  EXPECT_EQ(DeviceListItems("0,,1,"), (Items{"0", "1"}));  // empty items dropped, as Ultralytics does
  EXPECT_EQ(DeviceListItems("CPU"), (Items{"cpu"}));
  EXPECT_EQ(DeviceListItems(""), Items{});
  EXPECT_TRUE(IsDeviceList("0,1"));
  EXPECT_FALSE(IsDeviceList("0"));
  EXPECT_FALSE(IsDeviceList("cuda:1"));
  EXPECT_FALSE(IsDeviceList("0,"));
}

TEST(DeviceList, RefusalsNameTheValue) {
  Result<std::vector<at::Device>> cpu = ParseDeviceList("cpu,cpu");
  ASSERT_FALSE(cpu.ok());
  EXPECT_NE(cpu.status().message().find("'cpu,cpu'"), std::string::npos) << cpu.status().message();
  EXPECT_NE(cpu.status().message().find("--cpu-ranks"), std::string::npos) << cpu.status().message();
  Result<std::vector<at::Device>> bad = ParseDeviceList("0,x");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'0,x'"), std::string::npos) << bad.status().message();
  if (!CudaAvailable()) {  // each item is checked as --device N is
    Result<std::vector<at::Device>> none = ParseDeviceList("0,1");
    ASSERT_FALSE(none.ok());
    EXPECT_NE(none.status().message().find("CUDA"), std::string::npos) << none.status().message();
  } else if (torch::cuda::device_count() >= 1) {
    Result<std::vector<at::Device>> twice = ParseDeviceList("0,0");
    ASSERT_FALSE(twice.ok());
    EXPECT_NE(twice.status().message().find("named twice"), std::string::npos) << twice.status().message();
  }
}

TEST(DeviceList, EachLocalRankTakesItsItem) {
  // A list must name one device per rank of the host.
  Result<at::Device> mismatch = RankDevice("0,1,2", 0, 2);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.status().message().find("names 3 devices"), std::string::npos) << mismatch.status().message();
  EXPECT_NE(mismatch.status().message().find("runs 2 ranks"), std::string::npos) << mismatch.status().message();
  // One device: every rank's, as given (cuda:LOCAL_RANK is then the distributed context's choice).
  Result<at::Device> cpu = RankDevice("cpu", 1, 2);
  ASSERT_TRUE(cpu.ok()) << cpu.status().ToString();
  EXPECT_TRUE(cpu->is_cpu());
  if (CudaAvailable() && torch::cuda::device_count() >= 2) {
    Result<at::Device> second = RankDevice("[1, 0]", 0, 2);
    ASSERT_TRUE(second.ok()) << second.status().ToString();
    EXPECT_EQ(second->index(), 1);  // rank 0 takes the first item, device 1
  }
}

}  // namespace
}  // namespace yc::trainer
