#!/usr/bin/env bash
# The Python package's GPU benchmark (issue 15), one run, figures side by side (prints only):
#   bench/python_loader_gpu.sh BUILD_DIR COCO128_DIR WORKDIR [EPOCHS]
# BUILD_DIR must hold the Python module (bench/gpu_host_build.sh with the host's python3, which has pip
# torch and pip pybind11):
#   TARGETS="yolocache yolocache_python" bash bench/gpu_host_build.sh -DYOLOCACHE_PYTHON=$(command -v python3)
# Data: coco128 x40 (bench/coco128_x40.sh), 640, batch 64, AMP, 16 threads/workers, close_mosaic 0, no val.
#   1-3. Ultralytics yolov8n (../shared/ultralytics, YOLO_OFFLINE=1) with its own loader, with ours
#        (yolocache.ultralytics.DetectionTrainer) and with one batch already in memory (its step ceiling):
#        train img/s and nvidia-smi dmon SM busy % over the same window (from the 10th batch on).
#   4.   A plain loop consuming yolocache.Loader (and with the pinned H2D copy) vs `yolocache bench`.
# Goals: ours >= 0.9 x the ceiling; the plain loop >= 0.95 x `yolocache bench`.
set -euo pipefail
build=$(realpath "$1") coco=$2 work=$3 epochs=${4:-3}
repo=$(cd "$(dirname "$0")/.." && pwd)
[ -f .gpu/activate.sh ] && . .gpu/activate.sh .gpu/sysroot  # the sysroot's libraries, as the build used
[ -d "$build/python/yolocache" ] || { echo "no Python module in $build (see the header)"; exit 2; }
mkdir -p "$work"
work=$(realpath "$work")
export PYTHONPATH="$build/python:$repo/../shared/ultralytics${PYTHONPATH:+:$PYTHONPATH}" YOLO_OFFLINE=1
export YOLOCACHE_DIR="$work/yolocache_dir" YOLO_CONFIG_DIR="$work/yolo_config"
python3 -c 'import torch, yolocache, ultralytics; print("torch", torch.__version__, "ultralytics", ultralytics.__version__)'
bash "$repo/bench/coco128_x40.sh" "$coco" "$work/data"
echo "== cache for the plain loop and yolocache bench (the trainer builds its own in \$YOLOCACHE_DIR, first run)"
"$build/tools/yolocache" build "$work/data/data.yaml" -o "$work/cache" --imgsz 640 | tail -2
for loader in ${LOADERS:-own yolocache ceiling}; do
  echo "== Ultralytics yolov8n, $epochs epochs, loader: $loader"
  python3 "$repo/bench/python_loader_gpu.py" ultralytics --loader "$loader" --data "$work/data/data.yaml" \
      --epochs "$epochs" --out "$work" 2>&1 | tee "$work/ultralytics_$loader.log" | grep -E "^RESULT|Error|error" || true
done
echo "== plain PyTorch loop over yolocache.Loader vs yolocache bench (train, 640, batch 64, 16 threads)"
python3 "$repo/bench/python_loader_gpu.py" plain --cache "$work/cache" --batches 300 | grep '^RESULT' | tee "$work/plain.log"
python3 "$repo/bench/python_loader_gpu.py" plain --cache "$work/cache" --batches 300 --cuda | grep '^RESULT' | tee -a "$work/plain.log"
"$build/tools/yolocache" bench "$work/cache" --threads 16 --batch 64 --batches 300 --no-checksum --json \
    | python3 -c 'import json,sys; j=json.load(sys.stdin); print("RESULT", json.dumps({"run": "yolocache-bench", "images_per_second": j["images_per_second"]}))' \
    | tee -a "$work/plain.log"
echo "== summary"
python3 "$repo/bench/python_loader_gpu.py" summary "$work"/ultralytics_*.log "$work/plain.log"
