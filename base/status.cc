#include "base/status.h"

namespace yc {

std::string Status::ToString() const {
  const char* kind = "OK";
  switch (code_) {
    case Code::kOk: return "OK";
    case Code::kInvalidArgument: kind = "invalid argument"; break;
    case Code::kNotFound: kind = "not found"; break;
    case Code::kIOError: kind = "I/O error"; break;
    case Code::kCorruption: kind = "corruption"; break;
    case Code::kUnsupported: kind = "unsupported"; break;
    case Code::kDataError: kind = "data error"; break;
    case Code::kCancelled: kind = "cancelled"; break;
    case Code::kResourceExhausted: kind = "resource exhausted"; break;
  }
  return std::string(kind) + ": " + message_;
}

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case Status::Code::kOk: return kExitOk;
    case Status::Code::kInvalidArgument: return kExitUsage;
    case Status::Code::kCorruption:
    case Status::Code::kDataError: return kExitProblems;
    case Status::Code::kCancelled: return kExitInterrupted;
    default: return kExitFatal;
  }
}

}  // namespace yc
