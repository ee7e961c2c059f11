#include "libcache/remote/object_location.h"

#include <cctype>

namespace yc {

namespace {

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string TrimSlashes(std::string_view s) {
  while (!s.empty() && s.front() == '/') s.remove_prefix(1);
  while (!s.empty() && s.back() == '/') s.remove_suffix(1);
  return std::string(s);
}

// S3's bucket naming rules (docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html):
// 3-63 characters of lower-case letters, digits, '.' and '-', starting and ending with a letter or digit.
bool ValidBucket(std::string_view b) {
  if (b.size() < 3 || b.size() > 63) return false;
  for (char c : b) {
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '.' ||
          c == '-')) {
      return false;
    }
  }
  return std::isalnum(static_cast<unsigned char>(b.front())) && std::isalnum(static_cast<unsigned char>(b.back()));
}

bool HasDotDot(std::string_view path) {
  size_t start = 0;
  while (start <= path.size()) {
    const size_t end = std::min(path.find('/', start), path.size());
    if (path.substr(start, end - start) == "..") return true;
    start = end + 1;
  }
  return false;
}

}  // namespace

std::string ObjectLocation::Key(std::string_view file) const {
  const std::string& base = scheme == Scheme::kS3 ? prefix : std::string();
  return base.empty() ? std::string(file) : base + "/" + std::string(file);
}

std::string ObjectLocation::Display(std::string_view file) const {
  std::string root = scheme == Scheme::kS3 ? "s3://" + bucket + (prefix.empty() ? "" : "/" + prefix) : base_url;
  return file.empty() ? root : root + "/" + std::string(file);
}

bool IsObjectUrl(std::string_view text) {
  return StartsWith(text, "s3://") || StartsWith(text, "http://") || StartsWith(text, "https://");
}

Result<ObjectLocation> ParseObjectLocation(std::string_view url) {
  const std::string shown(url);
  auto bad = [&](const std::string& why) { return Status::InvalidArgument(Status::At(shown, why)); };
  if (url.find_first_of("?#") != std::string_view::npos) return bad("a cache URL has no query or fragment");
  ObjectLocation at;
  if (StartsWith(url, "s3://")) {
    std::string_view rest = url.substr(5);
    const size_t slash = rest.find('/');
    at.bucket = std::string(rest.substr(0, slash));
    if (at.bucket.empty()) return bad("no bucket (expected s3://bucket/prefix)");
    if (!ValidBucket(at.bucket)) {
      return bad("'" + at.bucket + "' is not a valid S3 bucket name (3-63 of a-z, 0-9, '.', '-')");
    }
    at.prefix = slash == std::string_view::npos ? std::string() : TrimSlashes(rest.substr(slash + 1));
    if (HasDotDot(at.prefix)) return bad("'..' in the key prefix");
    at.scheme = ObjectLocation::Scheme::kS3;
    return at;
  }
  if (StartsWith(url, "http://") || StartsWith(url, "https://")) {
    const size_t host_start = url.find("://") + 3;
    const size_t path_start = url.find('/', host_start);
    const std::string_view host = url.substr(host_start, path_start - host_start);
    if (host.empty()) return bad("no host");
    if (path_start != std::string_view::npos && HasDotDot(url.substr(path_start))) return bad("'..' in the path");
    std::string base(url);
    while (base.size() > host_start + host.size() && base.back() == '/') base.pop_back();
    at.scheme = ObjectLocation::Scheme::kHttp;
    at.base_url = base;
    return at;
  }
  return bad("not an object-store URL (s3://bucket/prefix, https://host/path)");
}

}  // namespace yc
