#!/usr/bin/env bash
# Issue 29's CUDA-graph figures on the GPU host, all in one call on one VM (prints only):
#   bench/cuda_graphs_gpu.sh BUILD_DIR COCO128_DIR WORKDIR [EPOCHS] [MODELS]
# Per model (default "yolov8n yolo11n"), batch 64, 640, AMP, coco128 x40 (bench/coco128_x40.sh):
# 1. `ceiling` on 8 real label tables with --cuda-graphs off, then on;
# 2. `train` EPOCHS (default 6) epochs with --cuda-graphs off, then on (close_mosaic 0, val every epoch);
#    per epoch: img/s over the epoch's wall time (results.csv `time`, validation included). The first 3
#    epochs are warm-up (Ultralytics' warmup_epochs 3), which runs eagerly in both.
set -euo pipefail
build=$(realpath "$1") coco=$(realpath "$2") work=$3 epochs=${4:-6} models=${5:-yolov8n yolo11n}
repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/bench/gpu_env.sh" "$repo"
mkdir -p "$work"
work=$(realpath "$work")
bash "$repo/bench/coco128_x40.sh" "$coco" "$work/x40"
[ -f "$work/c_none/manifest.json" ] || "$build/tools/yolocache" build "$work/x40/data.yaml" -o "$work/c_none" --imgsz 640 -j 16 >/dev/null
for model in $models; do
  for g in off on; do
    echo "RESULT $model ceiling, --cuda-graphs $g: $("$build/tools/yolocache-train" ceiling --model "$model" --data "$work/c_none" \
        --batch 64 --imgsz 640 --device cuda --amp --synthetic-iters 60 --cuda-graphs "$g" --json |
        python3 -c 'import json,sys; j=json.load(sys.stdin); print(round(j["images_per_second"]), "img/s, graphs", j["cuda_graphs"])')"
  done
  for g in off on; do
    run="$work/runs/${model}_graphs_$g"
    "$build/tools/yolocache-train" train --data "$work/c_none" --model "$model" --epochs "$epochs" --batch 64 --imgsz 640 \
        --device cuda --amp --close-mosaic 0 --cuda-graphs "$g" --out "$run" --exist-ok 2>&1 | grep -E "cuda graphs|^Error|error:" || true
    python3 - "$run/results.csv" "$model" "$g" <<'PY'
import csv, sys
rows = [{k.strip(): v.strip() for k, v in r.items()} for r in csv.DictReader(open(sys.argv[1]))]
t = [float(r["time"]) for r in rows]
per = [5120 / (b - a) for a, b in zip([0.0] + t, t)]
print(f"RESULT {sys.argv[2]} train, --cuda-graphs {sys.argv[3]}: img/s per epoch", " ".join(f"{v:.0f}" for v in per),
      f"| mAP50-95 {float(rows[-1]['metrics/mAP50-95(B)']):.4f}")
PY
  done
done
