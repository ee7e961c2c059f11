// Runs file-writing jobs on one background thread, in submission order, so the checkpoint writes and
// fsyncs after an epoch overlap the next epoch's training instead of stalling the GPU.
//
//   writer.Submit([bytes, path] { return WriteFileAtomic(path, *bytes); });
//   ...
//   YC_RETURN_IF_ERROR(writer.Wait());   // before reading the files, and before leaving
//
// A failed job's Status is kept and returned by the next Wait(); later jobs still run (each writes its
// own file atomically, so nothing is left half-written either way).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "base/status.h"

namespace yc::trainer {

class BackgroundWriter {
 public:
  BackgroundWriter();
  ~BackgroundWriter();  // finishes the queued jobs
  BackgroundWriter(const BackgroundWriter&) = delete;
  BackgroundWriter& operator=(const BackgroundWriter&) = delete;

  void Submit(std::function<Status()> job);
  // Blocks until every submitted job has run; returns the first error since the last Wait (then clears it).
  Status Wait();

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::deque<std::function<Status()>> jobs_;
  bool running_ = false;  // a job is executing
  bool stop_ = false;
  Status error_;
  std::thread thread_;
};

}  // namespace yc::trainer
