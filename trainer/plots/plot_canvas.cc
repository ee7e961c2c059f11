#include "trainer/plots/plot_canvas.h"

#include <algorithm>
#include <cmath>
#include <mutex>

#if YOLOCACHE_WITH_PLPLOT
#include <plplot.h>
#endif

namespace yc::trainer {

const Rgb& Tab10(int i) {
  static const Rgb kTab10[10] = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44},  {214, 39, 40},   {148, 103, 189},
                                 {140, 86, 75},  {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207}};
  return kTab10[((i % 10) + 10) % 10];
}

namespace {
std::mutex& PlplotMutex() {
  static std::mutex m;
  return m;
}
}  // namespace

struct PlotCanvas::State {
  std::unique_lock<std::mutex> lock;
  std::vector<uint8_t> buffer;
  int width = 0, height = 0;
  bool open = false;
  double wx0 = 0, wx1 = 1, wy0 = 0, wy1 = 1;  // the current panel's world window
};

PlotCanvas::PlotCanvas() : s_(std::make_unique<State>()) {}
PlotCanvas::~PlotCanvas() { Finish(); }

const char* PlotCanvas::Driver() {
#if YOLOCACHE_WITH_PLPLOT
  static const char* driver = [] {
    // plgFileDevs lists the file drivers PLplot can load; memcairo comes with plplot-driver-cairo.
    const char* menus[128];
    const char* devs[128];
    const char** pm = menus;
    const char** pd = devs;
    int n = 128;
    plgFileDevs(&pm, &pd, &n);
    for (int i = 0; i < n; ++i) {
      if (std::string(devs[i]) == "memcairo") return "memcairo";
    }
    return "mem";
  }();
  return driver;
#else
  return "none";
#endif
}

#if YOLOCACHE_WITH_PLPLOT

Status PlotCanvas::Begin(int width, int height, int cols, int rows) {
  if (width < 16 || height < 16) return Status::InvalidArgument("plot: figure too small");
  s_->lock = std::unique_lock<std::mutex>(PlplotMutex());
  s_->width = width;
  s_->height = height;
  s_->buffer.assign(static_cast<size_t>(width) * height * 3, 255);
  PLINT stream = 0;
  plmkstrm(&stream);
  plsstrm(stream);
  plsdev(Driver());
  plscolbg(255, 255, 255);
  plsmem(width, height, s_->buffer.data());
  plssub(cols, rows);
  plsetopt("quiet", "");  // the plain mem driver would announce its software fills on stderr
  plinit();
  plfontld(1);
  s_->open = true;
  return Status::OK();
}

void PlotCanvas::Color(const Rgb& c) {
  plscol0(15, c[0], c[1], c[2]);
  plcol0(15);
}

void PlotCanvas::Panel(int k, std::array<double, 2> x, std::array<double, 2> y, const std::string& xlabel,
                       const std::string& ylabel, const std::string& title, bool grid, bool square, bool x_numbers) {
  pladv(k);
  plschr(0, 0.75);
  if (square) {
    plvasp(1.0);
  } else {
    plvpor(0.19, 0.95, 0.14, 0.88);  // room on the left for 5-digit tick labels
  }
  plwind(x[0], x[1], y[0], y[1]);
  s_->wx0 = x[0], s_->wx1 = x[1], s_->wy0 = y[0], s_->wy1 = y[1];
  plwidth(0.5);
  if (grid) {
    Color({220, 220, 220});
    plbox("g", 0, 0, "g", 0, 0);
  }
  Color({0, 0, 0});
  plwidth(1.0);
  plbox(x_numbers ? "bcnst" : "bcst", 0, 0, "bcnstv", 0, 0);
  pllab(xlabel.c_str(), ylabel.c_str(), title.c_str());
}

void PlotCanvas::PanelIn(std::array<double, 4> vp, std::array<double, 2> x, std::array<double, 2> y,
                         const std::string& xlabel, const std::string& ylabel, const std::string& title) {
  pladv(1);
  plschr(0, 0.75);
  plvpor(vp[0], vp[1], vp[2], vp[3]);
  plwind(x[0], x[1], y[0], y[1]);
  s_->wx0 = x[0], s_->wx1 = x[1], s_->wy0 = y[0], s_->wy1 = y[1];
  plwidth(0.5);
  Color({220, 220, 220});
  plbox("g", 0, 0, "g", 0, 0);
  Color({0, 0, 0});
  plwidth(1.0);
  plbox("bcnst", 0, 0, "bcnstv", 0, 0);
  pllab(xlabel.c_str(), ylabel.c_str(), title.c_str());
}

void PlotCanvas::LegendBeside(std::array<double, 4> vp, const std::vector<LegendItem>& items) {
  if (items.empty()) return;
  // Rows of a fixed height from the top; the box ends below the last one.
  const double row = 0.045;  // of the figure height
  const double height = std::min(vp[3] - vp[2], row * (static_cast<double>(items.size()) + 0.6));
  plvpor(vp[0], vp[1], vp[3] - height, vp[3]);
  plwind(0, 1, 0, 1);
  s_->wx0 = 0, s_->wx1 = 1, s_->wy0 = 0, s_->wy1 = 1;
  Color({204, 204, 204});
  plwidth(1.0);
  plbox("bc", 0, 0, "bc", 0, 0);
  const double step = row / height;
  for (size_t i = 0; i < items.size(); ++i) {
    const double y = 1.0 - step * (static_cast<double>(i) + 0.8);
    Line({0.04, 0.16}, {y, y}, items[i].color, items[i].width);
    Text(0.20, y - 0.04 * step, items[i].label, {0, 0, 0}, 0.85, 0.0);
  }
}

void PlotCanvas::XTickLabel(double x, const std::string& text) {
  Color({0, 0, 0});
  // plmtex writes outside the viewport (plptex there would be clipped); smaller, so long names fit.
  plschr(0, 0.6);
  plmtex("bv", 0.8, (x - s_->wx0) / (s_->wx1 - s_->wx0), 1.0, text.c_str());
  plschr(0, 0.75);
}

void PlotCanvas::Frame() {
  Color({0, 0, 0});
  plwidth(1.0);
  plbox("bcnst", 0, 0, "bcnstv", 0, 0);
}

void PlotCanvas::BlankPanel(int k, std::array<double, 2> x, std::array<double, 2> y) {
  pladv(k);
  plschr(0, 0.75);
  plvpor(0.02, 0.98, 0.02, 0.98);
  plwind(x[0], x[1], y[0], y[1]);
  s_->wx0 = x[0], s_->wx1 = x[1], s_->wy0 = y[0], s_->wy1 = y[1];
}

void PlotCanvas::Line(const std::vector<double>& x, const std::vector<double>& y, const Rgb& color, double width,
                      bool dotted) {
  const PLINT n = static_cast<PLINT>(std::min(x.size(), y.size()));
  if (n < 1) return;
  Color(color);
  plwidth(width);
  if (dotted) {
    PLINT mark = 1500, space = 1500;
    plstyl(1, &mark, &space);
  }
  plline(n, x.data(), y.data());
  if (dotted) plstyl(0, nullptr, nullptr);
  plwidth(1.0);
}

void PlotCanvas::Points(const std::vector<double>& x, const std::vector<double>& y, const Rgb& color) {
  const PLINT n = static_cast<PLINT>(std::min(x.size(), y.size()));
  if (n < 1) return;
  Color(color);
  plssym(0, 0.6);
  plpoin(n, x.data(), y.data(), 17);  // filled circle of the Hershey set
}

void PlotCanvas::Rect(double x1, double y1, double x2, double y2, const Rgb& fill) {
  const PLFLT xs[4] = {x1, x2, x2, x1}, ys[4] = {y1, y1, y2, y2};
  Color(fill);
  plfill(4, xs, ys);
}

void PlotCanvas::RectOutline(double x1, double y1, double x2, double y2, const Rgb& color, double width) {
  const PLFLT xs[5] = {x1, x2, x2, x1, x1}, ys[5] = {y1, y1, y2, y2, y1};
  Color(color);
  plwidth(width);
  plline(5, xs, ys);
  plwidth(1.0);
}

void PlotCanvas::Text(double x, double y, const std::string& text, const Rgb& color, double scale, double just,
                      double angle) {
  Color(color);
  plschr(0, 0.75 * scale);
  const double a = angle * M_PI / 180.0;
  // plptex's direction is in world units; scale it by the window's aspect so `angle` is on-screen.
  const double dx = std::cos(a) * (s_->wx1 - s_->wx0), dy = std::sin(a) * (s_->wy1 - s_->wy0);
  plptex(x, y, dx, dy, just, text.c_str());
  plschr(0, 0.75);
}

void PlotCanvas::LegendEntry(int row, const std::string& label, const Rgb& color, double width, bool bottom_left) {
  const double w = s_->wx1 - s_->wx0, h = s_->wy1 - s_->wy0;
  const double x0 = bottom_left ? s_->wx0 + 0.04 * w : s_->wx0 + 0.50 * w;
  const double y = bottom_left ? s_->wy0 + (0.05 + 0.055 * row) * h : s_->wy1 - (0.06 + 0.055 * row) * h;
  Line({x0, x0 + 0.07 * w}, {y, y}, color, width);
  Text(x0 + 0.09 * w, y - 0.012 * h, label, {0, 0, 0}, 0.85, 0.0);
}

cv::Mat PlotCanvas::Finish() {
  if (!s_->open) return {};
  plend1();
  s_->open = false;
  cv::Mat out = cv::Mat(s_->height, s_->width, CV_8UC3, s_->buffer.data()).clone();
  if (s_->lock.owns_lock()) s_->lock.unlock();
  return out;
}

#else  // no PLplot: every figure is skipped

Status PlotCanvas::Begin(int, int, int, int) {
  return Status::Unsupported("plots need PLplot (libplplot-dev); this build has none");
}
void PlotCanvas::Color(const Rgb&) {}
void PlotCanvas::Panel(int, std::array<double, 2>, std::array<double, 2>, const std::string&, const std::string&,
                       const std::string&, bool, bool, bool) {}
void PlotCanvas::PanelIn(std::array<double, 4>, std::array<double, 2>, std::array<double, 2>, const std::string&,
                         const std::string&, const std::string&) {}
void PlotCanvas::LegendBeside(std::array<double, 4>, const std::vector<LegendItem>&) {}
void PlotCanvas::XTickLabel(double, const std::string&) {}
void PlotCanvas::Frame() {}
void PlotCanvas::BlankPanel(int, std::array<double, 2>, std::array<double, 2>) {}
void PlotCanvas::Line(const std::vector<double>&, const std::vector<double>&, const Rgb&, double, bool) {}
void PlotCanvas::Points(const std::vector<double>&, const std::vector<double>&, const Rgb&) {}
void PlotCanvas::Rect(double, double, double, double, const Rgb&) {}
void PlotCanvas::RectOutline(double, double, double, double, const Rgb&, double) {}
void PlotCanvas::Text(double, double, const std::string&, const Rgb&, double, double, double) {}
void PlotCanvas::LegendEntry(int, const std::string&, const Rgb&, double, bool) {}
cv::Mat PlotCanvas::Finish() { return {}; }

#endif

}  // namespace yc::trainer
