// What an image file really is, from its first bytes, and a cheap structural check of its container
// (before any pixel is decoded): PNG chunk walk, BMP header arithmetic, RIFF/WebP size, GIF header,
// TIFF / BigTIFF IFD0. The probe reads headers only; it never allocates pixel memory, so it also guards
// the decoder against headers that promise gigapixels or gigabytes (see decode.h).
//
// TIFF: ImageWidth / ImageLength / BitsPerSample / SamplesPerPixel are read in every integer type libtiff
// accepts for them (BYTE, SHORT, LONG, SBYTE, SSHORT, SLONG, IFD, and in BigTIFF LONG8, SLONG8, IFD8);
// a tag given in another type, a negative or zero size, a missing size or an IFD that does not fit is
// reported (corrupt-data / truncated) rather than left for the decoder to interpret, and a tag repeated
// counts with its largest value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>

#include "libcache/source/problem.h"

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
  // Bytes per pixel of what the decoder (OpenCV imgcodecs, IMREAD_UNCHANGED) will allocate for this
  // image, an upper bound: 2 per sample for 16-bit data, 4 channels where alpha may be present (PNG
  // tRNS, WebP, 32-bit BMP, TIFF other than single-sample grey). 0 when the probe does not read it
  // (JPEG: decode.cc knows its output). decode.h bounds width x height x this.
  int64_t bytes_per_pixel = 0;
  // Damage visible in the container without decoding: truncated (data ends before the structure
  // does) or corrupt-data (impossible header values, invalid PNG chunk type).
  std::optional<Issue> issue;
};

ImageProbe ProbeImage(const uint8_t* data, size_t size);

// Bytes per output pixel libjpeg holds besides its output for this JPEG: the whole image's DCT
// coefficients (2 bytes per component sample, rounded up) when decoding takes several passes over the
// data (a progressive frame, or a first scan that does not cover every component); 0 for single-scan
// files and for headers it cannot read (TurboJPEG's header parse reports those).
int64_t JpegCoefficientBytesPerPixel(const uint8_t* data, size_t size);

}  // namespace yc
