// Several data-parallel ranks streaming one cache from the test S3 server (issue 30, "many nodes"): the
// windowed order deals each epoch's windows to the ranks (loader/order/window_deal.h), so each rank's
// stream fetches about 1/N of the cache, the ranks together run every record once per epoch (besides
// the padding), a rank's batches are those of the same rank on the local cache, the deal changes every
// epoch, and a rank resumes mid-epoch exactly; the same through `yolocache bench URL --world-size N
// --rank R --cache-budget`, and a 2-rank CPU (Gloo) `yolocache-train train --cache-budget` run.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <set>

#include "libcache/build/stream_cache.h"
#include "libcache/cache.h"
#include "loader/loader.h"
#include "tests/libcache/cache_test_util.h"
#include "tests/loader/test_util.h"
#include "tests/remote/store_fixture.h"
#include "tests/test_support.h"

namespace yc {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;

class StreamRanksTest : public testing::RemoteStoreTest {
 protected:
  // kRecords records of up to max_side² pixels in shards of about shard_kib.
  void BuildAndPush(int max_side = 96, uint64_t shard_kib = 512) {
    WriterOptions w;
    w.shard_size = shard_kib << 10;
    built_ = testing::BuildTestCache(tmp_ / "a", w, {{"train", kRecords}}, max_side);
    Push(tmp_ / "a");
    for (const ShardEntry& e : built_.manifest.splits[0].shards) cache_bytes_ += e.bytes;
  }
  // `epochs` 1: nothing read ahead into a next epoch, whose other deal would fetch other records.
  LoaderOptions Loading(int rank, int world, int epochs = 2) const {
    LoaderOptions o;
    o.batch = 4;
    o.imgsz = 64;
    o.threads = 2;
    o.order = SampleOrder::kWindowed;
    o.window_bytes = kWindow;
    o.read_ahead_bytes = kWindow;
    o.hyp.close_mosaic = 0;
    o.epochs = epochs;
    o.rank = rank;
    o.world_size = world;
    return o;
  }
  // Rank `rank` of `world` streaming the cache (its own stream, budget large enough to keep all it
  // fetches: the figures are then its share, not evictions).
  struct Stream {
    StreamedCache streamed;
    std::shared_ptr<const RecordSource> source;
    uint64_t metadata_bytes = 0;  // fetched by the open: every shard's header, index and footer
  };
  Stream Open(int rank, int world) {
    StreamOptions so;
    so.cache_root = tmp_ / "root";
    so.budget_bytes = 2 * cache_bytes_;
    so.window_bytes = kWindow;
    so.block_bytes = 4 << 10;
    so.rank = rank;
    so.world_size = world;
    Result<StreamedCache> s = OpenStreamedCache(url_, so);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    Stream out;
    if (!s.ok()) return out;
    out.streamed = std::move(*s);
    out.source = std::shared_ptr<const RecordSource>(out.streamed.cache, out.streamed.cache->split("train"));
    out.metadata_bytes = out.streamed.stream->counters().bytes_fetched;
    return out;
  }
  // One epoch's batch hashes from batch `first` on; the records of its samples into *records.
  static std::vector<uint64_t> Epoch(const std::shared_ptr<const RecordSource>& source, const LoaderOptions& o,
                                     int epoch, size_t first = 0, std::vector<uint64_t>* records = nullptr) {
    std::vector<uint64_t> hashes;
    Result<std::unique_ptr<Loader>> loader = Loader::Create(source, o);
    EXPECT_TRUE(loader.ok()) << loader.status().ToString();
    if (!loader.ok()) return hashes;
    EXPECT_TRUE((*loader)->StartEpoch(epoch, first).ok());
    std::shared_ptr<Batch> batch;
    Status st;
    while (st = (*loader)->Next(&batch), st.ok() && batch) {
      hashes.push_back(testing::HashBatch(*batch));
      if (records != nullptr)
        for (const SampleInfo& s : batch->samples) records->push_back(s.record);
    }
    EXPECT_TRUE(st.ok()) << st.ToString();
    return hashes;
  }

  static constexpr size_t kRecords = 120;
  // Runs of records of window / 8 = 32 KiB (window_order.h), fetched in 4 KiB blocks: where two ranks'
  // runs touch in a file, the block between them is fetched by both, up to 1/8 more bytes.
  static constexpr uint64_t kWindow = 256 << 10;
  uint64_t cache_bytes_ = 0;
  testing::TestCache built_;
};

// 1, 2 and 4 ranks over one epoch: each rank's stream fetches about 1/N of what one rank fetches, each
// rank's batches equal the same rank's on the local cache, and the ranks cover every record, the
// padding aside, exactly once.
TEST_F(StreamRanksTest, EachRankFetchesOnlyItsShareAndTheRanksCoverEveryRecordOnce) {
  BuildAndPush();
  std::shared_ptr<Cache> local(std::move(*Cache::Open(tmp_ / "a")));
  const std::shared_ptr<const RecordSource> local_train(local, local->split("train"));
  uint64_t one_rank = 0;
  for (int world : {1, 2, 4}) {
    std::map<uint64_t, int> times;
    uint64_t total = 0;
    std::vector<uint64_t> fetched;
    for (int r = 0; r < world; ++r) {
      Stream s = Open(r, world);
      ASSERT_NE(s.source, nullptr);
      LoaderOptions o = Loading(r, world, 1);
      o.fetcher = s.streamed.stream;
      std::vector<uint64_t> records;
      const std::vector<uint64_t> got = Epoch(s.source, o, 0, 0, &records);
      ASSERT_EQ(records.size(), (kRecords + world - 1) / world) << "rank " << r << " of " << world;
      LoaderOptions plain = Loading(r, world, 1);
      EXPECT_EQ(got, Epoch(local_train, plain, 0)) << "rank " << r << " of " << world << ": local and streamed differ";
      for (uint64_t rec : records) ++times[rec];
      fetched.push_back(s.streamed.stream->counters().bytes_fetched - s.metadata_bytes);  // the records
      total += fetched.back();
    }
    EXPECT_EQ(times.size(), kRecords) << world << " ranks";
    size_t repeats = 0;
    for (const auto& [rec, n] : times) repeats += n - 1;
    EXPECT_EQ(repeats, (kRecords + world - 1) / world * world - kRecords) << world << " ranks";
    if (world == 1) {
      one_rank = total;
      EXPECT_GE(one_rank, cache_bytes_ * 8 / 10);  // the records of the whole cache, once
      continue;
    }
    for (int r = 0; r < world; ++r) {
      std::cerr << world << " ranks: rank " << r << " fetched " << fetched[r] << " bytes of records, one rank "
                << one_rank << "\n";
      // Its share: the ranks' counts are equal, their records' sizes not quite.
      EXPECT_LE(fetched[r], one_rank / world * 13 / 10) << "rank " << r << " of " << world;
      EXPECT_GE(fetched[r], one_rank / world * 7 / 10) << "rank " << r << " of " << world;
    }
    // Together the one rank's bytes, plus the blocks where two ranks' runs of records touch.
    EXPECT_LE(total, one_rank + one_rank / 6) << world << " ranks";
  }
}

// Rank 1 of 2 streamed: the same batches again from a fresh stream, other records the next epoch, and
// every suffix of the epoch from a mid-epoch start.
TEST_F(StreamRanksTest, TheDealIsDeterministicDiffersBetweenEpochsAndResumesMidEpoch) {
  BuildAndPush();
  LoaderOptions o = Loading(1, 2);
  std::vector<uint64_t> first_records, second_records;
  std::vector<uint64_t> whole;
  {
    Stream s = Open(1, 2);
    ASSERT_NE(s.source, nullptr);
    o.fetcher = s.streamed.stream;
    whole = Epoch(s.source, o, 0, 0, &first_records);
    Epoch(s.source, o, 1, 0, &second_records);
  }
  ASSERT_EQ(whole.size(), 15u);  // 60 samples, 4 a batch
  std::sort(first_records.begin(), first_records.end());
  std::sort(second_records.begin(), second_records.end());
  EXPECT_NE(first_records, second_records) << "epoch 1 dealt rank 1 the same records as epoch 0";
  Stream again = Open(1, 2);
  ASSERT_NE(again.source, nullptr);
  o.fetcher = again.streamed.stream;
  EXPECT_EQ(Epoch(again.source, o, 0), whole);
  for (size_t k : {4u, 11u})
    EXPECT_EQ(Epoch(again.source, o, 0, k), std::vector<uint64_t>(whole.begin() + k, whole.end())) << "from batch " << k;
}

// `yolocache bench URL --cache-budget --world-size 2 --rank R`: each rank's checksum is the same rank's
// on the local cache, and each fetches about half of what one rank fetches.
TEST_F(StreamRanksTest, BenchStreamsOneRanksShare) {
  // bench's smallest window is 1 MiB, its blocks 64 KiB: a cache of several windows, in 2 MiB shards.
  BuildAndPush(192, 2048);
  ASSERT_GT(cache_bytes_, uint64_t{3} << 20);
  const std::vector<std::string> flags = {"--order", "windowed", "--window", "1", "--batch", "4", "--batches", "5",
                                          "--threads", "2", "--profile-samples", "0", "--read-ahead", "1", "--json"};
  auto run = [&](const std::string& data, int rank, int world, bool stream) {
    std::vector<std::string> args = {"bench", data};
    args.insert(args.end(), flags.begin(), flags.end());
    for (const std::string& extra : {std::string("--rank"), std::to_string(rank), std::string("--world-size"),
                                     std::to_string(world)})
      args.push_back(extra);
    if (stream) {
      for (const std::string& extra : {std::string("--cache-budget"), std::string("0.01"), std::string("--cache-dir"),
                                       (tmp_ / "root").string()})
        args.push_back(extra);
    }
    CliRun r = testing::Yolocache(tmp_, args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
  };
  // The fetched bytes per sample compare (windows read ahead blur the totals of such short runs).
  const nlohmann::json one = run(url_, 0, 1, true);
  ASSERT_TRUE(one.contains("stream"));
  const double whole = one["stream"]["fetched_bytes_per_sample"].get<double>();
  for (int r = 0; r < 2; ++r) {
    const nlohmann::json streamed = run(url_, r, 2, true), local = run((tmp_ / "a").string(), r, 2, false);
    ASSERT_TRUE(streamed.contains("stream"));
    EXPECT_EQ(streamed["checksum"], local["checksum"]) << "rank " << r;
    EXPECT_EQ(streamed["rank"], r);
    EXPECT_EQ(streamed["world_size"], 2);
    // Per sample the same bytes as one rank: each rank fetches its own samples' records, no other's.
    const double mine = streamed["stream"]["fetched_bytes_per_sample"].get<double>();
    EXPECT_LT(mine, whole * 1.3) << "rank " << r;
    EXPECT_GT(mine, whole * 0.3) << "rank " << r;
  }
  CliRun bad = testing::Yolocache(tmp_, {"bench", url_, "--order", "windowed", "--rank", "2", "--world-size", "2"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--rank 2 must be below --world-size 2"), std::string::npos) << bad.err;
}

// `yolocache-train train --data URL --cache-budget` under 2 CPU ranks (Gloo): each rank streams the
// windows dealt to it into a folder of its own, rank 0 also fetches the val split whole, and rank 0 says
// what each rank fetched.
TEST_F(StreamRanksTest, TrainTwoCpuRanksStreamTheirShares) {
  if (!fs::exists(testing::BinaryDir() / "yolocache-train")) GTEST_SKIP() << "no yolocache-train in this build";
  CliRun synth = testing::Yolocache(tmp_, {"synth", (tmp_ / "data").string(), "--train", "32", "--val", "8",
                                           "--min-side", "48", "--max-side", "96"});
  ASSERT_EQ(synth.exit_code, 0) << synth.err;
  CliRun build = testing::Yolocache(tmp_, {"build", (tmp_ / "data" / "data.yaml").string(), "-o",
                                           (tmp_ / "cache").string(), "--imgsz", "64"});
  ASSERT_EQ(build.exit_code, 0) << build.err;
  Push(tmp_ / "cache");
  const CliRun r = testing::YolocacheTrain(
      // cache_budget= as Python's YOLO(...).train(cache_budget=...) hands it to the same parser.
      tmp_, {"train", "--data", url_, "cache_budget=0.01", "--cache-dir", (tmp_ / "root").string(), "--window",
             "0.05", "--model", "yolov8n", "--imgsz", "64", "--batch", "4", "--epochs", "2", "--device", "cpu",
             "--no-amp", "--cpu-ranks", "2", "--threads", "1", "--torch-threads", "1", "--no-plots", "--out",
             (tmp_ / "run").string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("data: streaming " + url_), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("each rank the windows dealt to it"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("'val' split fetched whole"), std::string::npos) << r.out;
  for (const std::string& who : {std::string("rank 0"), std::string("rank 1"), std::string("all 2 ranks")})
    EXPECT_NE(r.out.find("stream: " + who + " fetched "), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(tmp_ / "run" / "weights" / "last.pt"));
  EXPECT_TRUE(!fs::exists(tmp_ / "root" / "stream") || fs::is_empty(tmp_ / "root" / "stream"))
      << "the ranks' stream folders stay behind";
  std::cerr << r.out.substr(r.out.find("stream: rank 0"));
}

}  // namespace
}  // namespace yc
