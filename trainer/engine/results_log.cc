#include "trainer/engine/results_log.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#if YOLOCACHE_WITH_IMGCODECS
#include <opencv2/imgcodecs.hpp>
#elif YOLOCACHE_WITH_LIBPNG
#include <png.h>
#endif

#include "libcache/mapped_file.h"

namespace yc::trainer {

namespace fs = std::filesystem;

namespace {

constexpr int kColumns = 15;

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// One field of a row: empty text = missing value.
bool ParseField(const std::string& text, double* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  *out = std::strtod(text.c_str(), &end);
  return end != nullptr && *end == '\0';
}

std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

Status WriteTextAtomic(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) return Status::IOError(Status::At(tmp.string(), "cannot write"));
  }
  YC_RETURN_IF_ERROR(SyncPath(tmp));
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return Status::IOError(Status::At(path.string(), "rename failed: " + ec.message()));
  return Status::OK();
}

}  // namespace

std::string ResultsCsvHeader() {
  return "epoch,time,train/box_loss,train/cls_loss,train/dfl_loss,metrics/precision(B),metrics/recall(B),"
         "metrics/mAP50(B),metrics/mAP50-95(B),val/box_loss,val/cls_loss,val/dfl_loss,lr/pg0,lr/pg1,lr/pg2";
}

std::string FormatResultsRow(const EpochRecord& r) {
  std::string s = std::to_string(r.epoch) + "," + Num(r.time);
  for (double v : r.train_loss) s += "," + Num(v);
  for (double v : {r.precision, r.recall, r.map50, r.map50_95}) s += "," + (r.validated ? Num(v) : std::string());
  for (double v : r.val_loss) s += "," + (r.has_val_loss ? Num(v) : std::string());
  for (double v : r.lr) s += "," + Num(v);
  return s;
}

Result<std::vector<EpochRecord>> ReadResultsCsv(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(Status::At(path.string(), "cannot open"));
  std::vector<EpochRecord> out;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (lineno == 1) {
      if (line != ResultsCsvHeader()) return Status::DataError(Status::At(path.string(), "line 1: unexpected header"));
      continue;
    }
    if (line.empty()) continue;
    const auto cells = SplitCsv(line);
    auto bad = [&](const std::string& why) {
      return Status::DataError(Status::At(path.string(), "line " + std::to_string(lineno) + ": " + why));
    };
    if (static_cast<int>(cells.size()) != kColumns) return bad("expected " + std::to_string(kColumns) + " columns");
    EpochRecord r;
    double v = 0;
    if (!ParseField(cells[0], &v) || v < 1 || v != std::floor(v)) return bad("bad epoch");
    r.epoch = static_cast<int>(v);
    if (!ParseField(cells[1], &r.time)) return bad("bad time");
    for (int k = 0; k < 3; ++k) {
      if (!ParseField(cells[2 + k], &r.train_loss[k])) return bad("bad train loss");
    }
    double m[4];
    int present = 0;
    for (int k = 0; k < 4; ++k) present += ParseField(cells[5 + k], &m[k]) ? 1 : 0;
    if (present != 0 && present != 4) return bad("partial metrics");
    if (present == 4) {
      r.validated = true;
      r.precision = m[0];
      r.recall = m[1];
      r.map50 = m[2];
      r.map50_95 = m[3];
    }
    present = 0;
    for (int k = 0; k < 3; ++k) present += ParseField(cells[9 + k], &r.val_loss[k]) ? 1 : 0;
    if (present != 0 && present != 3) return bad("partial val losses");
    r.has_val_loss = present == 3;
    for (int k = 0; k < 3; ++k) {
      if (!ParseField(cells[12 + k], &r.lr[k])) return bad("bad lr");
    }
    out.push_back(r);
  }
  return out;
}

Result<std::unique_ptr<ResultsLog>> ResultsLog::Open(const fs::path& csv, int keep_epochs) {
  std::unique_ptr<ResultsLog> log(new ResultsLog());
  log->path_ = csv;
  std::error_code ec;
  if (csv.has_parent_path()) {
    fs::create_directories(csv.parent_path(), ec);
    if (ec) return Status::IOError(Status::At(csv.parent_path().string(), ec.message()));
  }
  if (keep_epochs >= 0 && fs::exists(csv, ec)) {
    Result<std::vector<EpochRecord>> old = ReadResultsCsv(csv);
    if (!old.ok()) return old.status();
    for (const EpochRecord& r : *old) {
      if (r.epoch <= keep_epochs) log->records_.push_back(r);
    }
  }
  std::string text = ResultsCsvHeader() + "\n";
  for (const EpochRecord& r : log->records_) text += FormatResultsRow(r) + "\n";
  YC_RETURN_IF_ERROR(WriteTextAtomic(csv, text));
  return log;
}

Status ResultsLog::Append(const EpochRecord& record) {
  std::ofstream out(path_, std::ios::binary | std::ios::app);
  out << FormatResultsRow(record) << "\n";
  out.flush();
  if (!out) return Status::IOError(Status::At(path_.string(), "cannot append"));
  records_.push_back(record);
  return Status::OK();
}

const char* ResultsPlotEncoder() {
#if YOLOCACHE_WITH_IMGCODECS
  return "opencv-imgcodecs";
#elif YOLOCACHE_WITH_LIBPNG
  return "libpng";
#else
  return "none";
#endif
}

namespace {

struct Panel {
  const char* title;
  std::function<bool(const EpochRecord&, double*)> value;  // false: no value this epoch
};

// One panel: frame, title, y range labels, first/last epoch on x, the series as a line with markers.
void DrawPanel(cv::Mat& img, cv::Rect area, const Panel& panel, const std::vector<EpochRecord>& records) {
  const cv::Scalar black(0, 0, 0), grey(200, 200, 200), line(180, 119, 31);  // BGR: matplotlib C0 blue
  const int font = cv::FONT_HERSHEY_SIMPLEX;
  cv::putText(img, panel.title, {area.x + 8, area.y + 18}, font, 0.45, black, 1, cv::LINE_AA);
  const cv::Rect plot(area.x + 52, area.y + 28, area.width - 64, area.height - 56);
  cv::rectangle(img, plot, grey, 1);
  std::vector<std::pair<double, double>> pts;
  for (const EpochRecord& r : records) {
    double v = 0;
    if (panel.value(r, &v) && std::isfinite(v)) pts.emplace_back(r.epoch, v);
  }
  if (pts.empty()) {
    cv::putText(img, "no data", {plot.x + plot.width / 2 - 28, plot.y + plot.height / 2}, font, 0.4, grey, 1, cv::LINE_AA);
    return;
  }
  double x0 = pts.front().first, x1 = pts.back().first;
  double y0 = pts.front().second, y1 = y0;
  for (const auto& p : pts) {
    y0 = std::min(y0, p.second);
    y1 = std::max(y1, p.second);
  }
  if (x1 <= x0) x1 = x0 + 1;
  if (y1 - y0 < 1e-12) {
    const double pad = std::max(std::abs(y0) * 0.05, 1e-3);
    y0 -= pad;
    y1 += pad;
  }
  auto map = [&](const std::pair<double, double>& p) {
    const double fx = (p.first - x0) / (x1 - x0), fy = (p.second - y0) / (y1 - y0);
    return cv::Point(plot.x + static_cast<int>(std::lround(fx * (plot.width - 1))),
                     plot.y + plot.height - 1 - static_cast<int>(std::lround(fy * (plot.height - 1))));
  };
  std::vector<cv::Point> poly;
  for (const auto& p : pts) poly.push_back(map(p));
  cv::polylines(img, poly, false, line, 2, cv::LINE_AA);
  for (const cv::Point& p : poly) cv::circle(img, p, 3, line, cv::FILLED, cv::LINE_AA);
  auto label = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", v);
    return std::string(buf);
  };
  cv::putText(img, label(y1), {area.x + 2, plot.y + 10}, font, 0.35, black, 1, cv::LINE_AA);
  cv::putText(img, label(y0), {area.x + 2, plot.y + plot.height}, font, 0.35, black, 1, cv::LINE_AA);
  cv::putText(img, label(x0), {plot.x, plot.y + plot.height + 16}, font, 0.35, black, 1, cv::LINE_AA);
  const std::string last = label(x1);
  cv::putText(img, last, {plot.x + plot.width - 8 * static_cast<int>(last.size()), plot.y + plot.height + 16}, font,
              0.35, black, 1, cv::LINE_AA);
}

#if YOLOCACHE_WITH_LIBPNG
Status WritePngLibpng(const cv::Mat& bgr, const fs::path& path) {
  cv::Mat rgb;
  cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return Status::IOError(Status::At(path.string(), "cannot open for writing"));
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (png == nullptr || info == nullptr) {
    png_destroy_write_struct(&png, nullptr);
    std::fclose(f);
    return Status::IOError(Status::At(path.string(), "libpng initialisation failed"));
  }
  std::vector<png_bytep> rows(static_cast<size_t>(rgb.rows));
  for (int y = 0; y < rgb.rows; ++y) rows[static_cast<size_t>(y)] = rgb.ptr<png_byte>(y);
  if (setjmp(png_jmpbuf(png))) {  // libpng reports errors by longjmp
    png_destroy_write_struct(&png, &info);
    std::fclose(f);
    return Status::IOError(Status::At(path.string(), "libpng failed to write"));
  }
  png_init_io(png, f);
  png_set_IHDR(png, info, static_cast<png_uint_32>(rgb.cols), static_cast<png_uint_32>(rgb.rows), 8, PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  png_write_image(png, rows.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  if (std::fclose(f) != 0) return Status::IOError(Status::At(path.string(), "cannot close"));
  return Status::OK();
}
#endif

}  // namespace

Status WriteResultsPlot(const std::vector<EpochRecord>& records, const fs::path& png) {
  const std::vector<Panel> panels = {
      {"train/box_loss", [](const EpochRecord& r, double* v) { return *v = r.train_loss[0], true; }},
      {"train/cls_loss", [](const EpochRecord& r, double* v) { return *v = r.train_loss[1], true; }},
      {"train/dfl_loss", [](const EpochRecord& r, double* v) { return *v = r.train_loss[2], true; }},
      {"metrics/precision(B)", [](const EpochRecord& r, double* v) { return *v = r.precision, r.validated; }},
      {"metrics/recall(B)", [](const EpochRecord& r, double* v) { return *v = r.recall, r.validated; }},
      {"val/box_loss", [](const EpochRecord& r, double* v) { return *v = r.val_loss[0], r.has_val_loss; }},
      {"val/cls_loss", [](const EpochRecord& r, double* v) { return *v = r.val_loss[1], r.has_val_loss; }},
      {"val/dfl_loss", [](const EpochRecord& r, double* v) { return *v = r.val_loss[2], r.has_val_loss; }},
      {"metrics/mAP50(B)", [](const EpochRecord& r, double* v) { return *v = r.map50, r.validated; }},
      {"metrics/mAP50-95(B)", [](const EpochRecord& r, double* v) { return *v = r.map50_95, r.validated; }},
  };
  constexpr int kPanelW = 320, kPanelH = 280;
  cv::Mat img(2 * kPanelH, 5 * kPanelW, CV_8UC3, cv::Scalar(255, 255, 255));
  for (size_t i = 0; i < panels.size(); ++i) {
    const int col = static_cast<int>(i % 5), row = static_cast<int>(i / 5);
    DrawPanel(img, cv::Rect(col * kPanelW, row * kPanelH, kPanelW, kPanelH), panels[i], records);
  }
  const fs::path tmp = png.string() + ".tmp.png";
  std::error_code ec;
#if YOLOCACHE_WITH_IMGCODECS
  std::vector<uint8_t> bytes;
  try {
    if (!cv::imencode(".png", img, bytes)) return Status::IOError(Status::At(png.string(), "PNG encoding failed"));
  } catch (const cv::Exception& e) {
    return Status::IOError(Status::At(png.string(), std::string("PNG encoding failed: ") + e.what()));
  }
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) return Status::IOError(Status::At(tmp.string(), "cannot write"));
  }
#elif YOLOCACHE_WITH_LIBPNG
  YC_RETURN_IF_ERROR(WritePngLibpng(img, tmp));
#else
  (void)tmp;
  return Status::Unsupported(Status::At(png.string(), "no PNG encoder in this build (neither OpenCV imgcodecs nor libpng)"));
#endif
#if YOLOCACHE_WITH_IMGCODECS || YOLOCACHE_WITH_LIBPNG
  fs::rename(tmp, png, ec);
  if (ec) return Status::IOError(Status::At(png.string(), "rename failed: " + ec.message()));
  return Status::OK();
#endif
}

}  // namespace yc::trainer
