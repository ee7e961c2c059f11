// The object-store client (libcache/remote/) against a real S3-compatible server (swift_server.h), and
// its URL and settings parsing without one.
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "libcache/remote/aws_config.h"
#include "libcache/remote/object_location.h"
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

TEST(ObjectLocation, ParsesS3AndHttpUrls) {
  Result<ObjectLocation> s3 = ParseObjectLocation("s3://data-sets/coco/640/");
  ASSERT_TRUE(s3.ok()) << s3.status().ToString();
  EXPECT_EQ(s3->bucket, "data-sets");
  EXPECT_EQ(s3->prefix, "coco/640");
  EXPECT_EQ(s3->Key("manifest.json"), "coco/640/manifest.json");
  EXPECT_EQ(s3->Display("manifest.json"), "s3://data-sets/coco/640/manifest.json");
  EXPECT_EQ(ParseObjectLocation("s3://bucket")->Key("a"), "a");
  Result<ObjectLocation> web = ParseObjectLocation("https://example.org/caches/coco//");
  ASSERT_TRUE(web.ok());
  EXPECT_EQ(web->Display("manifest.json"), "https://example.org/caches/coco/manifest.json");
  EXPECT_TRUE(IsObjectUrl("s3://b/x") && IsObjectUrl("http://h/x") && !IsObjectUrl("caches/s3"));
  for (const char* bad : {"s3://", "s3://Bad_Bucket/x", "s3://ab/x", "s3://bucket/a/../b", "https:///x",
                          "https://h/x?y=1", "ftp://h/x"}) {
    Result<ObjectLocation> r = ParseObjectLocation(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find(bad), std::string::npos) << r.status().message();
  }
}

TEST(AwsConfig, EnvironmentFirstThenTheProfileFiles) {
  TempDir tmp;
  std::ofstream(tmp / "credentials") << "[default]\naws_access_key_id = AK1\naws_secret_access_key = S1\n"
                                     << "[work]\naws_access_key_id=AK2\naws_secret_access_key=S2\naws_session_token=T2\n";
  std::ofstream(tmp / "config") << "[default]\nregion = eu-west-1\n[profile work]\nregion=ap-south-1\n"
                                << "endpoint_url = http://127.0.0.1:9000\ns3 =\n  addressing_style = path\n";
  std::map<std::string, std::string> env{{"AWS_SHARED_CREDENTIALS_FILE", (tmp / "credentials").string()},
                                         {"AWS_CONFIG_FILE", (tmp / "config").string()}};
  auto lookup = [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  Result<AwsConfig> files = LoadAwsConfig(lookup);
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  EXPECT_EQ(files->access_key, "AK1");
  EXPECT_EQ(files->region, "eu-west-1");
  EXPECT_EQ(files->endpoint, "");
  EXPECT_EQ(files->ObjectUrl("bucket", "a b/c.ycs"), "https://bucket.s3.eu-west-1.amazonaws.com/a%20b/c.ycs");

  env["AWS_PROFILE"] = "work";
  Result<AwsConfig> work = LoadAwsConfig(lookup);
  ASSERT_TRUE(work.ok());
  EXPECT_EQ(work->secret_key, "S2");
  EXPECT_EQ(work->session_token, "T2");
  EXPECT_EQ(work->region, "ap-south-1");
  EXPECT_EQ(work->ObjectUrl("bucket", "k"), "http://127.0.0.1:9000/bucket/k");  // custom endpoint: path-style

  env["AWS_ACCESS_KEY_ID"] = "AK3";
  env["AWS_SECRET_ACCESS_KEY"] = "S3";
  env["AWS_REGION"] = "us-west-2";
  Result<AwsConfig> vars = LoadAwsConfig(lookup);
  ASSERT_TRUE(vars.ok());
  EXPECT_EQ(vars->access_key, "AK3");
  EXPECT_EQ(vars->session_token, "");
  EXPECT_EQ(vars->region, "us-west-2");

  env = {{"HOME", (tmp / "nowhere").string()}};
  Result<AwsConfig> none = LoadAwsConfig(lookup);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), Status::Code::kNotFound);
  EXPECT_NE(none.status().message().find("AWS_ACCESS_KEY_ID"), std::string::npos);
}

// A bucket of this test process's own, so tests running side by side do not meet.
std::string Bucket(const std::string& name) { return "yc-" + name + "-" + std::to_string(getpid()); }

std::unique_ptr<ObjectStore> Store(const std::string& url, AwsConfig aws) {
  Result<ObjectLocation> at = ParseObjectLocation(url);
  EXPECT_TRUE(at.ok()) << at.status().ToString();
  Result<std::unique_ptr<ObjectStore>> store = ObjectStore::Open(*at, std::move(aws));
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return std::move(*store);
}

std::vector<uint8_t> FileBytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

TEST(S3Store, PushSendsWhatChangedAndRangesReadBack) {
  const SwiftServer& server = SwiftServer::Get();
  if (!server.available()) GTEST_SKIP() << server.why();
  TempDir tmp;
  WriterOptions w;
  w.shard_size = 16 << 10;  // several shards
  testing::TestCache built = testing::BuildTestCache(tmp / "cache", w, {{"train", 40}, {"val", 8}});
  testing::AddAuditReport(tmp / "cache", &built);
  auto store = Store("s3://" + Bucket("push") + "/caches/synth", server.Aws());
  PushOptions o;
  o.create_bucket = true;
  uint64_t last_done = 0, last_total = 0;
  o.progress = [&](uint64_t done, uint64_t total) { last_done = done, last_total = total; };
  Result<PushReport> first = PushCache(tmp / "cache", *store, o);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  size_t data_files = 1;  // audit.json
  for (const auto& split : built.manifest.splits) data_files += split.shards.size();
  ASSERT_GE(data_files, 4u);
  EXPECT_EQ(first->files_uploaded, data_files + 1);  // and manifest.json
  EXPECT_EQ(first->files_skipped, 0u);
  EXPECT_EQ(last_done, last_total);

  // Every object holds its file: sizes, the recorded checksum, and byte ranges anywhere in it.
  for (const auto& split : built.manifest.splits) {
    for (const auto& shard : split.shards) {
      Result<ObjectInfo> info = store->Stat(shard.file);
      ASSERT_TRUE(info.ok()) << info.status().ToString();
      EXPECT_EQ(info->size, shard.bytes);
      EXPECT_EQ(info->metadata["xxh3"], ChecksumText(shard.checksum));
      const std::vector<uint8_t> local = FileBytes(tmp / "cache" / shard.file);
      for (uint64_t offset : {uint64_t{0}, shard.bytes / 3, shard.bytes - 100}) {
        std::vector<uint8_t> got(100);
        ASSERT_TRUE(store->Read(shard.file, offset, got.size(), got.data()).ok());
        EXPECT_TRUE(std::equal(got.begin(), got.end(), local.begin() + static_cast<long>(offset))) << shard.file;
      }
    }
  }
  Result<std::string> manifest = store->ReadAll("manifest.json", 1 << 20);
  ASSERT_TRUE(manifest.ok());
  EXPECT_TRUE(ParseManifest(*manifest).ok());

  // Pushed again unchanged: only the manifest goes up.
  Result<PushReport> again = PushCache(tmp / "cache", *store, o);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->files_skipped, data_files);
  EXPECT_EQ(again->files_uploaded, 1u);

  // Reading past an object's end is an error naming it, not a short buffer.
  std::vector<uint8_t> past(64);
  const auto& shard0 = built.manifest.splits[0].shards[0];
  Status beyond = store->Read(shard0.file, shard0.bytes - 10, past.size(), past.data());
  ASSERT_FALSE(beyond.ok());
  EXPECT_NE(beyond.message().find("caches/synth/" + shard0.file), std::string::npos) << beyond.ToString();
}

TEST(S3Store, RefusalsNameTheObjectAndTheReason) {
  const SwiftServer& server = SwiftServer::Get();
  if (!server.available()) GTEST_SKIP() << server.why();
  const std::string bucket = Bucket("refusals");
  auto store = Store("s3://" + bucket + "/p", server.Aws());
  ASSERT_TRUE(store->CreateBucket().ok());
  ASSERT_TRUE(store->CreateBucket().ok());  // already ours: fine

  Result<ObjectInfo> missing = store->Stat("shard-00000.ycs");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
  EXPECT_NE(missing.status().message().find("s3://" + bucket + "/p/shard-00000.ycs"), std::string::npos);
  Result<std::string> missing_get = store->ReadAll("manifest.json", 1 << 20);
  ASSERT_FALSE(missing_get.ok());
  EXPECT_NE(missing_get.status().message().find("NoSuchKey"), std::string::npos) << missing_get.status().ToString();

  AwsConfig wrong = server.Aws();
  wrong.secret_key = "not-the-secret";
  Result<ObjectInfo> denied = Store("s3://" + bucket + "/p", wrong)->Stat("x");
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.status().code(), Status::Code::kIOError);
  EXPECT_NE(denied.status().message().find("access denied"), std::string::npos) << denied.status().ToString();

  TempDir tmp;
  testing::BuildTestCache(tmp / "cache", WriterOptions{}, {{"train", 4}});
  Result<PushReport> no_bucket = PushCache(tmp / "cache", *Store("s3://" + Bucket("absent") + "/p", server.Aws()), {});
  ASSERT_FALSE(no_bucket.ok());
  EXPECT_NE(no_bucket.status().message().find("NoSuchBucket"), std::string::npos) << no_bucket.status().ToString();
  Result<PushReport> read_only = PushCache(tmp / "cache", *Store(server.url() + "/" + bucket, server.Aws()), {});
  ASSERT_FALSE(read_only.ok());
  EXPECT_EQ(read_only.status().code(), Status::Code::kInvalidArgument);
}

TEST(S3Store, AServerThatIsGoneFailsAfterItsRetries) {
  // A port nobody listens on: every attempt is refused, the backoff runs out, the error says so.
  AwsConfig aws;
  aws.access_key = "a";
  aws.secret_key = "b";
  aws.endpoint = "http://127.0.0.1:9";  // discard port, closed on a test machine
  auto store = Store("s3://gone-bucket/p", aws);
  RetryPolicy fast;
  fast.attempts = 3;
  fast.first_delay_s = 0.01;
  store->set_retry(fast);
  Result<ObjectInfo> r = store->Stat("manifest.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kIOError);
  EXPECT_NE(r.status().message().find("s3://gone-bucket/p/manifest.json: no answer after 3 attempts"), std::string::npos)
      << r.status().ToString();
}

}  // namespace
}  // namespace yc
