// Runs `fn` on another thread and fails (and stops) the test if it has not returned within two seconds: a
// FIFO whose open blocks would otherwise hang the suite, which is the very defect the callers test for.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <future>

namespace yc::testing {

template <typename Fn>
auto WithinTwoSeconds(Fn fn) {
  auto done = std::async(std::launch::async, fn);
  if (done.wait_for(std::chrono::seconds(2)) != std::future_status::ready) {
    ADD_FAILURE() << "blocked for 2 s";
    std::abort();  // the thread cannot be joined: stop here rather than hang the suite
  }
  return done.get();
}

}  // namespace yc::testing
