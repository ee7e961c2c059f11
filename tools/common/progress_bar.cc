#include "tools/common/progress_bar.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace yc::cli {

bool ProgressBar::StderrIsTty() { return isatty(STDERR_FILENO) == 1; }

ProgressBar::ProgressBar(std::string label, size_t total, std::string unit)
    : label_(std::move(label)), unit_(std::move(unit)), total_(total), enabled_(StderrIsTty()),
      start_(std::chrono::steady_clock::now()), last_draw_(start_ - std::chrono::seconds(1)) {}

ProgressBar::~ProgressBar() { Finish(); }

void ProgressBar::Update(size_t done, const std::string& suffix) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(100) && done != total_) return;
  last_draw_ = now;
  Draw(done, suffix, false);
}

void ProgressBar::Finish() {
  std::lock_guard<std::mutex> lock(mu_);
  if (enabled_ && drawn_) std::fputc('\n', stderr);
  drawn_ = false;
  enabled_ = false;
}

void ProgressBar::Draw(size_t done, const std::string& suffix, bool) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = elapsed > 0 ? done / elapsed : 0.0;
  const size_t total = total_;
  char line[512];
  if (total > 0) {
    const double frac = std::min(1.0, static_cast<double>(done) / static_cast<double>(total));
    constexpr int kWidth = 28;
    const int filled = static_cast<int>(frac * kWidth);
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(kWidth, '.');
    const double eta = rate > 0 ? (static_cast<double>(total - std::min(done, total)) / rate) : 0.0;
    std::snprintf(line, sizeof line, "\r%s [%s] %3.0f%% %zu/%zu %.0f %s/s ETA %02d:%02d %s\033[K", label_.c_str(),
                  bar.c_str(), frac * 100.0, done, total, rate, unit_.c_str(), static_cast<int>(eta) / 60,
                  static_cast<int>(eta) % 60, suffix.c_str());
  } else {
    std::snprintf(line, sizeof line, "\r%s %zu %.0f %s/s %s\033[K", label_.c_str(), done, rate, unit_.c_str(),
                  suffix.c_str());
  }
  std::fputs(line, stderr);
  std::fflush(stderr);
  drawn_ = true;
}

std::string HumanBytes(double bytes) {
  static const char* kUnits[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (bytes >= 1000.0 && u < 4) {
    bytes /= 1000.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", bytes, kUnits[u]);
  return buf;
}

void SplitProgress::operator()(const std::string& split, size_t done, size_t total) {
  std::lock_guard<std::mutex> lock(mu_);
  if (bar_ == nullptr || split != split_) {
    bar_ = std::make_unique<ProgressBar>(verb_ + " " + split, total);
    split_ = split;
  }
  bar_->Update(done);
}

void SplitProgress::Finish() {
  std::lock_guard<std::mutex> lock(mu_);
  bar_.reset();
}

}  // namespace yc::cli
