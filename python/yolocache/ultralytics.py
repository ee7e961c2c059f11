"""Ultralytics' own DetectionTrainer, fed by the yolocache loader (Ultralytics is imported lazily).

    from ultralytics import YOLO
    import yolocache.ultralytics
    YOLO('yolov8n.yaml').train(data='coco128.yaml', trainer=yolocache.ultralytics.DetectionTrainer)

Everything else (model, loss, optimizer, EMA, validation, callbacks, logging, checkpoints) stays
Ultralytics'. The data YAML is built into a cache once (later runs update it: unchanged images are
reused, changed ones decoded again), in the CLIs' cache folder and under the CLIs' name for it
($YOLOCACHE_CACHE_DIR, else $XDG_CACHE_HOME/yolocache, else ~/.cache/yolocache; yolocache.
default_cache_root()), so `yolocache-train --data` and this trainer share one cache. Train batches follow args.epochs/close_mosaic and the augmentation
hyperparameters; val batches are rect letterboxed like Ultralytics'; under DDP each rank loads its share.
"""
import hashlib
import os
from pathlib import Path

import yaml

from . import HYP_DEFAULTS, Cache, Loader, _yolocache, default_cache_root

__all__ = ["DetectionTrainer", "YolocacheLoader", "cache_for"]


def _names_list(names):
    return list(names.values()) if isinstance(names, dict) else list(names)


def _real(paths):
    return [os.path.realpath(p) for p in (paths if isinstance(paths, (list, tuple)) else [paths])]


def _same_as_resolved(yaml_file, data):
    """Whether yolocache reads the data YAML as Ultralytics resolved it (the same split files, names)."""
    try:
        spec = _yolocache.dataset_spec(str(yaml_file))
    except (OSError, ValueError, RuntimeError):
        return False
    splits = {name: _real(inputs) for name, inputs in spec["splits"].items()}
    wanted = {split: _real(data[split]) for split in ("train", "val", "test") if data.get(split)}
    return spec["names"] == _names_list(data["names"]) and all(splits.get(k) == v for k, v in wanted.items())


def _resolved_yaml(data):
    """The data dict Ultralytics resolved, written as a YAML into the cache folder (named by its content)."""
    spec = {"path": os.path.realpath(data["path"]), "names": dict(enumerate(_names_list(data["names"])))}
    for split in ("train", "val", "test"):
        if data.get(split):
            spec[split] = data[split]
    text = yaml.safe_dump(spec, sort_keys=False)
    root = Path(default_cache_root())
    root.mkdir(parents=True, exist_ok=True)
    stem = Path(str(data.get("yaml_file") or "data")).stem
    path = root / f"{stem}-{hashlib.sha1(text.encode()).hexdigest()[:12]}.yaml"
    path.write_text(text)
    return path


def cache_for(data, imgsz, log=print):
    """Builds (or updates, or reuses) and opens the cache of an Ultralytics data dict (check_det_dataset's
    result: `path`, absolute `train`, `val`, `names`, `yaml_file`). The cache is the one
    `yolocache-train --data <yaml_file> --imgsz <imgsz>` uses when yolocache reads that YAML as Ultralytics
    did; otherwise (a root only Ultralytics' datasets_dir finds, a download) the resolved dict is written
    as a YAML into the cache folder and built from there, so the cache holds exactly the images Ultralytics
    would read."""
    yaml_file = data.get("yaml_file")
    same = bool(yaml_file) and Path(yaml_file).is_file() and _same_as_resolved(yaml_file, data)
    source = yaml_file if same else _resolved_yaml(data)
    prepared = _yolocache.prepare_cache(str(source), int(imgsz))
    cache = Cache(prepared["dir"])
    log(f"yolocache: cache {prepared['dir']} ({prepared['action']}, {len(cache)} records)")
    return cache


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


def _refuse_data_selection(args):
    """fraction, single_cls and classes select images and labels when yolocache-train opens the cache
    (libcache/record_selection.h); this Loader does not yet, and would train on the whole, unrelabelled
    split: refused rather than ignored (yolocache.YOLO(...).train runs them)."""
    given = [f"{key}={getattr(args, key, None)}" for key, off in (("fraction", 1.0), ("single_cls", False), ("classes", None))
             if getattr(args, key, off) not in (off, None)]
    if given:
        raise NotImplementedError(f"yolocache.ultralytics.DetectionTrainer: {', '.join(given)} is not implemented by "
                                  "its loader yet; use yolocache.YOLO(...).train(...) or yolocache-train")


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
            _refuse_data_selection(self.args)
            if self._yolocache is None:
                with torch_distributed_zero_first(rank):  # rank 0 builds, the others then open it
                    self._yolocache = cache_for(self.data, self.args.imgsz, log=LOGGER.info)
            world_size = int(os.environ.get("WORLD_SIZE", 1)) if mode == "train" else 1
            workers = self.args.workers if mode == "train" else self.args.workers * 2
            threads = max(1, min(os.cpu_count() // max(torch.cuda.device_count(), 1), workers))
            common = dict(batch=batch_size, imgsz=self.args.imgsz, threads=threads,
                          pin_memory=torch.cuda.is_available())
            split = _split_of(self.data, dataset_path, mode)
            gs = max(int(de_parallel(self.model).stride.max() if self.model else 0), 32)
            if mode == "train":
                hyp = {k: getattr(self.args, k) for k in HYP_DEFAULTS if getattr(self.args, k, None) is not None}
                # Ultralytics closes mosaic at the epoch equal to epochs - close_mosaic, so never when
                # close_mosaic > epochs; the loader's rule (from that epoch on) would close it at once.
                if int(hyp.get("close_mosaic") or 0) > self.epochs:
                    hyp["close_mosaic"] = 0
                rect = bool(getattr(self.args, "rect", False))
                if rect:  # Ultralytics' get_dataloader says it; its build_transforms' mosaic/mixup/cutmix off is the loader's
                    LOGGER.warning("'rect=True' is incompatible with DataLoader shuffle, setting shuffle=False")
                return YolocacheLoader(self._yolocache, split, mode="train", seed=self.args.seed,
                                       rank=max(RANK, 0) if world_size > 1 else 0, world_size=world_size,
                                       epochs=self.epochs, hyp=hyp, train_rect=rect, stride=gs, **common)
            return YolocacheLoader(self._yolocache, split, mode="val", rect=True, pad=0.5, stride=gs, **common)

    return DetectionTrainer


def __getattr__(name):  # PEP 562: Ultralytics is imported on first use of the trainer only
    if name == "DetectionTrainer":
        cls = _make_trainer_class()
        globals()[name] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
