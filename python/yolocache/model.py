"""yolocache.YOLO: Ultralytics' Model API for detection, run by yolocache's C++ trainer in this process.

    from yolocache import YOLO
    model = YOLO('yolo11n.yaml')                  # or 'yolo11n.pt', a run's 'best.pt'
    metrics = model.train(data='coco128.yaml', epochs=100, imgsz=640)   # DetMetrics: .box.map ...
    metrics = model.val()                          # the trained best.pt on the training data
    results = model.predict('bus.jpg')             # [Results]: .boxes.xyxy / .conf / .cls tensors
    path = model.export(format='onnx')             # the exported file
    small = model.prune(ratio=0.5)                 # after train(sparsity=...): a YOLO of the pruned weights

Each call is the `yolocache-train train|val|predict|export` command line with the keywords as
Ultralytics `key=value` tokens (yolocache/_args.py), parsed by the same C++ parser, so what the CLI
accepts, refuses or warns about is what Python gets. The GIL is released while it runs; progress goes
to the console as in the CLI. Ctrl-C stops the run at its next check (train saves a resumable last.pt)
and raises KeyboardInterrupt once it has stopped; a second Ctrl-C ends the process at once, as in the
CLI. Failures raise ValueError (a refused argument, exit 2), FileNotFoundError, or yolocache.Error,
with the command's message. One command runs at a time in a process.
"""
import json
import os
import signal
import sys
import tempfile
from pathlib import Path

import torch

from . import _yolocache
from ._args import tokens
from ._yolocache import Error
from .results import DetMetrics, Results

__all__ = ["YOLO"]

_PROGRAM = "yolocache-train"
_EXIT_USAGE, _EXIT_INTERRUPTED = 2, 130


def _raise_for(rc, lines):
    """The exception for a failed command: its own line ('yolocache-train train: ...') when it printed
    one, else the parser's lines (CLI11's error and the "did you mean" hint)."""
    own = [line for line in lines if line.startswith(_PROGRAM + " ")]
    message = own[-1] if own else "\n".join(line for line in lines if "Run with --help" not in line)
    message = message or f"{_PROGRAM} failed (exit {rc})"
    # A weights file that is not here (exit 2 from the line's model=, as Ultralytics raises for it too).
    if "not found: " in message or "no such weights file" in message:
        raise FileNotFoundError(message)
    if rc == _EXIT_USAGE:
        raise ValueError(message)
    raise Error(message)


def run(subcommand, args):
    """Runs `yolocache-train SUBCOMMAND ARGS...` in-process; returns its --result-json document (or None).
    Raises as described in the module docstring."""
    sys.stdout.flush()  # Python's buffered lines before the C++ writes its own
    sys.stderr.flush()
    threads = torch.get_num_threads()  # torch_threads= sets LibTorch's count for the process: put it back
    with tempfile.TemporaryDirectory(prefix="yolocache-") as tmp:
        result = Path(tmp) / "result.json"
        try:
            # --result-json first: a predict's sources follow a `--`, after which every token is a source.
            rc, sig, lines = _yolocache.run_command([_PROGRAM, subcommand, "--result-json", str(result), *args])
        finally:
            torch.set_num_threads(threads)
        doc = json.loads(result.read_text()) if result.exists() else None
    if rc == _EXIT_INTERRUPTED or sig:
        if sig in (signal.SIGTERM, signal.SIGHUP):
            signal.raise_signal(sig)  # the process's own handling of kill / hang-up, now that the run stopped
        raise KeyboardInterrupt(f"{_PROGRAM} {subcommand}: interrupted")
    if rc != 0:
        _raise_for(rc, lines)
    return doc


def _args_yaml_data(weights):
    """`data` of the run that wrote weights (RUN/weights/best.pt -> RUN/args.yaml), or None."""
    args = Path(weights).resolve().parent.parent / "args.yaml"
    if not args.is_file():
        return None
    import yaml

    try:
        return (yaml.safe_load(args.read_text()) or {}).get("data")
    except (OSError, yaml.YAMLError):
        return None


class YOLO:
    """A detection model: an architecture to train from scratch (NAME.yaml), or weights (NAME.pt, a
    run's best.pt/last.pt). After train() it is the run's best.pt (else last.pt), as in Ultralytics."""

    task = "detect"

    def __init__(self, model="yolo11n.pt", task=None, verbose=False):
        if task not in (None, "detect"):
            raise ValueError(f"yolocache.YOLO is for detection (task='detect'), not task={task!r}")
        self.model_name = str(model)
        self.ckpt_path = self.model_name if self.model_name.endswith(".pt") else None
        self.overrides = {}  # what later calls inherit (train's data, device and cache_dir), as Ultralytics' overrides
        self.metrics = None
        self.trainer_summary = None  # train's closing summary as the C++ wrote it
        self.prune_report = None  # on a YOLO that prune() returned: the command's JSON

    def __repr__(self):
        return f"yolocache.YOLO({self.ckpt_path or self.model_name!r})"

    def _model_tokens(self):
        if self.ckpt_path:
            return [f"model={self.ckpt_path}"]
        return [f"model={self.model_name}"]

    def _weights(self, what):
        if not self.ckpt_path:
            raise ValueError(f"{what} needs weights: {self.model_name} is an untrained architecture "
                             "(train it first, or give YOLO() a .pt file)")
        return self.ckpt_path

    def _weights_tokens(self, what):
        return [f"model={self._weights(what)}"]

    def _inherited(self, kwargs, keys):
        return {**{k: v for k, v in self.overrides.items() if k in keys}, **kwargs}

    def train(self, **kwargs):
        """Trains (yolocache-train train); returns the final validation as DetMetrics (None when the run
        did not validate). The model is then the run's best.pt."""
        if kwargs.pop("trainer", None) is not None:
            _unsupported("trainer=")
        if "model" in kwargs:
            self.__init__(kwargs.pop("model"))
        if kwargs.get("resume") is True and self.ckpt_path:
            kwargs["resume"] = self.ckpt_path  # Ultralytics: resume=True continues this model's checkpoint
        summary = run("train", self._model_tokens() + tokens(kwargs))
        self.trainer_summary = summary
        save_dir = Path(summary["save_dir"])
        weights = summary["best"] or summary["last"]
        if weights:
            self.ckpt_path = str(weights)
        self.overrides = {k: kwargs[k] for k in ("data", "device", "cache_dir") if kwargs.get(k) is not None}
        metrics = summary.get("metrics")
        self.metrics = DetMetrics(metrics, summary["names"], save_dir) if metrics is not None else None
        return self.metrics

    def val(self, **kwargs):
        """Validates the weights (yolocache-train val); returns DetMetrics. `data` defaults to what train()
        used, else to the `data` of the run that wrote the weights (its args.yaml)."""
        kwargs = self._inherited(kwargs, ("data", "device", "cache_dir"))
        weights = self._weights_tokens("val()")
        if kwargs.get("data") is None:
            kwargs["data"] = _args_yaml_data(self.ckpt_path)
        doc = run("val", weights + tokens(kwargs))
        images = max(int(doc.get("images", 0)), 1)
        stages = doc.get("stage_seconds", {})
        speed = {"preprocess": 1000 * stages.get("data", 0.0) / images,
                 "inference": 1000 * stages.get("model", 0.0) / images, "loss": 0.0,
                 "postprocess": 1000 * stages.get("nms", 0.0) / images}
        self.metrics = DetMetrics(doc, doc["names"], doc["save_dir"], speed)
        return self.metrics

    def predict(self, source, stream=False, **kwargs):
        """Detects objects (yolocache-train predict) in an image, a folder, or a list of them; returns a
        list of Results (stream=True: an iterator over it). The annotated images go to the run folder."""
        kwargs = self._inherited(kwargs, ("device",))
        sources = [str(s) for s in source] if isinstance(source, (list, tuple)) else [str(source)]
        doc = run("predict", self._weights_tokens("predict()") + tokens(kwargs) + ["--", *sources])
        results = [Results(r, doc["names"], Path(r["output"]).parent if r.get("output") else "")
                   for r in doc["results"]]
        return iter(results) if stream else results

    __call__ = predict

    def export(self, **kwargs):
        """Exports the weights (yolocache-train export); returns the exported file's path."""
        doc = run("export", self._weights_tokens("export()") + tokens(kwargs))
        return doc["file"]

    def prune(self, ratio=None, threshold=None, gflops=None, min_keep=None, multiple_of=None, imgsz=None, out=None):
        """Prunes the weights (yolocache-train prune; Ultralytics has no such call): removes the channels
        with the smallest BatchNorm scales, best after train(sparsity=...). Returns a YOLO of the pruned
        checkpoint (default: <stem>-pruned.pt beside the weights, which are never written), to fine-tune
        with train() or use as any weights; its .prune_report is the command's JSON (parameters and
        GFLOPs before and after, per-layer channels). One of ratio, threshold and gflops (the share of the
        GFLOPs to remove), as the CLI's options."""
        options = {"--ratio": ratio, "--threshold": threshold, "--gflops": gflops, "--min-keep": min_keep,
                   "--multiple-of": multiple_of, "--imgsz": imgsz, "--out": out}
        args = ["--weights", str(self._weights("prune()"))]
        for flag, value in options.items():
            if value is not None:
                args += [flag, str(value)]
        doc = run("prune", args)
        pruned = YOLO(doc["file"])
        pruned.prune_report = doc
        return pruned

    @property
    def names(self):
        """Class names by id after train() (else None: predict's and val's results carry them)."""
        if self.trainer_summary:
            return dict(enumerate(self.trainer_summary["names"]))
        return None


def _unsupported(what):
    raise ValueError(f"yolocache.YOLO runs the C++ trainer: {what} is not supported (use yolocache.ultralytics "
                     "with Ultralytics' own YOLO for custom trainers and callbacks)")
