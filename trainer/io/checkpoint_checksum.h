// A yolocache checkpoint's own checksum: XXH3-64 over its meta record and every tensor and value it
// restores (model, EMA, gradients, optimizer state and options), each with a label, so that an edited
// or damaged file is found even where the zip's CRC-32s were recomputed. The writer lists the values
// while taking a snapshot (the snapshot's host copies: nothing is copied) and hashes them when it
// serialises (off the training thread); the reader lists the same values from the file and compares.
//
//   ChecksumInput in;
//   in.AddText("meta", meta_json);
//   in.AddTensor("model/0", weight);
//   std::string digest = in.Digest();  // "xxh3-64:0123456789abcdef"
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/ATen.h>

namespace yc::trainer {

class ChecksumInput {
 public:
  void AddText(std::string label, std::string text);
  void AddInt(std::string label, int64_t value);
  void AddReal(std::string label, double value);  // by its bits
  // dtype, shape and the values in row-major order (the same digest whatever the memory format).
  void AddTensor(std::string label, at::Tensor tensor);
  void Append(ChecksumInput&& other);  // other's items after these
  std::string Digest() const;

 private:
  struct Item {
    std::string label;
    char kind = 0;  // 's' text, 'i' int, 'r' real, 't' tensor
    std::string text;
    int64_t integer = 0;
    at::Tensor tensor;
  };
  std::vector<Item> items_;
};

}  // namespace yc::trainer
