// The pixels of a JPEG record (codec jpeg, docs/FORMAT.md "Record"): HWC RGB <-> one baseline JPEG
// stream, with TurboJPEG (libjpeg-turbo). Encoded once by the builder at the training size, decoded by
// every reader. Thread-safe: each thread keeps its own TurboJPEG handles.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"

namespace yc {

inline constexpr int kMinJpegQuality = 1, kMaxJpegQuality = 100;
inline constexpr int kMaxJpegSide = 65500;  // JPEG's own limit (libjpeg's JPEG_MAX_DIMENSION)

// The most bytes EncodeJpegPixels can write for an h x w image (TurboJPEG's tjBufSize for 4:2:0).
uint64_t JpegPixelsBound(int h, int w);

// Encodes h x w RGB pixels (stride w * 3) at `quality` with 4:2:0 chroma subsampling and the accurate
// DCT into dst (at least JpegPixelsBound bytes); *written is the stream's size. Deterministic: the same
// pixels and quality always give the same bytes (build --update relies on it).
Status EncodeJpegPixels(const uint8_t* rgb, int h, int w, int quality, uint8_t* dst, uint64_t capacity,
                        uint64_t* written);

// Checks from the stream's header alone, before anything is allocated, that it declares an h x w
// YCbCr image (what EncodeJpegPixels writes). Corruption naming the mismatch otherwise.
Status CheckJpegPixels(const uint8_t* data, uint64_t size, uint32_t h, uint32_t w);

// Decodes a stream that passed CheckJpegPixels into dst (exactly h * w * 3 bytes). Any libjpeg warning
// (a truncated or damaged stream that libjpeg would patch with grey) is Corruption, not a picture.
Status DecodeJpegPixels(const uint8_t* data, uint64_t size, uint32_t h, uint32_t w, uint8_t* dst);

// Peak signal-to-noise ratio of `b` against `a` (n bytes each, peak 255), in dB; +infinity when equal.
double PixelPsnr(const uint8_t* a, const uint8_t* b, uint64_t n);

}  // namespace yc
