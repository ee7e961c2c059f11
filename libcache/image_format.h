// What an image file really is, from its first bytes, and a cheap structural check of its container
// (before any pixel is decoded): PNG chunk walk, BMP header arithmetic, RIFF/WebP size, GIF/TIFF
// header. The probe reads headers only; it never allocates pixel memory, so it also guards the
// decoder against headers that promise gigapixels (see decode.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>

#include "libcache/problem.h"

namespace yc {

enum class ImageFormat : uint8_t { kUnknown = 0, kJpeg, kPng, kBmp, kTiff, kWebp, kGif, kPfm, kHeif };

const char* ImageFormatName(ImageFormat format);  // "jpeg", "png", ..., "unknown"

// From magic bytes only. An empty or short buffer is kUnknown.
ImageFormat SniffFormat(const uint8_t* data, size_t size);

// From the lower-cased extension: jpg/jpeg/mpo -> jpeg, tif/tiff/dng -> tiff, heic -> heif, ...;
// kUnknown for anything else.
ImageFormat FormatFromExtension(const std::filesystem::path& path);

// The extension's format differs from the content's. A mismatch is a warning (the file is decoded by
// its content); unknown content is not a mismatch here (it is unsupported-format elsewhere).
bool ExtensionMismatch(ImageFormat content, const std::filesystem::path& path);

struct ImageProbe {
  ImageFormat format = ImageFormat::kUnknown;
  // Pixel size the header declares (0 when this probe does not read it: JPEG sizes come from
  // TurboJPEG's header parse). Not oriented.
  int64_t width = 0, height = 0;
  // Damage visible in the container without decoding: truncated (data ends before the structure
  // does) or corrupt-data (impossible header values, invalid PNG chunk type).
  std::optional<Issue> issue;
};

ImageProbe ProbeImage(const uint8_t* data, size_t size);

}  // namespace yc
