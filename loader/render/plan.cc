#include "loader/render/plan.h"

namespace yc {

namespace {

// Ultralytics BaseMixTransform: `if random.uniform(0, 1) > p: skip`. p = 0 never fires.
bool Fires(Rng& rng, double p) {
  const double u = rng.Uniform(0, 1);
  return p > 0 && !(u > p);
}

SubPlan DrawSub(Rng& rng, uint64_t record, const PartnerDomain& n, const AugmentHyp& hyp, bool closed, int imgsz) {
  SubPlan p;
  p.record = record;
  p.mosaic = Fires(rng, closed ? 0.0 : hyp.mosaic);
  if (p.mosaic) {
    for (uint64_t& partner : p.partners) partner = n.Draw(rng);
    p.centre = DrawMosaicCentre(rng, imgsz);
  }
  p.affine = DrawPerspective(rng, hyp);
  return p;
}

}  // namespace

TrainPlan DrawTrainPlan(Rng& rng, uint64_t record, const PartnerDomain& n, const AugmentHyp& hyp, bool closed, int imgsz) {
  TrainPlan t;
  t.main = DrawSub(rng, record, n, hyp, closed, imgsz);
  t.mixup = Fires(rng, closed ? 0.0 : hyp.mixup);
  if (t.mixup) {
    const uint64_t other = n.Draw(rng);
    t.mix = DrawSub(rng, other, n, hyp, closed, imgsz);
    t.mix_ratio = DrawMixupRatio(rng);
  }
  t.hsv = DrawHsvGains(rng, hyp);
  t.flip = DrawFlips(rng, hyp.flipud, hyp.fliplr);
  t.bgr = DrawBgr(rng, hyp.bgr);  // last: the draws before it are the same whatever bgr is
  return t;
}

void DrawCutMixPlan(Rng& rng, const PartnerDomain& n, const AugmentHyp& hyp, bool closed, int imgsz, TrainPlan* t) {
  t->cutmix = Fires(rng, closed ? 0.0 : hyp.cutmix);
  if (!t->cutmix) return;
  t->cut = DrawSub(rng, n.Draw(rng), n, hyp, closed, imgsz);
  // The train output is imgsz x imgsz whenever cutmix can fire (rect batches turn it off).
  t->cut_draw = DrawCutMix(rng, imgsz, imgsz);
}

}  // namespace yc
