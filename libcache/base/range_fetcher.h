// Byte ranges of a cache's data files that must be brought onto local disk before they are read: the
// hook by which the window stage (loader/io/window_stage.h) streams a cache from object storage
// (libcache/build/stream_cache.h) window by window instead of reading files that are all there.
//
//   uint64_t pin = 0;
//   YC_RETURN_IF_ERROR(fetcher->Fetch({{path, begin, end}, ...}, &pin));  // blocks until present
//   ... read those bytes from the files ...
//   fetcher->Unpin(pin);                                                 // now they may be evicted
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace yc {

struct FileRange {
  std::string path;         // a data file, as RecordSource::DataFilePath names it
  uint64_t begin = 0, end = 0;  // bytes [begin, end); clamped to the file
};

class RangeFetcher {
 public:
  virtual ~RangeFetcher() = default;
  // Makes every range present on local disk, and keeps it there (pinned) until Unpin(*pin). An error
  // names the object and the reason; nothing of the ranges may then be read.
  virtual Status Fetch(const std::vector<FileRange>& ranges, uint64_t* pin) = 0;
  virtual void Unpin(uint64_t pin) = 0;
};

}  // namespace yc
