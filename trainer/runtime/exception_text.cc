#include "trainer/runtime/exception_text.h"

#include <algorithm>
#include <new>

#include <c10/util/Exception.h>

namespace yc::trainer {

std::string ExceptionLine(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  std::string text = c10_error != nullptr ? c10_error->what_without_backtrace() : e.what();
  // TorchScript's compiler errors start with a newline: the first line that says something.
  text.erase(0, std::min(text.size(), text.find_first_not_of(" \r\n")));
  const size_t end = text.find_first_of("\r\n");
  if (end != std::string::npos) text.resize(end);
  return text.empty() ? std::string("unknown error") : text;
}

bool IsOutOfMemory(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr || dynamic_cast<const c10::OutOfMemoryError*>(&e) != nullptr)
    return true;
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  if (c10_error == nullptr) return false;
  const std::string text = c10_error->what_without_backtrace();
  // LibTorch 1.13's DefaultCPUAllocator throws a plain c10::Error: "not enough memory: you tried to allocate".
  return text.find("DefaultCPUAllocator") != std::string::npos || text.find("out of memory") != std::string::npos;
}

Status ExceptionStatus(const std::exception& e, const std::string& context) {
  const std::string prefix = context.empty() ? std::string() : context + ": ";
  const std::string line = ExceptionLine(e);
  if (IsOutOfMemory(e)) return Status::ResourceExhausted(prefix + "out of memory (" + line + ")");
  return Status::IOError(prefix + line);
}

}  // namespace yc::trainer
