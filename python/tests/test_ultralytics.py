"""Ultralytics' own trainer (../shared/ultralytics) trains one CPU epoch through yolocache's loader."""
import os
import sys
from pathlib import Path

import pytest

from conftest import REPO

ULTRALYTICS = Path(os.environ.get("YOLOCACHE_ULTRALYTICS", REPO.parent / "shared" / "ultralytics"))


@pytest.fixture(scope="module")
def ultralytics(tmp_path_factory):
    if not (ULTRALYTICS / "ultralytics" / "__init__.py").exists():
        pytest.skip(f"Ultralytics source not found at {ULTRALYTICS} (set YOLOCACHE_ULTRALYTICS)")
    os.environ["YOLO_OFFLINE"] = "1"
    os.environ["YOLO_CONFIG_DIR"] = str(tmp_path_factory.mktemp("yolo_config"))
    os.environ["YOLOCACHE_CACHE_DIR"] = str(tmp_path_factory.mktemp("caches"))
    sys.path.insert(0, str(ULTRALYTICS))
    import ultralytics

    return ultralytics


def test_trainer_trains_one_epoch_through_our_loader(ultralytics, dataset, tmp_path):
    import yolocache.ultralytics as yu

    # synth's YAML has no `path:`, so Ultralytics takes its folder as the root from any working directory.
    data = dataset
    seen = {"train": 0, "shapes": set()}

    def count(trainer):
        seen["train"] += 1

    model = ultralytics.YOLO("yolov8n.yaml")
    model.add_callback("on_train_batch_end", count)
    model.train(data=str(data), trainer=yu.DetectionTrainer, epochs=1, imgsz=64, batch=8, workers=2, device="cpu",
                plots=False, amp=False, project=str(tmp_path), name="run", exist_ok=True, val=True, verbose=False)
    trainer = model.trainer
    assert isinstance(trainer, yu.DetectionTrainer)
    assert isinstance(trainer.train_loader, yu.YolocacheLoader)
    assert isinstance(trainer.test_loader, yu.YolocacheLoader) and trainer.test_loader.mode == "val"
    assert seen["train"] == len(trainer.train_loader) == 5  # 40 images, batch 8
    assert trainer.train_loader.epoch == 1  # one full epoch went through it
    assert (tmp_path / "run" / "results.csv").exists()
    assert "metrics/mAP50(B)" in trainer.metrics
    # The cache was built from the data YAML itself, in the CLIs' folder under the CLIs' name for it: the
    # one `yolocache-train --data data.yaml --imgsz 64` uses.
    caches = [p.parent for p in Path(os.environ["YOLOCACHE_CACHE_DIR"]).glob("*/manifest.json")]
    assert len(caches) == 1 and yu.Cache(caches[0]).records("train") == 40
    assert caches[0] == Path(yu._yolocache.prepare_cache(str(data), 64)["dir"])
