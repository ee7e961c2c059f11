#!/usr/bin/env bash
# Issue 30's loader figures on the GPU host, all rows one run on one VM: coco128 x40 (5120 images) at 640
# cached raw, JPEG (default quality 90) and auto, then `yolocache bench` on each at 2 and 16 threads in both
# orders; the size on disk of each cache and the img/s of each cell, and jpeg / raw per cell.
#   bench/jpeg_records_gpu.sh BUILD_DIR COCO128_DIR WORKDIR [BATCHES]
set -euo pipefail
build=$(realpath "$1") coco=$(realpath "$2") work=$3 batches=${4:-40}
repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/bench/gpu_env.sh" "$repo"
mkdir -p "$work"
work=$(realpath "$work")
bash "$repo/bench/coco128_x40.sh" "$coco" "$work/x40"
codecs="none jpeg auto"
for c in $codecs; do
  [ -f "$work/c_$c/manifest.json" ] && continue
  start=$SECONDS
  "$build/tools/yolocache" build "$work/x40/data.yaml" -o "$work/c_$c" --imgsz 640 --compress "$c" -j 16 >/dev/null
  echo "RESULT build $c: $((SECONDS - start)) s, $(du -sm "$work/c_$c" | cut -f1) MiB on disk"
done
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
