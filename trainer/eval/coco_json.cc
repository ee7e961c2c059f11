#include "trainer/eval/coco_json.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "libcache/base/path_text.h"

namespace yc::trainer {
namespace {

bool EndsWith(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

// COCO 2017 numbers its 80 detection categories 1..90 with these ten left unused.
constexpr int kUnusedCocoIds[] = {12, 26, 29, 30, 45, 66, 68, 69, 71, 83};

}  // namespace

bool IsCocoSplit(const std::vector<std::filesystem::path>& inputs) {
  if (inputs.size() != 1) return false;
  const std::string p = inputs[0].string();
  return p.find("coco") != std::string::npos && (EndsWith(p, "/val2017.txt") || EndsWith(p, "/test-dev2017.txt"));
}

std::vector<int> CocoCategoryIds(bool coco, int nc) {
  std::vector<int> ids;
  if (!coco) {
    for (int c = 0; c < nc; ++c) ids.push_back(c + 1);
    return ids;
  }
  for (int id = 1; id <= 90; ++id) {
    if (std::find(std::begin(kUnusedCocoIds), std::end(kUnusedCocoIds), id) == std::end(kUnusedCocoIds)) ids.push_back(id);
  }
  return ids;
}

nlohmann::json CocoImageId(std::string_view source) {
  const std::string stem = std::filesystem::path(std::string(source)).stem().string();
  const bool digits = !stem.empty() && stem.find_first_not_of("0123456789") == std::string::npos;
  if (digits && stem.size() <= 18) return std::stoll(stem);
  return PrintableText(stem);  // JSON text must be UTF-8; a non-UTF-8 stem keeps its bytes as \xNN
}

double PythonRound(double value, int digits) {
  // printf rounds the exact binary value to `digits` decimals (halves to even, as Python's round), and
  // strtod reads back the double nearest that decimal: the value Python's round returns.
  char buf[512];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return std::strtod(buf, nullptr);
}

Result<nlohmann::json> CocoPredictions(const std::vector<ImagePredictions>& images, const std::vector<int>& category_ids) {
  nlohmann::json out = nlohmann::json::array();
  for (const ImagePredictions& image : images) {
    if (!image.detections.defined() || image.detections.size(0) == 0) continue;
    const nlohmann::json image_id = CocoImageId(image.source);
    const at::Tensor d = image.detections.to(at::kCPU).to(at::kFloat).contiguous();
    const float* p = d.data_ptr<float>();
    for (int64_t i = 0; i < d.size(0); ++i, p += d.size(1)) {
      const int cls = static_cast<int>(p[5]);
      if (cls < 0 || static_cast<size_t>(cls) >= category_ids.size()) {
        return Status::InvalidArgument("predictions.json: class " + std::to_string(cls) + " has no category id (" +
                                       std::to_string(category_ids.size()) + " classes)");
      }
      // float32 as the tensors: xyxy2xywh, then the centre moved to the top-left corner.
      const float w = p[2] - p[0], h = p[3] - p[1];
      const float x = (p[0] + p[2]) / 2 - w / 2, y = (p[1] + p[3]) / 2 - h / 2;
      out.push_back({{"image_id", image_id},
                     {"category_id", category_ids[static_cast<size_t>(cls)]},
                     {"bbox", {PythonRound(x, 3), PythonRound(y, 3), PythonRound(w, 3), PythonRound(h, 3)}},
                     {"score", PythonRound(p[4], 5)}});
    }
  }
  return out;
}

}  // namespace yc::trainer
