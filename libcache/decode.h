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
//                          or a size above DecodeOptions::max_pixels (checked before allocating).
// EXIF orientation is read for JPEG only (what Ultralytics' exif_size does); other formats are taken as
// stored. 16-bit samples become 8-bit by >> 8 (OpenCV's IMREAD_COLOR), alpha is dropped, grey and
// palette become RGB, CMYK/YCCK (Adobe, inverted) become RGB with OpenCV's CMYK formula.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <opencv2/core.hpp>

#include "libcache/image_format.h"
#include "libcache/problem.h"

namespace yc {

struct DecodeOptions {
  int imgsz = 0;             // long side of the output; 0 keeps the original size
  bool keep_pixels = true;   // false: verify only (full entropy decode, no output image)
  bool apply_exif = true;    // apply JPEG EXIF orientation
  int64_t max_pixels = int64_t{1} << 28;  // refuse larger images before allocating
};

struct DecodedImage {
  cv::Mat rgb;                // CV_8UC3, RGB; empty when !keep_pixels or on error
  int orig_h = 0, orig_w = 0;  // source size after EXIF orientation (0 when the header was unreadable)
  int orientation = 1;        // EXIF orientation applied (1 = none)
  ImageFormat format = ImageFormat::kUnknown;  // by content
  std::vector<Issue> issues;  // decoder findings, see above
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
