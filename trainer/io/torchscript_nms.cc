#include "trainer/io/torchscript_nms.h"

#include <cstdio>

namespace yc::trainer {

namespace {

// What TorchScript reads back as the same double.
std::string Literal(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // a float literal, not an int
  return s;
}

void Replace(std::string* text, const std::string& key, const std::string& value) {
  for (size_t at = text->find(key); at != std::string::npos; at = text->find(key, at + value.size())) {
    text->replace(at, key.size(), value);
  }
}

// NMSModel.forward, per image: the best class of each anchor, candidates with score > CONF, boxes divided
// by max(H, W) and (unless agnostic) shifted by their class, greedy NMS, the first MAX_DET kept rows.
// _nms is torchvision's CPU nms: a stable sort by descending score (tied scores keep anchor order, as
// its kernel sorts); each kept box suppresses every later unsuppressed one whose IoU with it exceeds the
// threshold (the IoU in the boxes' dtype, compared in double as the kernel does). Stopping at MAX_DET
// kept boxes gives the same rows as NMSModel's nms(...)[:max_det]. Module::define resolves `torch.` to
// ATen operators only (no torch.long and other attributes), hence new_zeros for typed tensors.
constexpr const char* kSource = R"(
def _nms(self, boxes: Tensor, scores: Tensor) -> Tensor:
    order = scores.sort(stable=True, dim=0, descending=True)[1]
    x1 = boxes[:, 0]
    y1 = boxes[:, 1]
    x2 = boxes[:, 2]
    y2 = boxes[:, 3]
    areas = (x2 - x1) * (y2 - y1)
    keep = order.new_zeros([MAX_DET])
    n = 0
    while order.numel() > 0 and n < MAX_DET:
        i = order[0]
        keep[n] = i
        n += 1
        rest = order[1:]
        w = (torch.minimum(x2[i], x2[rest]) - torch.maximum(x1[i], x1[rest])).clamp(min=0.0)
        h = (torch.minimum(y2[i], y2[rest]) - torch.maximum(y1[i], y1[rest])).clamp(min=0.0)
        inter = w * h
        ovr = inter / (areas[i] + areas[rest] - inter)
        order = rest[torch.logical_not(ovr.double() > IOU)]
    return keep[:n]

def forward(self, images: Tensor) -> Tensor:
    pred = self.detect(images).transpose(-1, -2)
    boxes = pred[:, :, :4]
    best = pred[:, :, 4:].max(-1)
    scores = best[0]
    classes = best[1].to(pred.dtype)
    side = float(max(images.shape[2], images.shape[3]))
    out = pred.new_zeros([pred.shape[0], MAX_DET, 6])
    for b in range(pred.shape[0]):
        mask = scores[b] > CONF
        box = boxes[b][mask]
        score = scores[b][mask]
        cls = classes[b][mask]
        nmsbox = box / side
        if CLASS_OFFSET:
            nmsbox = nmsbox + cls.unsqueeze(1)
        keep = self._nms(nmsbox, score)
        dets = torch.cat([box[keep], score[keep].unsqueeze(1), cls[keep].unsqueeze(1)], 1)
        out[b, :dets.shape[0]] = dets
    return out
)";

}  // namespace

std::string TorchScriptNmsSource(const TorchScriptNms& nms) {
  std::string src = kSource;
  Replace(&src, "MAX_DET", std::to_string(nms.max_det));
  Replace(&src, "IOU", Literal(nms.iou));
  Replace(&src, "CONF", Literal(nms.conf));
  Replace(&src, "CLASS_OFFSET", nms.agnostic ? "False" : "True");
  return src;
}

}  // namespace yc::trainer
