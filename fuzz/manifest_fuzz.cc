// libFuzzer target for the manifest parser: any bytes in, a Manifest or a Corruption/Unsupported
// status out, never an exception or a crash. Random bytes almost never carry a valid
// manifest_checksum, so the field validation is also driven directly (ParseManifestContent, which
// skips the checksum); whatever it accepts must serialize to a manifest that the checked parser
// accepts, and survive a serialize -> parse -> serialize round trip unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "libcache/format/manifest.h"

namespace {

bool ExpectedFailure(const yc::Status& status) {
  const auto code = status.code();
  return code == yc::Status::Code::kCorruption || code == yc::Status::Code::kUnsupported;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);  // exact-size copy for ASan
  auto checked = yc::ParseManifest(text, "fuzz/manifest.json");
  if (!checked.ok() && !ExpectedFailure(checked.status())) std::abort();
  auto parsed = yc::ParseManifestContent(text, "fuzz/manifest.json");
  if (!parsed.ok()) {
    if (!ExpectedFailure(parsed.status())) std::abort();
    if (checked.ok()) std::abort();  // the checked parser validates the same fields
    return 0;
  }
  const std::string once = yc::SerializeManifest(parsed.value());
  auto again = yc::ParseManifest(once, "fuzz/reserialized.json");
  if (!again.ok()) std::abort();
  if (yc::SerializeManifest(again.value()) != once) std::abort();
  return 0;
}
