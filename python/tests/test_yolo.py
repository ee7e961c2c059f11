"""yolocache.YOLO: Ultralytics' Model API on the C++ trainer, run in-process.

The main test installs the package into a fresh venv with the documented command (cmake --install
BUILD --component python, with that venv active), trains there from Python and checks the run equals
the CLI's with the same arguments: same results.csv (losses, metrics, learning rates; the trainer is
deterministic at a fixed seed and one torch thread), same final metrics, and predict boxes equal to
`yolocache-train predict --json`.
"""
import csv
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import BUILD

TRAIN_CLI = BUILD / "tools" / "yolocache-train"
# One tiny CPU run, as Python keywords and as the CLI's tokens (the same grammar reads both).
TRAIN = dict(epochs=2, imgsz=64, batch=4, device="cpu", workers=1, torch_threads=1, plots=False, exist_ok=True)
TRAIN_TOKENS = ["epochs=2", "imgsz=64", "batch=4", "device=cpu", "workers=1", "torch_threads=1", "plots=False",
                "exist_ok=True"]


def read_csv(path):
    with open(path, newline="") as f:
        return [{k.strip(): v for k, v in row.items() if k.strip() != "time"} for row in csv.DictReader(f)]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """The environment both runs see: their own cache folder (one cache for both)."""
    return dict(os.environ, YOLOCACHE_CACHE_DIR=str(tmp_path_factory.mktemp("yc_caches")))


@pytest.fixture(scope="module")
def venv(tmp_path_factory, env):
    """A fresh venv with system site-packages (torch) and yolocache installed by the documented command."""
    root = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(root)], check=True)
    activated = dict(env, VIRTUAL_ENV=str(root), PATH=f"{root / 'bin'}:{env['PATH']}")
    activated.pop("PYTHONPATH", None)
    activated.pop("YOLOCACHE_PYTHON", None)
    subprocess.run(["cmake", "--install", str(BUILD), "--component", "python"], env=activated, check=True,
                   capture_output=True, text=True)
    return root / "bin" / "python", activated


def test_train_val_predict_in_a_fresh_venv_equal_the_cli(venv, env, dataset, tmp_path):
    python, venv_env = venv
    image = sorted((dataset.parent / "images" / "val").iterdir())[0]
    script = textwrap.dedent(f"""
        import json, sys, time
        import yolocache
        from yolocache import YOLO
        assert yolocache.__file__.startswith({str(python.parent.parent)!r}), yolocache.__file__
        model = YOLO("yolov8n.yaml")
        start = time.time()
        m = model.train(data={str(dataset)!r}, project={str(tmp_path / 'py')!r}, name="run", **{TRAIN!r})
        seconds = time.time() - start
        v = model.val(batch=4)
        va = model.val(batch=4, augment=True)
        p = model.predict({str(image)!r}, conf=0.001, project={str(tmp_path / 'py')!r}, name="predict")
        r = p[0]
        a = model.predict({str(image)!r}, conf=0.001, augment=True, project={str(tmp_path / 'py')!r}, name="tta")[0]
        print(json.dumps(dict(
            seconds=seconds, ckpt=model.ckpt_path,
            train=dict(map=m.box.map, map50=m.box.map50, mp=m.box.mp, mr=m.box.mr, maps=list(m.box.maps),
                       fitness=m.fitness, results=m.results_dict, save_dir=str(m.save_dir)),
            val=dict(map=v.box.map, map50=v.box.map50, results=v.results_dict, save_dir=str(v.save_dir),
                     names=v.names, speed=v.speed),
            predict=dict(n=len(p), path=r.path, names=r.names, orig_shape=list(r.orig_shape),
                         types=[type(r.boxes.xyxy).__name__, type(r.boxes.conf).__name__, type(r.boxes.cls).__name__],
                         xyxy=r.boxes.xyxy.tolist(), conf=r.boxes.conf.tolist(), cls=r.boxes.cls.tolist()),
            tta=dict(xyxy=a.boxes.xyxy.tolist(), conf=a.boxes.conf.tolist(), cls=a.boxes.cls.tolist()),
            val_tta=dict(map=va.box.map, map50=va.box.map50, save_dir=str(va.save_dir)))))
    """)
    py = subprocess.run([str(python), "-c", script], env=venv_env, cwd=tmp_path, capture_output=True, text=True)
    assert py.returncode == 0, py.stderr[-3000:]
    out = json.loads(py.stdout.strip().splitlines()[-1])

    start = time.time()
    cli_dir = tmp_path / "cli"
    cli = subprocess.run([str(TRAIN_CLI), "train", f"data={dataset}", "--model", "yolov8n", *TRAIN_TOKENS,
                          f"project={cli_dir}", "name=run", "--result-json", str(tmp_path / "cli.json")],
                         env=env, cwd=tmp_path, capture_output=True, text=True)
    cli_seconds = time.time() - start
    assert cli.returncode == 0, cli.stderr[-3000:]
    print(f"python train {out['seconds']:.2f} s, CLI train {cli_seconds:.2f} s (process included)")

    # The same run: every results.csv column but the wall time, exactly.
    py_rows, cli_rows = read_csv(tmp_path / "py" / "run" / "results.csv"), read_csv(cli_dir / "run" / "results.csv")
    assert len(py_rows) == 2 and py_rows == cli_rows
    # One cache for both (the CLIs' folder and name): the Python run built it, the CLI reused it.
    assert len(list(Path(env["YOLOCACHE_CACHE_DIR"]).glob("*/manifest.json"))) == 1
    assert "data: reusing cache" in cli.stdout

    summary = json.loads((tmp_path / "cli.json").read_text())
    t = out["train"]
    assert t["map"] == summary["metrics"]["mAP50-95"] and t["map50"] == summary["metrics"]["mAP50"]
    assert t["mp"] == summary["metrics"]["precision"] and t["mr"] == summary["metrics"]["recall"]
    assert t["fitness"] == summary["metrics"]["fitness"] and len(t["maps"]) == 4
    assert set(t["results"]) == {"metrics/precision(B)", "metrics/recall(B)", "metrics/mAP50(B)",
                                 "metrics/mAP50-95(B)", "fitness"}
    assert Path(t["save_dir"]) == Path("py") / "run" or Path(t["save_dir"]).name == "run"
    assert out["ckpt"].endswith("best.pt")

    v = out["val"]
    assert 0.0 <= v["map"] <= v["map50"] <= 1.0 and v["names"] == {"0": "circle", "1": "rectangle", "2": "triangle",
                                                                    "3": "cross"}
    assert (tmp_path / v["save_dir"]).is_dir() and v["speed"]["inference"] > 0
    va = out["val_tta"]  # val(augment=True): test-time augmentation, its own run folder
    assert 0.0 <= va["map"] <= va["map50"] <= 1.0 and va["save_dir"] != v["save_dir"]

    # predict's boxes are the CLI's for the same image and weights.
    p = out["predict"]
    assert p["n"] == 1 and p["types"] == ["Tensor"] * 3 and Path(p["path"]) == image
    assert p["names"]["0"] == "circle" and len(p["orig_shape"]) == 2
    ref = subprocess.run([str(TRAIN_CLI), "predict", f"model={tmp_path / out['ckpt']}", "conf=0.001", "--json",
                          f"project={tmp_path / 'cli'}", "name=predict", str(image)],
                         env=env, cwd=tmp_path, capture_output=True, text=True, check=True)
    dets = json.loads(ref.stdout)[0]["detections"]
    assert [d["class"] for d in dets] == p["cls"] and len(dets) > 0
    assert p["conf"] == pytest.approx([d["confidence"] for d in dets], abs=1e-6)
    flat = [v for box in p["xyxy"] for v in box]
    assert flat == pytest.approx([v for d in dets for v in d["box"]], abs=1e-4)
    assert list(p["orig_shape"]) == [json.loads(ref.stdout)[0]["height"], json.loads(ref.stdout)[0]["width"]]

    # predict(augment=True) is the CLI's --augment: the same boxes, which test-time augmentation changed.
    ref = subprocess.run([str(TRAIN_CLI), "predict", f"model={tmp_path / out['ckpt']}", "conf=0.001", "--augment",
                          "--json", f"project={tmp_path / 'cli'}", "name=tta", str(image)],
                         env=env, cwd=tmp_path, capture_output=True, text=True, check=True)
    tta, dets = out["tta"], json.loads(ref.stdout)[0]["detections"]
    assert [d["class"] for d in dets] == tta["cls"] and len(dets) > 0
    assert tta["conf"] == pytest.approx([d["confidence"] for d in dets], abs=1e-6)
    assert [v for box in tta["xyxy"] for v in box] == pytest.approx([v for d in dets for v in d["box"]], abs=1e-4)
    assert (tta["xyxy"], tta["conf"]) != (p["xyxy"], p["conf"])


def test_errors_are_python_exceptions_with_the_commands_message(dataset, tmp_path, monkeypatch):
    import yolocache

    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="epochz"):  # the parser's own error and hint
        yolocache.YOLO("yolov8n.yaml").train(data=str(dataset), epochz=3)
    with pytest.raises(FileNotFoundError, match="missing.pt"):
        yolocache.YOLO("missing.pt").val(data=str(dataset))
    with pytest.raises(ValueError, match="untrained"):
        yolocache.YOLO("yolov8n.yaml").predict(str(dataset.parent))
    # device=[0, 1] starts processes, which an in-process run cannot: refused naming the CLI.
    with pytest.raises(ValueError, match="yolocache-train train ... device=0,1"):
        yolocache.YOLO("yolov8n.yaml").train(data=str(dataset), device=[0, 1], batch=8)
    # teacher= and distill= reach train's --teacher / --distill-weight through the same parser, checked
    # before any work.
    with pytest.raises((FileNotFoundError, yolocache.Error), match="missing-teacher.pt"):
        yolocache.YOLO("yolov8n.yaml").train(data=str(dataset), teacher="missing-teacher.pt")
    with pytest.raises(ValueError, match="--teacher"):
        yolocache.YOLO("yolov8n.yaml").train(data=str(dataset), distill=2)
    assert not (tmp_path / "runs").exists()


def test_prune_gives_a_smaller_model_that_validates_and_leaves_its_input(dataset, tmp_path, monkeypatch):
    import yolocache

    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="untrained"):
        yolocache.YOLO("yolov8n.yaml").prune(ratio=0.3)
    model = yolocache.YOLO("yolov8n.yaml")
    model.train(data=str(dataset), sparsity=0.05, project=str(tmp_path / "runs"), name="sparse", **TRAIN)
    source = Path(model.ckpt_path)
    original = source.read_bytes()
    small = model.prune(ratio=0.3)
    report = small.prune_report
    assert Path(small.ckpt_path) == source.with_name(source.stem + "-pruned.pt")
    assert report["after"]["parameters"] < report["before"]["parameters"]
    assert report["after"]["gflops"] < report["before"]["gflops"]
    assert report["multiple_of"] == 8 and report["channels"]
    assert all(width % 8 == 0 for width in report["channels"].values())
    assert source.read_bytes() == original  # the input is never written
    metrics = small.val(data=str(dataset), imgsz=64, batch=4, device="cpu", workers=1, plots=False)
    assert 0.0 <= metrics.box.map <= 1.0
    exact = model.prune(ratio=0.3, multiple_of=1, out=str(tmp_path / "exact.pt"))
    assert exact.prune_report["removed_channels"] > report["removed_channels"]
    by_cost = model.prune(gflops=0.25, out=str(tmp_path / "cost.pt")).prune_report
    assert 1 - by_cost["after"]["gflops"] / by_cost["before"]["gflops"] >= 0.25
    with pytest.raises(ValueError, match="--ratio 1.5: must be in"):
        model.prune(ratio=1.5)
    # prune_at= / prune_gflops=: the prune inside a run (train --prune-at); its best.pt is the pruned model.
    inrun = yolocache.YOLO("yolov8n.yaml")
    inrun.train(data=str(dataset), sparsity=0.05, prune_at=1, prune_gflops=0.3, project=str(tmp_path / "runs"),
                name="inrun", **TRAIN)
    args = (Path(inrun.trainer_summary["save_dir"]) / "args.yaml").read_text()
    assert "prune_at: 1" in args and "prune_gflops: 0.3" in args
    again = inrun.prune(ratio=0.01, multiple_of=1, out=str(tmp_path / "again.pt"))
    assert again.prune_report["before"]["parameters"] < report["before"]["parameters"]


def test_one_cache_folder_rule_for_the_clis_and_python(tmp_path):
    probe = "import yolocache; print(yolocache.default_cache_root())"

    def root(**extra):
        env = {k: v for k, v in os.environ.items()
               if k not in ("YOLOCACHE_CACHE_DIR", "YOLOCACHE_DIR", "XDG_CACHE_HOME")}
        env.update(extra, PYTHONPATH=str(BUILD / "python"), HOME=str(tmp_path))
        return subprocess.run([sys.executable, "-W", "error::DeprecationWarning" if "YOLOCACHE_DIR" not in extra
                               else "default", "-c", probe], env=env, capture_output=True, text=True,
                              check=True).stdout.strip()

    assert root() == str(tmp_path / ".cache" / "yolocache")
    assert root(XDG_CACHE_HOME="/x") == "/x/yolocache"
    assert root(YOLOCACHE_CACHE_DIR="/y", XDG_CACHE_HOME="/x") == "/y"
    assert root(YOLOCACHE_DIR="/old") == "/old"  # deprecated alias, only when YOLOCACHE_CACHE_DIR is unset
    assert root(YOLOCACHE_DIR="/old", YOLOCACHE_CACHE_DIR="/y") == "/y"


def test_ctrl_c_stops_the_run_and_raises_keyboard_interrupt(dataset, tmp_path, env):
    script = textwrap.dedent(f"""
        import signal, sys
        # As in an interactive interpreter: a shell's background job starts with SIGINT ignored, Python then
        # keeps SIG_IGN, and the run hands back whatever was there.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        import yolocache
        try:
            yolocache.YOLO("yolov8n.yaml").train(data={str(dataset)!r}, epochs=500, imgsz=64, batch=4, device="cpu",
                                                 workers=1, plots=False, val=False, project="runs", name="run")
            print("finished")
        except KeyboardInterrupt:
            handler = signal.getsignal(signal.SIGINT)
            print("KeyboardInterrupt", handler is signal.default_int_handler, repr(handler))
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(env, PYTHONPATH=str(BUILD / "python")))
    last = tmp_path / "runs" / "run" / "weights" / "last.pt"
    deadline = time.time() + 120
    while not last.exists() and time.time() < deadline and proc.poll() is None:  # a finished epoch
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-2000:]
    last_line = out.strip().splitlines()[-1]
    assert last_line.split()[:2] == ["KeyboardInterrupt", "True"], last_line + "\n" + err[-2000:]  # Python's handler is back
    assert last.exists()
