"""Driver of bench/python_loader_gpu.sh (one figure per call, printed as one JSON line):

  python_loader_gpu.py ultralytics --loader own|yolocache|ceiling --data DATA.yaml --epochs E --out DIR
                        [--model yolo11n] [--val --close-mosaic 10]
      Ultralytics' trainer (default yolov8n), batch 64, 640, AMP, 16 workers/threads, close_mosaic 0, no val
      (with --val: the last epoch's mAP50 / mAP50-95 and results.csv time too):
      train img/s (from the 10th batch on, batch-end timestamps, inside epochs) and the SM busy % that
      `nvidia-smi dmon` sampled in that window. `ceiling` hands the trainer one batch already in pinned
      memory (made by our loader) on every step: Ultralytics' own step rate.
  python_loader_gpu.py plain --cache CACHE --batches N [--cuda]
      A plain loop that only consumes yolocache.Loader (with --cuda also copies img to the GPU).
  python_loader_gpu.py summary LOG...
      The RESULT lines of those logs side by side, with the two ratios the issue sets goals for.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

WARMUP_BATCHES = 10


class SmBusy:
    """nvidia-smi dmon -s u in the background; mean SM % of the samples inside [start, end]."""

    def __init__(self, path):
        self.path = path
        self.proc = subprocess.Popen(["nvidia-smi", "dmon", "-s", "u", "-d", "1", "-o", "T"],
                                     stdout=open(path, "w"), stderr=subprocess.STDOUT)

    def mean(self, start, end):
        self.proc.terminate()
        self.proc.wait()
        day = time.strftime("%Y-%m-%d ", time.localtime(start))
        values = []
        for line in open(self.path):
            f = line.split()
            if len(f) < 3 or line.startswith("#") or not f[2].isdigit():
                continue  # columns: time gpu sm mem enc dec ...
            t = time.mktime(time.strptime(day + f[0], "%Y-%m-%d %H:%M:%S"))
            if start <= t <= end:
                values.append(int(f[2]))
        return (statistics.mean(values) if values else float("nan")), len(values)


def run_ultralytics(args):
    from ultralytics import YOLO
    import ultralytics.engine.trainer as engine
    from ultralytics.models.yolo.detect import DetectionTrainer as Plain

    engine.check_amp = lambda model: True  # its check downloads yolo11n.pt; AMP stays on as asked
    trainer = Plain
    if args.loader != "own":  # the module is needed only for our loader
        import yolocache.ultralytics as yu

        class Ceiling(yu.DetectionTrainer):
            """Every train step gets the same batch, already in (pinned) memory."""

            def get_dataloader(self, dataset_path, batch_size=16, rank=0, mode="train"):
                real = super().get_dataloader(dataset_path, batch_size, rank, mode)
                if mode != "train":
                    return real
                one = next(iter(real))
                n = len(real)

                class OneBatch(yu.YolocacheLoader):
                    def __iter__(self):
                        for _ in range(n):
                            yield dict(one)

                real.__class__ = OneBatch
                return real

        trainer = {"yolocache": yu.DetectionTrainer, "ceiling": Ceiling}[args.loader]
    stamps = []  # (epoch, time) at every train batch end
    model = YOLO(f"{args.model}.yaml")
    model.add_callback("on_train_batch_end", lambda t: stamps.append((t.epoch, time.time())))
    dmon = SmBusy(os.path.join(args.out, f"dmon_{args.model}_{args.loader}.log"))
    name = f"{args.model}_{args.loader}"
    t0 = time.time()
    model.train(data=args.data, trainer=trainer, epochs=args.epochs, batch=64, imgsz=640, amp=True, workers=16,
                device=0, close_mosaic=args.close_mosaic, val=args.val, plots=False, project=args.out, name=name,
                exist_ok=True, verbose=False, seed=0)
    wall = time.time() - t0
    images, seconds = 0, 0.0
    for e in sorted({e for e, _ in stamps}):
        times = [t for ep, t in stamps if ep == e][WARMUP_BATCHES if e == stamps[0][0] else 1:]
        images += 64 * (len(times) - 1)
        seconds += times[-1] - times[0]
    window = (stamps[WARMUP_BATCHES][1], stamps[-1][1])
    sm, samples = dmon.mean(*window)
    result = dict(run=f"ultralytics-{args.loader}", model=args.model, images_per_second=images / seconds,
                  sm_busy_percent=sm, dmon_samples=samples, timed_images=images, batches=len(stamps),
                  wall_seconds=wall)
    csv = os.path.join(args.out, name, "results.csv")
    if args.val and os.path.exists(csv):  # the last epoch's validation (EMA weights), as results.csv has it
        rows = [line.strip().split(",") for line in open(csv)]
        head, last = [h.strip() for h in rows[0]], rows[-1]
        for key in ("metrics/mAP50(B)", "metrics/mAP50-95(B)", "time"):
            if key in head:
                result[key] = float(last[head.index(key)])
    return result


def run_plain(args):
    import torch

    import yolocache

    loader = yolocache.Loader(args.cache, batch=64, imgsz=640, threads=16, epochs=1 << 30,
                              hyp={"close_mosaic": 0}, pin_memory=args.cuda)
    done, start = 0, None
    while done < args.batches + WARMUP_BATCHES:
        for batch in loader:
            if args.cuda:
                batch["img"].to("cuda", non_blocking=True)
            done += 1
            if done == WARMUP_BATCHES:
                if args.cuda:
                    torch.cuda.synchronize()
                start = time.perf_counter()
            if done == args.batches + WARMUP_BATCHES:
                break
    if args.cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    return dict(run="plain-loop" + ("-cuda" if args.cuda else ""), images_per_second=64 * args.batches / seconds,
                batches=args.batches)


def summary(logs):
    r = {}
    for log in logs:
        for line in open(log):
            if line.startswith("RESULT "):
                j = json.loads(line[7:])
                r[j["run"]] = j
    for name, v in r.items():
        sm = f"  SM busy {v['sm_busy_percent']:5.1f}% ({v['dmon_samples']} samples)" if "sm_busy_percent" in v else ""
        print(f"{name:24s} {v['images_per_second']:8.1f} img/s{sm}")
    rate = {name: v["images_per_second"] for name, v in r.items()}
    if "ultralytics-yolocache" in rate and "ultralytics-ceiling" in rate:
        print(f"ours / ceiling: {rate['ultralytics-yolocache'] / rate['ultralytics-ceiling']:.3f} (goal >= 0.9)")
    if "ultralytics-yolocache" in rate and "ultralytics-own" in rate:
        print(f"ours / Ultralytics' loader: {rate['ultralytics-yolocache'] / rate['ultralytics-own']:.2f}x")
    if "plain-loop" in rate and "yolocache-bench" in rate:
        print(f"plain loop / yolocache bench: {rate['plain-loop'] / rate['yolocache-bench']:.3f} (goal >= 0.95)")


def main():
    if sys.argv[1:2] == ["summary"]:
        return summary(sys.argv[2:])
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=["ultralytics", "plain"])
    p.add_argument("--loader", choices=["own", "yolocache", "ceiling"])
    p.add_argument("--model", default="yolov8n", help="Ultralytics model yaml stem: yolov8n, yolo11n, ...")
    p.add_argument("--val", action="store_true", help="validate every epoch (accuracy runs)")
    p.add_argument("--close-mosaic", type=int, default=0)
    p.add_argument("--data")
    p.add_argument("--cache")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batches", type=int, default=300)
    p.add_argument("--cuda", action="store_true")
    p.add_argument("--out", default=".")
    args = p.parse_args()
    result = run_ultralytics(args) if args.what == "ultralytics" else run_plain(args)
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    sys.exit(main())
