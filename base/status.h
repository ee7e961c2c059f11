// Errors as values (LevelDB style): every fallible call returns a Status or a Result<T>
// whose message names the file and the reason. Codes map one-to-one to CLI exit codes.
// The base of every stage (libcache, loader, trainer, tools, python): it includes nothing of ours.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace yc {

class Status {
 public:
  enum class Code {
    kOk = 0,
    kInvalidArgument,  // bad option or usage (exit 2)
    kNotFound,         // a path that should exist does not (exit 3)
    kIOError,          // read/write/mmap failed (exit 3)
    kCorruption,       // checksum mismatch, bad magic, truncated cache file (exit 1 from verify)
    kUnsupported,      // a format or feature this build cannot handle
    kDataError,        // a user's dataset is malformed (bad YAML, bad label)
    kCancelled,        // interrupted (Ctrl-C)
    kResourceExhausted,  // out of memory: not a fault of the data (exit 3)
  };

  Status() = default;
  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string msg) { return Status(Code::kInvalidArgument, std::move(msg)); }
  static Status NotFound(std::string msg) { return Status(Code::kNotFound, std::move(msg)); }
  static Status IOError(std::string msg) { return Status(Code::kIOError, std::move(msg)); }
  static Status Corruption(std::string msg) { return Status(Code::kCorruption, std::move(msg)); }
  static Status Unsupported(std::string msg) { return Status(Code::kUnsupported, std::move(msg)); }
  static Status DataError(std::string msg) { return Status(Code::kDataError, std::move(msg)); }
  static Status Cancelled(std::string msg) { return Status(Code::kCancelled, std::move(msg)); }
  static Status ResourceExhausted(std::string msg) { return Status(Code::kResourceExhausted, std::move(msg)); }
  // "path: reason" — the house format for messages about a file.
  static std::string At(const std::string& path, const std::string& reason) { return path + ": " + reason; }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;  // "IO error: path: reason"

  // Adds context in front of the message ("while building split train: ...").
  Status WithContext(const std::string& context) const {
    return ok() ? *this : Status(code_, context + ": " + message_);
  }

 private:
  Status(Code code, std::string msg) : code_(code), message_(std::move(msg)) {}
  Code code_ = Code::kOk;
  std::string message_;
};

// A value or the Status that explains why there is none.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

#define YC_RETURN_IF_ERROR(expr)        \
  do {                                  \
    ::yc::Status _yc_st = (expr);       \
    if (!_yc_st.ok()) return _yc_st;    \
  } while (0)

// `YC_ASSIGN_OR_RETURN(auto cache, Cache::Open(path));` evaluates a Result<T>, returns its Status from
// the enclosing function when it failed, else moves the value into the declaration or lvalue `lhs`.
// One statement (no braces around it), so `lhs` stays in scope after it.
#define YC_ASSIGN_OR_RETURN(lhs, expr) YC_ASSIGN_OR_RETURN_IMPL(YC_STATUS_CONCAT(_yc_result_, __LINE__), lhs, expr)
#define YC_ASSIGN_OR_RETURN_IMPL(result, lhs, expr) \
  auto result = (expr);                             \
  if (!result.ok()) return result.status();         \
  lhs = std::move(result).value()
#define YC_STATUS_CONCAT(a, b) YC_STATUS_CONCAT_INNER(a, b)
#define YC_STATUS_CONCAT_INNER(a, b) a##b

// CLI exit codes shared by every tool.
enum ExitCode : int { kExitOk = 0, kExitProblems = 1, kExitUsage = 2, kExitFatal = 3, kExitInterrupted = 130 };
int ExitCodeFor(const Status& status);

}  // namespace yc
