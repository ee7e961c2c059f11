// The Python package over a cache in the test S3 server: yolocache.Cache('s3://...') fetches it and a
// Loader makes batches from the local copy. Runs python3 on the module of this build (skips without it).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "libcache/remote/object_store.h"
#include "libcache/remote/push.h"
#include "tests/libcache/cache_test_util.h"
#include "tests/remote/swift_server.h"
#include "tests/test_support.h"

namespace yc {
namespace {

namespace fs = std::filesystem;
using testing::SwiftServer;
using testing::TempDir;

TEST(PythonRemote, CacheAndLoaderReadAnS3Url) {
  const SwiftServer& server = SwiftServer::Get();
  if (!server.available()) GTEST_SKIP() << server.why();
  const fs::path module = fs::path(YOLOCACHE_BINARY_DIR) / "python";
  if (!fs::exists(module / "yolocache")) GTEST_SKIP() << "the Python module is not built in " << module;
  TempDir tmp;
  testing::BuildTestCache(tmp / "cache", WriterOptions{}, {{"train", 10}, {"val", 3}});
  const std::string url = "s3://yc-py-" + std::to_string(getpid()) + "/c";
  auto store = std::move(*ObjectStore::Open(*ParseObjectLocation(url), server.Aws()));
  PushOptions o;
  o.create_bucket = true;
  ASSERT_TRUE(PushCache(tmp / "cache", *store, o).ok());
  std::ofstream(tmp / "check.py") << "import sys, yolocache\n"
                                     "c = yolocache.Cache(sys.argv[1])\n"
                                     "batch = next(iter(yolocache.Loader(c, 'train', mode='val', batch=4, imgsz=32)))\n"
                                     "print(len(c), c.records('train'), tuple(batch['img'].shape[:2]), c.path)\n";
  const std::string cmd = "cd " + tmp.path().string() + " && PYTHONPATH=" + module.string() +
                          " AWS_ACCESS_KEY_ID=test:tester AWS_SECRET_ACCESS_KEY=testing AWS_ENDPOINT_URL=" + server.url() +
                          " YOLOCACHE_CACHE_DIR=" + (tmp / "root").string() + " /usr/bin/python3 check.py " + url + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  ASSERT_EQ(pclose(p), 0) << out;
  // 13 records (10 train), a batch of 4 RGB images, read from the copy under the cache folder.
  EXPECT_EQ(out.rfind("13 10 (4, 3) " + (tmp / "root" / "remote").string(), 0), 0u) << out;
}

}  // namespace
}  // namespace yc
