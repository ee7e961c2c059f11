// What a command writes to std::cerr, still written there, with its last lines kept: the reason an
// in-process command failed ("yolocache-train train: data.yaml: no such file", CLI11's parse error and
// the "did you mean" hint) becomes the Python exception's text without parsing the console.
//
//   StderrTail tail;              // from here to its end, std::cerr goes through it
//   int rc = RunRegisteredProgram(args);
//   std::vector<std::string> why = tail.lines();
#pragma once

#include <mutex>
#include <streambuf>
#include <string>
#include <vector>

namespace yc::py {

class StderrTail : public std::streambuf {
 public:
  StderrTail();
  ~StderrTail() override;  // std::cerr writes where it wrote before
  StderrTail(const StderrTail&) = delete;
  StderrTail& operator=(const StderrTail&) = delete;

  // The last complete and partial lines written (at most a few KiB of them), oldest first.
  std::vector<std::string> lines() const;

 protected:
  int overflow(int c) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;
  int sync() override;

 private:
  std::streambuf* const out_;
  mutable std::mutex mu_;  // worker threads may log while the command's thread does
  std::string tail_;
};

}  // namespace yc::py
