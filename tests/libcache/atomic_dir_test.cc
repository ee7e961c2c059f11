#include "libcache/build/atomic_dir.h"

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "libcache/format/manifest.h"
#include "tests/test_support.h"

namespace yc {
namespace {
namespace fs = std::filesystem;
using testing::TempDir;

// A directory laid out as a one-split shards cache (the data file's bytes do not matter here).
void MakeCache(const fs::path& dir) {
  Manifest m;
  m.tool_version = "0.1.0";
  m.created = "2024-05-01T12:00:00Z";
  m.dataset_yaml = "/data/x/data.yaml";
  m.names = {"a"};
  m.imgsz = 64;
  m.shard_size = 1 << 20;
  SplitManifest train;
  train.name = "train";
  train.records = 3;
  train.shards = {{"train-00000.shard", 3, 4096, 1}};
  m.splits = {train};
  fs::create_directories(dir);
  ASSERT_TRUE(WriteManifest(dir, m).ok());
  testing::WriteFile(dir / "train-00000.shard", "shard");
  testing::WriteFile(dir / "audit.json", "{}");
}

std::string Why(const fs::path& dir) {
  const Status st = CheckReplaceableCacheDir(dir);
  EXPECT_TRUE(st.ok() || st.code() == Status::Code::kInvalidArgument) << st.ToString();
  if (!st.ok()) {
    EXPECT_NE(st.message().find(dir.string()), std::string::npos) << st.message();
  }
  return st.ok() ? "" : st.message();
}

TEST(CheckReplaceableCacheDir, AcceptsNothingAnEmptyFolderAndACache) {
  TempDir tmp;
  EXPECT_EQ(Why(tmp / "absent"), "");
  fs::create_directory(tmp / "empty");
  EXPECT_EQ(Why(tmp / "empty"), "");
  MakeCache(tmp / "cache");
  EXPECT_EQ(Why(tmp / "cache"), "");
  // Files a build leaves or names: a transient manifest.json.tmp, more shards of a split, an LMDB file.
  testing::WriteFile(tmp / "cache" / "manifest.json.tmp", "{");
  testing::WriteFile(tmp / "cache" / "train-00001.shard", "");
  testing::WriteFile(tmp / "cache" / "train.lmdb", "");
  EXPECT_EQ(Why(tmp / "cache"), "");
}

TEST(CheckReplaceableCacheDir, RefusesAnythingElseAndNamesWhy) {
  TempDir tmp;
  testing::WriteFile(tmp / "file", "x");
  EXPECT_NE(Why(tmp / "file").find("not a directory"), std::string::npos);

  testing::WriteFile(tmp / "project" / "src" / "main.c", "int main;");
  EXPECT_NE(Why(tmp / "project").find("no manifest.json; it holds 'src'"), std::string::npos);

  testing::WriteFile(tmp / "project" / "manifest.json", "{\"name\":\"webapp\"}");
  EXPECT_NE(Why(tmp / "project").find("not a yolocache manifest"), std::string::npos) << Why(tmp / "project");
  // Even alone, a manifest.json that is not ours makes a folder not a cache.
  testing::WriteFile(tmp / "lonely" / "manifest.json", "{\"format\":\"yolocache\"}");
  EXPECT_NE(Why(tmp / "lonely").find("not a yolocache manifest"), std::string::npos);

  MakeCache(tmp / "c1");
  testing::WriteFile(tmp / "c1" / "notes.txt", "mine");
  EXPECT_NE(Why(tmp / "c1").find("'notes.txt'"), std::string::npos);
  MakeCache(tmp / "c2");
  testing::WriteFile(tmp / "c2" / "val-00000.shard", "");  // no split 'val' in this cache
  EXPECT_NE(Why(tmp / "c2").find("'val-00000.shard'"), std::string::npos);
  MakeCache(tmp / "c3");
  testing::WriteFile(tmp / "c3" / "train-00001.shard" / "inside", "a folder with a cache file's name");
  EXPECT_NE(Why(tmp / "c3").find("'train-00001.shard', which is not a regular file"), std::string::npos);
  MakeCache(tmp / "c4");
  fs::create_directories(tmp / "c4" / ".git");
  EXPECT_NE(Why(tmp / "c4").find("'.git'"), std::string::npos);
}

TEST(StagingDir, RefusesATargetThatIsNotACacheAndLeavesNothingBehind) {
  TempDir tmp;
  testing::WriteFile(tmp / "project" / "manifest.json", "{\"name\":\"webapp\"}");
  Result<StagingDir> staging = StagingDir::Create(tmp / "project");
  ASSERT_FALSE(staging.ok());
  EXPECT_EQ(staging.status().code(), Status::Code::kInvalidArgument);
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(tmp.path())) entries += e.path().filename() == "project" ? 0 : 1;
  EXPECT_EQ(entries, 0u);
}

TEST(StagingDir, CommitRechecksTheTargetAndKeepsWhatAppearedMeanwhile) {
  TempDir tmp;
  MakeCache(tmp / "cache");
  Result<StagingDir> staging = StagingDir::Create(tmp / "cache");
  ASSERT_TRUE(staging.ok()) << staging.status().ToString();
  testing::WriteFile(tmp / "cache" / "thesis.tex", "written during the build");
  const Status st = staging->Commit();
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << st.ToString();
  EXPECT_EQ(testing::ReadFile(tmp / "cache" / "thesis.tex"), "written during the build");
}

TEST(StagingDir, CommitSwapsACacheInAndDeletesTheOldOne) {
  TempDir tmp;
  MakeCache(tmp / "cache");
  Result<StagingDir> staging = StagingDir::Create(tmp / "cache");
  ASSERT_TRUE(staging.ok()) << staging.status().ToString();
  MakeCache(staging->path());
  testing::WriteFile(staging->path() / "train-00000.shard", "new shard");
  ASSERT_TRUE(staging->Commit().ok());
  EXPECT_EQ(testing::ReadFile(tmp / "cache" / "train-00000.shard"), "new shard");
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(tmp.path())) entries += e.path().filename() == "cache" ? 0 : 1;
  EXPECT_EQ(entries, 0u);  // neither the staging dir nor the old cache is left
}

// A pid that no process has now: a child that has exited and been reaped.
long DeadPid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

TEST(StagingDir, RemovesOnlyStaleStagingDirsThatAreOurs) {
  TempDir tmp;
  const std::string dead = std::to_string(DeadPid());
  // A killed build's staging dir: removed.
  testing::WriteFile(tmp / (".cache.building-" + dead) / "train-00000.shard", "partial");
  testing::WriteFile(tmp / (".cache.building-" + dead) / "manifest.json.tmp", "{");
  // Look-alikes that are not: kept, whole.
  testing::WriteFile(tmp / ".cache.building-notes" / "todo.txt", "keep");
  testing::WriteFile(tmp / (".cache.building-" + dead + "x") / "a.txt", "keep");
  // A dead build's dir that somehow holds a foreign file: our files go, the foreign one stays.
  testing::WriteFile(tmp / (".cache.building-" + dead + ".old") / "val.lmdb", "old");
  testing::WriteFile(tmp / (".cache.building-" + dead + ".old") / "diary.txt", "keep");

  Result<StagingDir> staging = StagingDir::Create(tmp / "cache");
  ASSERT_TRUE(staging.ok()) << staging.status().ToString();
  EXPECT_FALSE(fs::exists(tmp / (".cache.building-" + dead)));
  EXPECT_EQ(testing::ReadFile(tmp / ".cache.building-notes" / "todo.txt"), "keep");
  EXPECT_EQ(testing::ReadFile(tmp / (".cache.building-" + dead + "x") / "a.txt"), "keep");
  EXPECT_FALSE(fs::exists(tmp / (".cache.building-" + dead + ".old") / "val.lmdb"));
  EXPECT_EQ(testing::ReadFile(tmp / (".cache.building-" + dead + ".old") / "diary.txt"), "keep");
}

}  // namespace
}  // namespace yc
