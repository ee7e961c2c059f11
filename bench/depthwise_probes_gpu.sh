#!/usr/bin/env bash
# Issue 29: where yolo11's first-step cost lives, one process per mode (bench/depthwise_warmup_gpu.py):
#   bash bench/depthwise_probes_gpu.sh [MODE...]     (default: cudnn cudnn_thread cudnn_det native)
# cudnn: first calls and steady ms of seven depthwise shapes on cuDNN; cudnn_thread: each shape first on
# another thread, then here (PyTorch keeps cuDNN plans per thread); cudnn_det: cudnn.deterministic (Ultralytics'
# default), which drops the non-deterministic engines before plans are built; native: PyTorch's own kernel.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
for mode in "${@:-cudnn cudnn_thread cudnn_det native}"; do
  for m in $mode; do
    PYTHONUNBUFFERED=1 timeout 60 python3 "$here/depthwise_warmup_gpu.py" "$m" 2>&1 | grep -E "^DW" || echo "DW $m: failed"
  done
done
