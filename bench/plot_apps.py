#!/usr/bin/env python3
"""Plots redist-apps results (paper 000 Figs. 14, 15, 18 at this machine's scale).

    .venv/bin/python bench/plot_apps.py apps.csv [--out DIR]

apps.csv: the lines `redist-apps --csv` appends (ranks, threads, alg, N, source
tile, working tile, GFLOP/s of pd, poor, good, round trip, then to, compute and
back seconds). Writes apps_<alg>.png: GFLOP/s against N, one panel per
configuration (ranks x threads), and the round trip's overhead in % on a second axis.
"""
import argparse
import collections
import csv
import pathlib

import matplotlib

matplotlib.use("Agg")  # no display on build machines
import matplotlib.pyplot as plt  # noqa: E402

NAMES = {"potrf": "Cholesky (Fig. 15, 18a-b)", "geqrf": "QR (Fig. 14)", "gemm": "GEMM (Fig. 18)"}
PEER = {"potrf": "pdpotrf", "geqrf": "pdgeqrf", "gemm": "pdgemm"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    rows = collections.defaultdict(lambda: collections.defaultdict(list))
    with open(args.csv) as f:
        for r in csv.reader(f):
            ranks, threads, alg, n = int(r[0]), int(r[1]), r[2], int(r[3])
            pd, poor, good, rt, to, comp, back = map(float, r[6:13])
            rows[alg][(ranks, threads)].append((n, pd, poor, good, rt, 100 * (to + back) / comp))
    out = pathlib.Path(args.out or pathlib.Path(args.csv).parent)
    for alg, configs in rows.items():
        fig, axes = plt.subplots(1, len(configs), figsize=(5.5 * len(configs), 4), squeeze=False)
        for ax, (cfg, pts) in zip(axes[0], sorted(configs.items())):
            pts.sort()
            n = [p[0] for p in pts]
            for i, (label, style) in enumerate([(PEER[alg] + " (source)", "kx-"), ("runtime on the source", "v:"),
                                                ("runtime on the good layout", "s--"), ("REDISTRIBUTION (round trip)", "o-")]):
                ax.plot(n, [p[1 + i] for p in pts], style, label=label)
            ax.set_xlabel("N")
            ax.set_ylabel("GFLOP/s")
            ax.set_title(f"{NAMES.get(alg, alg)}: {cfg[0]} rank(s) x {cfg[1]} thread(s)")
            ax.set_ylim(bottom=0)
            ax2 = ax.twinx()
            ax2.bar(n, [p[5] for p in pts], width=300, alpha=0.2, color="tab:red", label="round-trip overhead %")
            ax2.set_ylabel("round-trip overhead (% of compute)")
            ax.legend(loc="lower right", fontsize=7)
        fig.tight_layout()
        fig.savefig(out / f"apps_{alg}.png", dpi=90)
        print(out / f"apps_{alg}.png")


if __name__ == "__main__":
    main()
