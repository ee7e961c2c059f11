// DirectFile (libcache/base/direct_file.h): aligned reads return the file's bytes, with O_DIRECT where the
// file system allows it and through the page cache where it does not; bad paths fail with a Status.
#include "libcache/base/direct_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <vector>

#include "tests/test_support.h"

namespace yc {
namespace {

using testing::TempDir;

struct Aligned {
  explicit Aligned(size_t n) : p(static_cast<uint8_t*>(std::aligned_alloc(DirectFile::kAlignment, n))), size(n) {}
  ~Aligned() { std::free(p); }
  uint8_t* p;
  size_t size;
};

TEST(DirectFileTest, AlignedReadsReturnTheFilesBytesAndStopAtItsEnd) {
  TempDir dir;
  const std::string path = (dir / "data").string();
  std::vector<uint8_t> bytes(3 * DirectFile::kAlignment + 1234);  // a tail that is not a whole block
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 131 + (i >> 8));
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  auto file = DirectFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ((*file)->size(), bytes.size());
  std::printf("O_DIRECT on the test directory's file system: %s\n", (*file)->direct() ? "yes" : "no (page cache)");

  Aligned buf(5 * DirectFile::kAlignment);
  std::fill(buf.p, buf.p + buf.size, 0xEE);
  ASSERT_TRUE((*file)->ReadAligned(DirectFile::kAlignment, DirectFile::kAlignment, buf.p).ok());
  EXPECT_TRUE(std::equal(buf.p, buf.p + DirectFile::kAlignment, bytes.begin() + DirectFile::kAlignment));
  EXPECT_EQ(buf.p[DirectFile::kAlignment], 0xEE);  // nothing past the requested range

  // The whole file in one read longer than it: the tail is read, and nothing past its last block.
  std::fill(buf.p, buf.p + buf.size, 0xEE);
  ASSERT_TRUE((*file)->ReadAligned(0, 4 * DirectFile::kAlignment, buf.p).ok());
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), buf.p));
  EXPECT_EQ(buf.p[AlignUp(bytes.size())], 0xEE);

  // From the last block alone, and from past the end (nothing to read).
  std::fill(buf.p, buf.p + buf.size, 0xEE);
  ASSERT_TRUE((*file)->ReadAligned(3 * DirectFile::kAlignment, DirectFile::kAlignment, buf.p).ok());
  EXPECT_TRUE(std::equal(bytes.begin() + 3 * DirectFile::kAlignment, bytes.end(), buf.p));
  EXPECT_TRUE((*file)->ReadAligned(8 * DirectFile::kAlignment, DirectFile::kAlignment, buf.p).ok());

  EXPECT_EQ(AlignDown(DirectFile::kAlignment + 1), DirectFile::kAlignment);
  EXPECT_EQ(AlignUp(DirectFile::kAlignment + 1), 2 * DirectFile::kAlignment);
  EXPECT_EQ(AlignUp(DirectFile::kAlignment), DirectFile::kAlignment);
}

TEST(DirectFileTest, MissingFilesAndFifosAreRefusedWithoutBlocking) {
  TempDir dir;
  auto missing = DirectFile::Open((dir / "absent").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound) << missing.status().ToString();
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  auto fifo = DirectFile::Open((dir / "fifo").string());  // would block in open(2) without O_NONBLOCK
  ASSERT_FALSE(fifo.ok());
  EXPECT_NE(fifo.status().message().find("fifo"), std::string::npos) << fifo.status().ToString();
}

}  // namespace
}  // namespace yc
