"""yolocache.build / verify / Cache: the CLI's --json reports as Python objects, and errors as exceptions."""
import json
import shutil

import pytest

import yolocache
from conftest import CACHE_IMGSZ, run_cli

TIMING = {"seconds", "images_per_second", "cache", "audit_report"}


def without(report, keys):
    return {k: v for k, v in report.items() if k not in keys}


def test_build_returns_the_cli_json_report(dataset, tmp_path):
    py = yolocache.build(dataset, tmp_path / "py.yc", imgsz=CACHE_IMGSZ, threads=2)
    cli = json.loads(run_cli("build", dataset, "-o", tmp_path / "cli.yc", "--imgsz", CACHE_IMGSZ, "--json").stdout)
    assert list(py) == list(cli)  # same fields, same order
    assert without(py, TIMING) == without(cli, TIMING)
    assert py["cache"] == str(tmp_path / "py.yc")
    assert py["splits"]["train"]["records"] == 40 and py["splits"]["val"]["records"] == 12


def test_verify_returns_the_cli_json_report(dataset, cache):
    for args, kwargs in (([cache], {}), ([cache, "--source", dataset], {"source": dataset}), ([dataset], {})):
        py = yolocache.verify(args[0], **kwargs)
        cli = json.loads(run_cli("verify", *args, "--json").stdout)
        assert py == cli
        assert py["ok"] is True


def test_verify_reports_a_corrupt_record(cache, tmp_path):
    broken = tmp_path / "broken.yc"
    shutil.copytree(cache, broken)
    shard = sorted(broken.glob("train-*.shard"))[0]
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF  # a byte in the middle of a record's pixels
    shard.write_bytes(bytes(data))
    report = yolocache.verify(broken)
    assert report["ok"] is False
    assert report["problems"] and all(p["code"] == "cache-corrupt" for p in report["problems"])
    assert any(shard.name in p["file"] for p in report["problems"])
    # Reading that record through the loader, with checksums on, raises naming the shard.
    loader = yolocache.Loader(yolocache.Cache(broken, verify_checksums=True), "train", batch=40, imgsz=CACHE_IMGSZ,
                              threads=2, hyp={"mosaic": 0.0})
    with pytest.raises(yolocache.Error, match=shard.name):
        list(loader)


def test_cache_exposes_records_names_and_labels(cache, dataset):
    c = yolocache.Cache(cache)
    assert c.splits == ["train", "val"]
    assert len(c) == c.records("train") + c.records("val") == 52
    assert c.names == ["circle", "rectangle", "triangle", "cross"]
    labels = c.labels("val")
    assert len(labels) == 12
    boxes = sum(len(lb["cls"]) for lb in labels)
    assert boxes == yolocache.verify(dataset)["splits"]["val"]["boxes"]
    for lb in labels:
        assert lb["cls"].shape == (len(lb["bboxes"]), 1) and lb["bboxes"].shape[1:] == (4,)
        assert ((lb["bboxes"] >= 0) & (lb["bboxes"] <= 1)).all()
        assert lb["im_file"].startswith(str(dataset.parent)) and lb["im_file"].endswith(".jpg")


def test_errors_raise_with_the_cpp_message(cache, tmp_path, dataset):
    with pytest.raises(FileNotFoundError, match="missing.yc: not a cache directory"):
        yolocache.Cache(tmp_path / "missing.yc")
    with pytest.raises(ValueError, match="no split 'nope'"):
        yolocache.Loader(cache, "nope")
    with pytest.raises(ValueError, match="batch"):
        yolocache.Loader(cache, batch=0)
    with pytest.raises(ValueError, match="mode"):
        yolocache.Loader(cache, mode="test")
    with pytest.raises(ValueError, match="unknown hyp 'mosiac'"):
        yolocache.Loader(cache, hyp={"mosiac": 1.0})
    with pytest.raises(ValueError, match="bgr must be a probability"):  # checked by the C++ options
        yolocache.Loader(cache, hyp={"bgr": 1.5})
    with pytest.raises(ValueError, match="backend"):
        yolocache.build(dataset, tmp_path / "x.yc", backend="tar")
    with pytest.raises(ValueError, match="inside"):  # a cache may never be written into the dataset
        yolocache.build(dataset, dataset.parent / "images" / "c.yc")
    loader = yolocache.Loader(cache, batch=8, imgsz=CACHE_IMGSZ, seed=1)
    with pytest.raises(ValueError, match="seed"):
        loader.load_state_dict(dict(yolocache.Loader(cache, batch=8, imgsz=CACHE_IMGSZ).state_dict(), epoch=2))
