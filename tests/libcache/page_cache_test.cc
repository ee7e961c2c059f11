// RecordSource::DropCachedPages and WillNeed on real files: residency is read with mincore() on a
// mapping of our own that is never touched (it reports the file's page-cache pages, whoever loaded them).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "libcache/base/mapped_file.h"
#include "libcache/cache.h"
#include "tests/libcache/cache_test_util.h"
#include "tests/test_support.h"

namespace yc {
namespace {

using testing::BuildTestCache;
using testing::TempDir;
using testing::TestCache;

// Resident pages of the files, over their total pages.
double ResidentFraction(const std::vector<std::filesystem::path>& files) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  size_t resident = 0, total = 0;
  for (const auto& f : files) {
    const int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_GE(fd, 0) << f;
    const size_t size = std::filesystem::file_size(f);
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    EXPECT_NE(map, MAP_FAILED) << f;
    std::vector<unsigned char> vec((size + page - 1) / page);
    EXPECT_EQ(::mincore(map, size, vec.data()), 0) << f;
    for (unsigned char v : vec) resident += v & 1;
    total += vec.size();
    ::munmap(map, size);
  }
  return total > 0 ? static_cast<double>(resident) / static_cast<double>(total) : 0;
}

// Drop evicts even pages our own mapping has touched (Read), Read still returns the same records
// afterwards, and WillNeed on every record brings the pages back, for raw and zstd shards and LMDB.
TEST(PageCacheTest, DropEvictsTouchedPagesAndWillNeedReadsThemBack) {
  for (const testing::StorageCase& c : testing::FileBackedCases()) {
    SCOPED_TRACE(c.name());
    TempDir dir;
    WriterOptions options;
    options.backend = c.backend;
    options.shard_size = 256 * 1024;
    options.codec = c.codec;
    const TestCache built = BuildTestCache(dir.path(), options, {{"train", 60}}, 96, true);
    const SplitManifest& split = *built.manifest.FindSplit("train");
    std::vector<std::filesystem::path> files;
    for (const ShardEntry& e : split.shards) files.push_back(dir / e.file);
    if (split.lmdb) files.push_back(dir / split.lmdb->file);
    for (const auto& f : files) ASSERT_TRUE(SyncPath(f).ok());  // dirty pages cannot be dropped

    auto cache = Cache::Open(dir.path());
    ASSERT_TRUE(cache.ok()) << cache.status().ToString();
    const RecordSource* train = cache.value()->split("train");
    ScratchBuffer scratch;
    auto read_all = [&] {
      for (size_t i = 0; i < train->size(); ++i) {
        RecordView v;
        ASSERT_TRUE(train->Read(i, &v, &scratch).ok());
        testing::ExpectViewMatches(v, built.records.at("train")[i]);
      }
    };
    read_all();  // every record's pages now mapped by this process
    ASSERT_GT(ResidentFraction(files), 0.9);

    Status st = train->DropCachedPages();
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_LT(ResidentFraction(files), 0.1);

    for (size_t i = 0; i < train->size(); ++i) train->WillNeed(i);
    double resident = 0;  // the reads are asynchronous: wait for them (a few ms on any disk)
    for (int attempt = 0; attempt < 200 && (resident = ResidentFraction(files)) < 0.9; ++attempt)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_GT(resident, 0.9);
    read_all();  // the mapping is still valid after the drop
  }
}

}  // namespace
}  // namespace yc
