// A built tool run under a wall-clock limit and an address-space cap, for tests of hangs and unbounded
// memory: `timeout -s KILL` ends a hang (exit 137), `prlimit --as` turns a runaway allocation into a
// failure instead of swapping the CI machine (not under ASan: kSanitizedBuild).
//
//   CliRun r = testing::RunBounded("yolocache-train", tmp.path(), {"predict", ...}, 60, 3ull << 30);
#pragma once

#include <sys/wait.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/sanitizer.h"
#include "tests/test_support.h"

namespace yc::testing {

inline std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

inline CliRun RunBounded(const std::string& tool, const std::filesystem::path& dir, const std::vector<std::string>& args,
                         int seconds, uint64_t address_space_bytes) {
  std::string cmd = "cd " + ShellQuote(dir.string()) + " && exec timeout -s KILL " + std::to_string(seconds) +
                    (kSanitizedBuild ? std::string(" ") : " prlimit --as=" + std::to_string(address_space_bytes) + " -- ") +
                    ShellQuote((BinaryDir() / tool).string());
  for (const std::string& a : args) cmd += " " + ShellQuote(a);
  cmd += " > " + ShellQuote((dir / "stdout").string()) + " 2> " + ShellQuote((dir / "stderr").string());
  const int rc = std::system(cmd.c_str());
  CliRun r;
  r.exit_code = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
  r.out = ReadFile(dir / "stdout");
  r.err = ReadFile(dir / "stderr");
  return r;
}

}  // namespace yc::testing
