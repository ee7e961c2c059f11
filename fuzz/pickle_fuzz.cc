// libFuzzer target for the pickle VM (trainer/io/pickle.h), which reads data.pkl of untrusted weights
// files. Checks the contract, not only the absence of crashes: a tree that is returned only holds ids
// inside its arena, and its size never exceeds the input's (one value per opcode at most).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "trainer/io/pickle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  yc::Result<yc::trainer::PickleTree> tree = yc::trainer::Unpickle(bytes, "fuzz.pkl");
  if (!tree.ok()) {
    if (tree.status().message().find("fuzz.pkl") == std::string::npos) std::abort();  // errors name the stream
    return 0;
  }
  const yc::trainer::PickleTree& t = *tree;
  if (t.size() > size || t.root() >= t.size()) std::abort();
  auto valid = [&](yc::trainer::ValueId id) { return id == yc::trainer::kNoValue || id < t.size(); };
  for (size_t i = 0; i < t.size(); ++i) {
    const auto& v = t.at(static_cast<yc::trainer::ValueId>(i));
    for (auto id : v.items) if (id >= t.size()) std::abort();
    for (const auto& [k, x] : v.entries) if (k >= t.size() || x >= t.size()) std::abort();
    if (!valid(v.args) || !valid(v.state)) std::abort();
    (void)t.Describe(static_cast<yc::trainer::ValueId>(i));
  }
  (void)t.Find(t.root(), "model");
  return 0;
}
