#include "trainer/runtime/background_writer.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace yc::trainer {
namespace {

TEST(BackgroundWriter, RunsJobsInOrderAndWaitSeesThemAll) {
  BackgroundWriter writer;
  std::vector<int> order;  // written by the writer thread only; read after Wait()
  for (int i = 0; i < 20; ++i) {
    writer.Submit([&order, i] {
      if (i % 5 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      order.push_back(i);
      return Status::OK();
    });
  }
  ASSERT_TRUE(writer.Wait().ok());
  ASSERT_EQ(order.size(), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(order[static_cast<size_t>(i)], i);
  EXPECT_TRUE(writer.Wait().ok());  // nothing pending
}

TEST(BackgroundWriter, ReportsTheFirstErrorOnceAndKeepsGoing) {
  BackgroundWriter writer;
  std::atomic<int> ran{0};
  writer.Submit([&] { ++ran; return Status::IOError("disk full: a.pt"); });
  writer.Submit([&] { ++ran; return Status::IOError("disk full: b.pt"); });
  writer.Submit([&]() -> Status {
    ++ran;
    throw std::runtime_error("boom");
  });
  Status st = writer.Wait();
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.ToString().find("a.pt"), std::string::npos) << st.ToString();
  EXPECT_EQ(ran.load(), 3);
  EXPECT_TRUE(writer.Wait().ok());  // reported once
}

TEST(BackgroundWriter, DestructorFinishesQueuedJobs) {
  std::atomic<int> ran{0};
  {
    BackgroundWriter writer;
    for (int i = 0; i < 5; ++i) {
      writer.Submit([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        ++ran;
        return Status::OK();
      });
    }
  }
  EXPECT_EQ(ran.load(), 5);
}

}  // namespace
}  // namespace yc::trainer
