// pid_files.h: the temp files a killed process left are recognised by their exact naming and removed
// only when that process is gone; path_json.h: paths that are not UTF-8 written and read back exactly.
#include "libcache/base/pid_files.h"

#include <sys/wait.h>
#include <unistd.h>

#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "libcache/base/path_json.h"
#include "tests/test_support.h"

namespace yc {
namespace {
namespace fs = std::filesystem;
using testing::TempDir;

long DeadPid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

TEST(PidFiles, TaggedPidTakesExactlyPrefixAndDigits) {
  EXPECT_EQ(TaggedPid(".last.pt.tmp-4242", ".last.pt.tmp-"), 4242);
  EXPECT_EQ(TaggedPid(".last.pt.tmp-", ".last.pt.tmp-"), -1);
  EXPECT_EQ(TaggedPid(".last.pt.tmp-42x", ".last.pt.tmp-"), -1);
  EXPECT_EQ(TaggedPid(".last.pt.tmp-0042", ".last.pt.tmp-"), -1);       // we never write a leading zero
  EXPECT_EQ(TaggedPid(".last.pt.tmp-1234567890", ".last.pt.tmp-"), -1);  // no pid is that long
  EXPECT_EQ(TaggedPid("last.pt.tmp-42", ".last.pt.tmp-"), -1);
  EXPECT_EQ(TempFileName("best.onnx"), ".best.onnx.tmp-" + std::to_string(::getpid()));
  EXPECT_TRUE(ProcessAlive(::getpid()));
  EXPECT_FALSE(ProcessAlive(DeadPid()));
}

TEST(PidFiles, RemoveStaleTempFilesTakesOnlyDeadProcessesFiles) {
  TempDir tmp;
  const std::string dead = std::to_string(DeadPid());
  const std::string ours = TempFileName("last.pt");  // a live process (this one) writing right now
  for (const std::string& name : {".last.pt.tmp-" + dead, ".a.b.tmp-" + dead, ours, ".last.pt.tmp-" + dead + ".bak",
                                  "last.pt.tmp-" + dead, "..tmp-" + dead, ".tmp-" + dead, std::string("notes.txt")}) {
    testing::WriteFile(tmp / name, "x");
  }
  fs::create_directory(tmp / (".dir.tmp-" + dead));
  fs::create_symlink(tmp / "notes.txt", tmp / (".link.tmp-" + dead));
  RemoveStaleTempFiles(tmp.path());
  std::set<std::string> left;
  for (const auto& e : fs::directory_iterator(tmp.path())) left.insert(e.path().filename().string());
  const std::set<std::string> expected = {ours, ".last.pt.tmp-" + dead + ".bak", "last.pt.tmp-" + dead, "..tmp-" + dead,
                                          ".tmp-" + dead, "notes.txt", ".dir.tmp-" + dead, ".link.tmp-" + dead};
  EXPECT_EQ(left, expected);
  RemoveStaleTempFiles(tmp / "absent");  // nothing to do, no error
}

TEST(PathJson, NamesThatAreNotUtf8RoundTripExactly) {
  const std::string name = "images/caf\xe9.jpg";
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  SetPathField(j, "file", name);
  SetPathField(j, "plain", "ok.jpg");
  EXPECT_EQ(j.dump(), R"({"file":"images/caf\\xe9.jpg","file_hex":"696d616765732f636166e92e6a7067","plain":"ok.jpg"})");
  std::string back, plain;
  EXPECT_TRUE(GetPathField(j, "file", &back));
  EXPECT_EQ(back, name);
  EXPECT_TRUE(GetPathField(j, "plain", &plain));
  EXPECT_EQ(plain, "ok.jpg");
  std::string unchanged = "same";
  EXPECT_FALSE(GetPathField(nlohmann::json{{"file", "a"}, {"file_hex", "zz"}}, "file", &unchanged));
  EXPECT_FALSE(GetPathField(nlohmann::json{{"file", 3}}, "file", &unchanged));
  EXPECT_FALSE(GetPathField(nlohmann::json::object(), "file", &unchanged));
  EXPECT_EQ(unchanged, "same");
}

}  // namespace
}  // namespace yc
