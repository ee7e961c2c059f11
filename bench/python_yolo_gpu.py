"""Driver of bench/python_yolo_gpu.sh: one training run per call, or the summary of several.

  python_yolo_gpu.py train yolocache|ultralytics --data DATA.yaml --epochs E --project DIR --name NAME
      `YOLO('yolo11n.yaml').train(...)` of that package, batch 64, 640, AMP, 16 workers, close_mosaic 0,
      val=False (both still validate the last epoch), plots=False, seed 0, device 0.
  python_yolo_gpu.py summary CLI_RUN PY_RUN ULTRA_RUN
      Train img/s of each run folder over its steady epochs, from results.csv's `time` column (seconds
      since training started, written at each epoch end): epochs 2 .. E-1, which exclude the first
      epoch's warm-up and the last one's validation; then the two ratios issue 28 sets goals for.
"""
import argparse
import csv
import os
import sys

ARGS = dict(imgsz=640, batch=64, workers=16, close_mosaic=0, val=False, plots=False, seed=0, amp=True,
            device=0, exist_ok=True)


def train(args):
    if args.package == "yolocache":
        from yolocache import YOLO
    else:
        from ultralytics import YOLO
        import ultralytics.engine.trainer as engine
        engine.check_amp = lambda model: True  # its check downloads yolo11n.pt; AMP stays on as asked
    YOLO("yolo11n.yaml").train(data=args.data, epochs=args.epochs, project=args.project, name=args.name, **ARGS)


def steady_img_per_s(run, images):
    with open(os.path.join(run, "results.csv")) as f:
        rows = [{k.strip(): v.strip() for k, v in r.items()} for r in csv.DictReader(f)]
    times = [float(r["time"]) for r in rows]
    if len(times) < 3:
        sys.exit(f"{run}: needs 3 or more epochs in results.csv, found {len(times)}")
    return images * (len(times) - 2) / (times[-2] - times[0])


def summary(args):
    figures = {name: steady_img_per_s(run, args.images) for name, run in
               (("yolocache-train CLI", args.cli), ("yolocache.YOLO (Python)", args.py), ("Ultralytics YOLO", args.ultra))}
    for name, value in figures.items():
        print(f"RESULT {name}: {value:.0f} img/s")
    cli, py, ultra = figures.values()
    print(f"RESULT Python / CLI: {py / cli:.3f} (goal >= 0.97)")
    print(f"RESULT Python / Ultralytics: {py / ultra:.2f}x (goal >= 3x)")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("package", choices=["yolocache", "ultralytics"])
    for a in ("--data", "--project", "--name"):
        t.add_argument(a, required=True)
    t.add_argument("--epochs", type=int, default=4)
    s = sub.add_parser("summary")
    s.add_argument("cli")
    s.add_argument("py")
    s.add_argument("ultra")
    s.add_argument("--images", type=int, required=True, help="training images per epoch")
    args = p.parse_args()
    train(args) if args.cmd == "train" else summary(args)


if __name__ == "__main__":
    main()
