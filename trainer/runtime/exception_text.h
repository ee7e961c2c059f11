// Exceptions from LibTorch (and the C++ library under it) as the one-line reasons our messages are.
// c10::Error's what() carries the C++ backtrace of where it was thrown (some 20 "frame #N" lines);
// a user needs the reason only.
//
//   catch (const std::exception& e) { return ExceptionStatus(e, "TorchScript export"); }
#pragma once

#include <exception>
#include <string>

#include "base/status.h"

namespace yc::trainer {

// The reason, one line: c10::Error's message without its backtrace, the first line of anything else.
std::string ExceptionLine(const std::exception& e);

// std::bad_alloc, c10::OutOfMemoryError, and the CPU allocator's "not enough memory" (a plain
// c10::Error in older LibTorch).
bool IsOutOfMemory(const std::exception& e);

// ResourceExhausted "<context>: out of memory (<line>)" (exit 3) for an allocation that failed, else
// IOError "<context>: <line>" (exit 3: a fatal error, not a problem found in the user's data). An empty
// context adds no prefix.
Status ExceptionStatus(const std::exception& e, const std::string& context);

}  // namespace yc::trainer
