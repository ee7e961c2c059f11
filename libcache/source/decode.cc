#include "libcache/source/decode.h"

#include <turbojpeg.h>

#include <cmath>
#include <cstring>
#include <exception>
#include <string>

#include <opencv2/imgproc.hpp>
#if YOLOCACHE_WITH_IMGCODECS
#include <opencv2/imgcodecs.hpp>
#endif

#include "libcache/source/exif.h"

namespace yc {
namespace {

// Per-thread scratch above this size is released after use, so one huge image does not pin hundreds
// of MiB in every worker thread for the rest of the run.
constexpr size_t kKeepScratchBytes = size_t{64} << 20;

// One TurboJPEG decompressor per thread: tjInitDecompress allocates libjpeg state, far too costly to
// pay per image, and a handle must not be shared between threads.
struct TjDecompressor {
  tjhandle handle = tjInitDecompress();
  ~TjDecompressor() {
    if (handle != nullptr) tjDestroy(handle);
  }
};

TjDecompressor& ThreadTj() {
  thread_local TjDecompressor d;
  return d;
}

// libjpeg-turbo 2.1's tjDecompressHeader3 returns from a fatal error without aborting the libjpeg
// object, and the next image then fails with "two SOI markers". A fresh handle after any fatal
// error (rare: damaged files only) keeps one bad file from poisoning the thread's later ones.
void ResetThreadTj() {
  TjDecompressor& d = ThreadTj();
  if (d.handle != nullptr) tjDestroy(d.handle);
  d.handle = tjInitDecompress();
}

// Reusable per-thread pixel buffers; cv::Mat headers over them cost no allocation once warm.
class Scratch {
 public:
  cv::Mat Get(int h, int w, int type) {
    const size_t need = size_t(h) * size_t(w) * CV_ELEM_SIZE(type);
    if (bytes_.size() < need) bytes_.resize(need);
    return cv::Mat(h, w, type, bytes_.data());
  }
  void Trim() {
    if (bytes_.capacity() > kKeepScratchBytes) std::vector<uint8_t>().swap(bytes_);
  }

 private:
  std::vector<uint8_t> bytes_;
};

struct ThreadScratch {
  Scratch decoded;    // full-size decoder output
  Scratch converted;  // full-size after CMYK/depth/channel conversion
  Scratch resized;    // resized, before orientation
  void Trim() {
    decoded.Trim();
    converted.Trim();
    resized.Trim();
  }
};

ThreadScratch& Buffers() {
  thread_local ThreadScratch s;
  return s;
}

// Trims the scratch however DecodeImage leaves.
struct TrimOnExit {
  ~TrimOnExit() { Buffers().Trim(); }
};

Issue MakeIssue(ProblemCode code, std::string message, Severity severity = Severity::kError) {
  return {code, severity, std::move(message)};
}

bool Has(const std::string& s, const char* sub) { return s.find(sub) != std::string::npos; }

std::string SizeText(int64_t w, int64_t h) { return std::to_string(w) + "x" + std::to_string(h); }

// The decode limits of decode.h, from the header's size (each side below 2^62) and the decoder's
// bytes per pixel. Adds the unsupported-format issue and returns false when the image is over them.
bool WithinDecodeLimits(const std::string& name, int64_t w, int64_t h, int64_t bytes_per_pixel,
                        const DecodeOptions& opt, DecodedImage* out) {
  if (w <= 0 || h <= 0) return true;  // nothing to allocate: the decoder reports the empty size
  // w > max / h instead of w * h > max: a BigTIFF side may be near 2^62.
  if (w > opt.max_pixels / h) {
    out->issues.push_back(MakeIssue(ProblemCode::kUnsupportedFormat, name + " is " + SizeText(w, h) +
                                                                         ", above the decode limit of " +
                                                                         std::to_string(opt.max_pixels) + " pixels"));
    return false;
  }
  const int64_t pixels = w * h;
  if (bytes_per_pixel > opt.max_decoded_bytes / pixels) {
    const std::string bytes = bytes_per_pixel <= INT64_MAX / pixels ? std::to_string(pixels * bytes_per_pixel)
                                                                     : std::string("over 2^63");
    out->issues.push_back(MakeIssue(ProblemCode::kUnsupportedFormat,
                                    name + " is " + SizeText(w, h) + " at " + std::to_string(bytes_per_pixel) +
                                        " bytes per pixel (" + bytes + " bytes decoded), above the decode limit of " +
                                        std::to_string(opt.max_decoded_bytes) + " bytes"));
    return false;
  }
  return true;
}

// libjpeg's JERR_OUT_OF_MEMORY ("Insufficient memory (case N)") and TurboJPEG's own allocation
// failures ("...: Memory allocation failure") are about this machine, not the file.
bool IsJpegOutOfMemory(const std::string& msg) {
  return Has(msg, "Insufficient memory") || Has(msg, "Memory allocation failure");
}

// TurboJPEG reports libjpeg's first warning or its error as text; map it to a problem code.
Issue ClassifyJpegFailure(const std::string& msg, bool warning, const JpegMarkers& markers, const uint8_t* data,
                          size_t size) {
  const std::string what = "libjpeg: " + msg;
  if (Has(msg, "precision") || Has(msg, "Unsupported JPEG process") || Has(msg, "arithmetic")) {
    return MakeIssue(ProblemCode::kUnsupportedFormat, "JPEG variant not supported (" + what + ")");
  }
  if (Has(msg, "Premature end") || Has(msg, "premature end")) {
    return MakeIssue(ProblemCode::kTruncated, "JPEG data ends early (" + what + ")");
  }
  if (warning && Has(msg, "extraneous bytes before marker")) {
    // Only the first warning is reported, so make sure the stream also ends properly.
    if (markers.reached_sos && JpegHasEoiAfter(data, size, markers.sos_offset)) {
      return MakeIssue(ProblemCode::kCorruptData, "junk between JPEG segments, image complete (" + what + ")",
                       Severity::kWarning);
    }
    return MakeIssue(ProblemCode::kTruncated, "JPEG data ends without an EOI marker (" + what + ")");
  }
  // TurboJPEG reports TJERR_WARNING for a fatal error that followed a warning, so the structure
  // decides here, not the error code.
  if (markers.ran_out && !markers.reached_sos) {
    return MakeIssue(ProblemCode::kTruncated, "JPEG data ends inside the header (" + what + ")");
  }
  return MakeIssue(ProblemCode::kCorruptData, "JPEG data is damaged (" + what + ")");
}

// OpenCV's inverted-CMYK formula (Adobe JPEGs store 255 - ink), so colours match cv2.imdecode.
void CmykToRgb(const cv::Mat& cmyk, cv::Mat* rgb) {
  for (int y = 0; y < cmyk.rows; ++y) {
    const uint8_t* s = cmyk.ptr<uint8_t>(y);
    uint8_t* d = rgb->ptr<uint8_t>(y);
    for (int x = 0; x < cmyk.cols; ++x, s += 4, d += 3) {
      const int k = s[3];
      d[0] = static_cast<uint8_t>(k - ((255 - s[0]) * k >> 8));
      d[1] = static_cast<uint8_t>(k - ((255 - s[1]) * k >> 8));
      d[2] = static_cast<uint8_t>(k - ((255 - s[2]) * k >> 8));
    }
  }
}

// Resize (once) and orient an RGB image in stored orientation into out->rgb. `stored_target` is the
// resize target in stored orientation (swapped for the 90-degree orientations).
void Finish(const cv::Mat& src, int orientation, cv::Size stored_target, DecodedImage* out) {
  cv::Mat cur = src;
  const bool orient = orientation != 1;
  if (cur.size() != stored_target) {
    cv::Mat dst;
    if (orient) {
      dst = Buffers().resized.Get(stored_target.height, stored_target.width, CV_8UC3);
    } else {
      out->rgb.create(stored_target, CV_8UC3);
      dst = out->rgb;
    }
    cv::resize(cur, dst, stored_target, 0, 0, cv::INTER_LINEAR);
    cur = dst;
  }
  if (orient) {
    ApplyOrientation(cur, orientation, &out->rgb);
  } else if (cur.data != out->rgb.data) {
    cur.copyTo(out->rgb);
  }
}

// Where the next full-size stage should write: straight into the output when nothing follows it.
cv::Mat StageTarget(bool last, int h, int w, Scratch* scratch, DecodedImage* out) {
  if (last) {
    out->rgb.create(h, w, CV_8UC3);
    return out->rgb;
  }
  return scratch->Get(h, w, CV_8UC3);
}

void DecodeJpeg(const uint8_t* data, size_t size, const DecodeOptions& opt, DecodedImage* out) {
  const JpegMarkers markers = ScanJpegMarkers(data, size);
  tjhandle tj = ThreadTj().handle;
  if (tj == nullptr) {
    ResetThreadTj();  // try again for the next image
    out->out_of_memory = "cannot initialise TurboJPEG";
    return;
  }
  int w = 0, h = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(tj, data, static_cast<unsigned long>(size), &w, &h, &subsamp, &colorspace) != 0) {
    // A warning here (junk before a marker) leaves a usable header: the full decode reports it.
    if (!(tjGetErrorCode(tj) == TJERR_WARNING && w > 0 && h > 0)) {
      const std::string msg = tjGetErrorStr2(tj);
      if (IsJpegOutOfMemory(msg)) {
        out->out_of_memory = "libjpeg: " + msg;
      } else {
        out->issues.push_back(ClassifyJpegFailure(msg, tjGetErrorCode(tj) == TJERR_WARNING, markers, data, size));
      }
      ResetThreadTj();
      return;
    }
  }
  const int orientation = opt.apply_exif ? markers.orientation : 1;
  const bool swap = orientation >= 5;
  out->orientation = orientation;
  out->orig_w = swap ? h : w;
  out->orig_h = swap ? w : h;
  const bool cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
  // Checked at full size whether or not pixels are kept, so verify and build exclude the same images;
  // a multi-scan (progressive) JPEG also holds every DCT coefficient while it decodes.
  const int64_t bytes_per_pixel = (cmyk ? 4 : 3) + JpegCoefficientBytesPerPixel(data, size);
  if (!WithinDecodeLimits("JPEG", w, h, bytes_per_pixel, opt, out)) return;

  const int pixel_format = cmyk ? TJPF_CMYK : TJPF_RGB;
  const int type = cmyk ? CV_8UC4 : CV_8UC3;
  const cv::Size target = ResizeTarget(out->orig_h, out->orig_w, opt.imgsz);
  const cv::Size stored_target = swap ? cv::Size(target.height, target.width) : target;

  // Verify-only: DCT-scaled 1/8 decode. Every coefficient is still entropy-decoded, so truncation
  // and corruption show exactly as in a full decode, at a fraction of the IDCT and memory cost.
  int dw = w, dh = h;
  if (!opt.keep_pixels) {
    const tjscalingfactor eighth{1, 8};
    dw = TJSCALED(w, eighth);
    dh = TJSCALED(h, eighth);
  }
  const bool direct = opt.keep_pixels && !cmyk && orientation == 1 && stored_target == cv::Size(w, h);
  cv::Mat decoded = direct ? StageTarget(true, h, w, nullptr, out) : Buffers().decoded.Get(dh, dw, type);
  const int rc = tjDecompress2(tj, data, static_cast<unsigned long>(size), decoded.data, dw,
                               static_cast<int>(decoded.step[0]), dh, pixel_format, TJFLAG_LIMITSCANS);
  if (rc != 0) {
    const bool warning = tjGetErrorCode(tj) == TJERR_WARNING;
    const std::string msg = tjGetErrorStr2(tj);
    if (IsJpegOutOfMemory(msg)) {
      ResetThreadTj();
      out->out_of_memory = "libjpeg: " + msg;
      return;
    }
    const Issue issue = ClassifyJpegFailure(msg, warning, markers, data, size);
    ResetThreadTj();  // cheap, and only on damaged files: never reuse a handle that saw an error
    out->issues.push_back(issue);
    if (issue.severity == Severity::kError) {
      out->rgb.release();
      return;
    }
  }
  if (!opt.keep_pixels) return;
  if (direct) return;

  cv::Mat rgb = decoded;
  if (cmyk) {
    const bool last = orientation == 1 && stored_target == cv::Size(w, h);
    rgb = StageTarget(last, h, w, &Buffers().converted, out);
    CmykToRgb(decoded, &rgb);
  }
  Finish(rgb, orientation, stored_target, out);
}

#if YOLOCACHE_WITH_IMGCODECS
// OpenCV's IMREAD_COLOR depth rule: 16-bit samples keep their high byte.
void HighByte(const cv::Mat& src, cv::Mat* dst) {
  const int n = src.cols * src.channels();
  for (int y = 0; y < src.rows; ++y) {
    const uint16_t* s = src.ptr<uint16_t>(y);
    uint8_t* d = dst->ptr<uint8_t>(y);
    for (int i = 0; i < n; ++i) d[i] = static_cast<uint8_t>(s[i] >> 8);
  }
}
#endif

void DecodeOther(const uint8_t* data, size_t size, const DecodeOptions& opt, DecodedImage* out) {
  const ImageProbe probe = ProbeImage(data, size);
  const char* name = ImageFormatName(probe.format);
  switch (probe.format) {
    case ImageFormat::kUnknown: {
      static const char kHex[] = "0123456789abcdef";
      std::string head;
      for (size_t i = 0; i < size && i < 4; ++i) {
        head += kHex[data[i] >> 4];
        head += kHex[data[i] & 15];
      }
      out->issues.push_back(
          MakeIssue(ProblemCode::kUnsupportedFormat, "not a known image format (first bytes " + head + ")"));
      return;
    }
    case ImageFormat::kGif:
    case ImageFormat::kPfm:
    case ImageFormat::kHeif:
      out->issues.push_back(
          MakeIssue(ProblemCode::kUnsupportedFormat, std::string(name) + " images are not supported"));
      return;
    default: break;
  }
  if (probe.issue) {
    out->issues.push_back(*probe.issue);
    return;
  }
  // Every format that reaches the decoder has its size and sample layout in the probe (or an issue):
  // nothing is decoded without a bound.
  if (probe.width <= 0 || probe.height <= 0 || probe.bytes_per_pixel <= 0) {
    out->issues.push_back(MakeIssue(ProblemCode::kCorruptData, std::string(name) + " header gives no usable size"));
    return;
  }
  out->orig_w = static_cast<int>(std::min<int64_t>(probe.width, INT32_MAX));
  out->orig_h = static_cast<int>(std::min<int64_t>(probe.height, INT32_MAX));
  if (!WithinDecodeLimits(name, probe.width, probe.height, probe.bytes_per_pixel, opt, out)) return;
#if YOLOCACHE_WITH_IMGCODECS
  // cv::imdecode picks the first decoder whose signature check accepts the bytes. When the intended
  // one refuses a damaged header, GDAL ("DTED" at 140) or GDCM ("DICM" at 128) may claim the data
  // and decode it through a temporary file. Never hand such bytes over.
  if ((size >= 132 && std::memcmp(data + 128, "DICM", 4) == 0) ||
      (size >= 144 && std::memcmp(data + 140, "DTED", 4) == 0)) {
    if (probe.format == ImageFormat::kWebp || probe.format == ImageFormat::kBmp) {
      out->issues.push_back(MakeIssue(ProblemCode::kCorruptData, std::string(name) + " header is not valid"));
      return;
    }
  }
  cv::Mat m;
  try {
    const cv::Mat raw(1, static_cast<int>(size), CV_8U, const_cast<uint8_t*>(data));
    m = cv::imdecode(raw, cv::IMREAD_UNCHANGED);
  } catch (const cv::Exception& e) {
    if (e.code == cv::Error::StsNoMem) throw;  // out of memory, not a damaged file (DecodeImage)
    m.release();
  }
  if (m.empty() || m.dims != 2) {
    out->issues.push_back(MakeIssue(ProblemCode::kCorruptData, std::string(name) + " data could not be decoded"));
    return;
  }
  out->orig_h = m.rows;
  out->orig_w = m.cols;
  if (!opt.keep_pixels) return;

  const cv::Size target = ResizeTarget(m.rows, m.cols, opt.imgsz);
  const bool last = target == m.size();
  ThreadScratch& scratch = Buffers();
  cv::Mat m8;
  if (m.depth() == CV_8U) {
    m8 = m;
  } else if (m.depth() == CV_16U) {
    m8 = scratch.decoded.Get(m.rows, m.cols, CV_MAKETYPE(CV_8U, m.channels()));
    HighByte(m, &m8);
  } else if (m.depth() == CV_32F || m.depth() == CV_64F) {  // float TIFF/EXR-like data in [0, 1]
    m.convertTo(m8, CV_8U, 255.0);
  } else {
    out->issues.push_back(MakeIssue(ProblemCode::kUnsupportedFormat,
                                    std::string(name) + " sample type " + std::to_string(m.depth()) +
                                        " is not supported"));
    return;
  }
  cv::Mat rgb = StageTarget(last, m.rows, m.cols, &scratch.converted, out);
  switch (m8.channels()) {
    case 1: cv::cvtColor(m8, rgb, cv::COLOR_GRAY2RGB); break;
    case 3: cv::cvtColor(m8, rgb, cv::COLOR_BGR2RGB); break;
    case 4: cv::cvtColor(m8, rgb, cv::COLOR_BGRA2RGB); break;
    default:
      out->rgb.release();
      out->issues.push_back(MakeIssue(ProblemCode::kUnsupportedFormat,
                                      std::string(name) + " with " + std::to_string(m8.channels()) +
                                          " channels is not supported"));
      return;
  }
  Finish(rgb, 1, target, out);
#else
  out->issues.push_back(MakeIssue(ProblemCode::kUnsupportedFormat,
                                  std::string(name) + " needs OpenCV imgcodecs, which this build does not have"));
#endif
}

}  // namespace

bool DecodedImage::has_error() const {
  for (const Issue& i : issues) {
    if (i.severity == Severity::kError) return true;
  }
  return false;
}

cv::Size ResizeTarget(int h0, int w0, int imgsz) {
  if (imgsz <= 0 || h0 <= 0 || w0 <= 0) return cv::Size(w0, h0);
  const double r = static_cast<double>(imgsz) / std::max(h0, w0);
  if (r == 1.0) return cv::Size(w0, h0);
  const int w = std::min(static_cast<int>(std::ceil(w0 * r)), imgsz);
  const int h = std::min(static_cast<int>(std::ceil(h0 * r)), imgsz);
  return cv::Size(std::max(w, 1), std::max(h, 1));
}

void ApplyOrientation(const cv::Mat& src, int orientation, cv::Mat* dst) {
  switch (orientation) {
    case 2: cv::flip(src, *dst, 1); break;                                 // mirror left-right
    case 3: cv::flip(src, *dst, -1); break;                                // rotate 180
    case 4: cv::flip(src, *dst, 0); break;                                 // mirror top-bottom
    case 5: cv::transpose(src, *dst); break;                               // transpose
    case 6: cv::rotate(src, *dst, cv::ROTATE_90_CLOCKWISE); break;         // rotate 90 CW
    case 7: cv::rotate(src, *dst, cv::ROTATE_90_CLOCKWISE); cv::flip(*dst, *dst, 0); break;  // transverse
    case 8: cv::rotate(src, *dst, cv::ROTATE_90_COUNTERCLOCKWISE); break;  // rotate 90 CCW
    default: src.copyTo(*dst); break;
  }
}

bool DecoderHasImgcodecs() {
#if YOLOCACHE_WITH_IMGCODECS
  return true;
#else
  return false;
#endif
}

void DecodeImage(const uint8_t* data, size_t size, const DecodeOptions& options, DecodedImage* out) {
  out->issues.clear();
  out->out_of_memory.clear();
  out->orig_h = out->orig_w = 0;
  out->orientation = 1;
  out->format = SniffFormat(data, size);
  TrimOnExit trim;
  try {
    if (data == nullptr || size == 0) {
      out->issues.push_back(MakeIssue(ProblemCode::kEmptyFile, "file is empty"));
    } else if (out->format == ImageFormat::kJpeg) {
      DecodeJpeg(data, size, options, out);
    } else {
      DecodeOther(data, size, options, out);
    }
  } catch (const std::bad_alloc&) {
    out->out_of_memory = "std::bad_alloc";
  } catch (const cv::Exception& e) {
    if (e.code == cv::Error::StsNoMem) {
      out->out_of_memory = "OpenCV: " + e.err;
    } else {
      out->issues.push_back(MakeIssue(ProblemCode::kCorruptData, "decoder failed: " + e.err));
    }
  } catch (const std::exception& e) {
    out->issues.push_back(MakeIssue(ProblemCode::kCorruptData, std::string("decoder failed: ") + e.what()));
  }
  if (!out->out_of_memory.empty()) out->issues.clear();  // findings of an unfinished decode mean nothing
  if (!options.keep_pixels || out->has_error() || !out->out_of_memory.empty()) out->rgb.release();
}

DecodedImage DecodeImage(const uint8_t* data, size_t size, const DecodeOptions& options) {
  DecodedImage out;
  DecodeImage(data, size, options, &out);
  return out;
}

}  // namespace yc
