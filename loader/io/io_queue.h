// A few threads working off one queue of I/O requests, shared by the loader's two readers ahead of the
// workers: read-ahead (read_ahead.h) issues MADV_WILLNEED hints, the window stage (window_stage.h)
// reads windows with O_DIRECT. Blocking calls from several threads keep several requests in flight,
// which a disk needs to reach its rate.
//
//   IoQueue<Chunk> reads(8, [](const Chunk& c) { return ReadChunk(c).ok(); });
//   reads.Push(chunks.begin(), chunks.end());
//   bool ok = reads.Drain();  // waits until every request pushed so far is done; false if one failed
//   reads.Clear();            // drops the requests no thread has started
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace yc {

template <class Request>
class IoQueue {
 public:
  // `run` performs one request (on one of `threads` threads); false: it failed (Drain reports it).
  IoQueue(int threads, std::function<bool(const Request&)> run) : run_(std::move(run)) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
  }
  ~IoQueue() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  IoQueue(const IoQueue&) = delete;
  IoQueue& operator=(const IoQueue&) = delete;

  template <class It>
  void Push(It begin, It end) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (It it = begin; it != end; ++it, ++pending_) queue_.push_back(*it);
    }
    work_cv_.notify_all();
  }
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    pending_ -= queue_.size();
    queue_.clear();
    if (pending_ == 0) done_cv_.notify_all();
  }
  // Waits until no request is queued or running; whether all of them succeeded since the last Drain.
  bool Drain() {
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [&] { return pending_ == 0; });
    const bool ok = !failed_;
    failed_ = false;
    return ok;
  }

 private:
  void Work() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      const Request r = queue_.front();
      queue_.pop_front();
      lock.unlock();
      const bool ok = run_(r);
      lock.lock();
      if (!ok) failed_ = true;
      if (--pending_ == 0) done_cv_.notify_all();
    }
  }

  const std::function<bool(const Request&)> run_;
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<Request> queue_;
  size_t pending_ = 0;  // pushed and not yet finished
  bool failed_ = false, stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace yc
