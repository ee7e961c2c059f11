#include "libcache/base/file_read.h"

#include <sys/stat.h>

#include <fstream>

#include <gtest/gtest.h>

#include "tests/libcache/within_two_seconds.h"
#include "tests/test_support.h"

namespace yc {
namespace {

namespace fs = std::filesystem;
using testing::WithinTwoSeconds;

void WriteText(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

TEST(FileReadTest, ReadsARegularFileWhole) {
  testing::TempDir dir;
  WriteText(dir.path() / "a.txt", "hello\n");
  std::string text;
  ASSERT_TRUE(ReadRegularFile(dir.path() / "a.txt", 100, &text).ok());
  EXPECT_EQ(text, "hello\n");
}

TEST(FileReadTest, RefusesAFileOverTheBoundBeforeReading) {
  testing::TempDir dir;
  WriteText(dir.path() / "big.txt", std::string(101, 'x'));
  std::string text;
  const Status st = ReadRegularFile(dir.path() / "big.txt", 100, &text);
  EXPECT_EQ(st.code(), Status::Code::kIOError);
  EXPECT_NE(st.message().find("101 bytes"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("big.txt"), std::string::npos) << st.message();
}

TEST(FileReadTest, MissingFileIsNotFound) {
  testing::TempDir dir;
  std::string text;
  EXPECT_EQ(ReadRegularFile(dir.path() / "nope", 100, &text).code(), Status::Code::kNotFound);
}

TEST(FileReadTest, FifoIsRefusedWithoutBlocking) {
  testing::TempDir dir;
  const fs::path fifo = dir.path() / "label.txt";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  const Status st = WithinTwoSeconds([&] {
    std::string text;
    return ReadRegularFile(fifo, 100, &text);
  });
  EXPECT_EQ(st.code(), Status::Code::kDataError);
  EXPECT_NE(st.message().find("a FIFO"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("label.txt"), std::string::npos) << st.message();
}

TEST(FileReadTest, DirectoryAndDeviceAreRefused) {
  testing::TempDir dir;
  std::string text;
  const Status d = ReadRegularFile(dir.path(), 100, &text);
  EXPECT_NE(d.message().find("a directory"), std::string::npos) << d.message();
  // A link to /dev/zero would otherwise be read until memory runs out.
  fs::create_symlink("/dev/zero", dir.path() / "manifest.json");
  const Status z = WithinTwoSeconds([&] {
    std::string t;
    return ReadRegularFile(dir.path() / "manifest.json", 100, &t);
  });
  EXPECT_NE(z.message().find("a character device"), std::string::npos) << z.message();
}

}  // namespace
}  // namespace yc
