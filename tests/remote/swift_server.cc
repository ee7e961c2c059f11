#include "tests/remote/swift_server.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace yc::testing {

namespace {

const std::string kDir = YOLOCACHE_SWIFT_DIR;
const std::string kScript = std::string(YOLOCACHE_SOURCE_DIR) + "/tests/servers/swift_s3.sh";

std::string ReadUrlFile() {
  std::ifstream f(kDir + "/url");
  std::string line;
  std::getline(f, line);
  return line;
}

void StopAtExit() { std::system(("bash " + kScript + " stop " + kDir + " >/dev/null 2>&1").c_str()); }

}  // namespace

const SwiftServer& SwiftServer::Get() {
  static const SwiftServer server = [] {
    SwiftServer s;
    std::string line = ReadUrlFile();
    if (line.empty()) {  // not under ctest's fixture: start one for this process
      const int rc = std::system(("bash " + kScript + " start " + kDir + " >/dev/null").c_str());
      if (rc != 0) {
        s.why_ = "tests/servers/swift_s3.sh start failed (exit " + std::to_string(rc) + "): see " + kDir + "/run/*.log";
        return s;
      }
      s.started_here_ = true;
      std::atexit(StopAtExit);
      line = ReadUrlFile();
    }
    if (line.rfind("http", 0) == 0) {
      s.url_ = line;
    } else {
      s.why_ = line.empty() ? "no server URL in " + kDir + "/url" : line;
    }
    return s;
  }();
  return server;
}

AwsConfig SwiftServer::Aws() const {
  AwsConfig c;
  c.access_key = "test:tester";
  c.secret_key = "testing";
  c.region = "us-east-1";
  c.endpoint = url_;
  c.keys_from = "tests/remote/swift_server.h";
  return c;
}

std::string SwiftServer::StartProxy(const std::string& name, const std::string& port) const {
  FILE* p = popen(("bash " + kScript + " proxy " + kDir + " " + name + " " + port).c_str(), "r");
  if (p == nullptr) return "";
  char line[256] = {0};
  std::string url = std::fgets(line, sizeof line, p) != nullptr ? line : "";
  const int rc = pclose(p);
  while (!url.empty() && (url.back() == '\n' || url.back() == '\r')) url.pop_back();
  return rc == 0 && url.rfind("http", 0) == 0 ? url : "";
}

void SwiftServer::KillProxy(const std::string& name) const {
  std::system(("bash " + kScript + " kill-proxy " + kDir + " " + name).c_str());
}

}  // namespace yc::testing
