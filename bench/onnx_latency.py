#!/usr/bin/env python3
"""ONNX latency with onnxruntime's Python binding on the CPU, batch 1: bench/onnx_latency.js for machines
that have the Python package rather than node (the GPU host's image holds onnxruntime 1.30.0, the version
scripts/install-deps.sh installs for node here). The same measurement and the same JSON line per model:

    python3 bench/onnx_latency.py [--runs N] [--threads T] MODEL.onnx...

5 untimed runs, then N (default 50) timed runs of one zero image at the model's input size; the median and
the 10th/90th percentiles in ms. --threads 0 (default): onnxruntime's own choice (one per physical core).
"""
import argparse
import json
import time

import numpy as np
import onnxruntime as ort


def latency(path, runs, threads):
    options = ort.SessionOptions()
    if threads > 0:
        options.intra_op_num_threads = threads
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    meta = session.get_inputs()[0]
    dims = meta.shape if all(isinstance(d, int) for d in meta.shape) else [1, 3, 640, 640]
    dtype = np.float16 if meta.type == "tensor(float16)" else np.float32
    feeds = {meta.name: np.zeros(dims, dtype=dtype)}
    for _ in range(5):
        session.run(None, feeds)
    ms = []
    for _ in range(runs):
        t = time.perf_counter_ns()
        session.run(None, feeds)
        ms.append((time.perf_counter_ns() - t) / 1e6)
    ms.sort()
    q = lambda p: ms[min(len(ms) - 1, int(p * len(ms)))]
    return {"model": path, "input": dims, "runs": runs, "median_ms": q(0.5), "p10_ms": q(0.1), "p90_ms": q(0.9)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("models", nargs="+")
    a = parser.parse_args()
    if a.runs <= 0:
        parser.error("--runs must be > 0")
    for m in a.models:
        print(json.dumps(latency(m, a.runs, a.threads)), flush=True)


if __name__ == "__main__":
    main()
