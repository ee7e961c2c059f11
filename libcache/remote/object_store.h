// The objects of a cache in object storage (object_location.h), as the remote tier reads and `yolocache
// push` writes them. One class for both schemes: s3:// signs every request (aws_config.h) and can
// write; http(s):// reads with plain range GETs. Every call goes through PerformHttp's retries; the
// store's "no" (403, 404, ...) is an error naming the object, the status and S3's own reason.
//
//   Result<std::unique_ptr<ObjectStore>> store = ObjectStore::Open(*ParseObjectLocation(url));
//   Result<ObjectInfo> info = (*store)->Stat("shard-00000.ycs");
//   (*store)->Read("shard-00000.ycs", offset, length, buffer);
//   (*store)->Upload("shard-00000.ycs", local_path, {{"xxh3", "9f..."}});
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "base/status.h"
#include "libcache/remote/aws_config.h"
#include "libcache/remote/http_transfer.h"
#include "libcache/remote/object_location.h"

namespace yc {

struct ObjectInfo {
  uint64_t size = 0;
  std::map<std::string, std::string> metadata;  // S3 user metadata (x-amz-meta-NAME), lower-case names
};

class ObjectStore {
 public:
  // s3:// loads the AWS settings of the process (NotFound without keys); http(s):// needs none.
  static Result<std::unique_ptr<ObjectStore>> Open(const ObjectLocation& location);
  static Result<std::unique_ptr<ObjectStore>> Open(const ObjectLocation& location, AwsConfig aws);

  const ObjectLocation& location() const { return location_; }
  bool writable() const { return location_.scheme == ObjectLocation::Scheme::kS3; }
  void set_retry(const RetryPolicy& retry) { retry_ = retry; }

  // NotFound when there is no such object.
  Result<ObjectInfo> Stat(const std::string& file) const;
  // Exactly `length` bytes at `offset` into dst (a short answer is an IOError naming the object).
  Status Read(const std::string& file, uint64_t offset, uint64_t length, uint8_t* dst) const;
  // The whole object, refused (IOError) past max_bytes.
  Result<std::string> ReadAll(const std::string& file, uint64_t max_bytes) const;
  // s3 only: PUT of a local file with user metadata; then Delete, and the bucket itself (tests, push
  // --create-bucket).
  Status Upload(const std::string& file, const std::filesystem::path& local,
                const std::map<std::string, std::string>& metadata = {}) const;
  Status Delete(const std::string& file) const;
  Status CreateBucket() const;

 private:
  ObjectStore(ObjectLocation location, std::optional<AwsConfig> aws)
      : location_(std::move(location)), aws_(std::move(aws)) {}
  HttpRequest Request(const std::string& method, const std::string& file) const;
  Status Refused(const HttpRequest& request, const HttpResponse& response) const;

  ObjectLocation location_;
  std::optional<AwsConfig> aws_;
  RetryPolicy retry_;
};

}  // namespace yc
