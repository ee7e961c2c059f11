// The pickle writer (trainer/io/pickle_writer.h) and the torch.save zip writer (trainer/io/torch_save_writer.h):
// what they write reads back through our unpickler and TorchArchive, and through Python's pickle and
// torch.load (Debian's python3-torch; that half is skipped with a message where it is absent).
#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "tests/test_support.h"
#include "trainer/io/pickle.h"
#include "trainer/io/pickle_writer.h"
#include "trainer/io/torch_archive.h"
#include "trainer/io/torch_save_writer.h"

namespace yc::trainer {
namespace {

namespace fs = std::filesystem;
using Kind = PyValue::Kind;
using testing::TempDir;

bool HavePythonTorch() { return std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0; }

// {'none': None, 'yes': True, 'no': False, 'ints': [0, 255, 256, 65536, -1, -2**31, 2**40, -2**63],
//  'pi': 3.25, 'text': 'héllo', 'tuple': (1, 'a'), 'again': <memo of 'text'>, 'json': {'k': [1, 2.5, None]}}
std::string SamplePickle() {
  PickleWriter w;
  w.EmptyDict();
  w.Mark();
  w.Str("none");
  w.None();
  w.Str("yes");
  w.Bool(true);
  w.Str("no");
  w.Bool(false);
  w.Str("ints");
  w.EmptyList();
  w.Mark();
  for (int64_t v : {int64_t{0}, int64_t{255}, int64_t{256}, int64_t{65536}, int64_t{-1}, int64_t{INT32_MIN},
                    int64_t{1} << 40, INT64_MIN}) {
    w.Int(v);
  }
  w.Appends();
  w.Str("pi");
  w.Float(3.25);
  w.Str("text");
  w.Str("h\xc3\xa9llo");
  const uint32_t memo = w.Put();
  w.Str("tuple");
  w.Mark();
  w.Int(1);
  w.Str("a");
  w.Tuple();
  w.Str("again");
  w.Get(memo);
  w.Str("json");
  PickleJson(w, nlohmann::ordered_json::parse(R"({"k": [1, 2.5, null]})"));
  w.SetItems();
  return w.Finish();
}

TEST(PickleWriter, RoundTripsThroughOurUnpickler) {
  Result<PickleTree> tree = Unpickle(SamplePickle(), "sample");
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  const PickleTree& t = *tree;
  const ValueId root = t.root();
  ASSERT_EQ(t.at(root).kind, Kind::kDict);
  EXPECT_TRUE(t.IsNone(t.Find(root, "none")));
  EXPECT_TRUE(t.at(t.Find(root, "yes")).boolean);
  EXPECT_FALSE(t.at(t.Find(root, "no")).boolean);
  const PyValue& ints = t.at(t.Find(root, "ints"));
  ASSERT_EQ(ints.items.size(), 8u);
  const int64_t want[] = {0, 255, 256, 65536, -1, INT32_MIN, int64_t{1} << 40, INT64_MIN};
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(t.at(ints.items[i]).integer, want[i]) << i;
  EXPECT_EQ(t.at(t.Find(root, "pi")).real, 3.25);
  EXPECT_EQ(t.at(t.Find(root, "text")).text, "h\xc3\xa9llo");
  EXPECT_EQ(t.at(t.Find(root, "again")).text, "h\xc3\xa9llo");
  const PyValue& tuple = t.at(t.Find(root, "tuple"));
  ASSERT_EQ(tuple.kind, Kind::kTuple);
  ASSERT_EQ(tuple.items.size(), 2u);
  EXPECT_EQ(t.at(tuple.items[1]).text, "a");
  const ValueId k = t.Find(t.Find(root, "json"), "k");
  ASSERT_NE(k, kNoValue);
  ASSERT_EQ(t.at(k).items.size(), 3u);
  EXPECT_EQ(t.at(t.at(k).items[1]).real, 2.5);
}

TEST(PickleWriter, PythonReadsWhatItWrites) {
  if (!HavePythonTorch()) GTEST_SKIP() << "/usr/bin/python3 with torch is absent";
  TempDir tmp;
  {
    std::ofstream(tmp / "sample.pkl", std::ios::binary) << SamplePickle();
  }
  const std::string check =
      "import pickle,sys; d=pickle.load(open(sys.argv[1],'rb')); "
      "assert d=={'none':None,'yes':True,'no':False,'ints':[0,255,256,65536,-1,-2**31,2**40,-2**63],'pi':3.25,"
      "'text':'h\\u00e9llo','tuple':(1,'a'),'again':'h\\u00e9llo','json':{'k':[1,2.5,None]}}, d";
  const std::string cmd = "/usr/bin/python3 -c \"" + check + "\" '" + (tmp / "sample.pkl").string() + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

// {'h': fp16 arange(6) as (2, 3), 'p': Parameter(float [1.5, -2]), 'n': int64 scalar 7, 'od': OrderedDict(a=1)}
std::string SampleArchive() {
  TorchSaveWriter w;
  PickleWriter& p = w.pickle();
  p.EmptyDict();
  p.Mark();
  p.Str("h");
  w.Tensor(at::arange(6, at::kFloat).to(at::kHalf).view({2, 3}));
  p.Str("p");
  w.Parameter(at::tensor({1.5f, -2.0f}), /*requires_grad=*/true);
  p.Str("n");
  w.Tensor(at::scalar_tensor(7, at::kLong));
  p.Str("od");
  w.BeginOrderedDict();
  p.Str("a");
  p.Int(1);
  w.EndOrderedDict();
  p.SetItems();
  Result<std::string> zip = w.Finish();
  EXPECT_TRUE(zip.ok()) << zip.status().ToString();
  return zip.ok() ? *zip : std::string();
}

TEST(TorchSaveWriter, TorchArchiveReadsItsTensors) {
  TempDir tmp;
  const fs::path path = tmp / "sample.pt";
  {
    std::ofstream(path, std::ios::binary) << SampleArchive();
  }
  Result<std::unique_ptr<TorchArchive>> a = TorchArchive::Open(path);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  const PickleTree& t = (*a)->tree();
  Result<at::Tensor> h = (*a)->Tensor(t.Find(t.root(), "h"));
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->scalar_type(), at::kHalf);
  EXPECT_TRUE(h->to(at::kFloat).equal(at::arange(6, at::kFloat).view({2, 3})));
  Result<at::Tensor> param = (*a)->Tensor(t.Find(t.root(), "p"));
  ASSERT_TRUE(param.ok()) << param.status().ToString();
  EXPECT_TRUE(param->equal(at::tensor({1.5f, -2.0f})));
  Result<at::Tensor> n = (*a)->Tensor(t.Find(t.root(), "n"));
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(n->dim(), 0);
  EXPECT_EQ(n->item<int64_t>(), 7);
  EXPECT_TRUE((*a)->HasRecord("byteorder"));
}

TEST(TorchSaveWriter, TorchLoadReadsIt) {
  if (!HavePythonTorch()) GTEST_SKIP() << "/usr/bin/python3 with torch is absent";
  TempDir tmp;
  const fs::path path = tmp / "sample.pt";
  {
    std::ofstream(path, std::ios::binary) << SampleArchive();
  }
  const std::string check =
      "import sys,torch,collections; d=torch.load(sys.argv[1]); "
      "assert d['h'].dtype==torch.float16 and d['h'].tolist()==[[0,1,2],[3,4,5]], d; "
      "assert isinstance(d['p'], torch.nn.Parameter) and d['p'].requires_grad and d['p'].tolist()==[1.5,-2.0], d; "
      "assert d['n'].dtype==torch.int64 and d['n'].item()==7, d; "
      "assert type(d['od']) is collections.OrderedDict and d['od']=={'a':1}, d";
  const std::string cmd = "/usr/bin/python3 -c \"" + check + "\" '" + path.string() + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

}  // namespace
}  // namespace yc::trainer
