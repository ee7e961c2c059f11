// Bytes of one image file -> RGB uint8 HWC pixels, EXIF-oriented and resized exactly as Ultralytics'
// `load_image` (r = imgsz / max(h0, w0); if r != 1: w = min(ceil(w0 r), imgsz), h likewise, bilinear).
//
// JPEG goes through TurboJPEG (one handle per thread), decoded straight into the output or one reused
// per-thread buffer; resize happens once and EXIF orientation is applied to the small image (for the
// 90-degree cases the resize target is swapped first). Other formats go through OpenCV imgcodecs
// when the build has it (YOLOCACHE_WITH_IMGCODECS), else they are unsupported-format.
//
// Damage is reported, never thrown (codes from problem.h):
//   truncated     error    the data ends early. TurboJPEG only WARNS ("Premature end of JPEG file",
//                          "premature end of data segment") and pads grey, so warnings are checked;
//                          a JPEG whose only flaw is the missing EOI marker is truncated too (sources
//                          are never repaired, unlike Ultralytics' "corrupt JPEG restored and saved").
//   corrupt-data  warning  "N extraneous bytes before marker": junk between header segments in an
//                          otherwise complete image (the scan is intact and an EOI follows it).
//   corrupt-data  error    any other decoder warning or failure; unparseable container structure.
//   unsupported-format     unknown/HEIF/PFM/GIF content, 12-bit JPEG, a non-JPEG without imgcodecs,
//                          or an image above the decode limits (checked from the header, before
//                          allocating): more than DecodeOptions::max_pixels pixels, or a full-size
//                          decoder output (width x height x bytes per pixel, where 16-bit samples and
//                          alpha count: image_format.h; for a progressive JPEG its coefficient buffer
//                          too) above max_decoded_bytes. A 16384x16384 16-bit RGBA PNG of zeros is
//                          2 MB on disk and 2 GiB decoded.
// Running out of memory is not a finding about the file: no issue is added, out_of_memory says what
// failed (std::bad_alloc, OpenCV's "Failed to allocate", TurboJPEG's "Insufficient memory"), and
// callers stop (audit.h) rather than call the image corrupt.
// EXIF orientation is read for JPEG only (what Ultralytics' exif_size does); other formats are taken as
// stored. 16-bit samples become 8-bit by >> 8 (OpenCV's IMREAD_COLOR), alpha is dropped, grey and
// palette become RGB, CMYK/YCCK (Adobe, inverted) become RGB with OpenCV's CMYK formula.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "libcache/source/image_format.h"
#include "libcache/source/problem.h"

namespace yc {

// The largest resize target (--imgsz) the tools accept. Ultralytics models train at 640 and at most
// 1280-2048; 8192 leaves 4x headroom above that, while one decoded 8192x8192 RGB image is 192 MiB and
// a build holds 2 x threads + 2 of them at once (about 6 GiB on 16 threads).
inline constexpr int kMaxImgsz = 8192;

struct DecodeOptions {
  int imgsz = 0;             // long side of the output; 0 keeps the original size
  bool keep_pixels = true;   // false: verify only (full entropy decode, no output image)
  bool apply_exif = true;    // apply JPEG EXIF orientation
  int64_t max_pixels = int64_t{1} << 28;  // refuse larger images before allocating
  // ... and images whose full-size decoder output is larger: 1 GiB admits every 8-bit image within
  // max_pixels (RGBA included) but progressive JPEGs (119 MP at 4:4:4, 179 MP at 4:2:0), and 16-bit
  // ones up to 2^27 pixels (RGBA) or 2^28 (grey).
  int64_t max_decoded_bytes = int64_t{1} << 30;
};

struct DecodedImage {
  cv::Mat rgb;                // CV_8UC3, RGB; empty when !keep_pixels or on error
  int orig_h = 0, orig_w = 0;  // source size after EXIF orientation (0 when the header was unreadable)
  int orientation = 1;        // EXIF orientation applied (1 = none)
  ImageFormat format = ImageFormat::kUnknown;  // by content
  std::vector<Issue> issues;  // decoder findings, see above
  std::string out_of_memory;  // non-empty: an allocation failed (what failed); the decode did not finish
  bool has_error() const;
};

// Thread-safe and reentrant. The second form reuses out->rgb's buffer when the size repeats.
DecodedImage DecodeImage(const uint8_t* data, size_t size, const DecodeOptions& options);
void DecodeImage(const uint8_t* data, size_t size, const DecodeOptions& options, DecodedImage* out);

// Ultralytics' load_image target size for an (oriented) h0 x w0 source; imgsz <= 0 keeps it.
cv::Size ResizeTarget(int h0, int w0, int imgsz);

// Applies EXIF orientation 1..8 (src and dst must differ).
void ApplyOrientation(const cv::Mat& src, int orientation, cv::Mat* dst);

// Whether this build decodes non-JPEG formats (OpenCV imgcodecs compiled in).
bool DecoderHasImgcodecs();

}  // namespace yc
