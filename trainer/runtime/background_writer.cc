#include "trainer/runtime/background_writer.h"
#include "trainer/runtime/exception_text.h"

#include <exception>
#include <string>

namespace yc::trainer {

BackgroundWriter::BackgroundWriter() : thread_([this] { Loop(); }) {}

BackgroundWriter::~BackgroundWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void BackgroundWriter::Submit(std::function<Status()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
  }
  wake_.notify_one();
}

Status BackgroundWriter::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [this] { return jobs_.empty() && !running_; });
  Status st = error_;
  error_ = Status::OK();
  return st;
}

void BackgroundWriter::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stop_ with nothing left to do
    std::function<Status()> job = std::move(jobs_.front());
    jobs_.pop_front();
    running_ = true;
    lock.unlock();
    Status st;
    try {
      st = job();
    } catch (const std::exception& e) {
      st = Status::IOError(std::string("background write failed: ") + ExceptionLine(e));
    }
    lock.lock();
    running_ = false;
    if (!st.ok() && error_.ok()) error_ = st;
    if (jobs_.empty()) idle_.notify_all();
  }
}

}  // namespace yc::trainer
