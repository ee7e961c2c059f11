// One HTTP request through libcurl, with the retry policy every object-store call uses: transport
// errors (refused, reset, timed out, stalled), 429 and 5xx are retried with exponential backoff; any
// other status is the answer. Each thread keeps one curl handle, so requests to one host reuse their
// connection. S3 requests are signed with AWS Signature V4 by libcurl (CURLOPT_AWS_SIGV4); libcurl 7.88
// does not add x-amz-content-sha256 itself, so the caller's header carries it (UNSIGNED-PAYLOAD: every
// byte we read is checked against our own checksums instead).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "libcache/remote/aws_config.h"

namespace yc {

struct HttpRequest {
  std::string method = "GET";        // GET, HEAD, PUT, DELETE
  std::string url;
  std::string display;               // the object as messages name it (s3://bucket/key)
  std::vector<std::string> headers;  // "Name: value"
  // GET: bytes [offset, offset + length) into the caller's buffer (length 0: the whole object into
  // HttpResponse::body, at most max_body bytes).
  uint64_t offset = 0, length = 0;
  uint64_t max_body = uint64_t{1} << 26;
  std::filesystem::path upload;      // PUT: the file to send ("" = an empty body)
  const AwsConfig* sign = nullptr;   // S3: the keys and region to sign with
};

struct HttpResponse {
  long status = 0;
  std::string body;                            // whole-object GETs and error bodies
  std::map<std::string, std::string> headers;  // lower-case names
  uint64_t received = 0;                       // bytes written into the caller's buffer
};

struct RetryPolicy {
  int attempts = 6;
  double first_delay_s = 0.2;  // doubled after each failed attempt, up to max_delay_s
  double max_delay_s = 5.0;
  long connect_timeout_s = 10;
  long stall_timeout_s = 30;   // a transfer that moves no byte for this long has stopped answering
};

// The response to `request` after retries. IOError naming request.display when every attempt failed
// at the transport level or with a retryable status (the last reason and the attempt count in the
// message). `dst` receives a ranged GET's bytes (request.length of them); a server that sends more
// is an IOError.
Result<HttpResponse> PerformHttp(const HttpRequest& request, uint8_t* dst = nullptr, const RetryPolicy& retry = {});

// An S3 error body's <Code> and <Message> ("NoSuchKey: The specified key does not exist."), or "".
std::string S3ErrorText(const std::string& body);

}  // namespace yc
