// `yolocache push` end to end: a cache built by `yolocache build` into the test S3 server, with the keys
// and endpoint from the AWS environment variables, as a user would run it.
#include <cstdlib>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "libcache/remote/object_location.h"
#include "libcache/remote/object_store.h"
#include "tests/remote/swift_server.h"
#include "tests/test_support.h"

namespace yc {
namespace {

using testing::SwiftServer;
using testing::TempDir;

void UseServerKeys(const SwiftServer& s) {
  setenv("AWS_ACCESS_KEY_ID", "test:tester", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "testing", 1);
  setenv("AWS_ENDPOINT_URL", s.url().c_str(), 1);
  unsetenv("AWS_PROFILE");
}

TEST(PushCli, UploadsABuiltCacheAndRefusesBadArguments) {
  const SwiftServer& server = SwiftServer::Get();
  if (!server.available()) GTEST_SKIP() << server.why();
  TempDir tmp;
  ASSERT_EQ(testing::Yolocache(tmp, {"synth", (tmp / "set").string(), "--train", "12", "--val", "4"}).exit_code, 0);
  ASSERT_EQ(testing::Yolocache(tmp, {"build", (tmp / "set/data.yaml").string(), "--imgsz", "64", "--out",
                                     (tmp / "cache").string()}).exit_code, 0);
  UseServerKeys(server);
  const std::string url = "s3://yc-cli-" + std::to_string(getpid()) + "/synth/64";
  testing::CliRun push = testing::Yolocache(tmp, {"push", (tmp / "cache").string(), url, "--create-bucket", "--json"});
  ASSERT_EQ(push.exit_code, 0) << push.err;
  const nlohmann::json j = nlohmann::json::parse(push.out);
  EXPECT_EQ(j["url"], url);
  EXPECT_GE(j["files_uploaded"].get<int>(), 3);  // train and val shards, audit.json, manifest.json
  EXPECT_EQ(j["files_skipped"].get<int>(), 0);
  auto store = ObjectStore::Open(*ParseObjectLocation(url));
  ASSERT_TRUE(store.ok());
  EXPECT_TRUE((*store)->Stat("manifest.json").ok());

  testing::CliRun again = testing::Yolocache(tmp, {"push", (tmp / "cache").string(), url});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("1 files uploaded"), std::string::npos) << again.out;  // the manifest only

  EXPECT_EQ(testing::Yolocache(tmp, {"push", (tmp / "cache").string(), "s3://Bad_Name/x"}).exit_code, 2);
  EXPECT_EQ(testing::Yolocache(tmp, {"push", (tmp / "cache").string(), server.url() + "/x"}).exit_code, 2);
  EXPECT_EQ(testing::Yolocache(tmp, {"push", (tmp / "set").string(), url}).exit_code, 2);  // a dataset, not a cache
  setenv("AWS_SECRET_ACCESS_KEY", "wrong", 1);
  testing::CliRun denied = testing::Yolocache(tmp, {"push", (tmp / "cache").string(), url});
  EXPECT_EQ(denied.exit_code, 3);
  EXPECT_NE(denied.err.find("access denied"), std::string::npos) << denied.err;
  unsetenv("AWS_ACCESS_KEY_ID");
  unsetenv("AWS_SECRET_ACCESS_KEY");
  setenv("HOME", tmp.path().c_str(), 1);
  testing::CliRun no_keys = testing::Yolocache(tmp, {"push", (tmp / "cache").string(), url});
  EXPECT_EQ(no_keys.exit_code, 3);
  EXPECT_NE(no_keys.err.find("no S3 credentials"), std::string::npos) << no_keys.err;
}

}  // namespace
}  // namespace yc
