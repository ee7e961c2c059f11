// Video files for `yolocache-train predict` through OpenCV videoio (Debian: libopencv-videoio-dev),
// optional at configure time (YOLOCACHE_WITH_VIDEOIO): without it Open fails with Unsupported, naming the
// file and what to install. Frames are RGB (CV_8UC3) on both sides. The writer produces Motion-JPEG AVI,
// as Ultralytics does on Linux, into a temp file of our own (libcache/base/output_file.h: created with
// O_EXCL|O_NOFOLLOW beside the output) renamed over the output on Close: a run that stops early never
// leaves a half-written video under the final name, and a link or FIFO of that name is refused.
//
//   Result<std::unique_ptr<VideoReader>> in = VideoReader::Open("clip.mp4");
//   Result<std::unique_ptr<VideoWriter>> out = VideoWriter::Open("runs/detect/predict/clip.avi", (*in)->fps(), size);
//   cv::Mat rgb;
//   while ((*in)->Next(&rgb)) { ...; YC_RETURN_IF_ERROR((*out)->Write(rgb)); }
//   YC_RETURN_IF_ERROR((*out)->Close());
#pragma once

#include <filesystem>
#include <memory>
#include <optional>

#include <opencv2/core.hpp>

#include "base/status.h"
#include "libcache/base/output_file.h"

namespace yc::trainer {

// Whether the path's extension names a video container (.mp4, .avi, .mov, .mkv, .webm, .mpg, .mpeg,
// .m4v, .wmv, .asf, .ts, .gif: Ultralytics' VID_FORMATS).
bool IsVideoFile(const std::filesystem::path& path);
// Whether this build can read and write videos.
bool VideoSupported();
// The output extension of written videos (".avi").
const char* VideoOutputExtension();

class VideoReader {
 public:
  static Result<std::unique_ptr<VideoReader>> Open(const std::filesystem::path& path);
  ~VideoReader();
  // The next frame as RGB; false at the end of the stream.
  bool Next(cv::Mat* rgb);
  // Passes over n frames without decoding them (VideoCapture::grab); false when the stream ended first.
  bool Skip(int n);
  double fps() const { return fps_; }
  int frame_count() const { return frames_; }  // as the container states it (may be 0: unknown)
  cv::Size size() const { return size_; }

 private:
  VideoReader() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  double fps_ = 30;
  int frames_ = 0;
  cv::Size size_;
};

class VideoWriter {
 public:
  static Result<std::unique_ptr<VideoWriter>> Open(const std::filesystem::path& path, double fps, cv::Size size);
  ~VideoWriter();  // without Close: the temp file is removed
  Status Write(const cv::Mat& rgb);
  // Finishes the file and renames it to its name.
  Status Close();

 private:
  VideoWriter() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::filesystem::path path_;
  std::optional<OutputFile> file_;  // the temp file; removed unless Close commits it
};

}  // namespace yc::trainer
