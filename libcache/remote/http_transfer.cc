#include "libcache/remote/http_transfer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#if YOLOCACHE_WITH_CURL
#include <curl/curl.h>
#endif

namespace yc {

#if YOLOCACHE_WITH_CURL
namespace {

struct CurlHandle {
  CURL* curl = nullptr;
  CurlHandle() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    curl = curl_easy_init();
  }
  ~CurlHandle() {
    if (curl != nullptr) curl_easy_cleanup(curl);
  }
};

// Where a response's bytes go while it arrives.
struct Sink {
  const HttpRequest* request = nullptr;
  uint8_t* dst = nullptr;
  HttpResponse* response = nullptr;
  bool overflow = false;
  bool success() const { return response->status >= 200 && response->status < 300; }
};

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* s = static_cast<Sink*>(user);
  const size_t bytes = size * n;
  if (s->dst != nullptr && s->success()) {
    if (s->response->received + bytes > s->request->length) {
      s->overflow = true;
      return 0;  // aborts the transfer
    }
    std::memcpy(s->dst + s->response->received, data, bytes);
    s->response->received += bytes;
    return bytes;
  }
  if (s->response->body.size() + bytes > s->request->max_body) {
    s->overflow = true;
    return 0;
  }
  s->response->body.append(data, bytes);
  return bytes;
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* s = static_cast<Sink*>(user);
  const std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {  // a new response (after a redirect or 100-continue): start over
    s->response->headers.clear();
    const size_t sp = line.find(' ');
    if (sp != std::string::npos) s->response->status = std::strtol(line.c_str() + sp + 1, nullptr, 10);
    return size * n;
  }
  const size_t colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    std::string value = line.substr(colon + 1);
    const size_t b = value.find_first_not_of(" \t");
    const size_t e = value.find_last_not_of(" \t\r\n");
    s->response->headers[name] = b == std::string::npos ? "" : value.substr(b, e - b + 1);
  }
  return size * n;
}

bool Retryable(long status) { return status == 429 || status >= 500; }

// One attempt. A transport failure is an IOError with curl's reason; any HTTP status is a response.
Result<HttpResponse> Attempt(CURL* curl, const HttpRequest& r, uint8_t* dst, const RetryPolicy& retry) {
  curl_easy_reset(curl);
  HttpResponse response;
  Sink sink{&r, dst, &response};
  char error[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl, CURLOPT_URL, r.url.c_str());
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, retry.connect_timeout_s);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, retry.stall_timeout_s);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &sink);
  struct curl_slist* headers = nullptr;
  for (const auto& h : r.headers) headers = curl_slist_append(headers, h.c_str());
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> header_list(headers, curl_slist_free_all);
  std::unique_ptr<FILE, decltype(&std::fclose)> upload(nullptr, std::fclose);
  if (r.method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (r.method == "PUT") {
    std::error_code ec;
    const uint64_t size = r.upload.empty() ? 0 : std::filesystem::file_size(r.upload, ec);
    if (ec) return Status::IOError(Status::At(r.upload.string(), "cannot read: " + ec.message()));
    if (!r.upload.empty()) {
      upload.reset(std::fopen(r.upload.c_str(), "rb"));
      if (!upload) return Status::IOError(Status::At(r.upload.string(), "cannot open for upload"));
    }
    curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(curl, CURLOPT_READDATA, upload.get());
    curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(size));
    if (!upload) curl_easy_setopt(curl, CURLOPT_READFUNCTION, +[](char*, size_t, size_t, void*) -> size_t { return 0; });
    // No "Expect:" header to turn 100-continue off: libcurl would sign that empty header without sending it.
  } else if (r.method != "GET") {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, r.method.c_str());
  }
  std::string range;
  if (r.method == "GET" && r.length > 0) {
    range = std::to_string(r.offset) + "-" + std::to_string(r.offset + r.length - 1);
    curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
  }
  std::string provider;
  if (r.sign != nullptr) {
    provider = "aws:amz:" + r.sign->region + ":s3";
    curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, provider.c_str());
    curl_easy_setopt(curl, CURLOPT_USERNAME, r.sign->access_key.c_str());
    curl_easy_setopt(curl, CURLOPT_PASSWORD, r.sign->secret_key.c_str());
  }
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, header_list.get());
  const CURLcode rc = curl_easy_perform(curl);
  if (sink.overflow) {  // not a transient fault: no retry
    return Status::Corruption(Status::At(r.display, dst != nullptr ? "the server sent more bytes than the range asked for"
                                                                   : "the response is larger than expected"));
  }
  if (rc != CURLE_OK) return Status::IOError(error[0] != 0 ? error : curl_easy_strerror(rc));  // retried
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

}  // namespace

Result<HttpResponse> PerformHttp(const HttpRequest& request, uint8_t* dst, const RetryPolicy& retry) {
  thread_local CurlHandle handle;
  if (handle.curl == nullptr) return Status::IOError(Status::At(request.display, "curl_easy_init failed"));
  double delay = retry.first_delay_s;
  std::string last;
  for (int attempt = 1; attempt <= retry.attempts; ++attempt) {
    Result<HttpResponse> r = Attempt(handle.curl, request, dst, retry);
    if (r.ok() ? !Retryable(r->status) : r.status().code() != Status::Code::kIOError) return r;
    last = r.ok() ? "HTTP " + std::to_string(r->status) + (S3ErrorText(r->body).empty() ? "" : " " + S3ErrorText(r->body))
                  : r.status().message();
    if (attempt < retry.attempts) {
      std::this_thread::sleep_for(std::chrono::duration<double>(delay));
      delay = std::min(delay * 2, retry.max_delay_s);
    }
  }
  return Status::IOError(request.display + ": no answer after " + std::to_string(retry.attempts) + " attempts (last: " +
                         last + ")");
}

#else   // built without libcurl

Result<HttpResponse> PerformHttp(const HttpRequest& request, uint8_t*, const RetryPolicy&) {
  return Status::Unsupported(Status::At(request.display, "this yolocache was built without libcurl "
                                                          "(Debian: libcurl4-openssl-dev), so it cannot reach object storage"));
}

#endif  // YOLOCACHE_WITH_CURL

std::string S3ErrorText(const std::string& body) {
  auto element = [&](const std::string& tag) {
    const size_t b = body.find("<" + tag + ">");
    if (b == std::string::npos) return std::string();
    const size_t start = b + tag.size() + 2;
    const size_t e = body.find("</" + tag + ">", start);
    return e == std::string::npos ? std::string() : body.substr(start, e - start);
  };
  const std::string code = element("Code"), message = element("Message");
  if (code.empty()) return {};
  return message.empty() ? code : code + ": " + message;
}

}  // namespace yc
