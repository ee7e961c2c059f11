#include "trainer/eval/video_io.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

#include <opencv2/imgproc.hpp>
#if YOLOCACHE_WITH_VIDEOIO
#include <opencv2/videoio.hpp>
#endif

namespace yc::trainer {

namespace fs = std::filesystem;

bool IsVideoFile(const fs::path& path) {
  static const std::array<const char*, 12> kExt = {".mp4", ".avi", ".mov", ".mkv", ".webm", ".mpg",
                                                   ".mpeg", ".m4v", ".wmv", ".asf", ".ts", ".gif"};
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::find(kExt.begin(), kExt.end(), ext) != kExt.end();
}

const char* VideoOutputExtension() { return ".avi"; }

#if YOLOCACHE_WITH_VIDEOIO

bool VideoSupported() { return true; }

struct VideoReader::Impl {
  cv::VideoCapture cap;
};
struct VideoWriter::Impl {
  cv::VideoWriter out;
};

VideoReader::~VideoReader() = default;

Result<std::unique_ptr<VideoReader>> VideoReader::Open(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return Status::NotFound(Status::At(path.string(), "not a regular file"));
  std::unique_ptr<VideoReader> r(new VideoReader());
  r->impl_ = std::make_unique<Impl>();
  try {
    if (!r->impl_->cap.open(path.string(), cv::CAP_ANY) || !r->impl_->cap.isOpened()) {
      return Status::DataError(Status::At(path.string(), "cannot open the video (unknown container or codec)"));
    }
    const double fps = r->impl_->cap.get(cv::CAP_PROP_FPS);
    r->fps_ = fps > 0 && fps < 1000 ? fps : 30.0;
    r->frames_ = std::max(0, static_cast<int>(r->impl_->cap.get(cv::CAP_PROP_FRAME_COUNT)));
    r->size_ = cv::Size(static_cast<int>(r->impl_->cap.get(cv::CAP_PROP_FRAME_WIDTH)),
                        static_cast<int>(r->impl_->cap.get(cv::CAP_PROP_FRAME_HEIGHT)));
  } catch (const cv::Exception& e) {
    return Status::DataError(Status::At(path.string(), std::string("cannot open the video: ") + e.what()));
  }
  return r;
}

bool VideoReader::Next(cv::Mat* rgb) {
  cv::Mat bgr;
  try {
    if (!impl_->cap.read(bgr) || bgr.empty()) return false;
  } catch (const cv::Exception&) {
    return false;
  }
  if (bgr.channels() == 1) {
    cv::cvtColor(bgr, *rgb, cv::COLOR_GRAY2RGB);
  } else {
    cv::cvtColor(bgr, *rgb, cv::COLOR_BGR2RGB);
  }
  return true;
}

bool VideoReader::Skip(int n) {
  try {
    for (int i = 0; i < n; ++i) {
      if (!impl_->cap.grab()) return false;
    }
  } catch (const cv::Exception&) {
    return false;
  }
  return true;
}

VideoWriter::~VideoWriter() {
  if (impl_) impl_->out.release();  // then file_ removes the temp file unless committed
}

Result<std::unique_ptr<VideoWriter>> VideoWriter::Open(const fs::path& path, double fps, cv::Size size) {
  std::unique_ptr<VideoWriter> w(new VideoWriter());
  w->impl_ = std::make_unique<Impl>();
  w->path_ = path;
  // The temp name keeps .avi: OpenCV chooses the container by it, and opens the file by name (it is
  // ours: just created exclusively).
  YC_ASSIGN_OR_RETURN(OutputFile file, OutputFile::Create(path, VideoOutputExtension()));
  w->file_.emplace(std::move(file));
  try {
    if (!w->impl_->out.open(w->file_->temp_path().string(), cv::VideoWriter::fourcc('M', 'J', 'P', 'G'), fps, size, true)) {
      return Status::IOError(Status::At(path.string(), "cannot open the video for writing (MJPG/AVI)"));
    }
  } catch (const cv::Exception& e) {
    return Status::IOError(Status::At(path.string(), std::string("cannot open the video for writing: ") + e.what()));
  }
  return w;
}

Status VideoWriter::Write(const cv::Mat& rgb) {
  cv::Mat bgr;
  cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
  try {
    impl_->out.write(bgr);
  } catch (const cv::Exception& e) {
    return Status::IOError(Status::At(path_.string(), std::string("cannot write a frame: ") + e.what()));
  }
  return Status::OK();
}

Status VideoWriter::Close() {
  impl_->out.release();
  if (!file_) return Status::IOError(Status::At(path_.string(), "already closed"));
  Status st = file_->Commit();
  file_.reset();
  return st;
}

#else  // no videoio in this build

bool VideoSupported() { return false; }
struct VideoReader::Impl {};
struct VideoWriter::Impl {};
VideoReader::~VideoReader() = default;
VideoWriter::~VideoWriter() = default;

Result<std::unique_ptr<VideoReader>> VideoReader::Open(const fs::path& path) {
  return Status::Unsupported(Status::At(path.string(), "this build reads no video files (configure with OpenCV videoio: "
                                                       "install libopencv-videoio-dev and rebuild)"));
}
bool VideoReader::Next(cv::Mat*) { return false; }
bool VideoReader::Skip(int) { return false; }
Result<std::unique_ptr<VideoWriter>> VideoWriter::Open(const fs::path& path, double, cv::Size) {
  return Status::Unsupported(Status::At(path.string(), "this build writes no video files (OpenCV videoio missing)"));
}
Status VideoWriter::Write(const cv::Mat&) { return Status::Unsupported("no videoio"); }
Status VideoWriter::Close() { return Status::Unsupported("no videoio"); }

#endif

}  // namespace yc::trainer
