// A test against the S3 server (swift_server.h) with a bucket of its own, as the remote suites use it:
// skipped, saying why, where the server is not available; the AWS environment variables set to the
// server's keys and endpoint, as a user's shell has them (for the CLI and ObjectStore::Open(location)).
//
//   class PullCacheTest : public testing::RemoteStoreTest {};
//   TEST_F(PullCacheTest, X) { Push(tmp_ / "cache"); PullCache(*store_, ...); }   // url_: its s3:// URL
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "libcache/remote/object_store.h"
#include "tests/test_support.h"

namespace yc::testing {

class RemoteStoreTest : public ::testing::Test {
 protected:
  // url_ is s3://yc-<pid>-<n>/caches/synth, a bucket new to each test.
  void SetUp() override;
  // PushCache of a built cache to url_, asserting it went up.
  void Push(const std::filesystem::path& cache);
  // store_'s bucket through one more proxy of the server (SwiftServer::StartProxy `name`: a fault test
  // kills it, not the server), with 3 quick attempts per request so the failure comes in milliseconds.
  // *url: the proxy's URL. Null, with a test failure, when the proxy did not start.
  std::unique_ptr<ObjectStore> ViaOwnProxy(const std::string& name, std::string* url);

  std::string url_;
  std::unique_ptr<ObjectStore> store_;
  TempDir tmp_;
};

}  // namespace yc::testing
