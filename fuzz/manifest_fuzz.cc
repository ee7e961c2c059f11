// libFuzzer target for the manifest parser: any bytes in, a Manifest or a Corruption/Unsupported
// status out, never an exception or a crash. A manifest that parses must survive a
// serialize -> parse -> serialize round trip unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "libcache/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);  // exact-size copy for ASan
  auto parsed = yc::ParseManifest(text, "fuzz/manifest.json");
  if (!parsed.ok()) {
    const auto code = parsed.status().code();
    if (code != yc::Status::Code::kCorruption && code != yc::Status::Code::kUnsupported) std::abort();
    return 0;
  }
  const std::string once = yc::SerializeManifest(parsed.value());
  auto again = yc::ParseManifest(once, "fuzz/reserialized.json");
  if (!again.ok()) std::abort();
  if (yc::SerializeManifest(again.value()) != once) std::abort();
  return 0;
}
