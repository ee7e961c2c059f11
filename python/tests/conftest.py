"""Shared fixtures: the build tree (YOLOCACHE_BUILD, default <repo>/build, which must hold the built
python/yolocache package, tools/yolocache and python/yolocache_dump_batches) and one small synthetic
dataset with its cache, made once per session by the `yolocache` CLI."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("YOLOCACHE_BUILD", REPO / "build")).resolve()
sys.path.insert(0, str(BUILD / "python"))

CACHE_IMGSZ = 160  # small records keep every test to a fraction of a second


def run_cli(*args, check=True):
    return subprocess.run([str(BUILD / "tools" / "yolocache"), *map(str, args)], capture_output=True, text=True,
                          check=check)


@pytest.fixture(scope="session")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("synth")
    run_cli("synth", root / "data", "--train", 40, "--val", 12, "--min-side", 96, "--max-side", 240)
    return root / "data" / "data.yaml"


@pytest.fixture(scope="session")
def cache(dataset, tmp_path_factory):
    out = tmp_path_factory.mktemp("cache") / "synth.yc"
    run_cli("build", dataset, "-o", out, "--imgsz", CACHE_IMGSZ)
    return out
