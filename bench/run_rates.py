"""Issue 29's whole-run figures from one `yolocache-train train` log (what the trainer prints):

  python3 bench/run_rates.py LOG [--label NAME] [--steady-from K]

Per epoch the trainer prints `epoch N: ... | X img/s | ... (train S s of which data wait D s; val V s; save C s)`
(`; beside the next epoch B s` before the parenthesis closes when --val-overlap made its end on another thread)
(logs before 2026-12-05: `(epoch S s of which ..., val V s, save C s)`): X is the epoch's train rate, S its
training time, V and C its validation and checkpoints. At the end it prints `E epochs run (...) in W s wall`.
Printed here, as RESULT lines:
- the steady rate: the median train img/s of epochs K.. (default: the second half of the run);
- the whole run: E x images per epoch / W (first epoch, every validation and checkpoint included) and its
  ratio to the steady rate (issue 29's goal: >= 0.9, and >= 0.85 for the 3,000-image run);
- the first epoch's training time over the median steady epoch's (goal: <= 1.3), and where the wall time
  beyond the epochs' training went: every validation (the first apart), every checkpoint, and the rest
  (set-up before the first epoch, the final validation of best.pt after the last), and the trainer's own
  `set-up:`, `first epoch:`, `between epochs:` (the validations' and checkpoints' parts) and `validated in` lines;
- the last mAP50-95.
"""
import argparse
import re
import statistics
import sys

EPOCH = re.compile(r"^epoch (\d+): .*\| ([\d.]+) img/s \|.*mAP50-95 ([\d.]+) \| [\d.]+ s \((?:epoch|train) ([\d.]+) s"
                   r".* val ([\d.]+) s[;,] save ([\d.]+) s(?:; beside the next epoch ([\d.]+) s)?\)")
WALL = re.compile(r"^(\d+) epochs run .* in ([\d.]+) s wall")
IMAGES = re.compile(r"^data: .*: (\d+) train images")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("log")
    p.add_argument("--label", default="")
    p.add_argument("--steady-from", type=int, default=0)
    a = p.parse_args()
    epochs, wall, images, said = [], None, None, []
    for line in open(a.log, errors="replace"):
        line = line.strip()
        if line.startswith(("set-up: ", "first epoch: ", "validated in ", "between epochs: ")):
            said.append(line)  # the trainer's own account of the time outside the steady epochs
        elif m := EPOCH.match(line):
            epochs.append((int(m[1]), float(m[2]), float(m[3]), float(m[4]), float(m[5]), float(m[6]),
                           float(m[7] or 0)))
        elif m := WALL.match(line):
            wall = float(m[2])
        elif m := IMAGES.match(line):
            images = int(m[1])
    if not epochs or wall is None or images is None:
        sys.exit(f"{a.log}: no complete training log (epochs {len(epochs)}, wall {wall}, images {images})")
    start = a.steady_from or len(epochs) // 2 + 1
    steady = [e for e in epochs if e[0] >= start]
    rate = statistics.median(e[1] for e in steady)
    epoch_s = statistics.median(e[3] for e in steady)
    whole = len(epochs) * images / wall
    tag = f"{a.label}: " if a.label else ""
    print(f"RESULT {tag}img/s per epoch " + " ".join(f"{e[1]:.0f}" for e in epochs))
    print(f"RESULT {tag}steady {rate:.0f} img/s (median of epochs {start}-{epochs[-1][0]}); whole run {whole:.0f} img/s "
          f"over {wall:.1f} s wall = {whole / rate:.3f} of steady")
    val, save = sum(e[4] for e in epochs), sum(e[5] for e in epochs)
    rest = wall - sum(e[3] for e in epochs) - val - save
    print(f"RESULT {tag}first epoch {epochs[0][3]:.2f} s = {epochs[0][3] / epoch_s:.2f}x a steady epoch ({epoch_s:.2f} s); "
          f"mAP50-95 {epochs[-1][2]:.4f}")
    print(f"RESULT {tag}beyond training: validation {val:.1f} s (the first {epochs[0][4]:.2f} s, then median "
          f"{statistics.median(e[4] for e in epochs[1:]) if len(epochs) > 1 else 0:.2f} s), checkpoints {save:.1f} s, "
          f"set-up and final validation {rest:.1f} s")
    beside = [e[6] for e in epochs if e[6] > 0]
    if beside:
        print(f"RESULT {tag}{len(beside)} epoch ends beside the next epoch (--val-overlap): {sum(beside):.1f} s on "
              f"their own thread (median {statistics.median(beside):.2f} s), not in the wall time above")
    for line in said:
        print(f"RESULT {tag}{line}")


if __name__ == "__main__":
    main()
