// Internal to ONNX export: each function appends the ONNX nodes that compute one trainer/model block's
// forward (inference, BatchNorm already folded: trainer/model/fuse.h) and returns its output's name.
// Node and initializer names follow the module paths ("/model.2/cv1/conv/Conv", "model.2.cv1.conv.weight")
// as torch.onnx names them. Shapes are never baked in: reshapes take their sizes from Shape nodes, so the
// same graph serves static and dynamic export.
#pragma once

#include <string>
#include <vector>

#include "trainer/io/onnx/graph_builder.h"
#include "trainer/model/blocks.h"
#include "trainer/model/blocks_yolo11.h"
#include "trainer/model/detect.h"

namespace yc::trainer::onnx_export {

std::string EmitConv(GraphBuilder& g, const std::string& path, ConvImpl& m, const std::string& x);
std::string EmitConv2d(GraphBuilder& g, const std::string& path, torch::nn::Conv2dImpl& m, const std::string& x);
std::string EmitBottleneck(GraphBuilder& g, const std::string& path, BottleneckImpl& m, const std::string& x);
std::string EmitC2f(GraphBuilder& g, const std::string& path, C2fImpl& m, const std::string& x);
std::string EmitC3k(GraphBuilder& g, const std::string& path, C3kImpl& m, const std::string& x);
std::string EmitC3k2(GraphBuilder& g, const std::string& path, C3k2Impl& m, const std::string& x);
std::string EmitSPPF(GraphBuilder& g, const std::string& path, SPPFImpl& m, const std::string& x);
std::string EmitC2PSA(GraphBuilder& g, const std::string& path, C2PSAImpl& m, const std::string& x);
std::string EmitUpsample2x(GraphBuilder& g, const std::string& path, const std::string& x);
std::string EmitConcat(GraphBuilder& g, const std::string& path, const std::vector<std::string>& xs);
// The head in export mode: (B, 4 + nc, A) xywh pixel boxes (x1y1x2y2 with `xyxy`, as Ultralytics' Detect
// for an nms export) and sigmoid scores from the three levels.
std::string EmitDetect(GraphBuilder& g, const std::string& path, DetectImpl& m, const std::vector<std::string>& xs,
                       bool xyxy = false);

}  // namespace yc::trainer::onnx_export
