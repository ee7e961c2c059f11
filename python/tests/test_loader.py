"""yolocache.Loader: the C++ loader's batches, byte for byte, as Ultralytics' collate dicts."""
import struct
import subprocess
import threading
import time

import numpy as np
import pytest
import torch

import yolocache
from conftest import BUILD

IMGSZ = 128
BATCH = 8


def cpp_batches(cache, split, mode, threads, seed, epoch, tmp_path):
    """What the C++ loader itself produces (python/tests/dump_batches.cc), default hyperparameters."""
    out = tmp_path / f"{split}-{mode}-{epoch}.bin"
    subprocess.run([str(BUILD / "python" / "yolocache_dump_batches"), str(cache), split, mode, str(BATCH), str(IMGSZ),
                    str(threads), str(seed), str(epoch), str(out)], check=True)
    data, pos, batches = out.read_bytes(), 0, []
    while pos < len(data):
        size, h, w, n = struct.unpack_from("4i", data, pos)
        pos += 16
        labels = np.frombuffer(data, np.float32, n * 6, pos).reshape(n, 6)
        pos += n * 24
        img = np.frombuffer(data, np.uint8, size * 3 * h * w, pos).reshape(size, 3, h, w)
        pos += img.size
        shapes = np.frombuffer(data, np.int32, size * 2, pos).reshape(size, 2)
        pos += size * 8
        batches.append((img, labels, shapes))
    return batches


def assert_same_batches(a, b):
    assert len(a) == len(b) and len(a) > 0
    for x, y in zip(a, b):
        assert torch.equal(x["img"], y["img"])
        for key in ("cls", "bboxes", "batch_idx"):
            assert torch.equal(x[key], y[key]), key
        assert x["im_file"] == y["im_file"] and x["ratio_pad"] == y["ratio_pad"]


@pytest.mark.parametrize("mode,split,epoch", [("train", "train", 0), ("train", "train", 3), ("val", "val", 0)])
def test_batches_equal_the_cpp_loader(cache, tmp_path, mode, split, epoch):
    expected = cpp_batches(cache, split, mode, 2, 7, epoch, tmp_path)
    loader = yolocache.Loader(cache, split, mode=mode, batch=BATCH, imgsz=IMGSZ, threads=2, seed=7)
    loader.set_epoch(epoch)
    got = list(loader)
    assert len(got) == len(loader) == len(expected)
    for batch, (img, labels, shapes) in zip(got, expected):
        assert batch["img"].dtype == torch.uint8 and batch["img"].shape == img.shape
        assert np.array_equal(batch["img"].numpy(), img)
        n = len(labels)
        assert batch["batch_idx"].shape == (n,) and batch["cls"].shape == (n, 1) and batch["bboxes"].shape == (n, 4)
        assert np.array_equal(batch["batch_idx"].numpy(), labels[:, 0])
        assert np.array_equal(batch["cls"].numpy()[:, 0], labels[:, 1])
        assert np.array_equal(batch["bboxes"].numpy(), labels[:, 2:])
        assert [tuple(s) for s in shapes] == list(batch["ori_shape"])
        h, w = img.shape[2:]
        assert batch["resized_shape"] == ((h, w),) * len(img)
        assert len(batch["im_file"]) == len(batch["ratio_pad"]) == len(img)
    assert loader.epoch == epoch + 1  # a full pass moves on to the next epoch


def test_val_batches_carry_ultralytics_ratio_pad(cache):
    labels = {lb["im_file"]: lb["shape"] for lb in yolocache.Cache(cache).labels("val")}
    for batch in yolocache.Loader(cache, mode="val", batch=BATCH, imgsz=IMGSZ, threads=2):
        h, w = batch["img"].shape[2:]
        assert h % 32 == 0 and w % 32 == 0 and max(h, w) <= IMGSZ + 32
        for f, ori, ((rh, rw), (pw, ph)) in zip(batch["im_file"], batch["ori_shape"], batch["ratio_pad"]):
            assert labels[f] == ori
            # the image scaled by the ratio, plus the padding on both sides, fills the batch shape
            assert abs(ori[1] * rw + 2 * pw - w) <= 1.01 and abs(ori[0] * rh + 2 * ph - h) <= 1.01


def test_identical_at_1_and_2_threads(cache):
    runs = []
    for threads in (1, 2):
        loader = yolocache.Loader(cache, batch=BATCH, imgsz=IMGSZ, threads=threads, seed=3, hyp={"mixup": 0.5})
        loader.set_epoch(1)
        runs.append(list(loader))
    assert_same_batches(*runs)


def test_windowed_order_visits_every_record_once_and_resumes(cache):
    """order='windowed' (caches larger than RAM) reaches the C++ loader: another order than shuffle, every
    record once per epoch, deterministic at 1 and 2 threads, and a state of one order is refused by the other."""
    kwargs = dict(batch=BATCH, imgsz=IMGSZ, seed=2, hyp={"mosaic": 0.0, "fliplr": 0.0, "hsv_h": 0, "hsv_s": 0,
                                                           "hsv_v": 0, "translate": 0, "scale": 0})
    files = {}
    for order, threads in (("shuffle", 2), ("windowed", 1), ("windowed", 2)):
        loader = yolocache.Loader(cache, threads=threads, order=order, window_mb=1, **kwargs)
        files[order, threads] = [f for b in loader for f in b["im_file"]]
    windowed = files["windowed", 1]
    assert windowed == files["windowed", 2]
    assert sorted(windowed) == sorted(files["shuffle", 2]) and windowed != files["shuffle", 2]
    assert len(set(windowed)) == len(windowed) > BATCH
    state = yolocache.Loader(cache, order="windowed", window_mb=1, **kwargs).state_dict()
    with pytest.raises(ValueError, match="order"):
        yolocache.Loader(cache, **kwargs).load_state_dict(state)
    with pytest.raises(ValueError, match="order"):
        yolocache.Loader(cache, order="sequential", **kwargs)


def test_windowed_order_reads_the_same_batches_around_and_through_the_page_cache(cache):
    """window_io='direct' (O_DIRECT into the loader's own buffers) and 'page-cache' hand out identical
    batches, mosaic and mixup included; an unknown window_io is refused."""
    kwargs = dict(batch=BATCH, imgsz=IMGSZ, seed=4, threads=2, order="windowed", window_mb=1, hyp={"mixup": 0.5})
    runs = [list(yolocache.Loader(cache, window_io=io, **kwargs)) for io in ("direct", "page-cache", "auto")]
    assert len(runs[0]) > 1
    assert_same_batches(runs[0], runs[1])
    assert_same_batches(runs[0], runs[2])
    with pytest.raises(ValueError, match="window_io"):
        yolocache.Loader(cache, window_io="mmap", **kwargs)


def test_state_dict_resumes_mid_epoch_exactly(cache):
    kwargs = dict(batch=BATCH, imgsz=IMGSZ, threads=2, seed=5, epochs=4, hyp={"close_mosaic": 2})
    a = yolocache.Loader(cache, **kwargs)
    a.set_epoch(1)
    it = iter(a)
    next(it), next(it)
    state = a.state_dict()
    assert state["epoch"] == 1 and state["batch"] == 2
    rest = list(it) + list(a)  # the rest of epoch 1, then all of epoch 2 (mosaic closed there)
    b = yolocache.Loader(cache, **kwargs)
    b.load_state_dict(state)
    resumed = list(b) + list(b)
    assert len(rest) == len(a) - 2 + len(a)
    assert_same_batches(rest, resumed)
    # Leaving a loop early and iterating again continues where it stopped, like a resume.
    c = yolocache.Loader(cache, **kwargs)
    c.set_epoch(1)
    for i, _ in enumerate(c):
        if i == 1:
            break
    assert_same_batches(rest[: len(a) - 2], list(c))


def test_img_is_the_loaders_own_buffer(cache):
    loader = yolocache.Loader(cache, batch=BATCH, imgsz=IMGSZ, threads=2, prefetch=2)
    held = list(loader)
    pointers = {b["img"].data_ptr() for b in held}
    # Pool buffers are 4 KiB-aligned (loader/options.h AlignedAllocator), torch's own copies are not
    # required to be: each tensor is the loader's buffer, one per held batch.
    assert len(pointers) == len(held)
    assert all(p % 4096 == 0 for p in pointers)
    assert all(b["img"].is_contiguous() for b in held)
    del held
    # Released batches go back to the pool: three more epochs, one batch held at a time, reuse a few
    # buffers (a leak or a fresh buffer per batch would give one address per batch).
    again = [b["img"].data_ptr() for _ in range(3) for b in loader]
    assert len(set(again)) <= len(again) // 2


def test_next_releases_the_gil(cache):
    # A Python thread that wakes every millisecond keeps running while the main thread waits inside one
    # next() (the first batch of the slow reference path): it could not if next() held the GIL.
    stamps, stop = [], threading.Event()

    def tick():
        while not stop.is_set():
            stamps.append(time.perf_counter())
            time.sleep(0.001)

    loader = yolocache.Loader(cache, batch=40, imgsz=640, threads=1, path="reference", prefetch=1,
                              hyp={"mixup": 1.0})
    t = threading.Thread(target=tick)
    t.start()
    try:
        while not stamps:
            time.sleep(0.001)
        it = iter(loader)
        start = time.perf_counter()
        next(it)
        end = time.perf_counter()
    finally:
        stop.set()
        t.join()
    inside = sum(start < s < end for s in stamps)
    assert end - start > 0.05, f"the first batch came too fast to tell ({end - start:.3f} s)"
    assert inside >= 2, f"{inside} ticks during a {end - start:.3f} s next()"


def test_a_jpeg_cache_loads_like_the_cpp_loader(dataset, tmp_path):
    """A --compress jpeg cache (built from Python) decodes in the Python Loader exactly as in C++, and
    its windowed order (records decoded once per window) visits every record once."""
    jpeg = tmp_path / "jpeg.yc"
    report = yolocache.build(dataset, jpeg, imgsz=160, compress="jpeg:85", threads=2)
    assert report["splits"]["train"]["jpeg_records"] > 30  # of 40: the synthetic photos shrink
    expected = cpp_batches(jpeg, "train", "train", 2, 7, 0, tmp_path)
    got = list(yolocache.Loader(jpeg, "train", mode="train", batch=BATCH, imgsz=IMGSZ, threads=2, seed=7))
    assert len(got) == len(expected)
    for batch, (img, _, _) in zip(got, expected):
        assert np.array_equal(batch["img"].numpy(), img)
    windowed = yolocache.Loader(jpeg, "train", batch=BATCH, imgsz=IMGSZ, threads=2, seed=7, order="windowed", window_mb=1)
    files = [f for b in windowed for f in b["im_file"]]
    assert len(files) == len(set(files)) == 40
    with pytest.raises(Exception, match="JPEG quality must be 1..100"):
        yolocache.build(dataset, tmp_path / "bad.yc", imgsz=160, compress="jpeg:0")
