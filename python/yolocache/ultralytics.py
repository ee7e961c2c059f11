"""Ultralytics' own DetectionTrainer, fed by the yolocache loader (Ultralytics is imported lazily).

    from ultralytics import YOLO
    import yolocache.ultralytics
    YOLO('yolov8n.yaml').train(data='coco128.yaml', trainer=yolocache.ultralytics.DetectionTrainer)

Everything else (model, loss, optimizer, EMA, validation, callbacks, logging, checkpoints) stays
Ultralytics'. The data YAML, as Ultralytics resolved it, is built into a cache once (later runs update
it: unchanged images are reused, changed ones decoded again); the cache lives in $YOLOCACHE_DIR
(default ~/.cache/yolocache). Train batches follow args.epochs/close_mosaic and the augmentation
hyperparameters; val batches are rect letterboxed like Ultralytics'; under DDP each rank loads its share.
"""
import hashlib
import os
from pathlib import Path

import yaml

from . import HYP_DEFAULTS, Cache, Loader, build

__all__ = ["DetectionTrainer", "YolocacheLoader", "cache_for"]


def cache_for(data, imgsz, log=print):
    """Builds (or updates) and opens the cache of an Ultralytics data dict (check_det_dataset's result:
    absolute `path`, `train`, `val`, `names`). The dict is written as a YAML beside the cache, so the
    cache records exactly the images Ultralytics would read."""
    spec = {"path": str(data["path"]), "names": dict(enumerate(data["names"].values()))
            if isinstance(data["names"], dict) else dict(enumerate(data["names"]))}
    for split in ("train", "val", "test"):
        if data.get(split):
            spec[split] = data[split]
    text = yaml.safe_dump(spec, sort_keys=False)
    key = hashlib.sha1(f"{text}\nimgsz={imgsz}".encode()).hexdigest()[:12]
    root = Path(os.environ.get("YOLOCACHE_DIR") or Path.home() / ".cache" / "yolocache")
    root.mkdir(parents=True, exist_ok=True)
    stem = Path(str(data.get("yaml_file") or "data")).stem
    yaml_path, cache_dir = root / f"{stem}-{key}.yaml", root / f"{stem}-{key}.yc"
    yaml_path.write_text(text)
    exists = (cache_dir / "manifest.json").exists()
    report = build(yaml_path, cache_dir, imgsz=imgsz, update=exists)
    log(f"yolocache: cache {cache_dir} ({report['records']} records, {report['seconds']:.1f} s"
        + (f", {sum(s['reused'] for s in report['splits'].values())} reused)" if exists else ")"))
    return Cache(cache_dir)


class _Dataset:
    """What Ultralytics reads of `train_loader.dataset`: len(), labels (plots), im_files, and the
    close_mosaic hooks (the loader closes mosaic itself at epochs - close_mosaic, the same epoch)."""

    def __init__(self, cache, split, size):
        self._cache, self._split, self._size, self._labels = cache, split, size, None
        self.mosaic = True

    def __len__(self):
        return self._size

    @property
    def labels(self):
        if self._labels is None:
            self._labels = self._cache.labels(self._split)
        return self._labels

    @property
    def im_files(self):
        return [label["im_file"] for label in self.labels]

    def close_mosaic(self, hyp):
        self.mosaic = False


class YolocacheLoader(Loader):
    """A Loader with the DataLoader attributes Ultralytics' trainer and validator use."""

    def __init__(self, cache, split, **kwargs):
        super().__init__(cache, split, **kwargs)
        self.dataset = _Dataset(self.cache, self.split, self.dataset_size)
        self.sampler = self  # trainer: train_loader.sampler.set_epoch(epoch) under DDP

    def reset(self):
        """Ultralytics restarts its workers after close_mosaic; ours switch by epoch already."""


def _split_of(data, dataset_path, mode):
    if mode == "train":
        return "train"
    for split in ("val", "test"):
        if data.get(split) is not None and str(data[split]) == str(dataset_path):
            return split
    return "val"


def _sync_epoch(trainer):
    # Runs at every epoch start (also the first after a resume), before the trainer iterates.
    trainer.train_loader.set_epoch(trainer.epoch)


def _make_trainer_class():
    import torch
    from ultralytics.models.yolo.detect import DetectionTrainer as _Base
    from ultralytics.utils import LOGGER, RANK
    from ultralytics.utils.torch_utils import de_parallel, torch_distributed_zero_first

    class DetectionTrainer(_Base):
        """Ultralytics' DetectionTrainer whose get_dataloader returns the yolocache loader."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._yolocache = None
            self.add_callback("on_train_epoch_start", _sync_epoch)

        def get_dataloader(self, dataset_path, batch_size=16, rank=0, mode="train"):
            assert mode in {"train", "val"}, f"Mode must be 'train' or 'val', not {mode}."
            if self._yolocache is None:
                with torch_distributed_zero_first(rank):  # rank 0 builds, the others then open it
                    self._yolocache = cache_for(self.data, self.args.imgsz, log=LOGGER.info)
            world_size = int(os.environ.get("WORLD_SIZE", 1)) if mode == "train" else 1
            workers = self.args.workers if mode == "train" else self.args.workers * 2
            threads = max(1, min(os.cpu_count() // max(torch.cuda.device_count(), 1), workers))
            common = dict(batch=batch_size, imgsz=self.args.imgsz, threads=threads,
                          pin_memory=torch.cuda.is_available())
            split = _split_of(self.data, dataset_path, mode)
            if mode == "train":
                hyp = {k: getattr(self.args, k) for k in HYP_DEFAULTS if getattr(self.args, k, None) is not None}
                # Ultralytics closes mosaic at the epoch equal to epochs - close_mosaic, so never when
                # close_mosaic > epochs; the loader's rule (from that epoch on) would close it at once.
                if int(hyp.get("close_mosaic") or 0) > self.epochs:
                    hyp["close_mosaic"] = 0
                return YolocacheLoader(self._yolocache, split, mode="train", seed=self.args.seed,
                                       rank=max(RANK, 0) if world_size > 1 else 0, world_size=world_size,
                                       epochs=self.epochs, hyp=hyp, **common)
            gs = max(int(de_parallel(self.model).stride.max() if self.model else 0), 32)
            return YolocacheLoader(self._yolocache, split, mode="val", rect=True, pad=0.5, stride=gs, **common)

    return DetectionTrainer


def __getattr__(name):  # PEP 562: Ultralytics is imported on first use of the trainer only
    if name == "DetectionTrainer":
        cls = _make_trainer_class()
        globals()[name] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
