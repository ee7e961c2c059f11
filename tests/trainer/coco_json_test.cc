// predictions.json as Ultralytics' DetectionValidator writes it (trainer/eval/coco_json.h): image ids
// from file stems, COCO's category ids, Python's rounding, the float32 box arithmetic, COCO splits.
#include "trainer/eval/coco_json.h"

#include <gtest/gtest.h>

namespace yc::trainer {
namespace {

TEST(CocoJson, ImageIdIsTheNumericStemElseTheStem) {
  EXPECT_EQ(CocoImageId("images/val2017/000000000139.jpg"), nlohmann::json(139));
  EXPECT_EQ(CocoImageId("a/img_1.jpg"), nlohmann::json("img_1"));
  EXPECT_EQ(CocoImageId("x.tar.png"), nlohmann::json("x.tar"));
  EXPECT_EQ(CocoImageId("12a.jpg"), nlohmann::json("12a"));
}

TEST(CocoJson, CategoryIdsAreCocos91NumberingForCocoElseClassPlusOne) {
  const std::vector<int> coco = CocoCategoryIds(true, 80);
  ASSERT_EQ(coco.size(), 80u);
  EXPECT_EQ(coco[0], 1);    // person
  EXPECT_EQ(coco[11], 13);  // stop sign: 12 is unused
  EXPECT_EQ(coco[24], 27);  // backpack: 26 is unused
  EXPECT_EQ(coco[79], 90);  // toothbrush
  EXPECT_EQ(CocoCategoryIds(false, 3), (std::vector<int>{1, 2, 3}));
}

TEST(CocoJson, RoundingIsPythons) {
  EXPECT_EQ(PythonRound(2.675, 2), 2.67);  // the double below 2.675
  EXPECT_EQ(PythonRound(0.125, 2), 0.12);  // an exact half goes to even
  EXPECT_EQ(PythonRound(0.375, 2), 0.38);
  EXPECT_EQ(PythonRound(12.34567, 3), 12.346);
  EXPECT_EQ(PythonRound(-1.0005, 3), -1.0);  // -1.000499999...
}

TEST(CocoJson, SplitIsCocoOnlyAsAVal2017ListOfACocoFolder) {
  EXPECT_TRUE(IsCocoSplit({"/d/coco/val2017.txt"}));
  EXPECT_TRUE(IsCocoSplit({"/d/coco/test-dev2017.txt"}));
  EXPECT_FALSE(IsCocoSplit({"/d/coco128/images/val2017"}));  // a folder
  EXPECT_FALSE(IsCocoSplit({"/d/other/val2017.txt"}));
  EXPECT_FALSE(IsCocoSplit({"/d/coco/val2017.txt", "/d/coco/extra.txt"}));
}

TEST(CocoJson, OneRowPerDetectionWithXywhInFloat32) {
  ImagePredictions a{"images/val/000000000042.jpg",
                     at::tensor(std::vector<float>{10.1234f, 20.5f, 30.25f, 40.0f, 0.987654f, 2, 0, 0, 1, 1, 0.5f, 0}).view({2, 6})};
  ImagePredictions none{"images/val/empty.jpg", at::zeros({0, 6})};
  ImagePredictions missing{"images/val/nothing.jpg", at::Tensor()};
  Result<nlohmann::json> j = CocoPredictions({a, none, missing}, CocoCategoryIds(false, 3));
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  ASSERT_EQ(j->size(), 2u);
  const nlohmann::json& r = (*j)[0];
  EXPECT_EQ(r["image_id"], 42);
  EXPECT_EQ(r["category_id"], 3);
  const float x1 = 10.1234f, x2 = 30.25f, w = x2 - x1;
  EXPECT_EQ(r["bbox"][0].get<double>(), PythonRound((x1 + x2) / 2 - w / 2, 3));
  EXPECT_EQ(r["bbox"][2].get<double>(), PythonRound(w, 3));
  EXPECT_NEAR(r["bbox"][0].get<double>(), 10.123, 1e-9);
  EXPECT_NEAR(r["bbox"][3].get<double>(), 19.5, 1e-9);
  EXPECT_NEAR(r["score"].get<double>(), 0.98765, 1e-12);
  EXPECT_EQ((*j)[1]["category_id"], 1);
  // A class the ids do not cover is refused, naming it.
  Result<nlohmann::json> bad = CocoPredictions({a}, CocoCategoryIds(false, 2));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("class 2"), std::string::npos);
}

}  // namespace
}  // namespace yc::trainer
