// Faults of the remote tier against the real servers (never a mock): the S3 server killed while a cache
// is fetched, and a cache disk that is full or fills up during the fetch (a real tmpfs). Each fails
// loudly naming the object or file, and nothing half-fetched is ever used or left behind. (A damaged or
// truncated object: pull_cache_test.cc, http_pull_test.cc and bench_verify_cli_test.cc.)
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "libcache/build/pull_cache.h"
#include "libcache/build/stream_cache.h"
#include "libcache/cache.h"
#include "libcache/remote/object_store.h"
#include "tests/libcache/cache_test_util.h"
#include "tests/remote/store_fixture.h"
#include "tests/remote/swift_server.h"
#include "tests/test_support.h"

namespace yc {
namespace {

namespace fs = std::filesystem;
using testing::SwiftServer;

uint64_t FolderBytes(const fs::path& dir) {
  uint64_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += fs::file_size(e.path());
  return n;
}

void ExpectOnly(const fs::path& folder, const fs::path& allowed) {
  for (const auto& e : fs::directory_iterator(folder)) {
    if (e.path() != allowed) ADD_FAILURE() << "left behind: " << e.path();
  }
}

// A tmpfs of `size` mounted on `dir` for the object's life (root only: otherwise mounted() is false).
class SmallDisk {
 public:
  SmallDisk(const fs::path& dir, const std::string& size) : dir_(dir) {
    fs::create_directories(dir);
    mounted_ = std::system(("mount -t tmpfs -o size=" + size + " tmpfs " + dir.string() + " 2>/dev/null").c_str()) == 0;
  }
  ~SmallDisk() {
    if (mounted_) std::system(("umount " + dir_.string()).c_str());
  }
  bool mounted() const { return mounted_; }

 private:
  fs::path dir_;
  bool mounted_ = false;
};

class RemoteFaultsTest : public testing::RemoteStoreTest {};

// swift-proxy killed (SIGKILL) after the first ranged GET of an update: the fetch retries, fails naming
// the object, and the earlier local copy is still the one used; with the proxy back on its port, the same
// fetch completes.
TEST_F(RemoteFaultsTest, TheServerKilledMidFetchFailsNamingTheObjectAndKeepsTheLocalCopy) {
  WriterOptions w;
  w.shard_size = 16 << 10;
  testing::BuildTestCache(tmp_ / "a", w, {{"train", 40}});
  Push(tmp_ / "a");
  PullOptions o;
  o.cache_root = tmp_ / "root";
  ASSERT_TRUE(PullCache(*store_, o).ok());
  const fs::path local = PulledCachePath(o.cache_root, store_->location());
  testing::BuildTestCache(tmp_ / "b", w, {{"train", 40}}, 40);  // larger images: every shard differs
  Push(tmp_ / "b");

  const std::string name = "kill" + std::to_string(getpid());
  std::string proxy;
  std::unique_ptr<ObjectStore> via_proxy = ViaOwnProxy(name, &proxy);
  ASSERT_NE(via_proxy, nullptr);
  o.threads = 1;
  o.chunk_bytes = 4000;
  int chunks_after_kill = 0;
  bool killed = false;
  o.progress = [&](uint64_t, uint64_t) {
    if (killed) ++chunks_after_kill;
    if (!killed) SwiftServer::Get().KillProxy(name), killed = true;
  };
  Result<PullReport> r = PullCache(*via_proxy, o);
  ASSERT_TRUE(killed);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(chunks_after_kill, 0);
  EXPECT_EQ(r.status().code(), Status::Code::kIOError) << r.status().ToString();
  EXPECT_NE(r.status().message().find("no answer after 3 attempts"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find(url_ + "/train-"), std::string::npos) << r.status().ToString();
  // Nothing of the failed fetch is used: the local copy is still cache a, whole.
  EXPECT_EQ(testing::ReadFile(local / "manifest.json"), testing::ReadFile(tmp_ / "a" / "manifest.json"));
  OpenOptions check;
  check.verify_files = true;
  EXPECT_TRUE(Cache::Open(local, check).ok());
  ExpectOnly(o.cache_root / "remote", local);

  const std::string port = proxy.substr(proxy.rfind(':') + 1);
  ASSERT_EQ(SwiftServer::Get().StartProxy(name, port), proxy);
  o.progress = nullptr;
  Result<PullReport> again = PullCache(*via_proxy, o);
  SwiftServer::Get().KillProxy(name);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(testing::ReadFile(local / "manifest.json"), testing::ReadFile(tmp_ / "b" / "manifest.json"));
  EXPECT_TRUE(Cache::Open(local, check).ok());
}

// A cache larger than the free space of the cache disk (a 1 MiB tmpfs): refused before the first byte,
// by the library and by the CLI (exit 3, needed and free MiB), and nothing is left on the disk.
TEST_F(RemoteFaultsTest, ACacheLargerThanTheCacheDiskIsRefusedBeforeTheFirstByte) {
  SmallDisk disk(tmp_ / "disk", "1m");
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs (root only)";
  testing::BuildTestCache(tmp_ / "a", WriterOptions{}, {{"train", 80}}, 160);
  ASSERT_GT(FolderBytes(tmp_ / "a"), uint64_t{1} << 20);
  Push(tmp_ / "a");
  PullOptions o;
  o.cache_root = tmp_ / "disk";
  bool fetched = false;
  o.progress = [&](uint64_t, uint64_t) { fetched = true; };
  Result<PullReport> r = PullCache(*store_, o);
  ASSERT_FALSE(r.ok());
  EXPECT_FALSE(fetched);
  EXPECT_EQ(ExitCodeFor(r.status()), 3);
  EXPECT_NE(r.status().message().find("no room for " + url_), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("MiB are free"), std::string::npos) << r.status().ToString();
  ExpectOnly(tmp_ / "disk" / "remote", "");

  for (const std::string command : {"verify", "bench"}) {
    testing::CliRun run = testing::Yolocache(tmp_, {command, url_, "--cache-dir", (tmp_ / "disk").string()});
    EXPECT_EQ(run.exit_code, 3) << command << ": " << run.out << run.err;
    EXPECT_NE(run.err.find("no room for " + url_), std::string::npos) << command << ": " << run.err;
  }
  ExpectOnly(tmp_ / "disk" / "remote", "");

  // Streamed: a budget larger than the disk's free space is refused before any shard byte.
  testing::CliRun stream = testing::Yolocache(tmp_, {"bench", url_, "--order", "windowed", "--window", "1",
                                                     "--cache-budget", "0.002", "--cache-dir", (tmp_ / "disk").string()});
  EXPECT_EQ(stream.exit_code, 3) << stream.out << stream.err;
  EXPECT_NE(stream.err.find("--cache-budget is 2.0 MiB but only 1.0 MiB are free"), std::string::npos) << stream.err;
  EXPECT_FALSE(fs::exists(StreamedCachePath(tmp_ / "disk", store_->location())));
}

// The disk fills up while the cache is fetched (another writer takes the space after the check): the
// write fails naming the file and the reason, the staging folder goes, and the writer's file is untouched.
TEST_F(RemoteFaultsTest, ADiskThatFillsUpDuringTheFetchFailsNamingTheFile) {
  SmallDisk disk(tmp_ / "disk", "1m");
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs (root only)";
  WriterOptions w;
  w.shard_size = 64 << 10;
  testing::BuildTestCache(tmp_ / "a", w, {{"train", 40}}, 48);
  ASSERT_LT(FolderBytes(tmp_ / "a"), uint64_t{1} << 19);
  Push(tmp_ / "a");
  PullOptions o;
  o.cache_root = tmp_ / "disk";
  o.threads = 1;
  o.chunk_bytes = 4000;
  const fs::path filler = tmp_ / "disk" / "filler";
  o.progress = [&](uint64_t, uint64_t) {
    if (fs::exists(filler)) return;
    std::ofstream f(filler, std::ios::binary);
    const std::string block(4096, 'x');
    while (f.write(block.data(), block.size())) {
    }
  };
  Result<PullReport> r = PullCache(*store_, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kIOError) << r.status().ToString();
  EXPECT_NE(r.status().message().find("No space left on device"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("train-00000.shard"), std::string::npos) << r.status().ToString();
  ExpectOnly(tmp_ / "disk" / "remote", "");
  EXPECT_TRUE(fs::exists(filler));

  fs::remove(filler);
  o.progress = nullptr;
  Result<PullReport> again = PullCache(*store_, o);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(Cache::Open(again->dir).ok());
}

}  // namespace
}  // namespace yc
