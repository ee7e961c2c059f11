#include "libcache/remote/object_store.h"

namespace yc {

namespace {

constexpr const char* kUnsignedPayload = "x-amz-content-sha256: UNSIGNED-PAYLOAD";
constexpr const char* kMetaPrefix = "x-amz-meta-";

}  // namespace

Result<std::unique_ptr<ObjectStore>> ObjectStore::Open(const ObjectLocation& location) {
  if (location.scheme != ObjectLocation::Scheme::kS3) {
    return std::unique_ptr<ObjectStore>(new ObjectStore(location, std::nullopt));
  }
  Result<AwsConfig> aws = LoadAwsConfig();
  if (!aws.ok()) return Status(aws.status()).WithContext(location.Display());
  return Open(location, std::move(*aws));
}

Result<std::unique_ptr<ObjectStore>> ObjectStore::Open(const ObjectLocation& location, AwsConfig aws) {
  return std::unique_ptr<ObjectStore>(new ObjectStore(location, std::move(aws)));
}

HttpRequest ObjectStore::Request(const std::string& method, const std::string& file) const {
  HttpRequest r;
  r.method = method;
  r.display = location_.Display(file);
  if (aws_) {
    r.url = file.empty() ? aws_->ObjectUrl(location_.bucket, "") : aws_->ObjectUrl(location_.bucket, location_.Key(file));
    r.sign = &*aws_;
    r.headers.push_back(kUnsignedPayload);
    if (!aws_->session_token.empty()) r.headers.push_back("x-amz-security-token: " + aws_->session_token);
  } else {
    r.url = location_.base_url + "/" + UriEncodeKey(file);
  }
  return r;
}

Status ObjectStore::Refused(const HttpRequest& request, const HttpResponse& response) const {
  const std::string s3 = S3ErrorText(response.body);
  const std::string why = "HTTP " + std::to_string(response.status) + (s3.empty() ? "" : " " + s3);
  if (response.status == 404) return Status::NotFound(Status::At(request.display, "no such object (" + why + ")"));
  if (response.status == 401 || response.status == 403) {
    return Status::IOError(Status::At(request.display, "access denied (" + why + ")" +
                                                           (aws_ ? "; keys from " + aws_->keys_from : std::string())));
  }
  return Status::IOError(Status::At(request.display, "the store refused " + request.method + " (" + why + ")"));
}

Result<ObjectInfo> ObjectStore::Stat(const std::string& file) const {
  HttpRequest r = Request("HEAD", file);
  YC_ASSIGN_OR_RETURN(HttpResponse response, PerformHttp(r, nullptr, retry_));
  if (response.status != 200) return Refused(r, response);
  ObjectInfo info;
  const auto length = response.headers.find("content-length");
  if (length == response.headers.end()) return Status::IOError(Status::At(r.display, "no Content-Length in the answer"));
  info.size = std::strtoull(length->second.c_str(), nullptr, 10);
  for (const auto& [name, value] : response.headers) {
    if (name.rfind(kMetaPrefix, 0) == 0) info.metadata[name.substr(std::string(kMetaPrefix).size())] = value;
  }
  return info;
}

Status ObjectStore::Read(const std::string& file, uint64_t offset, uint64_t length, uint8_t* dst) const {
  if (length == 0) return Status::OK();
  HttpRequest r = Request("GET", file);
  r.offset = offset;
  r.length = length;
  YC_ASSIGN_OR_RETURN(HttpResponse response, PerformHttp(r, dst, retry_));
  if (response.status != 206 && response.status != 200) return Refused(r, response);
  if (response.status == 200 && offset != 0) {
    return Status::IOError(Status::At(r.display, "the server ignored the byte range (HTTP 200 for Range " +
                                                     std::to_string(offset) + "-)"));
  }
  if (response.received != length) {
    return Status::IOError(Status::At(r.display, "short read: " + std::to_string(response.received) + " of " +
                                                     std::to_string(length) + " bytes at offset " + std::to_string(offset)));
  }
  return Status::OK();
}

Result<std::string> ObjectStore::ReadAll(const std::string& file, uint64_t max_bytes) const {
  HttpRequest r = Request("GET", file);
  r.max_body = max_bytes;
  YC_ASSIGN_OR_RETURN(HttpResponse response, PerformHttp(r, nullptr, retry_));
  if (response.status != 200) return Refused(r, response);
  return std::move(response.body);
}

Status ObjectStore::Upload(const std::string& file, const std::filesystem::path& local,
                           const std::map<std::string, std::string>& metadata) const {
  if (!writable()) return Status::Unsupported(Status::At(location_.Display(), "an http(s) location is read only"));
  HttpRequest r = Request("PUT", file);
  r.upload = local;
  for (const auto& [name, value] : metadata) r.headers.push_back(kMetaPrefix + name + ": " + value);
  YC_ASSIGN_OR_RETURN(HttpResponse response, PerformHttp(r, nullptr, retry_));
  if (response.status != 200 && response.status != 201) return Refused(r, response);
  return Status::OK();
}

Status ObjectStore::Delete(const std::string& file) const {
  if (!writable()) return Status::Unsupported(Status::At(location_.Display(), "an http(s) location is read only"));
  HttpRequest r = Request("DELETE", file);
  YC_ASSIGN_OR_RETURN(HttpResponse response, PerformHttp(r, nullptr, retry_));
  if (response.status != 204 && response.status != 200 && response.status != 404) return Refused(r, response);
  return Status::OK();
}

Status ObjectStore::CreateBucket() const {
  if (!writable()) return Status::Unsupported(Status::At(location_.Display(), "an http(s) location is read only"));
  HttpRequest r = Request("PUT", "");
  r.display = "s3://" + location_.bucket;
  YC_ASSIGN_OR_RETURN(HttpResponse response, PerformHttp(r, nullptr, retry_));
  if (response.status == 200 || (response.status == 409 && S3ErrorText(response.body).rfind("BucketAlreadyOwnedByYou", 0) == 0)) {
    return Status::OK();
  }
  return Refused(r, response);
}

}  // namespace yc
