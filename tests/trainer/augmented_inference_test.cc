// Test-time augmentation (trainer/model/augmented_inference.h): the augmented forward of genuine Ultralytics
// checkpoints equals what Ultralytics' AutoBackend returns for augment=True on the same input
// (tests/trainer/fixtures/ultralytics_augment.py; skipped with a message without ../shared/ultralytics or
// python3-torch), and scale_img's shapes, padding and the kept anchors hold on their own.
#include <cstring>

#include <c10/core/GradMode.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/test_support.h"
#include "tests/trainer/ultralytics_fixture.h"
#include "trainer/io/pretrained.h"
#include "trainer/model/augmented_inference.h"

namespace yc::trainer {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

TEST(AugmentedInference, EqualsUltralyticsAugmentOnItsCheckpoints) {
  const testing::UltralyticsFixture u = testing::UltralyticsFixture::Find();
  if (!u.available) GTEST_SKIP() << u.why;
  TempDir tmp;
  const fs::path dir = tmp.path() / "fixtures";
  ASSERT_EQ(u.Run("ultralytics_augment.py", {dir.string()}, tmp.path()), 0) << testing::ReadFile(tmp.path() / "python.log");
  const nlohmann::json manifest = nlohmann::json::parse(testing::ReadFile(dir / "manifest.json"));
  const at::Tensor x = testing::ReadFloatFile(dir / "input.bin", {2, 3, 160, 224});
  int checked = 0;
  for (const auto& [name, m] : manifest.items()) {
    SCOPED_TRACE(name);
    Result<InferenceModel> im = LoadInferenceModel(dir / (name + ".pt"), at::Device(at::kCPU));
    ASSERT_TRUE(im.ok()) << im.status().ToString();
    c10::NoGradGuard no_grad;
    const at::Tensor y = AugmentedForward(*im->model, x).pred;
    const at::Tensor ref = testing::ReadFloatFile(dir / (name + ".tta.bin"), m["shape"].get<std::vector<int64_t>>());
    // 160x224 keeps 700 anchors of the plain pass, 630 of the flipped 0.83 pass (padded to 160x192) and
    // 100 of the 0.67 pass (128x160): the shapes Ultralytics' concatenation has.
    ASSERT_EQ(y.sizes(), ref.sizes());
    EXPECT_EQ(y.size(2), 700 + 630 + 100);
    // Relative to the magnitude (boxes are pixels, scores 0-1), as the plain forward's parity test.
    const double err = ((y - ref).abs() / ref.abs().clamp_min(1.0)).max().item<double>();
    EXPECT_LT(err, 1e-3);
    EXPECT_GT(ref.std().item<double>(), 1.0);  // not trivially small or constant
    ++checked;
  }
  EXPECT_EQ(checked, 2);  // yolov8n and yolo11n
}

TEST(AugmentedInference, ScaleImageIsScaleImg) {
  const at::Tensor x = at::rand({1, 3, 160, 224});
  EXPECT_TRUE(ScaleImage(x, 1.0, 32).is_same(x));  // ratio 1: the input itself
  // 0.67: int(107.2) x int(150.08) = 107 x 150 of image, padded to ceil(3.35) * 32 x ceil(4.69) * 32.
  const at::Tensor s = ScaleImage(x, 0.67, 32);
  ASSERT_EQ(s.sizes(), (std::vector<int64_t>{1, 3, 128, 160}));
  EXPECT_TRUE(at::all(s.narrow(2, 107, 21) == static_cast<float>(0.447)).item<bool>());
  EXPECT_TRUE(at::all(s.narrow(3, 150, 10) == static_cast<float>(0.447)).item<bool>());
  EXPECT_TRUE(at::allclose(s.narrow(2, 0, 107).narrow(3, 0, 150),
                           at::upsample_bilinear2d(x, {107, 150}, /*align_corners=*/false)));
}

TEST(AugmentedInference, KeepsThePlainPassFeatsAndDropsTheTails) {
  DetectionModel model(ModelOptions(ModelFamily::kV8, ModelScale::kN, 3));
  model->eval();
  c10::NoGradGuard no_grad;
  const at::Tensor x = at::rand({1, 3, 64, 96});
  const DetectOutput plain = model->forward(x);
  const DetectOutput tta = AugmentedForward(*model, x);
  // feats: the plain pass's, so that val's loss is the one without augmentation.
  ASSERT_EQ(tta.feats.size(), plain.feats.size());
  for (size_t i = 0; i < plain.feats.size(); ++i) EXPECT_TRUE(at::equal(tta.feats[i], plain.feats[i])) << i;
  // The plain pass leads, without its P5 anchors (2 x 3); 0.83 and 0.67 both pad back to 64 x 96 (126
  // anchors), the last without its P3 anchors (8 x 12).
  const int64_t plain_kept = 126 - 6;
  EXPECT_EQ(tta.pred.size(2), plain_kept + 126 + (126 - 96));
  EXPECT_TRUE(at::equal(tta.pred.narrow(2, 0, plain_kept), plain.pred.narrow(2, 0, plain_kept)));
}

}  // namespace
}  // namespace yc::trainer
