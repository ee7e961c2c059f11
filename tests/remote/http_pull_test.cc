// A cache served by a plain web server (nginx on loopback, tests/servers/nginx_http.sh), fetched over
// http:// with byte ranges: the read-only path of the remote tier.
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "libcache/build/pull_cache.h"
#include "libcache/cache.h"
#include "libcache/remote/object_store.h"
#include "tests/libcache/cache_test_util.h"
#include "tests/test_support.h"

namespace yc {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

const std::string kScript = std::string(YOLOCACHE_SOURCE_DIR) + "/tests/servers/nginx_http.sh";

// nginx serving `root` for as long as the object lives.
class Nginx {
 public:
  Nginx(const fs::path& dir, const fs::path& root, const std::string& port = "") : dir_(dir) {
    FILE* p = popen(("bash " + kScript + " start " + dir.string() + " " + root.string() + " " + port).c_str(), "r");
    char line[256] = {0};
    if (p != nullptr && std::fgets(line, sizeof line, p) != nullptr) url_ = line;
    if (p != nullptr) pclose(p);
    while (!url_.empty() && (url_.back() == '\n' || url_.back() == '\r')) url_.pop_back();
  }
  ~Nginx() { Stop(); }
  void Stop() { std::system(("bash " + kScript + " stop " + dir_.string()).c_str()); }
  bool available() const { return url_.rfind("http", 0) == 0; }
  const std::string& url() const { return url_; }

 private:
  fs::path dir_;
  std::string url_;
};

std::string Bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

TEST(HttpPull, ACacheOnAWebServerIsFetchedWithRanges) {
  TempDir tmp;
  WriterOptions w;
  w.shard_size = 16 << 10;
  testing::TestCache built = testing::BuildTestCache(tmp / "www" / "caches" / "synth", w, {{"train", 30}});
  Nginx web(tmp / "nginx", tmp / "www");
  if (!web.available()) GTEST_SKIP() << (web.url().empty() ? "nginx did not start" : web.url());
  auto store = ObjectStore::Open(*ParseObjectLocation(web.url() + "/caches/synth/"));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_FALSE((*store)->writable());
  PullOptions o;
  o.cache_root = tmp / "root";
  o.chunk_bytes = 4000;
  Result<PullReport> r = PullCache(**store, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_GE(built.manifest.splits[0].shards.size(), 2u);
  for (const auto& shard : built.manifest.splits[0].shards) {
    EXPECT_EQ(Bytes(r->dir / shard.file), Bytes(tmp / "www" / "caches" / "synth" / shard.file)) << shard.file;
  }
  EXPECT_TRUE(Cache::Open(r->dir).ok());
  EXPECT_EQ((*store)->Upload("x", tmp / "root").code(), Status::Code::kUnsupported);  // read only

  auto missing = ObjectStore::Open(*ParseObjectLocation(web.url() + "/caches/none"));
  Result<PullReport> none = PullCache(**missing, o);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), Status::Code::kNotFound);
  EXPECT_NE(none.status().message().find(web.url() + "/caches/none/manifest.json"), std::string::npos)
      << none.status().ToString();
}

// The server goes away after the first ranged GET: the fetch retries, fails naming the object, and leaves
// nothing; with the server back, the same URL fetches a good copy.
TEST(HttpPull, AServerThatDiesMidFetchFailsLoudlyAndLeavesNothing) {
  TempDir tmp;
  WriterOptions w;
  w.shard_size = 16 << 10;
  testing::BuildTestCache(tmp / "www" / "c", w, {{"train", 30}});
  auto web = std::make_unique<Nginx>(tmp / "nginx", tmp / "www");
  if (!web->available()) GTEST_SKIP() << (web->url().empty() ? "nginx did not start" : web->url());
  const std::string url = web->url() + "/c";
  auto store = std::move(*ObjectStore::Open(*ParseObjectLocation(url)));
  RetryPolicy fast;
  fast.attempts = 3;
  fast.first_delay_s = 0.01;
  store->set_retry(fast);
  PullOptions o;
  o.cache_root = tmp / "root";
  o.threads = 1;
  o.chunk_bytes = 4000;
  bool stopped = false;
  o.progress = [&](uint64_t, uint64_t) {
    if (!stopped) web->Stop(), stopped = true;
  };
  Result<PullReport> r = PullCache(*store, o);
  ASSERT_TRUE(stopped);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kIOError);
  EXPECT_NE(r.status().message().find("no answer after 3 attempts"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find(url + "/"), std::string::npos) << r.status().ToString();
  EXPECT_FALSE(fs::exists(PulledCachePath(o.cache_root, store->location())));
  for (const auto& e : fs::directory_iterator(tmp / "root" / "remote")) ADD_FAILURE() << "left behind: " << e.path();

  const std::string port = url.substr(url.rfind(':') + 1, url.rfind('/') - url.rfind(':') - 1);
  web.reset();  // first: its stop would end the new one (the same pid file)
  web = std::make_unique<Nginx>(tmp / "nginx", tmp / "www", port);
  ASSERT_TRUE(web->available());
  o.progress = nullptr;
  Result<PullReport> again = PullCache(*store, o);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(Cache::Open(again->dir).ok());
}

}  // namespace
}  // namespace yc
