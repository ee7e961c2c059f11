// A path in a JSON object the way every document of ours writes one (path_text.h, docs/FORMAT.md):
// `key` holds PrintableText of the name (valid UTF-8, readable) and, only when the name is not valid
// UTF-8, `key` + "_hex" holds its exact bytes. Dumping such an object never throws, and the name reads
// back byte for byte.
//
//   SetPathField(j, "file", "caf\xe9.jpg");   // {"file": "caf\\xe9.jpg", "file_hex": "636166e92e6a7067"}
//   std::string name;  GetPathField(j, "file", &name);  // "caf\xe9.jpg"
#pragma once

#include <string>
#include <string_view>

#include "libcache/base/path_text.h"

namespace yc {

template <typename Json>
void SetPathField(Json& object, const std::string& key, std::string_view path) {
  object[key] = PrintableText(path);
  if (!IsUtf8(path)) object[key + "_hex"] = HexBytes(path);
}

// The exact name: `key` + "_hex" decoded when present, else `key`. False when the field used is not a
// string or the hex is malformed; `out` is then unchanged.
template <typename Json>
bool GetPathField(const Json& object, const std::string& key, std::string* out) {
  if (const auto hex = object.find(key + "_hex"); hex != object.end()) {
    std::string bytes;
    if (!hex->is_string() || !HexToBytes(hex->template get<std::string>(), &bytes)) return false;
    *out = std::move(bytes);
    return true;
  }
  const auto text = object.find(key);
  if (text == object.end() || !text->is_string()) return false;
  *out = text->template get<std::string>();
  return true;
}

}  // namespace yc
