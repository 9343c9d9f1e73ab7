#!/usr/bin/env python3
"""Plots redist-bench results like paper 000's Figs. 7, 9-12 (and paper 001's Table 2).

    .venv/bin/python bench/plot.py results/categories/results.json [--out DIR]

Per suite: SUITE_bandwidth.png (achieved bandwidth, paper 000 Eq. 3, against the
suite's abscissa, one panel per series, the Eq. 5 bound dashed) and, where
pdgemr2d ran, SUITE_speedup.png (speedup over pdgemr2d; geomean over the cases
that share an abscissa). Writes into the JSON's folder unless --out is given.
"""
import argparse
import collections
import json
import math
import pathlib

import matplotlib

matplotlib.use("Agg")  # no display on build machines
import matplotlib.pyplot as plt  # noqa: E402

STYLE = {"p2p": "o-", "segment": "v-", "alltoallv": "s-", "alltoallw": "D-", "direct": "^-",
         "auto": "*--", "pdgemr2d": "kx-", "alltoall": "P:"}


def geomean(values):
    values = [v for v in values if v and v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def by_series(cases):
    groups = collections.OrderedDict()
    for c in cases:
        groups.setdefault(c["series"], []).append(c)
    return groups


def method_names(cases):
    names = []
    for c in cases:
        for m in c["methods"]:
            if m["name"] not in names:
                names.append(m["name"])
    return names


def panel(ax, cases, key, names):
    """One line per method: `key` of each case (geomean over cases sharing x)."""
    for name in names:
        points = collections.defaultdict(list)
        for c in cases:
            for m in c["methods"]:
                if m["name"] == name and m.get(key):
                    points[c["x"]].append(m[key] / (1e9 if key == "bandwidth_Bps" else 1))
        xs = sorted(points)
        if xs:
            ax.plot(xs, [geomean(points[x]) for x in xs], STYLE.get(name, ".-"), label=name, markersize=4)
    if key == "bandwidth_Bps":
        bound = collections.defaultdict(list)
        for c in cases:
            if c["bound_Bps"]:
                bound[c["x"]].append(c["bound_Bps"] / 1e9)
        xs = sorted(bound)
        if xs:
            ax.plot(xs, [geomean(bound[x]) for x in xs], "k--", label="bound (Eq. 5)", linewidth=1)
    ax.set_xscale("log")
    ax.grid(True, alpha=0.3)
    ax.set_xlabel(cases[0]["x_label"])


def plot_suite(suite, cases, out):
    names = method_names(cases)
    written = []
    for key, label, suffix in (("bandwidth_Bps", "GB/s (Eq. 3)", "bandwidth"),
                               ("speedup_vs_pdgemr2d", "speedup over pdgemr2d", "speedup")):
        # Only the series that have the quantity (random tiles have no pdgemr2d).
        groups = collections.OrderedDict((k, g) for k, g in by_series(cases).items()
                                         if key == "bandwidth_Bps" or any(m.get(key) for c in g for m in c["methods"]))
        if not groups:
            continue
        cols = 3 if len(groups) > 4 else len(groups)
        rows = math.ceil(len(groups) / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(max(3.6 * cols, 5.0), 2.8 * rows), squeeze=False, sharey=True)
        for ax, (series, group) in zip(axes.flat, groups.items()):
            panel(ax, group, key, [n for n in names if key == "bandwidth_Bps" or n != "pdgemr2d"])
            ax.set_title(series, fontsize=9)
            if key != "bandwidth_Bps":
                ax.axhline(1, color="k", linewidth=0.8)
                ax.set_yscale("log")
        for ax in axes.flat[len(groups):]:
            ax.axis("off")
        for ax in axes[:, 0]:
            ax.set_ylabel(label)
        handles, labels = max((ax.get_legend_handles_labels() for ax in axes.flat), key=lambda hl: len(hl[1]))
        if labels:  # none when nothing moved between ranks (a 1-rank or tiny run)
            # beside the panels, so it hides no curve and no title
            fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8)
        fig.suptitle(f"redist-bench {suite}", y=0.01, va="bottom", fontsize=9)
        fig.tight_layout(rect=(0, 0.03, 1, 1))
        path = out / f"{suite}_{suffix}.png"
        fig.savefig(path, dpi=80, bbox_inches="tight")
        plt.close(fig)
        written.append(path)
    return written


def summary(data):
    lines = []
    for s in data.get("summary", []):
        lines.append(f"{s['suite']}: auto within 10% of the fastest redist strategy in "
                     f"{s['auto_within_10pct']}/{s['cases']} cases")
        for name, m in s["methods"].items():
            g = m["geomean_speedup_vs_pdgemr2d"]
            lines.append(f"  {name:10s} geomean speedup over pdgemr2d "
                         f"{'n/a' if g is None else f'{g:.2f}x':>7s}, best ratio to bound {m['best_ratio_to_bound']:.2f}")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", type=pathlib.Path)
    ap.add_argument("--out", type=pathlib.Path)
    args = ap.parse_args()
    data = json.loads(args.json.read_text())
    out = args.out or args.json.parent
    out.mkdir(parents=True, exist_ok=True)
    suites = collections.OrderedDict()
    for c in data["cases"]:
        suites.setdefault(c["suite"], []).append(c)
    for suite, cases in suites.items():
        for path in plot_suite(suite, cases, out):
            print(path)
    print(summary(data))


if __name__ == "__main__":
    main()
