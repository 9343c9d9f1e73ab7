#!/usr/bin/env python3
"""Plots redist-apps results (paper 000 Figs. 14, 15, 18 at this machine's scale).

    .venv/bin/python bench/plot_apps.py apps.csv [--out DIR] [--table]

apps.csv: the lines `redist-apps --csv` appends (ranks, threads, alg, N, source
tile, working tile, GFLOP/s of pd, poor, good, round trip, then to, compute and
back seconds, and with --repeat the repeated round trip's GFLOP/s and to seconds;
lines starting with '#' name the columns and each launch's settings, and are skipped).
Several launches append several lines per configuration, algorithm and N: they are
pooled, each column's median over the launches. Writes apps_<alg>.png: GFLOP/s
against N, one panel per configuration (ranks x threads), and the round trip's
overhead in % on a second axis; --table prints the pooled rows as markdown.
"""
import argparse
import collections
import csv
import pathlib
import statistics

import matplotlib

matplotlib.use("Agg")  # no display on build machines
import matplotlib.pyplot as plt  # noqa: E402

NAMES = {"potrf": "Cholesky (Fig. 15, 18a-b)", "geqrf": "QR (Fig. 14)", "gemm": "GEMM (Fig. 18)"}
PEER = {"potrf": "pdpotrf", "geqrf": "pdgeqrf", "gemm": "pdgemm"}


def pooled(path):
    """{(ranks, threads, alg, n): (launches, [median of each column from the 7th])}."""
    lines = collections.defaultdict(list)
    with open(path) as f:
        for r in csv.reader(f):
            if not r or r[0].startswith("#"):  # the column names, each launch's settings
                continue
            values = list(map(float, r[6:])) + [0.0, 0.0][: max(0, 15 - len(r))]  # no repeat columns: 0
            lines[(int(r[0]), int(r[1]), r[2], int(r[3]))].append(values)
    return {k: (len(v), [statistics.median(col) for col in zip(*v)]) for k, v in lines.items()}


def print_table(pool):
    for cfg in sorted({(k[0], k[1]) for k in pool}):
        print(f"\n{cfg[0]} rank(s) x {cfg[1]} thread(s)\n")
        print("| alg | N | launches | pd GF/s | poor | good | round trip | to s | compute s | back s | overhead % "
              "| rt / pd | repeat GF/s | repeat to s | repeat overhead % | repeat / pd |")
        print("|" + "---|" * 16)
        for (ranks, threads, alg, n), (count, v) in sorted(pool.items(), key=lambda i: (i[0][2], i[0][3])):
            if (ranks, threads) != cfg:
                continue
            pd, poor, good, rt, to, comp, back, rep, rep_to = v[:9]
            rep_cols = (f"{rep:.2f} | {rep_to:.3f} | {100 * (rep_to + back) / comp:.1f} | {rep / pd:.2f}" if rep > 0
                        else "- | - | - | -")
            print(f"| {alg} | {n} | {count} | {pd:.2f} | {poor:.2f} | {good:.2f} | {rt:.2f} | {to:.3f} | {comp:.3f} "
                  f"| {back:.3f} | {100 * (to + back) / comp:.1f} | {rt / pd:.2f} | {rep_cols} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--out", default=None)
    ap.add_argument("--table", action="store_true", help="print the pooled rows as markdown tables")
    args = ap.parse_args()
    pool = pooled(args.csv)
    if args.table:
        print_table(pool)
    rows = collections.defaultdict(lambda: collections.defaultdict(list))
    for (ranks, threads, alg, n), (_, v) in pool.items():
        pd, poor, good, rt, to, comp, back = v[:7]
        rows[alg][(ranks, threads)].append((n, pd, poor, good, rt, 100 * (to + back) / comp, v[7]))
    out = pathlib.Path(args.out or pathlib.Path(args.csv).parent)
    out.mkdir(parents=True, exist_ok=True)  # as plot.py does
    for alg, configs in rows.items():
        fig, axes = plt.subplots(1, len(configs), figsize=(5.5 * len(configs), 4), squeeze=False)
        for ax, (cfg, pts) in zip(axes[0], sorted(configs.items())):
            pts.sort()
            n = [p[0] for p in pts]
            for i, (label, style) in enumerate([(PEER[alg] + " (source)", "kx-"), ("runtime on the source", "v:"),
                                                ("runtime on the good layout", "s--"), ("REDISTRIBUTION (round trip)", "o-")]):
                ax.plot(n, [p[1 + i] for p in pts], style, label=label)
            if any(p[6] > 0 for p in pts):
                ax.plot(n, [p[6] for p in pts], "o:", label="round trip, repeated call (workspace)")
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
