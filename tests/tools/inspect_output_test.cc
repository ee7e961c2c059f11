// Issue 25: `yolocache inspect` writes pictures only outside the cache and the dataset it was built
// from. --record N --out onto a source image (verify --sources then reported it changed) or onto the
// cache's own manifest.json (the cache broke) was written; now each is refused with exit 2 naming both
// paths, and every input stays byte-identical.
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "libcache/source/synth.h"
#include "tests/test_support.h"

namespace yc {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::ReadFile;
using testing::TempDir;
using Clock = std::chrono::steady_clock;

// `yolocache` with a deadline: killed (and the test failed) when it is still running after 60 s.
CliRun Inspect(const TempDir& tmp, const std::vector<std::string>& args) {
  CliRun r;
  const pid_t pid = testing::SpawnTool("yolocache", args, tmp / "stdout", tmp / "stderr", tmp.path());
  if (pid < 0) return r;
  const auto end = Clock::now() + std::chrono::seconds(60);
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) != pid) {
    if (Clock::now() > end) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      ADD_FAILURE() << "yolocache did not return within 60 s";
      return r;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = ReadFile(tmp / "stdout");
  r.err = ReadFile(tmp / "stderr");
  return r;
}

TEST(InspectOutput, NeverWritesOverASourceImageTheManifestOrIntoTheDataset) {
  TempDir tmp;
  SynthOptions so;
  so.train_images = 6;
  so.val_images = 2;
  so.min_side = 64;
  so.max_side = 96;
  ASSERT_TRUE(GenerateSynthDataset(tmp / "data", so).ok());
  const std::string cache = (tmp / "cache").string();
  CliRun b = Inspect(tmp, {"build", (tmp / "data" / "data.yaml").string(), "-o", cache, "--imgsz", "64"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  fs::path source;
  for (const auto& e : fs::directory_iterator(tmp / "data" / "images" / "train")) source = std::max(source, e.path());
  ASSERT_FALSE(source.empty());
  const fs::path manifest = tmp / "cache" / "manifest.json";
  const std::string source_bytes = ReadFile(source), manifest_bytes = ReadFile(manifest);

  struct Case {
    std::vector<std::string> args;
    std::string out, why;
  };
  const std::string label_dir_file = (tmp / "data" / "labels" / "train" / "grid.jpg").string();
  const std::vector<Case> cases = {
      {{"--record", "0", "--out", source.string()}, source.string(), "source dataset"},
      {{"--record", "0", "--out", manifest.string()}, manifest.string(), "the cache"},
      {{"--preview", (tmp / "cache" / "grid.jpg").string()}, (tmp / "cache" / "grid.jpg").string(), "the cache"},
      {{"--preview", label_dir_file}, label_dir_file, "source dataset"},
      {{"--export-augmented", "2", (tmp / "data" / "aug").string()}, (tmp / "data" / "aug").string(), "source dataset"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"inspect", cache};
    args.insert(args.end(), c.args.begin(), c.args.end());
    CliRun r = Inspect(tmp, args);
    EXPECT_EQ(r.exit_code, 2) << c.out << ": " << r.err;
    EXPECT_NE(r.err.find(c.out), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.why), std::string::npos) << r.err;
  }
  EXPECT_EQ(ReadFile(source), source_bytes);
  EXPECT_EQ(ReadFile(manifest), manifest_bytes);
  EXPECT_FALSE(fs::exists(tmp / "cache" / "grid.jpg"));
  EXPECT_FALSE(fs::exists(label_dir_file));
  EXPECT_FALSE(fs::exists(tmp / "data" / "aug"));
  // Outside both: written as before.
  CliRun ok = Inspect(tmp, {"inspect", cache, "--record", "0", "--out", (tmp / "r0.jpg").string()});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_GT(fs::file_size(tmp / "r0.jpg"), 100u);
  CliRun v = Inspect(tmp, {"verify", cache, "--source", (tmp / "data" / "data.yaml").string(), "--strict"});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

}  // namespace
}  // namespace yc
