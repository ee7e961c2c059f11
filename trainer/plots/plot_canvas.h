// A PLplot figure rendered into memory (the cairo memory driver `memcairo`, antialiased, from Debian's
// plplot-driver-cairo; else PLplot's plain `mem` driver) and handed back as an RGB cv::Mat, which
// image_file.h encodes. Built only when CMake found PLplot (YOLOCACHE_WITH_PLPLOT, pkg-config `plplot`);
// otherwise Begin fails with Unsupported and the callers skip their pictures with one message.
//
// PLplot keeps its streams in process-wide state, so one figure is drawn at a time (a mutex held from
// Begin to Finish); callers run on the trainer's background writer, off the training loop.
//
//   PlotCanvas c;
//   YC_RETURN_IF_ERROR(c.Begin(1200, 600, /*cols=*/2, /*rows=*/1));
//   c.Panel(1, {0, 10}, {0, 1}, "epoch", "", "metrics/mAP50(B)");
//   c.Line(x, y, kBlue, 2.0);
//   cv::Mat rgb = c.Finish();
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "base/status.h"

namespace yc::trainer {

using Rgb = std::array<int, 3>;

// Matplotlib's tab10 colours, which Ultralytics' plots use.
const Rgb& Tab10(int i);

class PlotCanvas {
 public:
  PlotCanvas();
  ~PlotCanvas();
  PlotCanvas(const PlotCanvas&) = delete;
  PlotCanvas& operator=(const PlotCanvas&) = delete;

  // Starts a white figure of width x height pixels split into cols x rows panels.
  Status Begin(int width, int height, int cols = 1, int rows = 1);
  // Selects panel k (1-based, row-major), sets its viewport and world coordinates, draws the grid, the
  // ticked box and the axis titles. `square`: equal scales on both axes.
  // `x_numbers` false: no numbers under the x axis (the caller names the ticks with XTickLabel).
  void Panel(int k, std::array<double, 2> x, std::array<double, 2> y, const std::string& xlabel,
             const std::string& ylabel, const std::string& title, bool grid = true, bool square = false,
             bool x_numbers = true);
  // Panel's grid, box and titles in an explicit viewport (normalised figure coordinates x0, x1, y0, y1)
  // of the whole figure, so that room is left beside it (a legend, a colour bar).
  void PanelIn(std::array<double, 4> viewport, std::array<double, 2> x, std::array<double, 2> y,
               const std::string& xlabel, const std::string& ylabel, const std::string& title);
  // A legend in its own box at `viewport` (normalised figure coordinates), beside the plot as
  // matplotlib's legend(bbox_to_anchor=(1.04, 1), loc="upper left"): one row per entry from the top, a
  // line of the entry's colour and width, then its label. The current panel is left for the legend's.
  struct LegendItem {
    std::string label;
    Rgb color;
    double width = 1.0;
  };
  void LegendBeside(std::array<double, 4> viewport, const std::vector<LegendItem>& items);
  // A label under the x axis at world x, written downwards (category names).
  void XTickLabel(double x, const std::string& text);
  // The current panel's box and ticks again (after filled cells covered them).
  void Frame();
  // A panel without axes (world 0..1 both ways) for images or text.
  void BlankPanel(int k, std::array<double, 2> x, std::array<double, 2> y);
  void Line(const std::vector<double>& x, const std::vector<double>& y, const Rgb& color, double width = 1.0,
            bool dotted = false);
  void Points(const std::vector<double>& x, const std::vector<double>& y, const Rgb& color);
  void Rect(double x1, double y1, double x2, double y2, const Rgb& fill);
  void RectOutline(double x1, double y1, double x2, double y2, const Rgb& color, double width = 1.0);
  // Text centred at (x, y) in world coordinates (just 0.5), or left-aligned (just 0), rotated by `angle` degrees.
  void Text(double x, double y, const std::string& text, const Rgb& color, double scale = 1.0, double just = 0.5,
            double angle = 0);
  // A legend line + label at row `row` of the top-right (or bottom-left) corner of the current panel.
  void LegendEntry(int row, const std::string& label, const Rgb& color, double width, bool bottom_left = false);
  // Ends the figure; the picture (CV_8UC3 RGB), empty when Begin failed.
  cv::Mat Finish();

  // "memcairo", "mem" or "none" (no PLplot in this build).
  static const char* Driver();

 private:
  void Color(const Rgb& c);
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace yc::trainer
