// File names are bytes on Linux, JSON strings are UTF-8: a name that is not valid UTF-8 (a Latin-1
// file name from an old archive, say) must still be stored exactly and shown readably.
//
//   PrintableText("caf\xe9.jpg")  -> "caf\\xe9.jpg"    (each byte of an invalid sequence as \xNN)
//   IsUtf8(name) ? name : HexBytes(name)               (the exact bytes, written next to it in JSON)
//
// The JSON convention (docs/FORMAT.md): a path field ("path", "file") always holds PrintableText of the
// name, so it is valid UTF-8 and readable; only when the name is not valid UTF-8 a sibling field with
// the "_hex" suffix ("path_hex", "file_hex") holds its exact bytes in lowercase hex. Readers take the
// "_hex" field when present, so the name round-trips byte for byte.
#pragma once

#include <string>
#include <string_view>

namespace yc {

// Strict UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF).
bool IsUtf8(std::string_view text);

// `text` with every byte that is not part of a valid UTF-8 sequence written as "\xNN"; valid text is
// returned unchanged.
std::string PrintableText(std::string_view text);

// "ff2e6a7067" for "\xff.jpg"; HexToBytes is its inverse (false on odd length or a non-hex digit).
std::string HexBytes(std::string_view bytes);
bool HexToBytes(std::string_view hex, std::string* out);

}  // namespace yc
