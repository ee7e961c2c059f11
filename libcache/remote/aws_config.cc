#include "libcache/remote/aws_config.h"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>

namespace yc {

namespace {

using Section = std::map<std::string, std::string>;

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

// The `section` of an AWS INI file ({} when the file or the section is absent).
Result<Section> ReadIniSection(const std::string& path, const std::string& section) {
  std::ifstream in(path);
  Section out;
  if (!in) return out;
  std::string line, current;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    line = Trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[') {
      if (line.back() != ']') return Status::DataError(Status::At(path + ":" + std::to_string(number), "unclosed ["));
      current = Trim(line.substr(1, line.size() - 2));
      continue;
    }
    const size_t eq = line.find('=');
    if (eq == std::string::npos) {
      // An indented continuation (the config file's nested `s3 =` settings) carries no key we read.
      continue;
    }
    if (current == section) out[Trim(line.substr(0, eq))] = Trim(line.substr(eq + 1));
  }
  return out;
}

std::string Env(const EnvLookup& getenv, const char* name) {
  const char* v = getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

std::string FirstOf(std::initializer_list<std::string> values) {
  for (const auto& v : values) {
    if (!v.empty()) return v;
  }
  return {};
}

}  // namespace

std::string AwsConfig::ObjectUrl(const std::string& bucket, const std::string& key) const {
  const std::string path = UriEncodeKey(key);
  if (endpoint.empty()) return "https://" + bucket + ".s3." + region + ".amazonaws.com/" + path;
  std::string base = endpoint;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/" + bucket + (path.empty() ? "" : "/" + path);  // the bucket itself: no trailing '/'

}

std::string UriEncodeKey(const std::string& key) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : key) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

Result<AwsConfig> LoadAwsConfig(const EnvLookup& getenv) {
  AwsConfig c;
  c.profile = FirstOf({Env(getenv, "AWS_PROFILE"), "default"});
  const std::string home = Env(getenv, "HOME");
  const std::string credentials_file =
      FirstOf({Env(getenv, "AWS_SHARED_CREDENTIALS_FILE"), home.empty() ? "" : home + "/.aws/credentials"});
  const std::string config_file = FirstOf({Env(getenv, "AWS_CONFIG_FILE"), home.empty() ? "" : home + "/.aws/config"});
  Section creds, config;
  if (!credentials_file.empty()) {
    YC_ASSIGN_OR_RETURN(creds, ReadIniSection(credentials_file, c.profile));
  }
  if (!config_file.empty()) {
    YC_ASSIGN_OR_RETURN(config, ReadIniSection(config_file, c.profile == "default" ? "default" : "profile " + c.profile));
  }
  if (!Env(getenv, "AWS_ACCESS_KEY_ID").empty()) {
    c.access_key = Env(getenv, "AWS_ACCESS_KEY_ID");
    c.secret_key = Env(getenv, "AWS_SECRET_ACCESS_KEY");
    c.session_token = Env(getenv, "AWS_SESSION_TOKEN");
    c.keys_from = "AWS_ACCESS_KEY_ID";
  } else {
    for (const auto* s : {&creds, &config}) {
      if (s->count("aws_access_key_id") == 0) continue;
      c.access_key = s->at("aws_access_key_id");
      c.secret_key = s->count("aws_secret_access_key") ? s->at("aws_secret_access_key") : "";
      c.session_token = s->count("aws_session_token") ? s->at("aws_session_token") : "";
      c.keys_from = (s == &creds ? credentials_file : config_file) + " [" + c.profile + "]";
      break;
    }
  }
  if (c.access_key.empty()) {
    return Status::NotFound("no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or profile '" +
                            c.profile + "' in " + (credentials_file.empty() ? "~/.aws/credentials" : credentials_file));
  }
  if (c.secret_key.empty()) return Status::NotFound("S3 credentials from " + c.keys_from + " have no secret key");
  c.region = FirstOf({Env(getenv, "AWS_REGION"), Env(getenv, "AWS_DEFAULT_REGION"),
                      config.count("region") ? config.at("region") : "", "us-east-1"});
  c.endpoint = FirstOf({Env(getenv, "AWS_ENDPOINT_URL_S3"), Env(getenv, "AWS_ENDPOINT_URL"),
                        config.count("endpoint_url") ? config.at("endpoint_url") : ""});
  return c;
}

Result<AwsConfig> LoadAwsConfig() {
  return LoadAwsConfig([](const char* name) { return std::getenv(name); });
}

}  // namespace yc
