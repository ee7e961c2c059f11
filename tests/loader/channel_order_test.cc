// Ultralytics' bgr hyperparameter (loader/ops/channel_order.h): the draw, and the loader's train images in
// BGR order exactly where it fires, the same bytes otherwise, on the fast and the reference path, in both
// layouts and at any thread count; validation never swaps.
#include "loader/ops/channel_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "loader/loader.h"
#include "tests/loader/fake_source.h"
#include "tests/loader/test_util.h"

namespace yc {
namespace {

using testing::FakeSource;

TEST(ChannelOrder, DrawFiresWithItsProbability) {
  Rng rng(7, 0, 0);
  int fired = 0;
  for (int i = 0; i < 4000; ++i) {
    EXPECT_FALSE(DrawBgr(rng, 0.0));
    EXPECT_TRUE(DrawBgr(rng, 1.0));
    fired += DrawBgr(rng, 0.25) ? 1 : 0;
  }
  EXPECT_NEAR(fired / 4000.0, 0.25, 0.03);
}

TEST(ChannelOrder, SwapRedBlueMatchesOpenCv) {
  cv::Mat image(3, 5, CV_8UC3);
  cv::randu(image, 0, 256);
  cv::Mat reference = image.clone();
  SwapRedBlueReference(&reference);
  SwapRedBlue(image.data, image.total());
  EXPECT_EQ(cv::norm(image, reference, cv::NORM_INF), 0);
  EXPECT_EQ(image.at<cv::Vec3b>(1, 2)[0], reference.at<cv::Vec3b>(1, 2)[0]);
}

// Every image and label row of epoch 0.
struct Epoch {
  std::vector<std::vector<uint8_t>> images;
  std::vector<std::vector<float>> labels;
};

Epoch RunEpoch(const std::shared_ptr<const RecordSource>& src, LoaderOptions o) {
  Epoch e;
  auto loader = Loader::Create(src, o);
  EXPECT_TRUE(loader.ok()) << loader.status().ToString();
  if (!loader.ok()) return e;
  EXPECT_TRUE((*loader)->StartEpoch(0).ok());
  std::shared_ptr<Batch> b;
  while ((*loader)->Next(&b).ok() && b) {
    for (int i = 0; i < b->size; ++i) e.images.emplace_back(b->image(i), b->image(i) + b->image_bytes());
    e.labels.push_back(b->labels);
  }
  return e;
}

// `image` with its first and third channel exchanged, in `layout`.
std::vector<uint8_t> Swapped(std::vector<uint8_t> image, ImageLayout layout) {
  const size_t plane = image.size() / 3;
  if (layout == ImageLayout::kNHWC) {
    SwapRedBlue(image.data(), plane);
  } else {
    std::swap_ranges(image.begin(), image.begin() + static_cast<std::ptrdiff_t>(plane),
                     image.begin() + static_cast<std::ptrdiff_t>(2 * plane));
  }
  return image;
}

LoaderOptions Options(LoaderOptions::Path path, ImageLayout layout, double bgr) {
  LoaderOptions o;
  o.batch = 4;
  o.imgsz = 64;
  o.threads = 2;
  o.seed = 3;
  o.path = path;
  o.layout = layout;
  o.hyp.mixup = 0.3;
  o.hyp.bgr = bgr;
  return o;
}

TEST(ChannelOrder, TrainImagesAreBgrExactlyWhereTheDrawFires) {
  auto src = std::make_shared<FakeSource>(FakeSource::Synthetic(12, 64, 4));
  for (const auto path : {LoaderOptions::Path::kFast, LoaderOptions::Path::kReference}) {
    for (const auto layout : {ImageLayout::kNCHW, ImageLayout::kNHWC}) {
      const Epoch rgb = RunEpoch(src, Options(path, layout, 0.0));
      const Epoch bgr = RunEpoch(src, Options(path, layout, 1.0));
      ASSERT_EQ(rgb.images.size(), 12u);
      ASSERT_EQ(bgr.images.size(), rgb.images.size());
      EXPECT_EQ(bgr.labels, rgb.labels);  // the draw is the plan's last: nothing else changes
      for (size_t i = 0; i < rgb.images.size(); ++i) {
        EXPECT_NE(bgr.images[i], rgb.images[i]) << i;  // coloured images: a swap shows
        EXPECT_EQ(bgr.images[i], Swapped(rgb.images[i], layout)) << "image " << i;
      }
      // bgr 0.5: each image one or the other, both seen, the same at another thread count.
      LoaderOptions half = Options(path, layout, 0.5);
      const Epoch mixed = RunEpoch(src, half);
      size_t swapped = 0;
      for (size_t i = 0; i < rgb.images.size(); ++i) {
        const bool is_bgr = mixed.images[i] == bgr.images[i];
        EXPECT_TRUE(is_bgr || mixed.images[i] == rgb.images[i]) << "image " << i;
        swapped += is_bgr ? 1 : 0;
      }
      EXPECT_GT(swapped, 0u);
      EXPECT_LT(swapped, rgb.images.size());
      half.threads = 3;
      EXPECT_EQ(RunEpoch(src, half).images, mixed.images);
    }
  }
}

TEST(ChannelOrder, ValidationNeverSwaps) {
  auto src = std::make_shared<FakeSource>(FakeSource::Synthetic(5, 64, 6));
  LoaderOptions o = Options(LoaderOptions::Path::kFast, ImageLayout::kNCHW, 0.0);
  o.mode = LoaderMode::kVal;
  const Epoch plain = RunEpoch(src, o);
  o.hyp.bgr = 1.0;
  EXPECT_EQ(RunEpoch(src, o).images, plain.images);
  EXPECT_EQ(plain.images.size(), 5u);
}

}  // namespace
}  // namespace yc
