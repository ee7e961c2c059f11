// Synthetic records for the storage tests: random boxes, and pixels either pure noise (zstd cannot
// shrink them) or smooth gradients with a little noise (zstd can), so both codec paths are covered.
#pragma once

#include <cstdint>
#include <atomic>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "libcache/base/box.h"
#include "libcache/format/record_format.h"
#include "libcache/record_source.h"

namespace yc::testing {

struct SynthRecord {
  std::vector<uint8_t> pixels;
  int h = 0, w = 0, c = 3, orig_h = 0, orig_w = 0;
  std::vector<Box> boxes;
  std::string source;

  RecordInput input() const {
    RecordInput in;
    in.pixels = pixels.data();
    in.h = h;
    in.w = w;
    in.c = c;
    in.orig_h = orig_h;
    in.orig_w = orig_w;
    in.boxes = boxes.data();
    in.n = boxes.size();
    in.source = source;
    return in;
  }
  std::string Encode(const Codec& codec = {}) const {
    std::string out;
    const Status s = EncodeRecord(input(), codec, &out);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }
};

inline SynthRecord MakeRecord(std::mt19937& rng, int h, int w, size_t nboxes, std::string source, bool smooth = false) {
  SynthRecord r;
  r.h = h;
  r.w = w;
  r.orig_h = h * 2 + 1;
  r.orig_w = w * 2 + 3;
  r.source = std::move(source);
  r.pixels.resize(static_cast<size_t>(h) * w * r.c);
  std::uniform_int_distribution<int> byte(0, 255), small(-3, 3);
  const int phase = byte(rng);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int ch = 0; ch < r.c; ++ch) {
        const size_t i = (static_cast<size_t>(y) * w + x) * r.c + ch;
        // "Smooth": flat 8x8 patches with a sprinkle of noise, enough structure for zstd to win.
        const int noise = (byte(rng) & 15) == 0 ? small(rng) : 0;
        r.pixels[i] = smooth ? static_cast<uint8_t>(((x / 8) * 7 + (y / 8) * 13 + 40 * ch + phase + noise) & 0xff)
                             : static_cast<uint8_t>(byte(rng));
      }
  std::uniform_real_distribution<float> unit(0.01f, 0.99f);
  for (size_t i = 0; i < nboxes; ++i)
    r.boxes.push_back(Box{static_cast<int32_t>(byte(rng) % 80), unit(rng), unit(rng), unit(rng), unit(rng)});
  return r;
}

inline void ExpectViewMatches(const RecordView& v, const SynthRecord& r) {
  ASSERT_EQ(v.height, r.h);
  ASSERT_EQ(v.width, r.w);
  ASSERT_EQ(v.channels, r.c);
  EXPECT_EQ(v.orig_height, r.orig_h);
  EXPECT_EQ(v.orig_width, r.orig_w);
  EXPECT_EQ(v.source, r.source);
  ASSERT_EQ(v.box_count, r.boxes.size());
  if (!r.boxes.empty()) {
    ASSERT_NE(v.boxes, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(v.boxes) % alignof(Box), 0u);
    for (size_t i = 0; i < r.boxes.size(); ++i) {
      EXPECT_EQ(v.boxes[i].cls, r.boxes[i].cls);
      EXPECT_EQ(v.boxes[i].cx, r.boxes[i].cx);
      EXPECT_EQ(v.boxes[i].cy, r.boxes[i].cy);
      EXPECT_EQ(v.boxes[i].w, r.boxes[i].w);
      EXPECT_EQ(v.boxes[i].h, r.boxes[i].h);
    }
  }
  ASSERT_NE(v.pixels, nullptr);
  EXPECT_EQ(std::memcmp(v.pixels, r.pixels.data(), r.pixels.size()), 0);
}

// Reads random records of `source` from 8 threads at once, `reads` each; returns how many reads failed or
// differed from `records` (index, source name, pixels, Box alignment of the boxes).
inline int ConcurrentReadMismatches(const RecordSource& source, const std::vector<SynthRecord>& records, int reads) {
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      ScratchBuffer scratch;
      for (int k = 0; k < reads; ++k) {
        const size_t i = rng() % records.size();
        RecordView v;
        if (!source.Read(i, &v, &scratch).ok() || v.index != i || v.source != records[i].source ||
            std::memcmp(v.pixels, records[i].pixels.data(), records[i].pixels.size()) != 0 ||
            reinterpret_cast<uintptr_t>(v.boxes) % alignof(Box) != 0) {
          ++failures;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  return failures.load();
}

// A set of small records with unique sources, some backgrounds (no boxes).
inline std::vector<SynthRecord> MakeRecords(size_t count, uint32_t seed, int max_side = 24, bool smooth = false) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> side(1, max_side);
  std::vector<SynthRecord> out;
  for (size_t i = 0; i < count; ++i)
    out.push_back(MakeRecord(rng, side(rng), side(rng), i % 4 == 0 ? 0 : 1 + i % 5, "images/img_" + std::to_string(i) + ".jpg",
                             smooth));
  return out;
}

}  // namespace yc::testing
