// Writing a whole buffer at an offset of an open file (pwrite until done, EINTR retried), for the
// fetches that fill a file out of order from several threads (pull_cache.h, stream_cache.h).
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace yc {

// IOError "<path>: write failed: <errno text>" (a full disk: No space left on device).
Status WriteAllAt(int fd, const uint8_t* data, uint64_t length, uint64_t offset, const std::string& path);

}  // namespace yc
