// Which convolution's output channels flow into which convolution's input, for the YOLOv8 and YOLO11
// detection graphs (trainer/model/yolov8.cc, yolo11.cc), and which of those outputs may lose channels
// without breaking a residual addition, a split or an attention head. Network slimming (train --sparsity)
// penalises exactly the BatchNorms of the prunable outputs, and `prune` removes channels only there, so the
// two agree by construction. Torch-free: the topology is read from module names and output widths
// (trainer/model/prune/channel_widths.h extracts them from a model), so it also describes a model that
// was already pruned.
//
//   ChannelGraph g = BuildChannelGraph(/*yolo11=*/false, widths);  // widths: "model.2.cv1" -> 32, ...
//   for (const ConvNode& n : g.convs) if (n.prunable) ...           // n.path + ".bn.weight" is its gamma
//
// Exempt (docs/TRAINER.md, "Sparsity training and pruning"), with the reason each node carries:
//  * the output of a Bottleneck with a shortcut (x + cv2(cv1(x))) and everything it is added to: the
//    C2f/C3k2 cv1 whose second half starts the chain (both halves: Ultralytics' C2f.forward chunks cv1's
//    output into two equal halves, so the halves are pruned by equal counts or not at all), each such
//    Bottleneck's cv2, and C3k's cv1 and Bottleneck cv2s;
//  * C2PSA's cv1 (split at a fixed width) and its attention (qkv is split per head; proj and ffn.1 are
//    added to their input): only the feed-forward's hidden ffn.0 is pruned inside C2PSA;
//  * depthwise convolutions (YOLO11's head, Attention.pe): channel j reads only input channel j, so they
//    follow their input's channels instead of choosing their own;
//  * the head's last 1x1 convolutions (box bins and class logits) have no BatchNorm and fixed outputs.
// Everything else is prunable: every Bottleneck's hidden cv1, the downsampling Convs, each block's fusing
// cv2/cv3, SPPF's cv1 and cv2, and the head's inner Convs; a removed channel is dropped from every
// consumer, through the Upsample/Concat layers and into the Detect head's inputs.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace yc::trainer {

// Channels [begin, begin + count) of `producer`'s output ("" is the input image), as numbered in the
// graph's widths.
struct ChannelSegment {
  std::string producer;
  int64_t begin = 0;
  int64_t count = 0;
};
using ChannelLayout = std::vector<ChannelSegment>;

struct ConvNode {
  std::string path;       // "model.2.cv1" (a Conv: .conv + .bn) or "model.22.cv2.0.2" (a bare Conv2d)
  bool has_bn = true;     // false: the head's last Conv2d (weight + bias)
  int64_t out = 0;        // output channels now
  bool prunable = false;  // its output channels may be removed (its BatchNorm gets the sparsity term)
  bool depthwise = false; // groups == channels: its outputs follow its input's (one per input channel)
  bool halves = false;    // consumed as two equal halves (C2f/C3k2 cv1): pruned by equal counts per half
  int stride = 1;         // its output's stride w.r.t. the image (FLOP counts at a given size)
  int layer = 0;          // index in `model`
  ChannelLayout inputs;   // its input channels, in order
  // Its input passes through this depthwise Conv first (YOLO11's class branch: DWConv 3x3 then Conv 1x1).
  // A channel removed there still had an output: the depthwise BatchNorm's response to 0 (beta - gamma *
  // mean / sqrt(var + eps), through SiLU), a constant this 1x1 Conv's BatchNorm mean absorbs when cut.
  std::string after_depthwise;
  std::string exempt;     // why it is not prunable (has_bn and !prunable)
};

struct ChannelGraph {
  std::vector<ConvNode> convs;               // in forward order
  const ConvNode* Find(const std::string& path) const;
};

// Kept output channels per producer path (ascending indices of its current outputs); a producer not
// listed keeps all of its channels.
using ChannelKeep = std::map<std::string, std::vector<int64_t>>;

// `widths`: every Conv's output width by path (its BatchNorm's size) and every bare Conv2d's (the head's
// last), as ConvWidths (channel_widths.h) gives them. A path the family's graph needs and `widths` lacks
// throws std::invalid_argument naming it (not a YOLOv8/YOLO11 detection model).
ChannelGraph BuildChannelGraph(bool yolo11, const std::map<std::string, int64_t>& widths);

// The total width of a layout.
int64_t LayoutWidth(const ChannelLayout& layout);

}  // namespace yc::trainer
