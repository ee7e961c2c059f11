// A one-line progress bar for long work: drawn on stderr only when stderr is a TTY (so logs and CI
// output stay clean), throttled to ~10 redraws a second, with rate and ETA. Thread-safe Update().
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

namespace yc::cli {

class ProgressBar {
 public:
  // `unit` names what is counted ("img"); total 0 = unknown.
  ProgressBar(std::string label, size_t total, std::string unit = "img");
  ~ProgressBar();  // finishes the line if one was drawn

  void Update(size_t done, const std::string& suffix = "");  // absolute progress
  void SetTotal(size_t total) { total_ = total; }
  void Finish();
  bool enabled() const { return enabled_; }
  static bool StderrIsTty();

 private:
  void Draw(size_t done, const std::string& suffix, bool final_draw);

  std::string label_, unit_;
  std::atomic<size_t> total_;
  bool enabled_;
  bool drawn_ = false;
  std::mutex mu_;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

// One bar per split for a library's `progress(split, done, total)` callback ("build train", then
// "build val"), safe to call from several threads:
//   SplitProgress bar("build");
//   options.progress = std::ref(bar);   ... run ...   bar.Finish();
class SplitProgress {
 public:
  explicit SplitProgress(std::string verb) : verb_(std::move(verb)) {}
  void operator()(const std::string& split, size_t done, size_t total);
  void Finish();  // ends the last bar's line (before printing a summary)

 private:
  std::string verb_, split_;
  std::unique_ptr<ProgressBar> bar_;
  std::mutex mu_;
};

// "1.23 GB", "512 KB" — for summaries.
std::string HumanBytes(double bytes);

}  // namespace yc::cli
