// Where a cache lives in object storage (docs/REMOTE.md):
//   s3://bucket/prefix        read and write, AWS Signature V4 (any S3-compatible store; s3_store.h)
//   https://host/path, http:  read only, plain range GETs (any web server; http_store.h)
// A cache's files are objects named prefix + "/" + file name (manifest.json, shard-00000.ycs, ...).
//
//   Result<ObjectLocation> at = ParseObjectLocation("s3://datasets/coco/640");
//   at->Key("manifest.json")      -> "coco/640/manifest.json"
//   at->Display("manifest.json")  -> "s3://datasets/coco/640/manifest.json"
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace yc {

struct ObjectLocation {
  enum class Scheme { kS3, kHttp };
  Scheme scheme = Scheme::kS3;
  std::string bucket;    // s3: the bucket
  std::string prefix;    // s3: the key prefix, no leading or trailing '/', may be empty
  std::string base_url;  // http(s): the URL of the folder, no trailing '/'

  // The object key (s3) or URL path tail (http) of a file of the cache.
  std::string Key(std::string_view file) const;
  // The object's URL as a user wrote it, for messages.
  std::string Display(std::string_view file = {}) const;
};

// Whether `text` names an object-store location (s3://, http:// or https://) rather than a local path.
bool IsObjectUrl(std::string_view text);
// InvalidArgument naming the URL for a bad one: no bucket, a bucket name S3 refuses, "..", an empty
// host, a query or fragment.
Result<ObjectLocation> ParseObjectLocation(std::string_view url);

}  // namespace yc
