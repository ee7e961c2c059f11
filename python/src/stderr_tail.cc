#include "python/src/stderr_tail.h"

#include <iostream>

namespace yc::py {
namespace {
constexpr size_t kKeep = 4096;  // enough for a CLI11 error, its hint and a few warnings
}  // namespace

StderrTail::StderrTail() : out_(std::cerr.rdbuf()) { std::cerr.rdbuf(this); }

StderrTail::~StderrTail() { std::cerr.rdbuf(out_); }

std::streamsize StderrTail::xsputn(const char* s, std::streamsize n) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::streamsize written = out_->sputn(s, n);
  tail_.append(s, static_cast<size_t>(n));
  if (tail_.size() > 2 * kKeep) tail_.erase(0, tail_.size() - kKeep);
  return written;
}

int StderrTail::overflow(int c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  const char ch = traits_type::to_char_type(c);
  return xsputn(&ch, 1) == 1 ? c : traits_type::eof();
}

int StderrTail::sync() {
  std::lock_guard<std::mutex> lock(mu_);
  return out_->pubsync();
}

std::vector<std::string> StderrTail::lines() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  size_t start = 0;
  while (start < tail_.size()) {
    size_t end = tail_.find('\n', start);
    if (end == std::string::npos) end = tail_.size();
    if (end > start) out.push_back(tail_.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace yc::py
