// A cache streamed from the test S3 server window by window into a disk cache bounded by a budget
// (libcache/build/stream_cache.h), by the library, by the loader's window stage and by
// `yolocache bench URL --cache-budget`: the same batches as from the local cache, never more than the
// budget on disk, pinned windows never evicted, and its faults (the server killed mid-epoch, an altered
// or truncated object, a budget smaller than a window or than the free disk) failing loudly.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "libcache/build/stream_cache.h"
#include "libcache/cache.h"
#include "libcache/remote/object_store.h"
#include "loader/loader.h"
#include "tests/libcache/cache_test_util.h"
#include "tests/remote/store_fixture.h"
#include "tests/remote/swift_server.h"
#include "tests/test_support.h"

namespace yc {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::SwiftServer;

// Bytes the folder's files take on disk (sparse files: only what was written and not punched out).
uint64_t AllocatedBytes(const fs::path& dir) {
  uint64_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    struct stat st {};
    if (::stat(e.path().c_str(), &st) == 0 && e.path().extension() == ".shard") n += static_cast<uint64_t>(st.st_blocks) * 512;
  }
  return n;
}

class StreamTest : public testing::RemoteStoreTest {
 protected:
  // A cache of `records` synthetic records of up to max_side² pixels in shards of about shard_kib, pushed.
  void BuildAndPush(const fs::path& dir, size_t records = 96, int max_side = 96, uint64_t shard_kib = 128) {
    WriterOptions w;
    w.shard_size = shard_kib << 10;
    built_ = testing::BuildTestCache(dir, w, {{"train", records}}, max_side);
    Push(dir);
    cache_bytes_ = 0;
    for (const ShardEntry& e : built_.manifest.splits[0].shards) cache_bytes_ += e.bytes;
  }
  StreamOptions Options(uint64_t budget) const {
    StreamOptions o;
    o.cache_root = tmp_ / "root";
    o.budget_bytes = budget;
    o.block_bytes = 4 << 10;
    return o;
  }
  uint64_t cache_bytes_ = 0;
  testing::TestCache built_;
};

TEST_F(StreamTest, FetchesRangesWithinTheBudgetAndNeverEvictsAPinnedOne) {
  BuildAndPush(tmp_ / "a");
  ASSERT_GE(built_.manifest.splits[0].shards.size(), 3u);
  const std::string s0 = built_.manifest.splits[0].shards[0].file, s1 = built_.manifest.splits[0].shards[1].file;
  const uint64_t f0 = built_.manifest.splits[0].shards[0].bytes, f1 = built_.manifest.splits[0].shards[1].bytes;
  ASSERT_GT(f0, 64u << 10);
  ASSERT_GT(f1, 64u << 10);
  // Room for either shard and the metadata blocks, not for both shards.
  const uint64_t budget = std::max(f0, f1) + (48 << 10);
  ASSERT_LT(budget, f0 + f1);
  Result<std::unique_ptr<StreamCache>> opened = StreamCache::Open(*store_, Options(budget));
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  StreamCache& s = **opened;
  const fs::path dir = s.dir();
  EXPECT_EQ(dir, StreamedCachePath(tmp_ / "root", store_->location()));
  EXPECT_EQ(fs::file_size(dir / s0), fs::file_size(tmp_ / "a" / s0));  // full size, sparse
  EXPECT_TRUE(Cache::Open(dir).ok());  // headers, indexes and footers are there

  uint64_t first = 0;
  ASSERT_TRUE(s.Fetch({{(dir / s0).string(), 0, f0}}, &first).ok());
  EXPECT_EQ(testing::ReadFile(dir / s0), testing::ReadFile(tmp_ / "a" / s0));
  // Shard 0 pinned, shard 1 does not fit beside it: refused, and the pinned one is still whole.
  uint64_t second = 0;
  Status over = s.Fetch({{(dir / s1).string(), 0, f1}}, &second);
  EXPECT_EQ(over.code(), Status::Code::kResourceExhausted) << over.ToString();
  EXPECT_NE(over.message().find("more than --cache-budget"), std::string::npos) << over.ToString();
  EXPECT_EQ(testing::ReadFile(dir / s0), testing::ReadFile(tmp_ / "a" / s0));
  // Unpinned, it is evicted for the next range: the disk never holds more than the budget.
  s.Unpin(first);
  ASSERT_TRUE(s.Fetch({{(dir / s1).string(), 0, f1}}, &second).ok());
  EXPECT_EQ(testing::ReadFile(dir / s1), testing::ReadFile(tmp_ / "a" / s1));
  const StreamCounters c = s.counters();
  EXPECT_GT(c.bytes_evicted, 0u);
  EXPECT_LE(c.peak_bytes_on_disk, budget);
  // On disk too; ext4's extent blocks for the sparse files' holes come on top (at most a block a shard).
  EXPECT_LE(AllocatedBytes(dir), budget + 4096 * built_.manifest.splits[0].shards.size());
  s.Unpin(second);
  opened->reset();
  EXPECT_FALSE(fs::exists(dir));  // the stream's own files, gone with it
}

// The stream's folder left by a killed run (cache files only) is replaced; a folder of that name holding
// anything else is refused and left as it is: the stream deletes only files of its own.
TEST_F(StreamTest, ReplacesTheFolderOfAKilledRunButNeverSomeoneElses) {
  BuildAndPush(tmp_ / "a");
  const fs::path dir = StreamedCachePath(tmp_ / "root", store_->location());
  fs::create_directories(dir);
  fs::copy_file(tmp_ / "a" / "manifest.json", dir / "manifest.json");
  testing::WriteFile(dir / built_.manifest.splits[0].shards[0].file, "half a shard");
  Result<std::unique_ptr<StreamCache>> s = StreamCache::Open(*store_, Options(uint64_t{1} << 20));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(Cache::Open(dir).ok());
  s->reset();
  EXPECT_FALSE(fs::exists(dir));

  fs::create_directories(dir);
  testing::WriteFile(dir / "notes.txt", "mine");
  Result<std::unique_ptr<StreamCache>> refused = StreamCache::Open(*store_, Options(uint64_t{1} << 20));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("notes.txt"), std::string::npos) << refused.status().ToString();
  EXPECT_EQ(testing::ReadFile(dir / "notes.txt"), "mine");
}

// The loader's windowed order over the stream gives the batches it gives over the local cache, with
// the disk bounded by a budget of a few windows.
TEST_F(StreamTest, TheLoaderStreamsTheSameBatchesAsFromTheLocalCache) {
  BuildAndPush(tmp_ / "a");
  LoaderOptions o;
  o.batch = 4;
  o.imgsz = 64;
  o.threads = 2;
  o.order = SampleOrder::kWindowed;
  o.window_bytes = 64 << 10;
  o.read_ahead_bytes = 64 << 10;
  o.hyp.close_mosaic = 0;
  o.epochs = 2;
  auto hashes = [&](std::shared_ptr<const RecordSource> source, const LoaderOptions& options) {
    std::vector<std::string> out;
    Result<std::unique_ptr<Loader>> loader = Loader::Create(std::move(source), options);
    EXPECT_TRUE(loader.ok()) << loader.status().ToString();
    if (!loader.ok()) return out;
    for (int epoch = 0; epoch < 2; ++epoch) {
      EXPECT_TRUE((*loader)->StartEpoch(epoch).ok());
      std::shared_ptr<Batch> batch;
      Status st;
      while (st = (*loader)->Next(&batch), st.ok() && batch) {
        out.emplace_back(reinterpret_cast<const char*>(batch->images), batch->image_bytes() * batch->size);
      }
      EXPECT_TRUE(st.ok()) << st.ToString();
    }
    return out;
  };
  std::shared_ptr<Cache> local(std::move(*Cache::Open(tmp_ / "a")));
  const std::vector<std::string> expected = hashes(std::shared_ptr<const RecordSource>(local, local->split("train")), o);
  ASSERT_FALSE(expected.empty());

  ASSERT_GT(cache_bytes_, uint64_t{512} << 10);  // the budget below holds less than half of it
  StreamOptions so = Options(256 << 10);
  so.window_bytes = o.window_bytes;
  Result<StreamedCache> streamed = OpenStreamedCache(url_, so);
  ASSERT_TRUE(streamed.ok()) << streamed.status().ToString();
  LoaderOptions so_loader = o;
  so_loader.fetcher = streamed->stream;
  const std::vector<std::string> got = hashes(
      std::shared_ptr<const RecordSource>(streamed->cache, streamed->cache->split("train")), so_loader);
  EXPECT_TRUE(got == expected) << got.size() << " batches vs " << expected.size();
  const StreamCounters c = streamed->stream->counters();
  EXPECT_GT(c.bytes_evicted, 0u);
  EXPECT_GE(c.bytes_fetched, cache_bytes_);  // each epoch fetches what the budget could not keep
  EXPECT_LE(c.peak_bytes_on_disk, uint64_t{256} << 10);
  // Several ranks streaming one cache, each its share: stream_ranks_test.cc.
}

// swift-proxy killed (SIGKILL) mid-epoch: the window being fetched retries, then the epoch fails naming
// the object; no batch after the kill is built from bytes that did not come.
TEST_F(StreamTest, TheServerKilledMidEpochFailsTheEpochNamingTheObject) {
  BuildAndPush(tmp_ / "a");
  const std::string name = "stream" + std::to_string(getpid());
  std::string proxy;
  std::unique_ptr<ObjectStore> store = ViaOwnProxy(name, &proxy);
  ASSERT_NE(store, nullptr);
  StreamOptions so = Options(160 << 10);
  so.window_bytes = 32 << 10;
  Result<std::unique_ptr<StreamCache>> opened = StreamCache::Open(*store, so);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::shared_ptr<StreamCache> stream = std::move(*opened);
  OpenOptions check;
  check.verify_checksums = true;
  std::shared_ptr<Cache> cache(std::move(*Cache::Open(stream->dir(), check)));
  LoaderOptions o;
  o.batch = 4;
  o.imgsz = 64;
  o.threads = 1;
  o.prefetch = 1;
  o.order = SampleOrder::kWindowed;
  o.window_bytes = so.window_bytes;
  o.read_ahead_bytes = so.window_bytes;  // one window ahead: most of the epoch is still to fetch
  o.fetcher = stream;
  Result<std::unique_ptr<Loader>> loader = Loader::Create(std::shared_ptr<const RecordSource>(cache, cache->split("train")), o);
  ASSERT_TRUE(loader.ok()) << loader.status().ToString();
  ASSERT_TRUE((*loader)->StartEpoch(0).ok());
  std::shared_ptr<Batch> batch;
  ASSERT_TRUE((*loader)->Next(&batch).ok());
  ASSERT_TRUE(batch);
  SwiftServer::Get().KillProxy(name);
  Status st;
  int after = 0;
  while (st = (*loader)->Next(&batch), st.ok() && batch) ++after;
  ASSERT_FALSE(st.ok()) << "the epoch ended after " << after << " more batches";
  EXPECT_LT(after, 22);  // 24 batches an epoch
  EXPECT_EQ(st.code(), Status::Code::kIOError) << st.ToString();
  EXPECT_NE(st.message().find("no answer after 3 attempts"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find(url_ + "/train-"), std::string::npos) << st.ToString();
}

TEST_F(StreamTest, BenchStreamsAUrlWithinItsBudgetAndRefusesBadBudgets) {
  BuildAndPush(tmp_ / "a", 200, 192, 2048);  // bench's smallest window is 1 MiB: a cache several times that
  ASSERT_GT(cache_bytes_, uint64_t{4} << 20);
  const std::vector<std::string> flags = {"--order", "windowed", "--window", "1", "--batch", "4", "--batches", "6",
                                          "--threads", "2", "--profile-samples", "0", "--json"};
  std::vector<std::string> local = {"bench", (tmp_ / "a").string()}, remote = {"bench", url_};
  local.insert(local.end(), flags.begin(), flags.end());
  remote.insert(remote.end(), flags.begin(), flags.end());
  for (const char* extra : {"--cache-dir", "--cache-budget"}) remote.push_back(extra), remote.push_back("");
  remote[remote.size() - 3] = (tmp_ / "root").string();
  remote[remote.size() - 1] = "0.002";  // 2 MiB: two windows
  CliRun l = testing::Yolocache(tmp_, local);
  ASSERT_EQ(l.exit_code, 0) << l.err;
  CliRun r = testing::Yolocache(tmp_, remote);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json lj = nlohmann::json::parse(l.out), rj = nlohmann::json::parse(r.out);
  EXPECT_EQ(rj["checksum"], lj["checksum"]);
  EXPECT_GT(rj["stream"]["fetched_bytes"].get<uint64_t>(), 0u);
  EXPECT_GT(rj["stream"]["fetched_bytes_per_sample"].get<double>(), 0.0);
  EXPECT_LE(rj["stream"]["peak_disk_bytes"].get<uint64_t>(), rj["stream"]["budget_bytes"].get<uint64_t>());
  EXPECT_FALSE(fs::exists(StreamedCachePath(tmp_ / "root", store_->location())));  // removed after the run

  remote.pop_back();
  remote.push_back("0.0005");  // 0.5 MiB: smaller than one 1 MiB window
  CliRun small = testing::Yolocache(tmp_, remote);
  EXPECT_EQ(small.exit_code, 3) << small.err;
  EXPECT_NE(small.err.find("smaller than one window"), std::string::npos) << small.err;
  EXPECT_NE(small.err.find("nothing fetched"), std::string::npos) << small.err;
  EXPECT_FALSE(fs::exists(tmp_ / "root" / "stream" / StreamedCachePath(tmp_ / "root", store_->location()).filename()));

  CliRun not_url = testing::Yolocache(tmp_, {"bench", (tmp_ / "a").string(), "--cache-budget", "1"});
  EXPECT_EQ(not_url.exit_code, 2) << not_url.err;
  CliRun shuffle = testing::Yolocache(tmp_, {"bench", url_, "--cache-budget", "1"});
  EXPECT_EQ(shuffle.exit_code, 2) << shuffle.err;
  EXPECT_NE(shuffle.err.find("--order windowed"), std::string::npos) << shuffle.err;
}

// An altered object (one flipped bit in a record): the record read from the stream fails its checksum,
// naming the shard; a truncated one: its footer's ranged GET comes back short, naming the object.
TEST_F(StreamTest, AnAlteredOrTruncatedObjectFailsNamingIt) {
  BuildAndPush(tmp_ / "a", 96, 192, 2048);
  const std::string shard = built_.manifest.splits[0].shards[0].file;
  std::string bytes = testing::ReadFile(tmp_ / "a" / shard);
  bytes[4096] ^= 0x10;  // inside the first records' pixels
  testing::WriteFile(tmp_ / "altered", bytes);
  ASSERT_TRUE(store_->Upload(shard, tmp_ / "altered").ok());
  const std::vector<std::string> run = {"bench", url_, "--order", "windowed", "--window", "1", "--batch", "4",
                                        "--batches", "12", "--threads", "2", "--cache-budget", "0.002",
                                        "--cache-dir", (tmp_ / "root").string()};
  CliRun altered = testing::Yolocache(tmp_, run);
  EXPECT_EQ(altered.exit_code, 1) << altered.out << altered.err;
  EXPECT_NE(altered.err.find("streaming " + url_ + ": "), std::string::npos) << altered.err;
  EXPECT_NE(altered.err.find(shard), std::string::npos) << altered.err;
  EXPECT_NE(altered.err.find("checksum"), std::string::npos) << altered.err;
  std::cerr << "altered object: " << altered.err;  // the message, for the record

  testing::WriteFile(tmp_ / "short", bytes.substr(0, bytes.size() / 2));
  ASSERT_TRUE(store_->Upload(shard, tmp_ / "short").ok());
  CliRun truncated = testing::Yolocache(tmp_, run);
  EXPECT_EQ(truncated.exit_code, 3) << truncated.out << truncated.err;
  EXPECT_NE(truncated.err.find(url_ + "/" + shard), std::string::npos) << truncated.err;
}

}  // namespace
}  // namespace yc
