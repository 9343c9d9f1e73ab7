#!/usr/bin/env python3
"""The Python binding's cost per execute: `redist run` (C++) and
bench/python_execute.py (Python) on the same case and strategy, launches
interleaved, the median of each launch's median (docs/python.md, "Speed").

    .venv/bin/python bench/python_vs_cli.py [--ranks 2] [--launches 5] [--reps 5] [--strategy p2p] SRC DST [REGION]
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(os.environ.get("REDIST_BUILD", ROOT / "build"))
MPIRUN = str(ROOT / "scripts" / "mpirun.sh")

ap = argparse.ArgumentParser()
ap.add_argument("src")
ap.add_argument("dst")
ap.add_argument("region", nargs="?")
ap.add_argument("--ranks", type=int, default=2)
ap.add_argument("--launches", type=int, default=5)
ap.add_argument("--reps", type=int, default=5)
ap.add_argument("--strategy", default="p2p")
ap.add_argument("--storage", choices=("heap", "shared"), default="heap", help="where both programs' arrays live")
args = ap.parse_args()
case = [args.src, args.dst] + ([args.region] if args.region else [])
env = dict(os.environ, PYTHONPATH=str(BUILD / "python"))


def run(cmd):
    out = subprocess.run([MPIRUN, "-np", str(args.ranks)] + cmd, capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout[out.stdout.index("{"):])


cli, py, cli_min, py_min = [], [], [], []
for k in range(args.launches):
    pair = [("cli", [str(BUILD / "apps" / "redist"), "run"] + case +
             ["--strategy", args.strategy, "--reps", str(args.reps), "--json", "--no-verify", "--storage", args.storage]),
            ("py", [sys.executable, str(ROOT / "bench" / "python_execute.py")] + case +
             ["--strategy", args.strategy, "--reps", str(args.reps), "--storage", args.storage])]
    for name, cmd in (pair if k % 2 == 0 else pair[::-1]):
        r = run(cmd)
        if name == "cli":
            cli.append(r["cases"][0]["methods"][0]["median_s"])
            cli_min.append(r["cases"][0]["methods"][0]["min_s"])
        else:
            py.append(r["median_s"])
            py_min.append(r["min_s"])
c, p = statistics.median(cli), statistics.median(py)
print(f"case: {' | '.join(case)}  strategy {args.strategy}, {args.ranks} ranks, {args.launches} launches x {args.reps} reps")
print(f"redist run (C++): median {c * 1e6:.1f} us   launches {[round(x * 1e6, 1) for x in cli]}")
print(f"Python execute:   median {p * 1e6:.1f} us   launches {[round(x * 1e6, 1) for x in py]}")
print(f"difference: {(p - c) * 1e6:+.1f} us per call ({(p / c - 1) * 100:+.1f}%)")
cm, pm = statistics.median(cli_min), statistics.median(py_min)
print(f"fastest run per launch, median: C++ {cm * 1e6:.1f} us, Python {pm * 1e6:.1f} us, "
      f"difference {(pm - cm) * 1e6:+.1f} us ({(pm / cm - 1) * 100:+.1f}%)")
