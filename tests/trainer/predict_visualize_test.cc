// predict --visualize (Ultralytics' visualize=True): the layers DetectionModel::ForwardObserved hands
// over and their Ultralytics type names, the .npy writer against NumPy, the feature map
// picture's layout against matplotlib's, and the files of a genuine Ultralytics checkpoint's stages
// against Ultralytics' own predict (tests/trainer/fixtures/ultralytics_visualize.py; skipped with a
// message when ../shared/ultralytics or python3-torch is absent).
#include <cstdlib>
#include <fstream>

#include <c10/core/GradMode.h>
#include <gtest/gtest.h>
#include <opencv2/core.hpp>

#include "libcache/source/decode.h"
#include "tests/test_support.h"
#include "tests/trainer/ultralytics_fixture.h"
#include "trainer/eval/feature_maps.h"
#include "trainer/io/npy_file.h"
#include "trainer/model/detection_model.h"
#include "trainer/plots/feature_grid.h"

namespace yc::trainer {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::TempDir;

// stdout of a python3 one-liner, or "" when it fails.
std::string Python(const std::string& code, const fs::path& work) {
  const fs::path out = work / "python.out";
  const std::string cmd = "/usr/bin/python3 -c \"" + code + "\" > '" + out.string() + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  const std::string text = testing::ReadFile(out);
  return rc == 0 ? text : "failed: " + text;
}

TEST(ForwardObserved, SeesEveryLayerBeforeTheHeadInOrderAndChangesNothing) {
  c10::NoGradGuard no_grad;
  DetectionModel model(ModelOptions(ModelFamily::kV8, ModelScale::kN, 4));
  model->eval();
  const at::Tensor x = at::rand({1, 3, 64, 96}, at::TensorOptions().dtype(at::kFloat));
  std::vector<size_t> seen;
  std::vector<std::string> types;
  at::Tensor sppf;
  const DetectOutput observed = model->ForwardObserved(x, [&](size_t i, const at::Tensor& y) {
    seen.push_back(i);
    types.push_back(model->LayerType(i));
    if (i == 9) sppf = y;
  });
  std::vector<size_t> want(22);
  for (size_t i = 0; i < want.size(); ++i) want[i] = i;
  EXPECT_EQ(seen, want);  // yolov8.yaml's layers 0..21; the Detect head (22) is not handed over
  // yolov8.yaml's module of each layer, as Ultralytics' m.type ends.
  EXPECT_EQ(types, (std::vector<std::string>{"Conv", "Conv", "C2f", "Conv", "C2f", "Conv", "C2f", "Conv", "C2f", "SPPF",
                                             "Upsample", "Concat", "C2f", "Upsample", "Concat", "C2f", "Conv", "Concat",
                                             "C2f", "Conv", "Concat", "C2f"}));
  EXPECT_EQ(model->LayerType(22), "Detect");
  EXPECT_EQ(sppf.sizes(), (std::vector<int64_t>{1, 256, 2, 3}));  // P5/32 of 64 x 96
  EXPECT_TRUE(at::equal(observed.pred, model->forward(x).pred));
  DetectionModel yolo11(ModelOptions(ModelFamily::k11, ModelScale::kN, 4));
  EXPECT_EQ(yolo11->LayerType(10), "C2PSA");
  EXPECT_EQ(yolo11->LayerType(2), "C3k2");
}

TEST(NpyFile, HeaderIsNumpyFormat1AlignedTo64) {
  const std::string h = NpyHeader(NpyType::kFloat32, {16, 32, 64});
  EXPECT_EQ(h.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(h.size() % 64, 0u);
  EXPECT_EQ(h.back(), '\n');
  EXPECT_EQ(static_cast<size_t>(static_cast<unsigned char>(h[8]) | (static_cast<unsigned char>(h[9]) << 8)), h.size() - 10);
  EXPECT_EQ(h.substr(10, h.find('}') - 9), "{'descr': '<f4', 'fortran_order': False, 'shape': (16, 32, 64), }");
  EXPECT_NE(NpyHeader(NpyType::kFloat16, {5}).find("'descr': '<f2', 'fortran_order': False, 'shape': (5,), }"), std::string::npos);
}

TEST(NpyFile, NumpyLoadsWhatIsWritten) {
  if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3 with numpy";
  TempDir tmp;
  const float f32[6] = {0.5f, -1.f, 2.f, 3.25f, 1e-3f, -7.f};
  ASSERT_TRUE(WriteNpy(tmp / "a.npy", NpyType::kFloat32, {2, 3}, f32).ok());
  const uint16_t f16[2] = {0x3c00, 0xc000};  // 1.0, -2.0 as IEEE half
  ASSERT_TRUE(WriteNpy(tmp / "b.npy", NpyType::kFloat16, {2}, f16).ok());
  const std::string dir = tmp.path().string();
  EXPECT_EQ(Python("import numpy as np; a = np.load('" + dir + "/a.npy'); b = np.load('" + dir +
                       "/b.npy'); print(a.dtype, a.shape, a.ravel().tolist(), b.dtype, b.shape, b.tolist())",
                   tmp.path()),
            "float32 (2, 3) [0.5, -1.0, 2.0, 3.25, 0.0010000000474974513, -7.0] float16 (2,) [1.0, -2.0]\n");
}

// Pictures of savefig(dpi=300, bbox_inches="tight") by Ultralytics' feature_visualization, measured
// with matplotlib 3.6 (Debian 12): {maps, map height, map width} -> picture width x height.
TEST(FeatureMapGrid, HasTheSizeOfUltralyticsPictures) {
  struct Case {
    int n, h, w;
    cv::Size picture;
  };
  for (const Case& c : {Case{32, 20, 20, {1890, 1228}}, Case{16, 20, 20, {1890, 765}}, Case{32, 40, 20, {1813, 1409}},
                        Case{32, 32, 64, {1890, 1067}}, Case{16, 32, 64, {1890, 626}}}) {
    std::vector<cv::Mat> maps(static_cast<size_t>(c.n), cv::Mat(c.h, c.w, CV_32FC1, cv::Scalar(1)));
    const cv::Mat p = FeatureMapGrid(maps);
    EXPECT_NEAR(p.cols, c.picture.width, 2) << c.n << " maps of " << c.h << "x" << c.w;
    EXPECT_NEAR(p.rows, c.picture.height, 2) << c.n << " maps of " << c.h << "x" << c.w;
  }
}

TEST(FeatureMapGrid, DrawsEachMapInViridisFromItsMinimumToItsMaximum) {
  // matplotlib's viridis(0.0) and viridis(1.0).
  EXPECT_EQ(Viridis(0), cv::Vec3b(68, 1, 84));
  EXPECT_EQ(Viridis(255), cv::Vec3b(253, 231, 37));
  cv::Mat ramp(20, 20, CV_32FC1);
  for (int y = 0; y < 20; ++y) {
    for (int x = 0; x < 20; ++x) ramp.at<float>(y, x) = 100.f + static_cast<float>(x);  // its own range: 100..119
  }
  const cv::Mat p = FeatureMapGrid(std::vector<cv::Mat>(8, ramp));
  // One row: white around, the first map's left edge the lowest colour, its right edge the highest.
  EXPECT_EQ(p.at<cv::Vec3b>(2, 2), cv::Vec3b(255, 255, 255));
  const int mid = p.rows / 2;
  EXPECT_EQ(p.at<cv::Vec3b>(mid, 31), Viridis(0));
  int right = 31;
  while (right + 1 < p.cols && p.at<cv::Vec3b>(mid, right + 1) != cv::Vec3b(255, 255, 255)) ++right;
  EXPECT_EQ(p.at<cv::Vec3b>(mid, right), Viridis(255));
  EXPECT_TRUE(FeatureMapGrid({}).empty());
}

TEST(FeatureMaps, FolderIncrementsAsUltralytics) {
  TempDir tmp;
  for (const char* want : {"bus", "bus2", "bus3"}) {
    Result<fs::path> d = MakeFeatureFolder(tmp / "bus");
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    EXPECT_EQ(d->filename().string(), want);
  }
  testing::WriteFile(tmp / "cat", "a file, not ours");
  Result<fs::path> d = MakeFeatureFolder(tmp / "cat");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->filename().string(), "cat2");
  EXPECT_EQ(testing::ReadFile(tmp / "cat"), "a file, not ours");
}

TEST(PredictVisualize, WritesUltralyticsStagesWithItsFeatureMaps) {
  const testing::UltralyticsFixture fx = testing::UltralyticsFixture::Find();
  if (!fx.available) GTEST_SKIP() << fx.why;
  TempDir tmp;
  const fs::path ref = tmp / "ref";
  const fs::path coco = testing::SharedData("coco128");
  std::vector<std::string> args = {"make", ref.string()};
  if (!coco.empty()) args.push_back((coco / "images" / "train2017").string());
  ASSERT_EQ(fx.Run("ultralytics_visualize.py", args, tmp.path()), 0) << testing::ReadFile(tmp / "python.log");
  for (const char* model : {"yolov8n", "yolo11n"}) {
    const fs::path out = tmp / (std::string("ours_") + model);
    CliRun p = testing::YolocacheTrain(tmp, {"predict", "--weights", (ref / (std::string(model) + ".pt")).string(),
                                             (ref / "im.png").string(), "--imgsz", "128", "--visualize", "--device", "cpu",
                                             "--out", out.string()});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    // The same file names (the Detect head and the 1-pixel-high stages skipped) and the same arrays.
    ASSERT_EQ(fx.Run("ultralytics_visualize.py", {"compare", (ref / model / "im").string(), (out / "im").string()}, tmp.path()), 0)
        << model << ": " << testing::ReadFile(tmp / "python.log");
    // A picture beside each array, as wide as Ultralytics' (8 columns of 16 x 64 maps: 1890 pixels).
    const std::string png = testing::ReadFile(out / "im" / "stage0_Conv_features.png");
    const DecodedImage d = DecodeImage(reinterpret_cast<const uint8_t*>(png.data()), png.size(), DecodeOptions{});
    ASSERT_FALSE(d.has_error() || d.rgb.empty()) << model;
    EXPECT_NEAR(d.rgb.cols, 1890, 2) << model;
  }
  // The same image again into that folder: im2 (increment_path), the first left as it was.
  const fs::path out = tmp / "ours_yolo11n";
  const auto before = fs::last_write_time(out / "im" / "stage0_Conv_features.npy");
  CliRun again = testing::YolocacheTrain(tmp, {"predict", "--weights", (ref / "yolo11n.pt").string(), (ref / "im.png").string(),
                                               "--imgsz", "128", "--visualize", "--device", "cpu", "--out", out.string()});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(fs::exists(out / "im2" / "stage0_Conv_features.npy"));
  EXPECT_EQ(fs::last_write_time(out / "im" / "stage0_Conv_features.npy"), before);
}

}  // namespace
}  // namespace yc::trainer
