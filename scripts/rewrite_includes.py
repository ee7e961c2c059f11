#!/usr/bin/env python3
"""Rewrites references to the pre-regrouping paths of loader/ and libcache/ files (issue 26) to their
stage folders: #include lines, CMake lists, comments and docs. Idempotent; run on a tree or on files.
Usage: scripts/rewrite_includes.py [ROOT_OR_FILES...]   (default: the repository root)
"""
import pathlib
import re
import sys

MOVES = {
    # loader/: base -> kernels -> ops -> order -> render -> io -> face -> measure
    "loader/rng": "loader/base/rng", "loader/geometry": "loader/base/geometry", "loader/simd": "loader/base/simd",
    "loader/core_clock": "loader/base/core_clock", "loader/worker_stats": "loader/base/worker_stats",
    "loader/canvas_warp": "loader/kernels/canvas_warp", "loader/separable_resample": "loader/kernels/separable_resample",
    "loader/resample_avx512": "loader/kernels/resample_avx512", "loader/hsv_kernel": "loader/kernels/hsv_kernel",
    "loader/hsv_simd": "loader/kernels/hsv_simd", "loader/hsv_avx2": "loader/kernels/hsv_avx2",
    "loader/hsv_avx512": "loader/kernels/hsv_avx512",
    "loader/load_image": "loader/ops/load_image", "loader/mosaic": "loader/ops/mosaic",
    "loader/random_perspective": "loader/ops/random_perspective", "loader/letterbox": "loader/ops/letterbox",
    "loader/mixup": "loader/ops/mixup", "loader/flip": "loader/ops/flip", "loader/hsv": "loader/ops/hsv",
    "loader/format": "loader/ops/collate",
    "loader/sampler": "loader/order/sampler", "loader/window_order": "loader/order/window_order",
    "loader/launch_walk": "loader/order/launch_walk", "loader/rect_batches": "loader/order/rect_batches",
    "loader/plan": "loader/render/plan", "loader/sample_inputs": "loader/render/inputs",
    "loader/sample_processor": "loader/render/processor", "loader/fast_path": "loader/render/fast_path",
    "loader/reference_path": "loader/render/reference_path", "loader/val_path": "loader/render/val_path",
    "loader/train_geometry": "loader/render/train_geometry",
    "loader/io_queue": "loader/io/io_queue", "loader/read_ahead": "loader/io/read_ahead",
    "loader/window_stage": "loader/io/window_stage", "loader/staged_window": "loader/io/staged_window",
    "loader/throughput": "loader/measure/throughput", "loader/order_stats": "loader/measure/order_stats",
    "loader/stage_profile": "loader/measure/stage_profile", "loader/decoding_source": "loader/measure/decoding_source",
    "loader/draw": "loader/measure/draw",
    # libcache/: base -> format -> source -> store -> cache -> verify, build -> report_json
    "libcache/status": "base/status",
    "libcache/coding": "libcache/base/coding", "libcache/path_text": "libcache/base/path_text",
    "libcache/path_json": "libcache/base/path_json", "libcache/file_read": "libcache/base/file_read",
    "libcache/mapped_file": "libcache/base/mapped_file", "libcache/direct_file": "libcache/base/direct_file",
    "libcache/pid_files": "libcache/base/pid_files", "libcache/output_file": "libcache/base/output_file",
    "libcache/thread_limit": "libcache/base/thread_limit", "libcache/verified_bits": "libcache/base/verified_bits",
    "libcache/box": "libcache/base/box",
    "libcache/record_format": "libcache/format/record_format", "libcache/shard_format": "libcache/format/shard_format",
    "libcache/manifest": "libcache/format/manifest",
    "libcache/dataset_spec": "libcache/source/dataset_spec", "libcache/discover": "libcache/source/discover",
    "libcache/labels": "libcache/source/labels", "libcache/image_format": "libcache/source/image_format",
    "libcache/exif": "libcache/source/exif", "libcache/decode": "libcache/source/decode",
    "libcache/audit": "libcache/source/audit", "libcache/problem": "libcache/source/problem",
    "libcache/synth": "libcache/source/synth", "libcache/jpeg_encode": "libcache/source/jpeg_encode",
    "libcache/yaml_bounds": "libcache/source/yaml_bounds",
    "libcache/shard_writer": "libcache/store/shard_writer", "libcache/shard_reader": "libcache/store/shard_reader",
    "libcache/lmdb_store": "libcache/store/lmdb_store",
    "libcache/cache_verify": "libcache/verify/cache_verify", "libcache/shard_verify": "libcache/verify/shard_verify",
    "libcache/lmdb_verify": "libcache/verify/lmdb_verify",
    "libcache/builder": "libcache/build/builder", "libcache/prepare_cache": "libcache/build/prepare_cache",
    "libcache/source_diff": "libcache/build/source_diff", "libcache/atomic_dir": "libcache/build/atomic_dir",
    "libcache/output_guard": "libcache/build/output_guard",
}
# "loader/ops/collate.h", "loader/ops/collate.cc" or "loader/ops/collate.{h,cc}", not preceded by a path character
# (so tests/loader/... and already-moved paths stay as they are).
PATTERN = re.compile(r"(?<![\w/.-])(" + "|".join(re.escape(k) for k in sorted(MOVES, key=len, reverse=True)) +
                     r")(\.h|\.cc|\.\{h,cc\}|\.\{cc,h\})(?![\w])")
SUFFIXES = {".h", ".cc", ".py", ".md", ".txt", ".cmake", ".sh", ".cpp", ".json", ".yaml"}


def rewrite(path):
    text = path.read_text(errors="surrogateescape")
    new = PATTERN.sub(lambda m: MOVES[m.group(1)] + m.group(2), text)
    if new != text:
        path.write_text(new, errors="surrogateescape")
        return True
    return False


def files_under(root):
    skip = {".git", "out", "node_modules"}
    for p in root.rglob("*"):
        parts = p.relative_to(root).parts
        if any(part in skip for part in parts[:-1]) or parts[0].startswith("build"):  # not libcache/build/
            continue
        if p.is_file() and (p.suffix in SUFFIXES or p.name == "CMakeLists.txt"):
            yield p


def main():
    targets = [pathlib.Path(a) for a in sys.argv[1:]] or [pathlib.Path(__file__).resolve().parent.parent]
    changed = 0
    for t in targets:
        for f in (files_under(t) if t.is_dir() else [t]):
            changed += rewrite(f)
    print(f"{changed} file(s) rewritten")


if __name__ == "__main__":
    main()
