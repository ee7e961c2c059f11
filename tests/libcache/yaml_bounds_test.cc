// Data YAMLs crafted to exhaust memory (issue 25): `names` as 20,000 aliases of one anchored 1 MiB string
// (1.1 MB on disk, 20 GB once copied: it ended in "data error ... std::bad_alloc", exit 1), thousands of
// aliases, a names list without nc of any length. Each is refused naming the file, under an
// address-space cap; running out of memory while reading a dataset is exit 3, as README says.
#include "libcache/source/yaml_bounds.h"

#include <string>

#include <gtest/gtest.h>

#include "libcache/source/dataset_spec.h"
#include "tests/bounded_run.h"
#include "tests/libcache/ingest_test_util.h"
#include "tests/test_support.h"

namespace yc {
namespace {
namespace fs = std::filesystem;
using testing::TempDir;
using testing::WriteFile;

// A dataset folder with images/train and images/val, and data.yaml = splits + `rest`.
fs::path MakeYaml(const TempDir& tmp, const std::string& rest) {
  fs::create_directories(tmp / "images/train");
  fs::create_directories(tmp / "images/val");
  WriteFile(tmp / "data.yaml", "train: images/train\nval: images/val\n" + rest);
  return tmp / "data.yaml";
}

// LoadDatasetSpec's status as "<code>|<message>", computed in a child with `extra` bytes of address space.
std::string LoadCapped(const fs::path& yaml, uint64_t extra) {
  return testing::UnderMemoryCap(extra, [&] {
    Result<DatasetSpec> spec = LoadDatasetSpec(yaml);
    if (spec.ok()) return std::string("ok");
    return std::to_string(ExitCodeFor(spec.status())) + "|" + spec.status().message();
  });
}

std::string AliasBomb(int aliases) {
  std::string names = "names: [";
  for (int i = 0; i < aliases; ++i) names += i ? ", *a" : "*a";
  return "big: &a " + std::string(1 << 20, 'x') + "\n" + names + "]\n";
}

TEST(YamlBounds, AliasBombIsRefusedNamingTheFile) {
  TempDir tmp;
  const fs::path yaml = MakeYaml(tmp, AliasBomb(20000));
  ASSERT_LT(fs::file_size(yaml), 1200000u);
  const std::string r = LoadCapped(yaml, uint64_t{512} << 20);
  EXPECT_EQ(r, "1|" + yaml.string() + ": YAML too large: its values, aliases (*name) expanded, exceed 16 MiB");
  // The CLI: one line naming the file, exit 1 (a malformed dataset), quickly and within the cap.
  const testing::CliRun build = testing::RunBounded("yolocache", tmp.path(),
                                                    {"build", yaml.string(), "--out", (tmp / "out.yc").string()}, 60,
                                                    uint64_t{2} << 30);
  EXPECT_EQ(build.exit_code, 1) << build.err;
  EXPECT_NE(build.err.find(yaml.string() + ": YAML too large"), std::string::npos) << build.err;
  EXPECT_EQ(build.err.find("bad_alloc"), std::string::npos) << build.err;
}

TEST(YamlBounds, AliasCountAndNamesCountAreBounded) {
  TempDir tmp;
  // 5,000 aliases of a one-byte string: small, but past the alias bound.
  std::string many = "x: &a b\nnames: [";
  for (int i = 0; i < 5000; ++i) many += i ? ", *a" : "*a";
  const fs::path yaml = MakeYaml(tmp, many + "]\n");
  EXPECT_EQ(LoadCapped(yaml, uint64_t{512} << 20), "1|" + yaml.string() + ": YAML too large: more than 4096 aliases (*name)");
  // A few aliases are fine.
  MakeYaml(tmp, "n: &n cat\nnames: [*n, dog, *n]\n");
  Result<DatasetSpec> ok = LoadDatasetSpec(yaml);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->names, (std::vector<std::string>{"cat", "dog", "cat"}));
  // names without nc: at most 100,000 classes (the bound nc has).
  std::string names = "names: [";
  for (int i = 0; i <= 100000; ++i) names += i ? ",a" : "a";
  MakeYaml(tmp, names + "]\n");
  EXPECT_EQ(LoadCapped(yaml, uint64_t{512} << 20), "1|" + yaml.string() + ": names: 100001 classes, more than 100000");
}

TEST(YamlBounds, OutOfMemoryWhileReadingIsExitThree) {
  TempDir tmp;
  // A plain 12 MB value (within every bound) read with 4 MB of address space to spare.
  const fs::path yaml = MakeYaml(tmp, "big: " + std::string(12 << 20, 'x') + "\nnames: [a]\n");
  const std::string r = LoadCapped(yaml, uint64_t{4} << 20);
  if (testing::kSanitizedBuild) GTEST_SKIP() << "no address-space cap under ASan";
  EXPECT_EQ(r, "3|" + yaml.string() + ": out of memory while reading the dataset");
}

}  // namespace
}  // namespace yc
