// Issue 25's output-path rule, at the level of libcache/build/output_guard.h and output_file.h: a write
// through a symbolic link or into a FIFO of the output's name never happens (and never blocks), an
// interrupted write leaves the previous file, and an output is told apart from the inputs, a cache and
// a dataset's folders.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <future>

#include <gtest/gtest.h>

#include "libcache/base/output_file.h"
#include "libcache/build/output_guard.h"
#include "libcache/source/jpeg_encode.h"
#include "tests/test_support.h"

namespace yc {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

// `f` run with a deadline: a write that blocks (open(2) of a FIFO) fails the test instead of hanging it.
Status Within5s(std::function<Status()> f) {
  auto done = std::async(std::launch::async, std::move(f));
  if (done.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    ADD_FAILURE() << "the write blocked";
    std::_Exit(1);  // the blocked thread cannot be joined
  }
  return done.get();
}

TEST(OutputFile, WritesThroughATempFileAndReplacesARegularFile) {
  TempDir tmp;
  ASSERT_TRUE(WriteFileAtomically(tmp / "a.txt", "one").ok());
  ASSERT_TRUE(WriteFileAtomically(tmp / "a.txt", "two").ok());
  EXPECT_EQ(ReadFile(tmp / "a.txt"), "two");
  int entries = 0;
  for (const auto& e : fs::directory_iterator(tmp.path())) entries += e.path().filename() == "a.txt" ? 0 : 1;
  EXPECT_EQ(entries, 0) << "a temp file was left behind";
}

TEST(OutputFile, NeverFollowsASymlinkOfTheOutputsName) {
  TempDir tmp;
  WriteFile(tmp / "victim.txt", "precious");
  fs::create_symlink(tmp / "victim.txt", tmp / "out.jpg");
  const uint8_t rgb[3 * 4] = {};
  const Status st = WriteJpeg(tmp / "out.jpg", rgb, 2, 2);
  EXPECT_EQ(st.code(), Status::Code::kIOError) << st.ToString();
  EXPECT_NE(st.message().find("symbolic link"), std::string::npos) << st.message();
  EXPECT_EQ(ReadFile(tmp / "victim.txt"), "precious");
  EXPECT_TRUE(fs::is_symlink(tmp / "out.jpg"));
}

TEST(OutputFile, NeverOpensOrBlocksOnAFifoOfTheOutputsName) {
  TempDir tmp;
  ASSERT_EQ(::mkfifo((tmp / "out.jpg").c_str(), 0644), 0);
  const uint8_t rgb[3 * 4] = {};
  const Status st = Within5s([&] { return WriteJpeg(tmp / "out.jpg", rgb, 2, 2); });
  EXPECT_EQ(st.code(), Status::Code::kIOError);
  EXPECT_NE(st.message().find("FIFO"), std::string::npos) << st.message();
  struct stat s {};
  ASSERT_EQ(::lstat((tmp / "out.jpg").c_str(), &s), 0);
  EXPECT_TRUE(S_ISFIFO(s.st_mode));
}

TEST(OutputFile, ADirectoryOfTheOutputsNameIsRefusedPrecisely) {
  TempDir tmp;
  fs::create_directories(tmp / "model.onnx");
  const Status st = WriteFileAtomically(tmp / "model.onnx", "bytes");
  EXPECT_NE(st.message().find("is a directory"), std::string::npos) << st.message();
  EXPECT_EQ(st.message().find("Success"), std::string::npos) << st.message();
}

// The temp name is predictable (.<name>.tmp-<pid>): a link planted there is not followed either.
TEST(OutputFile, ALinkPlantedAtTheTempNameIsNeverWrittenThrough) {
  TempDir tmp;
  WriteFile(tmp / "victim.txt", "precious");
  fs::create_symlink(tmp / "victim.txt", tmp / (".last.pt.tmp-" + std::to_string(::getpid())));
  const Status st = WriteFileAtomically(tmp / "last.pt", "checkpoint bytes");
  EXPECT_EQ(st.code(), Status::Code::kIOError) << st.ToString();
  EXPECT_EQ(ReadFile(tmp / "victim.txt"), "precious");
  EXPECT_FALSE(fs::exists(tmp / "last.pt"));
}

TEST(OutputFile, AnUncommittedFileLeavesThePreviousOne) {
  TempDir tmp;
  WriteFile(tmp / "clip.avi", "complete");
  {
    Result<OutputFile> f = OutputFile::Create(tmp / "clip.avi", ".avi");
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    EXPECT_EQ(f->temp_path().extension(), ".avi");
    ASSERT_TRUE(f->Write("trunc").ok());
  }  // interrupted: never committed
  EXPECT_EQ(ReadFile(tmp / "clip.avi"), "complete");
  EXPECT_EQ(std::distance(fs::directory_iterator(tmp.path()), fs::directory_iterator()), 1);
}

TEST(OutputGuard, AnOutputIsAnInputByInodeOrBeforeItExists) {
  TempDir tmp;
  WriteFile(tmp / "w.pt", "weights");
  fs::create_hard_link(tmp / "w.pt", tmp / "hard.pt");
  fs::create_symlink(tmp / "w.pt", tmp / "soft.pt");
  fs::create_directories(tmp / "sub");
  for (const fs::path& out : {tmp / "w.pt", tmp / "hard.pt", tmp / "soft.pt", tmp / "sub" / ".." / "w.pt"}) {
    const Status st = CheckNotAnInput(out, {tmp / "w.pt"});
    EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << out;
    EXPECT_NE(st.message().find(out.string()), std::string::npos) << st.message();
    EXPECT_NE(st.message().find((tmp / "w.pt").string()), std::string::npos) << st.message();
  }
  EXPECT_TRUE(CheckNotAnInput(tmp / "w.onnx", {tmp / "w.pt"}).ok());
  // Not yet existing, spelled two ways.
  EXPECT_FALSE(CheckNotAnInput(tmp / "new.txt", {tmp / "sub" / ".." / "new.txt"}).ok());
}

TEST(OutputGuard, InsideAFolderAfterResolvingLinksAndDotDot) {
  TempDir tmp;
  fs::create_directories(tmp / "data" / "images");
  fs::create_directories(tmp / "runs");
  fs::create_symlink(tmp / "data", tmp / "runs" / "link");
  EXPECT_TRUE(IsWithin(tmp / "data" / "images" / "x.jpg", tmp / "data"));
  EXPECT_TRUE(IsWithin(tmp / "runs" / "link" / "new" / "x.jpg", tmp / "data"));
  EXPECT_TRUE(IsWithin(tmp / "runs" / ".." / "data", tmp / "data"));
  EXPECT_FALSE(IsWithin(tmp / "data2" / "x.jpg", tmp / "data"));
  EXPECT_FALSE(IsWithin(tmp / "runs" / "x.jpg", tmp / "data"));
  EXPECT_FALSE(CheckWithinFolder(tmp / "runs" / "link" / "x.jpg", tmp / "runs").ok());
  EXPECT_TRUE(CheckWithinFolder(tmp / "runs" / "sub" / "x.jpg", tmp / "runs").ok());
}

TEST(OutputGuard, DatasetFoldersAreTheRootTheImageFoldersAndTheirLabelFolders) {
  Manifest m;
  m.dataset_root = "/d";
  SplitManifest s;
  s.name = "train";
  for (const char* p : {"images/train/a.jpg", "images/train/b.jpg", "../other/images/c.jpg"}) {
    SourceFingerprint f;
    f.path = p;
    s.sources.push_back(f);
  }
  m.splits.push_back(s);
  const std::vector<fs::path> folders = DatasetFolders(m);
  EXPECT_EQ(folders, (std::vector<fs::path>{"/d", "/d/images/train", "/d/labels/train", "/other/images", "/other/labels"}));
}

}  // namespace
}  // namespace yc
