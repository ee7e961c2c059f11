// `yolocache bench URL` and `yolocache verify URL` end to end against the test S3 server, with the keys
// and endpoint from the AWS environment variables, as a user runs them: bench measures the same batches
// as on the local cache, verify checks every object afresh and names a damaged one.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "libcache/build/pull_cache.h"
#include "libcache/cache.h"
#include "libcache/format/manifest.h"
#include "libcache/remote/object_location.h"
#include "libcache/remote/object_store.h"
#include "tests/remote/store_fixture.h"
#include "tests/test_support.h"

namespace yc {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;

class RemoteCliTest : public testing::RemoteStoreTest {
 protected:
  void SetUp() override {
    RemoteStoreTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_EQ(testing::Yolocache(tmp_, {"synth", (tmp_ / "set").string(), "--train", "16", "--val", "4"}).exit_code, 0);
    ASSERT_EQ(testing::Yolocache(tmp_, {"build", (tmp_ / "set/data.yaml").string(), "--imgsz", "64", "--out",
                                        (tmp_ / "cache").string()}).exit_code, 0);
    CliRun push = testing::Yolocache(tmp_, {"push", (tmp_ / "cache").string(), url_});
    ASSERT_EQ(push.exit_code, 0) << push.err;
    Result<Manifest> m = ReadManifest(tmp_ / "cache");
    ASSERT_TRUE(m.ok());
    shard_ = m->splits[0].shards[0].file;
  }
  CliRun Run(std::vector<std::string> args) {
    args.push_back("--cache-dir");
    args.push_back((tmp_ / "root").string());
    return testing::Yolocache(tmp_, args);
  }
  fs::path LocalCopy() const { return PulledCachePath(tmp_ / "root", store_->location()); }

  std::string shard_;
};

std::string BenchChecksum(const CliRun& run) {
  EXPECT_EQ(run.exit_code, 0) << run.err;
  if (run.exit_code != 0) return "";
  return nlohmann::json::parse(run.out)["checksum"].get<std::string>();
}

TEST_F(RemoteCliTest, BenchOnAUrlMeasuresTheSameBatchesAsOnTheLocalCache) {
  const std::vector<std::string> flags = {"--batch", "4", "--batches", "2", "--threads", "2", "--profile-samples", "0",
                                          "--json"};
  std::vector<std::string> local = {"bench", (tmp_ / "cache").string()};
  local.insert(local.end(), flags.begin(), flags.end());
  std::vector<std::string> remote = {"bench", url_};
  remote.insert(remote.end(), flags.begin(), flags.end());
  const std::string expected = BenchChecksum(Run(local));
  CliRun first = Run(remote);
  EXPECT_EQ(BenchChecksum(first), expected);
  EXPECT_NE(first.err.find("data: fetched " + url_), std::string::npos) << first.err;  // stderr: stdout is JSON
  CliRun again = Run(remote);
  EXPECT_EQ(BenchChecksum(again), expected);
  EXPECT_NE(again.err.find("data: reusing"), std::string::npos) << again.err;

  CliRun missing = Run({"bench", url_.substr(0, url_.find('/', 5)) + "/none"});
  EXPECT_EQ(missing.exit_code, 3) << missing.err;
  EXPECT_NE(missing.err.find("/none/manifest.json"), std::string::npos) << missing.err;
  EXPECT_EQ(Run({"bench", "s3://Bad_Bucket/x"}).exit_code, 2);

  // An altered object: a first fetch into another cache folder fails its checksum naming the object, and
  // bench measures nothing (exit 1); nothing of it is left there.
  std::string bytes = testing::ReadFile(tmp_ / "cache" / shard_);
  bytes[bytes.size() / 3] ^= 0x01;
  testing::WriteFile(tmp_ / "altered", bytes);
  ASSERT_TRUE(store_->Upload(shard_, tmp_ / "altered").ok());
  CliRun altered = testing::Yolocache(tmp_, {"bench", url_, "--cache-dir", (tmp_ / "other").string()});
  EXPECT_EQ(altered.exit_code, 1) << altered.out << altered.err;
  EXPECT_NE(altered.err.find(shard_), std::string::npos) << altered.err;
  EXPECT_NE(altered.err.find("checksum"), std::string::npos) << altered.err;
  EXPECT_EQ(altered.out.find("img/s"), std::string::npos) << altered.out;
  for (const auto& e : fs::directory_iterator(tmp_ / "other" / "remote")) ADD_FAILURE() << "left behind: " << e.path();
}

TEST_F(RemoteCliTest, VerifyOnAUrlChecksEveryObjectAfreshAndNamesADamagedOne) {
  CliRun clean = Run({"verify", url_});
  ASSERT_EQ(clean.exit_code, 0) << clean.out << clean.err;
  EXPECT_NE(clean.out.find("cache: " + url_ + ":"), std::string::npos) << clean.out;
  EXPECT_NE(clean.out.find("OK: 0 problems"), std::string::npos) << clean.out;
  CliRun json = Run({"verify", url_, "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out)["cache"], url_);
  // The checked copy is the one training reuses.
  ASSERT_TRUE(Cache::Open(LocalCopy()).ok());
  EXPECT_EQ(testing::ReadFile(LocalCopy() / shard_), testing::ReadFile(tmp_ / "cache" / shard_));

  // One flipped bit in the store, the manifest unchanged: the local copy would be reused by training, so
  // verify fetches every object again; the damaged copy never replaces the good one.
  std::string bytes = testing::ReadFile(tmp_ / "cache" / shard_);
  bytes[bytes.size() / 2] ^= 0x40;
  testing::WriteFile(tmp_ / "damaged", bytes);
  ASSERT_TRUE(store_->Upload(shard_, tmp_ / "damaged").ok());
  CliRun damaged = Run({"verify", url_});
  EXPECT_EQ(damaged.exit_code, 1) << damaged.out << damaged.err;
  EXPECT_NE(damaged.out.find("error " + url_ + "/" + shard_), std::string::npos) << damaged.out;
  EXPECT_NE(damaged.out.find("FAILED"), std::string::npos) << damaged.out;
  EXPECT_EQ(testing::ReadFile(LocalCopy() / shard_), testing::ReadFile(tmp_ / "cache" / shard_));
  for (const auto& e : fs::directory_iterator(tmp_ / "root" / "remote")) {
    EXPECT_EQ(e.path(), LocalCopy()) << "left behind: " << e.path();
  }

  // A truncated object: the ranged GETs come back short, naming it (exit 3: what came over is not the object).
  testing::WriteFile(tmp_ / "short", bytes.substr(0, bytes.size() / 2));
  ASSERT_TRUE(store_->Upload(shard_, tmp_ / "short").ok());
  CliRun truncated = Run({"verify", url_});
  EXPECT_EQ(truncated.exit_code, 3) << truncated.out << truncated.err;
  EXPECT_NE(truncated.err.find(url_ + "/" + shard_), std::string::npos) << truncated.err;

  CliRun missing = Run({"verify", url_.substr(0, url_.find('/', 5)) + "/none"});
  EXPECT_EQ(missing.exit_code, 3) << missing.err;
  EXPECT_NE(missing.err.find("/none/manifest.json"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace yc
