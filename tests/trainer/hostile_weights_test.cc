// Weights files crafted to exhaust the reader (issue 25): a module tree that shares one module many
// times (a DAG built with pickle memo GETs: 16^20 paths in a few KB), a cycle, one storage referenced by
// 20,000 parameters (the had 99,999), a training imgsz of 99,968. Each archive is written here from scratch (a protocol-2
// pickle by hand, the zip by LibTorch's PyTorchStreamWriter, as torch.save lays it out), read in
// process and through val/predict/train --weights under a timeout and an address-space cap.
#include <caffe2/serialize/inline_container.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "tests/bounded_run.h"
#include "tests/test_support.h"
#include "tests/trainer/train_test_util.h"
#include "trainer/io/pretrained.h"
#include "trainer/io/torch_archive.h"
#include "trainer/io/ultralytics_checkpoint.h"

namespace yc::trainer {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::TempDir;

constexpr uint64_t kCap = uint64_t{3} << 30;  // address space of each CLI run: far below what the attacks need
constexpr int kSeconds = 120;                 // a hang fails instead of stalling CI

// A protocol-2 pickle written opcode by opcode.
class Pickle {
 public:
  Pickle() { s_ = "\x80\x02"; }
  void Op(char c) { s_ += c; }
  void Str(const std::string& v) {
    s_ += 'X';
    U32(static_cast<uint32_t>(v.size()));
    s_ += v;
  }
  void Int(int32_t v) {
    s_ += 'J';
    U32(static_cast<uint32_t>(v));
  }
  void Global(const std::string& module, const std::string& name) { s_ += "c" + module + "\n" + name + "\n"; }
  void Put(uint32_t id) {
    s_ += 'r';
    U32(id);
  }
  void Get(uint32_t id) {
    s_ += 'j';
    U32(id);
  }
  // module.name() with its __dict__ from `state` (a dict of string keys to whatever each writer pushes).
  void Object(const std::string& module, const std::string& name, const std::map<std::string, std::function<void()>>& state) {
    Global(module, name);
    Op(')');
    Op('\x81');  // NEWOBJ
    Dict(state);
    Op('b');  // BUILD
  }
  void Dict(const std::map<std::string, std::function<void()>>& items) {
    Op('}');
    if (items.empty()) return;
    Op('(');
    for (const auto& [k, v] : items) {
      Str(k);
      v();
    }
    Op('u');
  }
  // torch._utils._rebuild_tensor_v2 over storage `key` (fp16, `numel`): the persistent id is memoised as
  // torch.save does (`memo` PUT on first use, GET after).
  void Tensor(const std::string& key, int32_t numel, int32_t offset, int32_t size, uint32_t memo, bool first) {
    Global("torch._utils", "_rebuild_tensor_v2");
    Op('(');
    if (first) {
      Op('(');
      Str("storage");
      Global("torch", "HalfStorage");
      Str(key);
      Str("cpu");
      Int(numel);
      Op('t');
      Op('Q');  // BINPERSID
      Put(memo);
    } else {
      Get(memo);
    }
    Int(offset);
    Op('(');
    Int(size);
    Op('t');
    Op('(');
    Int(1);
    Op('t');
    Op('\x89');  // requires_grad False
    Op('N');     // backward hooks
    Op('t');
    Op('R');
  }
  std::string Finish() { return s_ + "."; }

 private:
  void U32(uint32_t v) {
    for (int i = 0; i < 4; ++i) s_ += static_cast<char>((v >> (8 * i)) & 0xff);
  }
  std::string s_;
};

// {'model': DetectionModel(yaml yolov8n, nc 80, model = Sequential(body..., Detect(params))),
//  'train_args': {'imgsz': imgsz}}. `body` pushes the Sequential's first child (or nothing); `params`
// the Detect head's _parameters dict.
std::string UltralyticsPickle(Pickle& p, const std::function<void()>& body, const std::function<void()>& params,
                              int32_t imgsz = 64) {
  p.Dict({{"model",
           [&] {
             p.Object("ultralytics.nn.tasks", "DetectionModel",
                      {{"yaml", [&] { p.Dict({{"yaml_file", [&] { p.Str("yolov8n.yaml"); }}, {"nc", [&] { p.Int(80); }}}); }},
                       {"_modules", [&] {
                          p.Dict({{"model", [&] {
                                     p.Object("torch.nn.modules.container", "Sequential",
                                              {{"_modules", [&] {
                                                  p.Op('}');
                                                  p.Op('(');
                                                  if (body) {
                                                    p.Str("0");
                                                    body();
                                                  }
                                                  p.Str("1");
                                                  p.Object("ultralytics.nn.modules.head", "Detect", {{"_parameters", params}});
                                                  p.Op('u');
                                                }}});
                                   }}});
                        }}});
           }},
          {"train_args", [&] { p.Dict({{"imgsz", [&] { p.Int(imgsz); }}}); }}});
  return p.Finish();
}

// One fp16 weight 'w' of 4 elements in storage '0'.
void OneParam(Pickle& p) {
  p.Op('}');
  p.Op('(');
  p.Str("w");
  p.Tensor("0", 4, 0, 4, 9000, true);
  p.Op('u');
}

void WriteArchive(const fs::path& path, const std::string& pickle, const std::map<std::string, std::string>& storages) {
  caffe2::serialize::PyTorchStreamWriter w(path.string());
  w.writeRecord("data.pkl", pickle.data(), pickle.size());
  w.writeRecord("byteorder", "little", 6);
  for (const auto& [key, bytes] : storages) w.writeRecord("data/" + key, bytes.data(), bytes.size());
  w.writeEndOfFile();
}

// A module tree of `levels` Sequentials, each holding the one below `fanout` times (memo GETs), over a
// leaf module with no tensors: fanout^levels paths, a few KB of pickle.
void SharedDag(Pickle& p, int levels, int fanout) {
  p.Object("torch.nn.modules.activation", "SiLU", {});
  p.Put(0);
  for (int level = 1; level <= levels; ++level) {
    p.Op('0');  // POP the level below (kept in the memo)
    p.Object("torch.nn.modules.container", "Sequential", {{"_modules", [&] {
                                                              p.Op('}');
                                                              p.Op('(');
                                                              for (int i = 0; i < fanout; ++i) {
                                                                p.Str(std::to_string(i));
                                                                p.Get(static_cast<uint32_t>(level - 1));
                                                              }
                                                              p.Op('u');
                                                            }}});
    p.Put(static_cast<uint32_t>(level));
  }
}

// ReadUltralyticsCheckpoint(path) in a forked child that SIGALRM ends after `seconds` (these files hung the
// reader forever): "ok <tensors> <first name>", the error message, or "timed out".
std::string ReadInChild(const fs::path& path, unsigned seconds = 30) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    alarm(seconds);
    Result<UltralyticsCheckpoint> ck = ReadUltralyticsCheckpoint(path);
    const std::string out = !ck.ok() ? ck.status().message()
                            : "ok " + std::to_string(ck->state_dict.size()) + " " +
                                  (ck->state_dict.empty() ? std::string() : ck->state_dict[0].first);
    const ssize_t written = write(fds[1], out.data(), out.size());
    _exit(written == static_cast<ssize_t>(out.size()) ? 0 : 1);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFSIGNALED(status) ? "timed out" : out;
}

// What the tools print for `weights`: val, predict and train --weights, each bounded.
struct ToolRuns {
  CliRun val, predict, train;
};
ToolRuns RunTools(const TempDir& tmp, const fs::path& weights) {
  static TempDir* data = new TempDir();  // one small cache for the whole test process
  static const fs::path cache = testutil::MakeSynthCache(data->path(), testutil::Images(2, 2));
  const fs::path images = data->path() / "data" / "images" / "val";
  ToolRuns r;
  r.val = testing::RunBounded("yolocache-train", tmp.path(),
                              {"val", "--weights", weights.string(), "--data", cache.string(), "--device", "cpu",
                               "--threads", "1", "--out", (tmp / "val").string()},
                              kSeconds, kCap);
  r.predict = testing::RunBounded("yolocache-train", tmp.path(),
                                  {"predict", "--weights", weights.string(), images.string(), "--device", "cpu", "--out",
                                   (tmp / "pred").string()},
                                  kSeconds, kCap);
  r.train = testing::RunBounded("yolocache-train", tmp.path(),
                                {"train", "--weights", weights.string(), "--data", cache.string(), "--device", "cpu",
                                 "--epochs", "1", "--batch", "2", "--imgsz", "64", "--threads", "1", "--torch-threads", "1", "--out", (tmp / "run").string()},
                                kSeconds, kCap);
  return r;
}

void ExpectRefused(const CliRun& r, const fs::path& weights, const std::string& why) {
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find(weights.string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
}

// val and predict refuse weights that do not fill the model; train --weights fine-tunes from what
// matches (nothing here) and finishes its epoch: all without hanging or running out of memory.
void ExpectToolsFinish(const ToolRuns& r, const fs::path& weights) {
  ExpectRefused(r.val, weights, "missing or differ in shape");
  ExpectRefused(r.predict, weights, "missing or differ in shape");
  EXPECT_EQ(r.train.exit_code, 0) << r.train.err;
  EXPECT_NE((r.train.out + r.train.err).find("Transferred 0/"), std::string::npos) << r.train.out << r.train.err;
  for (const CliRun* run : {&r.val, &r.predict, &r.train}) EXPECT_EQ(run->err.find("bad_alloc"), std::string::npos) << run->err;
}

TEST(HostileWeights, SharedModuleDagIsWalkedOncePerModule) {
  TempDir tmp;
  Pickle p;
  const std::string pickle = UltralyticsPickle(p, [&] { SharedDag(p, 20, 16); }, [&] { OneParam(p); });
  ASSERT_LT(pickle.size(), 8000u);  // 16^20 paths in a few KB
  const fs::path weights = tmp / "dag.pt";
  WriteArchive(weights, pickle, {{"0", std::string(8, '\0')}});

  EXPECT_EQ(ReadInChild(weights), "ok 1 model.1.w");  // the activations' DAG holds no tensors

  // The tools get past the walk at once and refuse the file for what it lacks.
  ExpectToolsFinish(RunTools(tmp, weights), weights);
}

TEST(HostileWeights, SharedModuleDagWithTensorsIsRefusedByCount) {
  TempDir tmp;
  Pickle p;
  // The leaf holds a tensor: 16^20 state_dict entries, counted (saturating) before any is read.
  const std::string pickle = UltralyticsPickle(
      p,
      [&] {
        p.Object("torch.nn.modules.conv", "Conv2d", {{"_parameters", [&] { OneParam(p); }}});
        p.Put(0);
        for (int level = 1; level <= 20; ++level) {
          p.Op('0');
          p.Object("torch.nn.modules.container", "Sequential", {{"_modules", [&] {
                                                                    p.Op('}');
                                                                    p.Op('(');
                                                                    for (int i = 0; i < 16; ++i) {
                                                                      p.Str(std::to_string(i));
                                                                      p.Get(static_cast<uint32_t>(level - 1));
                                                                    }
                                                                    p.Op('u');
                                                                  }}});
          p.Put(static_cast<uint32_t>(level));
        }
      },
      [&] { p.Op('}'); });
  const fs::path weights = tmp / "dag_tensors.pt";
  WriteArchive(weights, pickle, {{"0", std::string(8, '\0')}});
  EXPECT_EQ(ReadInChild(weights), weights.string() + ": the module tree lists more than 100000 tensors (modules shared many "
                                                      "times over?): refused");
}

TEST(HostileWeights, ModuleCycleAndDepthAreRefused) {
  TempDir tmp;
  // A Sequential whose _modules holds itself 16 times: PUT before BUILD, GET inside its own state.
  Pickle p;
  const std::string cycle = UltralyticsPickle(
      p,
      [&] {
        p.Global("torch.nn.modules.container", "Sequential");
        p.Op(')');
        p.Op('\x81');
        p.Put(0);
        p.Dict({{"_modules", [&] {
                   p.Op('}');
                   p.Op('(');
                   for (int i = 0; i < 16; ++i) {
                     p.Str(std::to_string(i));
                     p.Get(0);
                   }
                   p.Op('u');
                 }}});
        p.Op('b');
      },
      [&] { OneParam(p); });
  WriteArchive(tmp / "cycle.pt", cycle, {{"0", std::string(8, '\0')}});
  EXPECT_EQ(ReadInChild(tmp / "cycle.pt"),
            (tmp / "cycle.pt").string() + ": module 'model.0.0.' contains itself (a cycle in the module tree)");

  // A chain of 40 levels (one module each).
  Pickle q;
  const std::string deep = UltralyticsPickle(q, [&] { SharedDag(q, 40, 1); }, [&] { OneParam(q); });
  WriteArchive(tmp / "deep.pt", deep, {{"0", std::string(8, '\0')}});
  EXPECT_EQ(ReadInChild(tmp / "deep.pt"), (tmp / "deep.pt").string() + ": module tree deeper than 32 levels");
}

// `count` parameters over one 100 KB fp16 storage (the file had 99,999; 20,000 copies are 4 GB,
// already past the cap, and keep the test fast).
constexpr int kSharedParams = 20000;
std::string SharedStoragePickle(Pickle& p, bool distinct_views, int count = kSharedParams) {
  constexpr int32_t kNumel = 50000;
  return UltralyticsPickle(p, nullptr, [&] {
    p.Op('}');
    p.Op('(');
    for (int i = 0; i < count; ++i) {
      p.Str("p" + std::to_string(i));
      // Identical full views, or 25,000-element views at `count` offsets (each a distinct 100 KB copy).
      const int32_t offset = distinct_views ? i % 25000 : 0;
      p.Tensor("0", kNumel, offset, distinct_views ? 25000 : kNumel, 0, i == 0);
      if (i % 1000 == 999) {  // SETITEMS in batches, as pickle does
        p.Op('u');
        p.Op('(');
      }
    }
    p.Op('u');
  });
}

TEST(HostileWeights, OneStorageSharedByManyParametersIsConvertedOnce) {
  TempDir tmp;
  Pickle p;
  const fs::path weights = tmp / "shared.pt";
  WriteArchive(weights, SharedStoragePickle(p, false), {{"0", std::string(100000, '\0')}});
  EXPECT_LT(fs::file_size(weights), 2u << 20);
  // Each reference a copy would be 20,000 x 200 KB = 4 GB; converted once it is 200 KB.
  ExpectToolsFinish(RunTools(tmp, weights), weights);
}

TEST(HostileWeights, ViewsMaterialisingMoreThanTheBudgetAreRefused) {
  TempDir tmp;
  Pickle p;
  const fs::path weights = tmp / "views.pt";
  WriteArchive(weights, SharedStoragePickle(p, true), {{"0", std::string(100000, '\0')}});
  // 20,000 distinct 100 KB views: 2 GB, refused at 4 x the file's size + 64 MiB.
  testing::WriteFile(tmp / "img" / "x.jpg", "");
  const CliRun run = testing::RunBounded("yolocache-train", tmp.path(),
                                         {"predict", "--weights", weights.string(), (tmp / "img").string(), "--device", "cpu",
                                          "--out", (tmp / "pred").string()},
                                         kSeconds, kCap);
  ExpectRefused(run, weights, "would materialise more than");
}

TEST(HostileWeights, TrainingImgszFromTheWeightsIsBounded) {
  TempDir tmp;
  Pickle p;
  const fs::path weights = tmp / "imgsz.pt";
  WriteArchive(weights, UltralyticsPickle(p, nullptr, [&] { OneParam(p); }, 99968), {{"0", std::string(8, '\0')}});
  Result<ModelWeights> w = ReadModelWeights(weights);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("train_args.imgsz 99968 is above 8192"), std::string::npos) << w.status().ToString();
  EXPECT_NE(w.status().message().find(weights.string()), std::string::npos);
  testing::WriteFile(tmp / "img" / "x.jpg", "");
  const CliRun run = testing::RunBounded("yolocache-train", tmp.path(),
                                         {"predict", "--weights", weights.string(), (tmp / "img").string(), "--device",
                                          "cpu", "--out", (tmp / "pred").string()},
                                         kSeconds, kCap);
  ExpectRefused(run, weights, "train_args.imgsz 99968");
  // --imgsz itself: refused before the weights are read (exit 2, naming the option and the range).
  for (const char* imgsz : {"99968", "8224"}) {
    const CliRun big = testing::RunBounded("yolocache-train", tmp.path(),
                                           {"predict", "--weights", weights.string(), (tmp / "img").string(), "--device",
                                            "cpu", "--imgsz", imgsz, "--out", (tmp / "pred2").string()},
                                           kSeconds, kCap);
    EXPECT_EQ(big.exit_code, 2) << big.err;
    EXPECT_NE(big.err.find("--imgsz must be 0 (the weights') or a multiple of 32, 32..8192, got " + std::string(imgsz)),
              std::string::npos)
        << big.err;
  }
}

}  // namespace
}  // namespace yc::trainer
