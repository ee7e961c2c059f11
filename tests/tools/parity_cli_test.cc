// Issue 16's data-side points through the `yolocache` binary: an edited label is a source change
// (verify --source, --strict, build --update); a damaged record fails on its first read in the loader;
// a relative `path:` resolves as Ultralytics resolves it and build says how; a folder without a YAML
// gets class_0.. names; Ultralytics' key=value arguments, clean --help, "did you mean".
#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "libcache/format/manifest.h"
#include "tests/test_support.h"

namespace yc {
namespace {
namespace fs = std::filesystem;
using testing::CliRun;
using testing::TempDir;

using testing::Yolocache;


nlohmann::json Json(const CliRun& r) {
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << r.out << r.err;
  return j;
}

// Issue 16 #2: a row appended to a label file was "0 changed". Now it is a changed label, --strict fails
// on it, and build --update takes the new row in (and the source then reads as unchanged again).
TEST(ParityCli, AnEditedLabelIsASourceChangeAndUpdateTakesItIn) {
  TempDir tmp;
  const fs::path yaml = testing::TinySynthDataset(tmp / "data");
  const std::string cache = (tmp / "cache").string();
  CliRun b = Yolocache(tmp, {"build", yaml.string(), "-o", cache, "--imgsz", "96", "--json"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const int boxes_before = Json(b)["splits"]["train"]["boxes"].get<int>();

  const fs::path label = tmp / "data/labels/train/synth_000002.txt";
  ASSERT_TRUE(fs::exists(label));
  std::ofstream(label, std::ios::app) << "0 0.5 0.5 0.25 0.25\n";

  CliRun v = Yolocache(tmp, {"verify", cache, "--source", yaml.string(), "--json"});
  EXPECT_EQ(v.exit_code, 0) << v.out;  // a change is not a problem of the cache ...
  nlohmann::json j = Json(v);
  ASSERT_EQ(j["source_changes"].size(), 1u) << v.out;
  EXPECT_EQ(j["source_changes"][0]["change"], "changed");
  EXPECT_EQ(j["source_changes"][0]["what"], "label");
  EXPECT_EQ(j["source_changes"][0]["file"], "labels/train/synth_000002.txt");
  CliRun strict = Yolocache(tmp, {"verify", cache, "--source", yaml.string(), "--strict"});
  EXPECT_EQ(strict.exit_code, 1) << strict.out;  // ... unless --strict
  EXPECT_NE(strict.out.find("changed [train] labels/train/synth_000002.txt (label)"), std::string::npos) << strict.out;
  EXPECT_NE(strict.out.find("1 changed (1 of them labels)"), std::string::npos) << strict.out;

  CliRun u = Yolocache(tmp, {"build", yaml.string(), "-o", cache, "--imgsz", "96", "--update", "--json"});
  ASSERT_EQ(u.exit_code, 0) << u.err;
  EXPECT_EQ(Json(u)["splits"]["train"]["boxes"].get<int>(), boxes_before + 1);
  EXPECT_EQ(Json(u)["splits"]["train"]["reused"], 8);  // the image bytes did not change
  CliRun again = Yolocache(tmp, {"verify", cache, "--source", yaml.string(), "--strict"});
  EXPECT_EQ(again.exit_code, 0) << again.out;

  // A label file that appears (or disappears) beside an image is a change as well.
  fs::remove(label);
  j = Json(Yolocache(tmp, {"verify", cache, "--source", yaml.string(), "--json"}));
  ASSERT_EQ(j["source_changes"].size(), 1u);
  EXPECT_EQ(j["source_changes"][0]["what"], "label");
  // A sound format-2 cache (no label fingerprints) would call every edited label unchanged: it asks
  // for a rebuild, as format 1 does.
  Result<Manifest> m = ReadManifest(cache);
  ASSERT_TRUE(m.ok());
  m->format_version = 2;
  ASSERT_TRUE(WriteManifest(cache, *m).ok());
  CliRun old = Yolocache(tmp, {"verify", cache, "--source", yaml.string()});
  EXPECT_EQ(old.exit_code, 1) << old.out << old.err;
  EXPECT_NE(old.out.find("built by an older yolocache (manifest format 2, this build reads 3 to 4)"), std::string::npos)
      << old.out;
}

// Issue 16 #2: a flipped pixel byte trained silently. Readers now hash each record on its first read
// (what train, val and bench do): the loader fails naming the shard and the record.
TEST(ParityCli, ADamagedRecordFailsOnItsFirstRead) {
  TempDir tmp;
  const fs::path yaml = testing::TinySynthDataset(tmp / "data");
  const fs::path cache = tmp / "cache";
  ASSERT_EQ(Yolocache(tmp, {"build", yaml.string(), "-o", cache.string(), "--imgsz", "64"}).exit_code, 0);
  const std::vector<std::string> bench = {"bench", cache.string(), "--batch", "4", "--batches", "2", "--threads", "1",
                                          "--profile-samples", "0", "--no-checksum", "--imgsz", "64"};
  ASSERT_EQ(Yolocache(tmp, bench).exit_code, 0);
  testing::FlipFirstRecordPixel(cache / "train-00000.shard");
  CliRun r = Yolocache(tmp, bench);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("train-00000.shard: record 0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("checksum"), std::string::npos) << r.err;
  std::vector<std::string> unchecked = bench;
  unchecked.insert(unchecked.end(), {"--record-check", "off"});
  EXPECT_EQ(Yolocache(tmp, unchecked).exit_code, 0);  // it is the check that finds it
}

// Issue 16 #4: `path: datasets/x` in a YAML one folder away from the data, used from the folder above,
// resolves against the working directory as in Ultralytics; `build` says which base it used.
TEST(ParityCli, ARelativePathResolvesAgainstTheWorkingDirectoryFirst) {
  TempDir tmp, config;
  testing::TinySynthDataset(tmp / "datasets/shapes");
  testing::WriteFile(tmp / "cfg/shapes.yaml",
                     "path: datasets/shapes\ntrain: images/train\nval: images/val\nnames: [a, b, c, d]\n");
  ::setenv("YOLO_CONFIG_DIR", config.path().c_str(), 1);  // no user settings.json
  {
    CliRun b = Yolocache(tmp, {"build", "cfg/shapes.yaml", "-o", (tmp / "c1").string(), "--imgsz", "64", "--json"});
    ASSERT_EQ(b.exit_code, 0) << b.err;
    const nlohmann::json j = Json(b);
    EXPECT_EQ(j["root"], (tmp / "datasets/shapes").string());
    EXPECT_EQ(j["root_from"], "the working directory " + tmp.path().string());
    EXPECT_EQ(j["records"], 12);
  }
  // RunTool runs the tool in the folder it is given (the working directory under test).
  {  // From inside cfg/, Ultralytics looks in ./datasets (its default datasets_dir) too: not there. The
     // YAML's folder (our fallback) has no datasets/ either: the error names every place tried.
    CliRun b = testing::RunTool("yolocache", tmp / "cfg", {"build", "shapes.yaml", "-o", (tmp / "c2").string(), "--imgsz", "64"});
    EXPECT_EQ(b.exit_code, 1) << b.err;
    EXPECT_NE(b.err.find("path: 'datasets/shapes' not found (tried " + (tmp / "cfg/datasets/shapes").string()),
              std::string::npos)
        << b.err;
  }
  {  // `path: .` beside the splits works from anywhere: the YAML's folder, said in the text output.
    CliRun b = testing::RunTool("yolocache", tmp / "cfg", {"build", (tmp / "datasets/shapes/data.yaml").string(), "-o",
                                                            (tmp / "c3").string(), "--imgsz", "64"});
    ASSERT_EQ(b.exit_code, 0) << b.err;
    EXPECT_NE(b.out.find("dataset root: " + (tmp / "datasets/shapes").string() + " (from the YAML's folder)"),
              std::string::npos)
        << b.out;
  }
  ::unsetenv("YOLO_CONFIG_DIR");
}

// Issue 16 #8: a bare folder names no classes; its cache gets class_0..class_N (N the largest id).
TEST(ParityCli, AFolderCacheNamesItsClasses) {
  TempDir tmp;
  testing::TinySynthDataset(tmp / "data");
  fs::remove(tmp / "data/data.yaml");
  CliRun b = Yolocache(tmp, {"build", (tmp / "data").string(), "-o", (tmp / "cache").string(), "--imgsz", "64", "--json"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  Result<Manifest> m = ReadManifest(tmp / "cache");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  int max_class = -1;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(tmp / "data/labels")) {
    std::ifstream in(e.path());
    int cls;
    std::string rest;
    while (in >> cls && std::getline(in, rest)) max_class = std::max(max_class, cls);
  }
  ASSERT_GE(max_class, 0);
  ASSERT_EQ(m->names.size(), static_cast<size_t>(max_class + 1));
  EXPECT_EQ(m->names.front(), "class_0");
  EXPECT_EQ(m->names.back(), "class_" + std::to_string(max_class));
  EXPECT_EQ(Json(b)["classes"], max_class + 1);
}

// Issue 16 #7: Ultralytics' key=value is the same as the option; --help has no CLI11 artefacts; a typo
// gets the closest subcommand or option.
TEST(ParityCli, KeyValueArgumentsHelpAndHints) {
  TempDir tmp;
  const fs::path yaml = testing::TinySynthDataset(tmp / "data");
  CliRun kv = Yolocache(tmp, {"build", "data=" + yaml.string(), "out=" + (tmp / "kv").string(), "imgsz=64", "json=True",
                              "update=False"});
  ASSERT_EQ(kv.exit_code, 0) << kv.err;
  // Mixed: a key=value right after a flag is not that flag's value.
  CliRun dash = Yolocache(tmp, {"build", yaml.string(), "--json", "imgsz=64", "--out", (tmp / "dash").string()});
  ASSERT_EQ(dash.exit_code, 0) << dash.err;
  Result<Manifest> a = ReadManifest(tmp / "kv"), b = ReadManifest(tmp / "dash");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->imgsz, 64);
  EXPECT_EQ(a->build_options, b->build_options);
  EXPECT_EQ(Json(kv)["records"], Json(dash)["records"]);
  // A value after an option is never rewritten: --split takes "train" and a path with '=' stays a path.
  testing::ScopedCwd cwd(tmp.path());
  CliRun split = Yolocache(tmp, {"build", yaml.string(), "-o", "x=1", "imgsz=64", "split=train"});
  ASSERT_EQ(split.exit_code, 0) << split.err;
  EXPECT_TRUE(fs::exists(tmp / "x=1" / "manifest.json"));
  EXPECT_EQ(split.out.find("val:"), std::string::npos) << split.out;

  for (const char* cmd : {"build", "verify", "inspect", "bench", "synth"}) {
    CliRun h = Yolocache(tmp, {cmd, "--help"});
    EXPECT_EQ(h.exit_code, 0);
    EXPECT_EQ(h.out.find("{false}"), std::string::npos) << cmd << ": " << h.out;
    EXPECT_EQ(h.out.find("{true}"), std::string::npos) << cmd << ": " << h.out;
  }
  CliRun typo = Yolocache(tmp, {"biuld", yaml.string()});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.err.find("did you mean 'build'?"), std::string::npos) << typo.err;
  CliRun option = Yolocache(tmp, {"build", yaml.string(), "-o", (tmp / "y").string(), "--imgzs", "64"});
  EXPECT_EQ(option.exit_code, 2);
  EXPECT_NE(option.err.find("did you mean '--imgsz'"), std::string::npos) << option.err;
  CliRun key = Yolocache(tmp, {"build", yaml.string(), "-o", (tmp / "y").string(), "imgzs=64"});
  EXPECT_EQ(key.exit_code, 2);
  EXPECT_NE(key.err.find("did you mean '--imgsz' (for 'imgzs')"), std::string::npos) << key.err;
  EXPECT_FALSE(fs::exists(tmp / "y"));
  CliRun far = Yolocache(tmp, {"zzzzzzzz"});
  EXPECT_EQ(far.exit_code, 2);
  EXPECT_EQ(far.err.find("did you mean"), std::string::npos) << far.err;  // nothing close: no guess
}

}  // namespace
}  // namespace yc
