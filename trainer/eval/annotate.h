// The pictures `predict` saves, drawn as Ultralytics' Results.plot draws them with its OpenCV Annotator
// (ultralytics/engine/results.py plot, ultralytics/utils/plotting.py Annotator.box_label): each box a
// rectangle `line_width` thick, its label "name conf" (show_labels, show_conf) in a filled box above it
// (inside it when there is no room above, shifted left at the right edge), lowest confidence drawn
// first so the best box is on top. Not identical: the class colours are yolocache's own (ClassColor,
// loader/measure/draw.h), the text is always white, and names outside ASCII are drawn with OpenCV's
// Hershey font (Ultralytics switches to PIL with a Unicode font).
#pragma once

#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "trainer/eval/predictor.h"

namespace yc::trainer {

// Ultralytics' Annotator line width: `line_width` when > 0, else max(round((h + w + 3) / 2 * 0.003), 2)
// for an h x w x 3 image (Python's round: halves to even).
int AnnotatorLineWidth(int line_width, int height, int width);

// The label of one box, or "" for none: "<name> <conf, 2 decimals>" with show_conf, "<name>" without,
// "" without show_labels.
std::string BoxLabelText(const Detection& detection, const std::vector<std::string>& names, bool show_labels,
                         bool show_conf);

// Draws `detections` on `rgb` (CV_8UC3, in place) with the style of `options` (show_boxes off: nothing).
void DrawDetections(const std::vector<Detection>& detections, const std::vector<std::string>& names,
                    const PredictOptions& options, cv::Mat* rgb);

}  // namespace yc::trainer
