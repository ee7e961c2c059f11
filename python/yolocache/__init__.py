"""yolocache from Python: Ultralytics' YOLO API on the C++ trainer, cache building and verifying, and
the C++ loader for any PyTorch loop.

    from yolocache import YOLO
    metrics = YOLO('yolo11n.yaml').train(data='coco128.yaml', epochs=100)   # yolocache-train, in-process
    print(metrics.box.map)

    import yolocache
    report = yolocache.build('coco128.yaml', 'coco128.yc')      # the same dict as `yolocache build --json`
    loader = yolocache.Loader('coco128.yc', batch=64, imgsz=640, threads=16, epochs=100)
    for epoch in range(100):
        for batch in loader:                                     # Ultralytics' collate dict
            imgs = batch['img'].cuda(non_blocking=True).float() / 255

Errors from the C++ side arrive as exceptions carrying its message: ValueError (bad options),
FileNotFoundError (missing cache or file), yolocache.Error (corrupt cache, I/O, bad data).
See docs/PYTHON.md.
"""
import inspect
import json
import os
import threading
import warnings

import torch  # noqa: F401  (loads LibTorch before the extension, which links against it)

from . import _yolocache
from ._yolocache import Error

__all__ = ["Cache", "Error", "Loader", "YOLO", "build", "verify", "default_cache_root", "HYP_DEFAULTS",
           "LOADER_OPTIONS"]

# One cache folder for the CLIs and Python (default_cache_root): YOLOCACHE_DIR, this package's variable
# before it had the CLIs', still names it when YOLOCACHE_CACHE_DIR is not set.
if os.environ.get("YOLOCACHE_DIR") and not os.environ.get("YOLOCACHE_CACHE_DIR"):
    warnings.warn("YOLOCACHE_DIR is deprecated: set YOLOCACHE_CACHE_DIR (the variable of the CLIs too)",
                  DeprecationWarning, stacklevel=2)
    os.environ["YOLOCACHE_CACHE_DIR"] = os.environ["YOLOCACHE_DIR"]

# Every option of the loader, as the C++ side defines it (loader/option_table.h; the tables in
# docs/PYTHON.md are made from it too): {name: {"name", "default", "choices", "help", "hyp"}}.
LOADER_OPTIONS = {option["name"]: option for option in _yolocache.loader_options()}
# The data hyperparameters the loader implements, under Ultralytics' names and defaults (default.yaml).
HYP_DEFAULTS = {name: option["default"] for name, option in LOADER_OPTIONS.items() if option["hyp"]}
# The Loader's own keywords: the options that are not hyperparameters (those come in `hyp`, as Ultralytics').
_KEYWORDS = {name: option["default"] for name, option in LOADER_OPTIONS.items() if not option["hyp"]}


def default_cache_root():
    """Where caches built from a data YAML or folder live, for the CLIs and Python alike:
    $YOLOCACHE_CACHE_DIR, else $XDG_CACHE_HOME/yolocache, else ~/.cache/yolocache."""
    return _yolocache.default_cache_root()


def build(source, out, imgsz=640, backend="shards", compress="none", level=3, shard_size=1 << 30, splits=(),
          update=False, threads=0):
    """Audits and decodes a dataset (data YAML or folder) into a cache at `out`; returns the
    `yolocache build --json` report as a dict. `compress` is `yolocache build --compress`: none, zstd
    (at `level`), zstd:LEVEL, jpeg[:QUALITY] or auto[:QUALITY] (docs/FORMAT.md, "Record")."""
    return json.loads(_yolocache.build_json(str(source), str(out), imgsz, backend, compress, level, shard_size,
                                            list(splits), update, threads))


def verify(path, source=None, strict=False):
    """`yolocache verify --json` as a dict: a cache's checksums (and with `source`, the source files
    changed since the build), or the audit of a source dataset. Problems are in the report
    (report['ok'] is False), not exceptions."""
    return json.loads(_yolocache.verify_json(str(path), "" if source is None else str(source), strict))


_OBJECT_URLS = ("s3://", "http://", "https://")


class Cache:
    """A built cache: len(cache) records over all splits, .names, .splits, .records(split),
    .labels(split) (Ultralytics' per-image label dicts). `path` may be a cache in object storage
    (s3://bucket/prefix, https://host/path; docs/REMOTE.md): it is fetched into the cache folder
    (cache_root()) first, or its local copy reused when it is up to date."""

    def __init__(self, path, verify_checksums=False):
        if str(path).startswith(_OBJECT_URLS):
            path = _yolocache.prepare_cache(str(path))["dir"]
        self._impl = _yolocache._Cache(str(path), verify_checksums)

    path = property(lambda self: self._impl.dir)
    names = property(lambda self: list(self._impl.names))
    splits = property(lambda self: list(self._impl.splits))
    imgsz = property(lambda self: self._impl.imgsz)
    data_yaml = property(lambda self: self._impl.data_yaml)

    def __len__(self):
        return sum(self._impl.records(s) for s in self._impl.splits)

    def records(self, split="train"):
        return self._impl.records(split)

    def labels(self, split="train"):
        return self._impl.labels(split)

    def __repr__(self):
        return f"yolocache.Cache({self.path!r}, splits={ {s: self.records(s) for s in self.splits} })"


class Loader:
    """Batches of one split as Ultralytics' collate dicts, made by the C++ loader's threads.

    Iterating yields the batches of `epoch` from the resume point on, then advances `epoch` by one;
    set_epoch() picks another. Leaving a loop early and iterating again continues after the last batch
    handed out. state_dict()/load_state_dict() carry that position to a new Loader (exact resume: a
    batch depends only on seed, epoch, batch index, rank and world_size, not on threads or timing).

    A Loader is one stream of batches: iterating it from a second thread while another thread's iteration
    is unfinished raises RuntimeError (give each thread its own Loader). A Loader made before os.fork()
    raises yolocache.Error in the child (create it in the process that iterates it).
    """

    def __init__(self, cache, split=None, hyp=None, pin_memory=False, **options):
        unknown = sorted(set(options) - set(_KEYWORDS))
        if unknown:
            raise TypeError(f"Loader() got an unexpected keyword argument {unknown[0]!r} (options: {', '.join(_KEYWORDS)})")
        self.cache = cache if isinstance(cache, Cache) else Cache(cache)
        o = {**_KEYWORDS, **options}
        mode, batch, seed, order = o["mode"], o["batch"], o["seed"], o["order"]
        self.split = split or ("train" if mode == "train" else "val")
        self.mode, self.batch_size, self.imgsz, self.num_workers = mode, batch, o["imgsz"], o["threads"]
        hyps = {}
        for key, value in (hyp or {}).items():
            if key in HYP_DEFAULTS:
                hyps[key] = type(HYP_DEFAULTS[key])(value)  # Ultralytics' args may hold 1 for 1.0, 10.0 for 10
            else:
                raise ValueError(f"unknown hyp '{key}' (known: {', '.join(HYP_DEFAULTS)})")
        # What a saved position is only valid for.
        self._identity = dict(split=self.split, mode=mode, batch_size=batch, seed=seed, rank=o["rank"],
                              world_size=o["world_size"], drop_last=o["drop_last"], order=order,
                              window_mb=o["window_mb"] if order == "windowed" else None)
        # Every option, defaults included: the C++ side resolves window_io='auto' against world_size.
        self._impl = _yolocache._Loader(self.cache._impl, self.split, dict(o, **hyps, pin_memory=pin_memory))
        self.epoch = 0
        self._next_batch = 0  # where the next iteration starts within self.epoch
        self._claim = threading.Lock()  # guards the two fields below
        self._iterating_thread = None   # the thread whose iteration is unfinished, if any
        self._iteration = 0             # which iteration that is (a newer one in the same thread wins)

    def __len__(self):
        return self._impl.batches_per_epoch

    @property
    def dataset_size(self):
        return self._impl.dataset_size

    def set_epoch(self, epoch):
        """The epoch the next iteration yields, from its first batch."""
        self.epoch, self._next_batch = int(epoch), 0

    def __iter__(self):
        self._impl.check_process()  # a clear error in a forked child, before anything else
        me = threading.get_ident()
        with self._claim:
            if self._iterating_thread not in (None, me):
                raise RuntimeError("yolocache.Loader is being iterated by another thread: a Loader is one stream "
                                   "of batches; give each thread its own Loader")
            self._iterating_thread = me
            self._iteration += 1
            iteration = self._iteration
        try:
            epoch = self.epoch
            self._impl.start_epoch(epoch, self._next_batch)
            while True:
                batch = self._impl.next()  # waits with the GIL released
                if batch is None:
                    break
                self._next_batch += 1
                yield batch
            self.epoch, self._next_batch = epoch + 1, 0
        finally:  # also when the loop is left early (the generator is closed)
            with self._claim:
                if self._iteration == iteration:
                    self._iterating_thread = None

    def state_dict(self):
        """The position of the next batch: {'epoch', 'batch', ...options it is valid for}."""
        return dict(epoch=self.epoch, batch=self._next_batch, **self._identity)

    def load_state_dict(self, state):
        """Continues where the Loader that made `state` stopped (same split, mode, batch, seed, ranks)."""
        for key, value in self._identity.items():
            if key in state and state[key] != value:
                raise ValueError(f"state_dict is for {key}={state[key]!r}, this Loader has {key}={value!r}")
        batch = int(state["batch"])
        if not 0 <= batch <= len(self):
            raise ValueError(f"state_dict batch {batch} is outside this epoch's 0..{len(self)} batches")
        self.epoch, self._next_batch = int(state["epoch"]), batch


def _loader_signature():
    """Loader's keywords with the C++ defaults, so help(yolocache.Loader) lists every option."""
    P = inspect.Parameter
    params = [P("self", P.POSITIONAL_OR_KEYWORD), P("cache", P.POSITIONAL_OR_KEYWORD),
              P("split", P.POSITIONAL_OR_KEYWORD, default=None)]
    params += [P(name, P.KEYWORD_ONLY, default=default) for name, default in _KEYWORDS.items()]
    params += [P("hyp", P.KEYWORD_ONLY, default=None), P("pin_memory", P.KEYWORD_ONLY, default=False)]
    return inspect.Signature(params)


Loader.__init__.__signature__ = _loader_signature()


from .model import YOLO  # noqa: E402  (after the names it uses from this module)
