#!/usr/bin/env bash
# The GPU benchmarks' dataset: coco128 train replicated x40 (5120 images, symlinks) for training and the
# 128 originals for val, with data.yaml. Does nothing when OUT/data.yaml exists. COPIES (default 40)
# sets the replica count (bench/larger_than_ram.sh uses 282: 36,096 images, a 32 GB cache at 640).
#   bench/coco128_x40.sh COCO128_DIR OUT [COPIES]
set -euo pipefail
coco=$1 out=$2 copies=${3:-40}
[ -f "$out/data.yaml" ] && exit 0
mkdir -p "$out/images/train" "$out/labels/train" "$out/images/val" "$out/labels/val"
for k in $(seq -w 1 "$copies"); do
  for f in "$coco"/images/train2017/*.jpg; do
    b=$(basename "$f" .jpg)
    ln -sf "$(realpath "$f")" "$out/images/train/r${k}_$b.jpg"
    [ -f "$coco/labels/train2017/$b.txt" ] && ln -sf "$(realpath "$coco/labels/train2017/$b.txt")" "$out/labels/train/r${k}_$b.txt"
  done
done
for f in "$coco"/images/train2017/*.jpg; do
  b=$(basename "$f" .jpg)
  ln -sf "$(realpath "$f")" "$out/images/val/$b.jpg"
  [ -f "$coco/labels/train2017/$b.txt" ] && ln -sf "$(realpath "$coco/labels/train2017/$b.txt")" "$out/labels/val/$b.txt"
done
{ echo "path: $(realpath "$out")"; echo "train: images/train"; echo "val: images/val"; sed -n '/^names:/,$p' "$coco/coco128.yaml"; } > "$out/data.yaml"
