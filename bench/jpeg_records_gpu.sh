#!/usr/bin/env bash
# Issue 30's loader figures on the GPU host, all rows one run on one VM: coco128 x40 (5120 images) at 640
# cached raw, JPEG (default quality 90) and auto, then `yolocache bench` on each at 2 and 16 threads in both
# orders; the size on disk of each cache and the img/s of each cell, and jpeg / raw per cell.
#   bench/jpeg_records_gpu.sh BUILD_DIR COCO128_DIR WORKDIR [BATCHES]
# PARTS (environment, default "loader"): "loader" is the above; "train:EPOCHS" trains yolov8n EPOCHS epochs on
# the raw and on the jpeg cache (Ultralytics' recipe: close_mosaic 10, validation every epoch, batch 64, 640,
# AMP, seed 0) and prints each run's rates (bench/run_rates.py) and the mAP50-95 of jpeg minus raw.
set -euo pipefail
build=$(realpath "$1") coco=$(realpath "$2") work=$3 batches=${4:-40}
repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/bench/gpu_env.sh" "$repo"
mkdir -p "$work"
work=$(realpath "$work")
bash "$repo/bench/coco128_x40.sh" "$coco" "$work/x40"
parts=${PARTS:-loader}
codecs="none jpeg"
[[ " $parts " == *" loader "* ]] && codecs="none jpeg auto"
for c in $codecs; do
  [ -f "$work/c_$c/manifest.json" ] && continue
  start=$SECONDS
  "$build/tools/yolocache" build "$work/x40/data.yaml" -o "$work/c_$c" --imgsz 640 --compress "$c" -j 16 >/dev/null
  echo "RESULT build $c: $((SECONDS - start)) s, $(du -sm "$work/c_$c" | cut -f1) MiB on disk"
done
for part in $parts; do
  [[ $part == train:* ]] || continue
  epochs=${part#train:}
  for c in none jpeg; do
    "$build/tools/yolocache-train" train --data "$work/c_$c" --model yolov8n --epochs "$epochs" --batch 64 --imgsz 640 \
        --device cuda --amp --seed 0 --val-every 1 --out "$work/runs/v8n_$c" --exist-ok > "$work/v8n_$c.log" 2>&1 ||
        { tail -5 "$work/v8n_$c.log"; exit 1; }
    python3 "$repo/bench/run_rates.py" "$work/v8n_$c.log" --label "yolov8n $epochs epochs, $c records"
  done
  python3 - "$work" <<'PY'
import re, sys
def map5095(codec):
    rows = [l for l in open(f"{sys.argv[1]}/v8n_{codec}.log") if re.match(r"^epoch \d+:", l)]
    return float(re.search(r"mAP50-95 ([\d.]+)", rows[-1])[1])
raw, jpeg = map5095("none"), map5095("jpeg")
print(f"RESULT yolov8n last epoch mAP50-95, each on its own val records: raw {raw:.4f}, jpeg {jpeg:.4f}: {jpeg - raw:+.4f}")
PY
  # Both best.pt on the same val images, the raw records, so only the training pixels differ.
  for c in none jpeg; do
    "$build/tools/yolocache-train" val --weights "$work/runs/v8n_$c/weights/best.pt" --data "$work/c_none" --device cuda \
        --json > "$work/val_$c.json" 2> "$work/val_$c.err" || { tail -3 "$work/val_$c.err"; exit 1; }
  done
  python3 - "$work" <<'PY'
import json, sys
raw, jpeg = (json.load(open(f"{sys.argv[1]}/val_{c}.json"))["mAP50-95"] for c in ("none", "jpeg"))
print(f"RESULT yolov8n best.pt on the raw val records: trained on raw {raw:.4f}, on jpeg {jpeg:.4f}: {jpeg - raw:+.4f} (goal within 0.005)")
PY
done
[[ " $parts " == *" loader "* ]] || exit 0
for threads in 2 16; do
  for order in shuffle windowed; do
    line="threads $threads, $order:"
    raw=""
    for c in $codecs; do
      ips=$("$build/tools/yolocache" bench "$work/c_$c" --threads "$threads" --batches "$batches" --order "$order" \
            --no-checksum --profile-samples 0 --json | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["images_per_second"]))')
      [ -z "$raw" ] && raw=$ips
      line+=$(python3 -c "print(f'  $c $ips img/s ({$ips / $raw:.2f} of raw)')")
    done
    echo "RESULT $line"
  done
done
