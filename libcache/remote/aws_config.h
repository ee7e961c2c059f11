// The S3 settings of a process, found where the AWS CLI and SDKs look (docs.aws.amazon.com/cli/latest/
// userguide/cli-configure-envvars.html and cli-configure-files.html), first match wins:
//   keys:     AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN), else the profile's
//             aws_access_key_id / aws_secret_access_key / aws_session_token in AWS_SHARED_CREDENTIALS_FILE
//             (~/.aws/credentials, section [NAME]) or AWS_CONFIG_FILE (~/.aws/config, [profile NAME])
//   profile:  AWS_PROFILE, else "default"
//   region:   AWS_REGION, AWS_DEFAULT_REGION, the profile's `region`, else us-east-1
//   endpoint: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's `endpoint_url`, else AWS
//             (https://s3.REGION.amazonaws.com, virtual-hosted buckets). A custom endpoint (MinIO, Ceph,
//             Swift's s3api) is addressed path-style: ENDPOINT/bucket/key.
#pragma once

#include <functional>
#include <string>

#include "base/status.h"

namespace yc {

struct AwsConfig {
  std::string access_key, secret_key, session_token;
  std::string region = "us-east-1";
  std::string endpoint;  // "" = AWS
  std::string profile = "default";
  std::string keys_from;  // where the keys came from, for messages ("AWS_ACCESS_KEY_ID", a file path)

  // The URL of an object (of the bucket itself for an empty key): virtual-hosted on AWS, path-style on a
  // custom endpoint.
  std::string ObjectUrl(const std::string& bucket, const std::string& key) const;
};

// `getenv` is the environment to read (tests pass their own). NotFound when no keys are found, naming
// where it looked; DataError naming the file and line of a malformed INI line.
using EnvLookup = std::function<const char*(const char*)>;
Result<AwsConfig> LoadAwsConfig(const EnvLookup& getenv);
Result<AwsConfig> LoadAwsConfig();  // the process environment

// RFC 3986 percent-encoding of an object key for a URL path ('/' kept), as SigV4's canonical URI needs.
std::string UriEncodeKey(const std::string& key);

}  // namespace yc
