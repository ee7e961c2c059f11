"""The results objects yolocache.YOLO returns, with the fields of Ultralytics' that scripts read.

    metrics = model.val(data='coco128.yaml')    # DetMetrics: .box.map, .box.map50, .box.mp, .box.mr,
    metrics.box.maps, metrics.results_dict       #   .box.maps, .results_dict, .fitness, .save_dir, .speed
    for r in model.predict('img.jpg'):           # Results: .boxes.xyxy / .conf / .cls (torch tensors),
        r.boxes.xyxy, r.path, r.orig_shape       #   .path, .names, .orig_shape, .speed, .save_dir

Built from the JSON documents of yolocache-train's val/predict (--json) and train's closing summary, so
the numbers are exactly what the CLI prints. Not kept (the C++ does not hand them over): per-threshold AP
(map75, all_ap), the curves, and predict's orig_img.
"""
from pathlib import Path

import numpy as np
import torch

__all__ = ["Boxes", "DetMetrics", "Metric", "Results"]

_KEYS = ["metrics/precision(B)", "metrics/recall(B)", "metrics/mAP50(B)", "metrics/mAP50-95(B)"]


class Metric:
    """Ultralytics' Metric (ultralytics/utils/metrics.py) for boxes: mean and per-class P, R, AP."""

    def __init__(self, metrics, nc):
        per_class = metrics.get("per_class", [])
        self.nc = nc
        self.ap_class_index = np.array([c["class"] for c in per_class], dtype=int)
        self.p = np.array([c["precision"] for c in per_class], dtype=float)
        self.r = np.array([c["recall"] for c in per_class], dtype=float)
        self.ap50 = np.array([c["mAP50"] for c in per_class], dtype=float)
        self.ap = np.array([c["mAP50-95"] for c in per_class], dtype=float)
        self.f1 = 2 * self.p * self.r / np.maximum(self.p + self.r, 1e-16)
        # The means as the C++ validator computed them (over the classes with labels, as Ultralytics).
        self.mp, self.mr = float(metrics.get("precision", 0.0)), float(metrics.get("recall", 0.0))
        self.map50, self.map = float(metrics.get("mAP50", 0.0)), float(metrics.get("mAP50-95", 0.0))
        self._fitness = float(metrics.get("fitness", 0.1 * self.map50 + 0.9 * self.map))

    def mean_results(self):
        return [self.mp, self.mr, self.map50, self.map]

    def class_result(self, i):
        return self.p[i], self.r[i], self.ap50[i], self.ap[i]

    @property
    def maps(self):
        """mAP50-95 by class id (nc of them): a class without labels has the mean, as in Ultralytics."""
        maps = np.zeros(self.nc) + self.map
        for i, c in enumerate(self.ap_class_index):
            if 0 <= c < self.nc:
                maps[c] = self.ap[i]
        return maps

    def fitness(self):
        return self._fitness


class DetMetrics:
    """Ultralytics' DetMetrics: .box (Metric), .results_dict, .fitness, .maps, .names, .save_dir, .speed."""

    task = "detect"
    keys = _KEYS

    def __init__(self, metrics, names, save_dir, speed=None):
        self.names = dict(enumerate(names))
        self.box = Metric(metrics, len(names))
        self.save_dir = Path(save_dir)
        self.speed = speed or {"preprocess": 0.0, "inference": 0.0, "loss": 0.0, "postprocess": 0.0}
        self.nt_per_class = np.array([c["instances"] for c in metrics.get("per_class", [])], dtype=int)

    def mean_results(self):
        return self.box.mean_results()

    def class_result(self, i):
        return self.box.class_result(i)

    @property
    def maps(self):
        return self.box.maps

    @property
    def fitness(self):
        return self.box.fitness()

    @property
    def ap_class_index(self):
        return self.box.ap_class_index

    @property
    def results_dict(self):
        return dict(zip(self.keys + ["fitness"], self.mean_results() + [self.fitness]))

    def __repr__(self):
        return f"yolocache.DetMetrics({self.results_dict}, save_dir={str(self.save_dir)!r})"


class Boxes:
    """Ultralytics' Boxes: .data [n, 6] (x1, y1, x2, y2, conf, cls) float32, and its views."""

    is_track = False
    id = None

    def __init__(self, data, orig_shape):
        self.data = data
        self.orig_shape = orig_shape

    xyxy = property(lambda self: self.data[:, :4])
    conf = property(lambda self: self.data[:, 4])
    cls = property(lambda self: self.data[:, 5])
    shape = property(lambda self: self.data.shape)

    @property
    def xywh(self):
        x1, y1, x2, y2 = self.xyxy.unbind(1)
        return torch.stack([(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1], 1)

    def _normalised(self, boxes):
        h, w = self.orig_shape
        return boxes / torch.tensor([w, h, w, h], dtype=boxes.dtype)

    xyxyn = property(lambda self: self._normalised(self.xyxy))
    xywhn = property(lambda self: self._normalised(self.xywh))

    def __len__(self):
        return len(self.data)

    def cpu(self):
        return self

    def numpy(self):
        return self.data.numpy()


class Results:
    """Ultralytics' Results for one image: .boxes, .path, .names, .orig_shape (h, w), .speed, .save_dir."""

    orig_img = None  # not handed over by the C++ predictor: read the image from .path

    def __init__(self, record, names, save_dir):
        self.path = record["source"]
        self.names = dict(enumerate(names))
        self.orig_shape = (int(record["height"]), int(record["width"]))
        detections = record["detections"]
        data = torch.tensor([[*d["box"], d["confidence"], d["class"]] for d in detections], dtype=torch.float32)
        self.boxes = Boxes(data.reshape(len(detections), 6), self.orig_shape)
        self.speed = {"preprocess": None, "inference": float(record.get("ms", 0.0)), "postprocess": None}
        self.save_dir = str(save_dir)
        self.output = record.get("output")  # the annotated image written by predict

    def __len__(self):
        return len(self.boxes)

    def __repr__(self):
        return f"yolocache.Results({self.path!r}, {len(self)} boxes, orig_shape={self.orig_shape})"
