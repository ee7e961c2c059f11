// RecordSource::DropCachedPages and WillNeed on real files: residency is read with mincore() on a
// mapping of our own that is never touched (it reports the file's page-cache pages, whoever loaded them).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
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

// Which pages of the file are in the page cache, from mincore() on a fresh mapping.
std::vector<bool> ResidentPages(const std::filesystem::path& file) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  EXPECT_GE(fd, 0) << file;
  const size_t size = std::filesystem::file_size(file);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  EXPECT_NE(map, MAP_FAILED) << file;
  std::vector<unsigned char> vec((size + page - 1) / page);
  EXPECT_EQ(::mincore(map, size, vec.data()), 0) << file;
  ::munmap(map, size);
  std::vector<bool> resident(vec.size());
  for (size_t i = 0; i < vec.size(); ++i) resident[i] = vec[i] & 1;
  return resident;
}

// Resident pages of the files, over their total pages.
double ResidentFraction(const std::vector<std::filesystem::path>& files) {
  size_t resident = 0, total = 0;
  for (const auto& f : files) {
    const std::vector<bool> pages = ResidentPages(f);
    resident += std::count(pages.begin(), pages.end(), true);
    total += pages.size();
  }
  return total > 0 ? static_cast<double>(resident) / static_cast<double>(total) : 0;
}

// Resident pages among those that hold the source's records, over their number. WillNeed promises
// exactly these: a shard's header and index pages lie outside every record, so whether the kernel's
// read-ahead brings them back varies, and on small compressed shards they are a tenth of the file.
double ResidentRecordPageFraction(const RecordSource& source) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::map<uint32_t, std::set<size_t>> pages_by_file;
  for (size_t i = 0; i < source.size(); ++i) {
    RecordExtent e;
    EXPECT_TRUE(source.Extent(i, &e)) << i;
    for (size_t p = e.offset / page; p * page < e.offset + e.length; ++p) pages_by_file[e.file].insert(p);
  }
  size_t resident = 0, total = 0;
  for (const auto& [file, pages] : pages_by_file) {
    const std::vector<bool> in_cache = ResidentPages(source.DataFilePath(file));
    for (size_t p : pages) resident += in_cache.at(p);
    total += pages.size();
  }
  return total > 0 ? static_cast<double>(resident) / static_cast<double>(total) : 0;
}

// Drop evicts even pages our own mapping has touched (Read), Read still returns the same records
// afterwards, and WillNeed on every record brings back every page that holds a record, for raw and
// zstd shards and LMDB.
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
    ASSERT_EQ(ResidentRecordPageFraction(*train), 1);

    Status st = train->DropCachedPages();
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_LT(ResidentFraction(files), 0.1);

    for (size_t i = 0; i < train->size(); ++i) train->WillNeed(i);
    double resident = 0;  // the reads are asynchronous: wait for them (a few ms on any disk)
    for (int attempt = 0; attempt < 200 && (resident = ResidentRecordPageFraction(*train)) < 1; ++attempt)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_EQ(resident, 1) << "pages holding records still evicted after WillNeed";
    read_all();  // the mapping is still valid after the drop
  }
}

}  // namespace
}  // namespace yc
