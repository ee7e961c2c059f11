// Every random decision for one train sample, drawn up front in Ultralytics' order, before any
// pixel is touched: mosaic probability, the three partners, centre yc then xc, the perspective
// draws (perspective, degrees, scale, shear x then y, translate x then y), mixup probability (and,
// if it fires, the mix partner and its own mosaic/affine draws, then Beta(32,32)), HSV gains,
// flipud, fliplr, then Format's bgr. The draws do not depend on image sizes, so a plan is a pure function of the RNG.
// CutMix (after MixUp in Ultralytics' order) draws from a stream of its own (RngStream::kCutMix), and
// only when its probability is above 0, so that every other draw, and with it every batch of a run
// without cutmix, stays what it was before the option existed.
#pragma once

#include <array>
#include <cstdint>

#include "loader/base/rng.h"
#include "loader/ops/channel_order.h"
#include "loader/ops/cutmix.h"
#include "loader/ops/flip.h"
#include "loader/ops/hsv.h"
#include "loader/ops/mixup.h"
#include "loader/ops/mosaic.h"
#include "loader/ops/random_perspective.h"
#include "loader/options.h"
#include "loader/order/partner_domain.h"

namespace yc {

// One Mosaic(or LetterBox) + RandomPerspective sample.
struct SubPlan {
  uint64_t record = 0;
  bool mosaic = false;
  std::array<uint64_t, 3> partners{};  // TR, BL, BR tiles; uniform over the PartnerDomain
  MosaicCentre centre;
  PerspectiveDraw affine;
};

struct TrainPlan {
  SubPlan main;
  bool mixup = false;
  SubPlan mix;
  double mix_ratio = 1.0;  // weight of `main` in the blend
  bool cutmix = false;
  SubPlan cut;        // the CutMix partner: its own mosaic/affine sample
  CutMixDraw cut_draw;  // its candidate areas, in the unflipped imgsz x imgsz output
  HsvGains hsv;
  FlipDraw flip;
  bool bgr = false;  // the image goes out in BGR order (Ultralytics' bgr hyperparameter)
};

// `partners`: the records Mosaic/MixUp partners come from (the split's size for the default order).
// `closed`: close_mosaic or rect batches are in force (mosaic and mixup probabilities are 0, their
// draws still happen).
TrainPlan DrawTrainPlan(Rng& rng, uint64_t record, const PartnerDomain& partners, const AugmentHyp& hyp, bool closed,
                        int imgsz);
// Adds the CutMix draws to *plan from `rng` (the sample's kCutMix stream): whether it fires (never
// when `closed`), the partner and its mosaic/affine draws, then the areas. Call only with hyp.cutmix > 0.
void DrawCutMixPlan(Rng& rng, const PartnerDomain& partners, const AugmentHyp& hyp, bool closed, int imgsz,
                    TrainPlan* plan);

}  // namespace yc
