#include "tests/remote/store_fixture.h"

#include <unistd.h>

#include <cstdlib>

#include "libcache/remote/push.h"
#include "tests/remote/swift_server.h"

namespace yc::testing {

void RemoteStoreTest::SetUp() {
  const SwiftServer& server = SwiftServer::Get();
  if (!server.available()) GTEST_SKIP() << server.why();
  static int buckets = 0;  // one per test of this process; the pid keeps runs and processes apart
  url_ = "s3://yc-" + std::to_string(getpid()) + "-" + std::to_string(buckets++) + "/caches/synth";
  Result<std::unique_ptr<ObjectStore>> store = ObjectStore::Open(*ParseObjectLocation(url_), server.Aws());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  store_ = std::move(store.value());
  const Status created = store_->CreateBucket();
  ASSERT_TRUE(created.ok()) << created.ToString();
  setenv("AWS_ACCESS_KEY_ID", "test:tester", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "testing", 1);
  setenv("AWS_ENDPOINT_URL", server.url().c_str(), 1);
  unsetenv("AWS_PROFILE");
}

void RemoteStoreTest::Push(const std::filesystem::path& cache) {
  Result<PushReport> r = PushCache(cache, *store_, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
}

std::unique_ptr<ObjectStore> RemoteStoreTest::ViaOwnProxy(const std::string& name, std::string* url) {
  *url = SwiftServer::Get().StartProxy(name);
  if (url->empty()) {
    ADD_FAILURE() << "the extra proxy did not start: see its log under " << YOLOCACHE_SWIFT_DIR << "/run";
    return nullptr;
  }
  AwsConfig aws = SwiftServer::Get().Aws();
  aws.endpoint = *url;
  Result<std::unique_ptr<ObjectStore>> store = ObjectStore::Open(store_->location(), aws);
  if (!store.ok()) {
    ADD_FAILURE() << store.status().ToString();
    return nullptr;
  }
  RetryPolicy fast;
  fast.attempts = 3;
  fast.first_delay_s = 0.01;
  (*store)->set_retry(fast);
  return std::move(store.value());
}

}  // namespace yc::testing
