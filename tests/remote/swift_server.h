// The S3-compatible server of the remote tests (tests/servers/swift_s3.sh: OpenStack Swift with s3api
// on loopback). Under ctest it is started once for the whole suite by the RemoteServer.Start fixture
// (tests/CMakeLists.txt), which leaves its URL in YOLOCACHE_SWIFT_DIR/url; a test binary run by hand
// starts one itself on first use and stops it at exit.
//
//   const SwiftServer& s = SwiftServer::Get();
//   if (!s.available()) GTEST_SKIP() << s.why();
//   ObjectStore::Open(*ParseObjectLocation("s3://bucket/x"), s.Aws());
#pragma once

#include <string>

#include "libcache/remote/aws_config.h"

namespace yc::testing {

class SwiftServer {
 public:
  static const SwiftServer& Get();

  bool available() const { return !url_.empty(); }
  const std::string& url() const { return url_; }  // http://127.0.0.1:PORT
  const std::string& why() const { return why_; }  // when not available
  // tempauth's user test:tester, as S3 keys, with the server as the endpoint.
  AwsConfig Aws() const;

  // One more proxy of this server (tests/servers/swift_s3.sh proxy): same back-ends, its own port (or
  // `port`), for a fault test that kills it without taking the server from the tests running beside it.
  // Its URL; empty when it did not start.
  std::string StartProxy(const std::string& name, const std::string& port = "") const;
  void KillProxy(const std::string& name) const;  // SIGKILL, as a crash

 private:
  std::string url_, why_;
  bool started_here_ = false;
};

}  // namespace yc::testing
