#!/usr/bin/env bash
# Issue 28's GPU-host figures, all in one call on one VM: `yolocache.YOLO('yolo11n.yaml').train(...)` from
# Python against `yolocache-train train` (the CLI) and against Ultralytics' `YOLO('yolo11n.yaml').train(...)`,
# with the same Ultralytics arguments on the same data:
#   bench/python_yolo_gpu.sh BUILD_DIR ULTRALYTICS_SRC WORKDIR [EPOCHS]
# RUNS (environment, default "cli py ultralytics"): the runs to make now, so that one VM can take them in
# two device calls; the summary is printed once all three run folders are under WORKDIR/runs.
# Data: `yolocache synth` (4 classes, 5120 train / 256 val images, 320-640 px). Settings and the img/s
# measure: bench/python_yolo_gpu.py. The CLI runs first and builds the cache the Python run then reads
# (one cache folder for both); neither's results.csv time includes the build.
set -euo pipefail
build=$(realpath "$1") ultra=$(realpath "$2") work=$3 epochs=${4:-4}
repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/bench/gpu_env.sh" "$repo"
mkdir -p "$work"
work=$(realpath "$work")
export YOLOCACHE_CACHE_DIR="$work/caches" YOLO_OFFLINE=1 YOLO_CONFIG_DIR="$work/yolo_config" PYTHONUNBUFFERED=1
[ -f "$work/synth/data.yaml" ] || "$build/tools/yolocache" synth "$work/synth" --train 5120 --val 256 --seed 3 | tail -1
data=$work/synth/data.yaml
runs=${RUNS:-cli py ultralytics}
if [[ " $runs " == *" cli "* ]]; then
echo "== yolocache-train (CLI)"
"$build/tools/yolocache-train" train data="$data" model=yolo11n.yaml epochs="$epochs" imgsz=640 batch=64 workers=16 \
    close_mosaic=0 val=False plots=False seed=0 amp=True device=0 project="$work/runs" name=cli exist_ok=True 2>&1 | tail -3
fi
if [[ " $runs " == *" py "* ]]; then
echo "== yolocache.YOLO (Python)"
PYTHONPATH="$build/python" python3 "$repo/bench/python_yolo_gpu.py" train yolocache --data "$data" --epochs "$epochs" \
    --project "$work/runs" --name py 2>&1 | tail -3
fi
if [[ " $runs " == *" ultralytics "* ]]; then
echo "== Ultralytics YOLO"
PYTHONPATH="$ultra" python3 "$repo/bench/python_yolo_gpu.py" train ultralytics --data "$data" --epochs "$epochs" \
    --project "$work/runs" --name ultralytics 2>&1 | tail -3
fi
for r in cli py ultralytics; do [ -f "$work/runs/$r/results.csv" ] || exit 0; done
python3 "$repo/bench/python_yolo_gpu.py" summary "$work/runs/cli" "$work/runs/py" "$work/runs/ultralytics" --images 5120
