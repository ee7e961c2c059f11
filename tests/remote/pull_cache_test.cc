// A cache pushed to the test S3 server, fetched back as a local cache (libcache/build/pull_cache.h),
// also the way `--data s3://...` reaches it (PrepareCache).
#include <gtest/gtest.h>

#include "libcache/build/prepare_cache.h"
#include "libcache/build/pull_cache.h"
#include "libcache/cache.h"
#include "libcache/remote/object_store.h"
#include "tests/libcache/cache_test_util.h"
#include "tests/remote/store_fixture.h"
#include "tests/test_support.h"

namespace yc {
namespace {

namespace fs = std::filesystem;

class PullCacheTest : public testing::RemoteStoreTest {};

TEST_F(PullCacheTest, FetchesAVerifiedCopyReusesItAndFetchesOnlyWhatChanged) {
  WriterOptions w;
  w.shard_size = 16 << 10;
  testing::TestCache built = testing::BuildTestCache(tmp_ / "a", w, {{"train", 40}, {"val", 8}});
  Push(tmp_ / "a");
  PullOptions o;
  o.cache_root = tmp_ / "root";
  o.chunk_bytes = 5000;  // several ranged GETs per shard, out of order across threads
  uint64_t last_done = 0, last_total = 0;
  o.progress = [&](uint64_t done, uint64_t total) { last_done = done, last_total = total; };
  Result<PullReport> first = PullCache(*store_, o);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(first->reused);
  EXPECT_EQ(first->files_kept, 0u);
  EXPECT_EQ(first->dir, PulledCachePath(o.cache_root, store_->location()));
  EXPECT_EQ(last_done, last_total);
  for (const auto& split : built.manifest.splits) {
    for (const auto& shard : split.shards) {
      EXPECT_EQ(testing::ReadFile(first->dir / shard.file), testing::ReadFile(tmp_ / "a" / shard.file)) << shard.file;
    }
  }
  Result<std::unique_ptr<Cache>> opened = Cache::Open(first->dir);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ((*opened)->split("train")->size(), 40u);

  Result<PullReport> again = PullCache(*store_, o);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->reused);

  // The remote cache updated: a longer val split, the same train records (so the same train shards).
  testing::BuildTestCache(tmp_ / "b", w, {{"train", 40}, {"val", 12}});
  Push(tmp_ / "b");
  Result<PullReport> update = PullCache(*store_, o);
  ASSERT_TRUE(update.ok()) << update.status().ToString();
  EXPECT_FALSE(update->reused);
  EXPECT_EQ(update->files_kept, built.manifest.splits[0].shards.size());  // every train shard
  EXPECT_GE(update->files_fetched, 1u);
  EXPECT_EQ((*Cache::Open(update->dir))->split("val")->size(), 12u);
}

TEST_F(PullCacheTest, ADamagedObjectFailsNamingItAndLeavesNoCopy) {
  testing::BuildTestCache(tmp_ / "a", WriterOptions{}, {{"train", 12}});
  Push(tmp_ / "a");
  Result<Manifest> m = ReadManifest(tmp_ / "a");
  ASSERT_TRUE(m.ok());
  const ShardEntry& shard = m->splits[0].shards[0];
  std::string bytes = testing::ReadFile(tmp_ / "a" / shard.file);
  bytes[bytes.size() / 2] ^= 0x40;  // one flipped bit, same size
  testing::WriteFile(tmp_ / "damaged", bytes);
  ASSERT_TRUE(store_->Upload(shard.file, tmp_ / "damaged").ok());
  PullOptions o;
  o.cache_root = tmp_ / "root";
  Result<PullReport> r = PullCache(*store_, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kCorruption) << r.status().ToString();
  EXPECT_NE(r.status().message().find(shard.file), std::string::npos) << r.status().ToString();
  EXPECT_FALSE(fs::exists(PulledCachePath(o.cache_root, store_->location())));
  for (const auto& e : fs::directory_iterator(tmp_ / "root" / "remote")) ADD_FAILURE() << "left behind: " << e.path();

  // A truncated object: the ranged read comes back short, naming the object.
  testing::WriteFile(tmp_ / "short", bytes.substr(0, bytes.size() / 2));
  ASSERT_TRUE(store_->Upload(shard.file, tmp_ / "short").ok());
  Result<PullReport> truncated = PullCache(*store_, o);
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.status().message().find(shard.file), std::string::npos) << truncated.status().ToString();
}

TEST_F(PullCacheTest, DataGivenAsAnS3UrlIsPreparedFromTheStore) {
  testing::BuildTestCache(tmp_ / "a", WriterOptions{}, {{"train", 6}, {"val", 2}});
  Push(tmp_ / "a");
  PrepareOptions o;  // the store's keys and endpoint from the environment (RemoteStoreTest)
  o.data = url_;
  o.cache_root = tmp_ / "root";
  o.reuse_only = true;  // a rank of a data-parallel run: no fetch of its own
  Result<PreparedCache> rank = PrepareCache(o);
  ASSERT_TRUE(rank.ok()) << rank.status().ToString();
  EXPECT_FALSE(rank->ready);
  o.reuse_only = false;
  Result<PreparedCache> p = PrepareCache(o);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->action, PrepareAction::kFetched);
  EXPECT_FALSE(p->pull.reused);
  EXPECT_TRUE(Cache::Open(p->dir).ok());
  Result<PreparedCache> reused = PrepareCache(o);
  ASSERT_TRUE(reused.ok());
  EXPECT_TRUE(reused->pull.reused);
  EXPECT_EQ(reused->dir, p->dir);
}

}  // namespace
}  // namespace yc
