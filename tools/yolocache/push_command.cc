// `yolocache push CACHE s3://bucket/prefix`: upload a built cache to S3-compatible object storage
// (libcache/remote/push.h: only what changed; the manifest last). Keys, region and endpoint as the AWS
// CLI finds them (libcache/remote/aws_config.h).
#include <iostream>

#include "libcache/base/path_text.h"
#include "libcache/remote/object_location.h"
#include "libcache/remote/object_store.h"
#include "libcache/remote/push.h"
#include "tools/common/command.h"
#include "tools/common/progress_bar.h"
#include "tools/yolocache/cli_util.h"

namespace yc::cli {
namespace {

struct PushArgs {
  std::string cache, url;
  int threads = 4;
  bool create_bucket = false;
  bool json = false;
};

int RunPush(const PushArgs& a) {
  Result<ObjectLocation> at = ParseObjectLocation(a.url);
  if (!at.ok()) return Fail("push", at.status());
  if (at->scheme != ObjectLocation::Scheme::kS3) {
    return Fail("push", Status::InvalidArgument(a.url + ": push writes to s3://bucket/prefix (http(s) is read only)"));
  }
  if (!IsCacheDir(a.cache)) {
    return Fail("push", Status::InvalidArgument(a.cache + ": not a built cache (no manifest.json); run `yolocache build` first"));
  }
  Result<std::unique_ptr<ObjectStore>> store = ObjectStore::Open(*at);
  if (!store.ok()) return Fail("push", store.status());
  ProgressBar bar("push", 0, "MB");
  PushOptions o;
  o.threads = a.threads;
  o.create_bucket = a.create_bucket;
  o.progress = [&bar](uint64_t done, uint64_t total) {
    bar.SetTotal(static_cast<size_t>(total >> 20));
    bar.Update(static_cast<size_t>(done >> 20));
  };
  Result<PushReport> r = PushCache(a.cache, **store, o);
  bar.Finish();
  if (!r.ok()) return Fail("push", r.status());
  if (a.json) {
    nlohmann::ordered_json j = {{"cache", PrintableText(a.cache)},          {"url", at->Display()},
                                {"files_uploaded", r->files_uploaded},     {"files_skipped", r->files_skipped},
                                {"bytes_uploaded", r->bytes_uploaded},     {"bytes_skipped", r->bytes_skipped}};
    std::cout << JsonText(j) << "\n";
  } else {
    std::cout << "pushed " << PrintableText(a.cache) << " to " << at->Display() << ": " << r->files_uploaded
              << " files uploaded (" << HumanBytes(static_cast<double>(r->bytes_uploaded)) << "), " << r->files_skipped
              << " unchanged (" << HumanBytes(static_cast<double>(r->bytes_skipped)) << ")\n";
  }
  return kExitOk;
}

Registration reg("push",
                 "Upload a built cache to S3-compatible object storage (only changed files; the manifest last)",
                 [](CLI::App& app) -> Action {
                   auto a = std::make_shared<PushArgs>();
                   app.add_option("cache", a->cache, "Cache directory (from `yolocache build`)")->required();
                   app.add_option("url", a->url, "s3://bucket/prefix")->required();
                   app.add_option("--threads", a->threads, "Files uploaded at once")
                       ->capture_default_str()
                       ->check(CLI::Range(1, 64));
                   app.add_flag("--create-bucket", a->create_bucket, "Create the bucket first");
                   app.add_flag("--json", a->json, "Print one JSON document on stdout");
                   app.footer(
                       "Credentials, region and endpoint as the AWS CLI reads them: AWS_ACCESS_KEY_ID, "
                       "AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_PROFILE, AWS_REGION, AWS_ENDPOINT_URL(_S3), "
                       "~/.aws/credentials and ~/.aws/config.");
                   return [a] { return RunPush(*a); };
                 });

}  // namespace
}  // namespace yc::cli
