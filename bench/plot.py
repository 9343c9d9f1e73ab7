#!/usr/bin/env python3
"""Plots redist-bench results like paper 000's Figs. 7, 9-12 (and paper 001's Table 2).

    .venv/bin/python bench/plot.py results/categories/results.json [--out DIR]

Per suite: SUITE_bandwidth.png (achieved bandwidth, paper 000 Eq. 3, against the
suite's abscissa, one panel per series, the Eq. 5 bound dashed) and, where
pdgemr2d ran, SUITE_speedup.png (speedup over pdgemr2d, in the tran suite over
pdtran; geomean over the cases that share an abscissa). Where the methods
carry paper 002's message counts and volumes (`route_messages`, `route_bytes`:
the `groups` suite), also SUITE_time.png: time per transfer against the
abscissa, measured (markers) and the fitted model (lines), T = t_m M + t_w D /
((S + R) / 2) (paper 002 Eq. 1), t_m and t_w by least squares per algorithm
over the suite's cases (printed).
Writes into the JSON's folder unless --out is given.
"""
import argparse
import collections
import json
import math
import pathlib

import matplotlib
import numpy as np

matplotlib.use("Agg")  # no display on build machines
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

STYLE = {"p2p": "o-", "segment": "v-", "alltoallv": "s-", "alltoallw": "D-", "direct": "^-",
         "auto": "*--", "pdgemr2d": "kx-", "pdtran": "kx-", "alltoall": "P:"}


def reference(names):
    """ScaLAPACK's routine the speedups are over, among the methods `names` (a
    transposing suite runs pdtran; the key says pdgemr2d for both)."""
    return "pdtran" if "pdtran" in names else "pdgemr2d"


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
    # A log axis needs positive x (`compare`'s one case has x = 0: its points
    # vanished, "Data has no positive values"); then a linear one.
    if all(isinstance(c["x"], (int, float)) and c["x"] > 0 for c in cases):
        ax.set_xscale("log")
        ticks = sorted({c["x"] for c in cases})
        if len(ticks) <= 12:  # the measured abscissae, as numbers (not 3x10^1, 4x10^1, ... overlapping)
            ax.set_xticks(ticks)
            ax.set_xticklabels([f"{x:g}" for x in ticks])
            ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.grid(True, alpha=0.3)
    ax.set_xlabel(cases[0]["x_label"])


def model_fits(cases):
    """Paper 002 Eq. 1 per method with route figures: name -> (t_m, t_w, [(x, measured, fitted)]).
    M: messages of one execute, D / ((S + R) / 2): its bytes per rank of the union
    (disjoint halves: (S + R) / 2 = P / 2; one rank: 1). Least squares of the
    relative error over the cases, t_m and t_w >= 0."""
    rows = collections.defaultdict(list)
    for c in cases:
        half = max(1.0, c["ranks"] / 2)
        for m in c["methods"]:
            if m.get("route_messages") is not None and m["median_s"] > 0:
                rows[m["name"]].append((c["x"], m["route_messages"], m["route_bytes"] / half, m["median_s"]))
    fits = {}
    for name, r in rows.items():
        a = np.array([[msgs, vol] for _, msgs, vol, _ in r], dtype=float)
        t = np.array([row[3] for row in r])
        if len(r) < 2 or np.linalg.matrix_rank(a) < 2:
            continue
        # Relative errors (rows scaled by 1 / T): the sizes span 64x in time, and
        # plain least squares would fit the largest case alone. Neither figure may
        # be negative: a negative one is set to 0 and the other fitted alone.
        w = a / t[:, None]
        (tm, tw), *_ = np.linalg.lstsq(w, np.ones(len(t)), rcond=None)
        if tm < 0 or tw < 0:
            keep = 1 if tm < 0 else 0
            col = w[:, keep]
            value = max(0.0, float(col @ np.ones(len(t)) / (col @ col)))
            tm, tw = (0.0, value) if keep == 1 else (value, 0.0)
        fits[name] = (tm, tw, [(x, T, tm * msgs + tw * vol) for (x, msgs, vol, T) in r])
    return fits


def plot_model(suite, cases, out):
    fits = model_fits(cases)
    if not fits:
        return None
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for i, (name, (tm, tw, pts)) in enumerate(fits.items()):
        pts = sorted(pts)
        colour = f"C{i % 10}"
        ax.plot([p[0] for p in pts], [p[1] * 1e3 for p in pts], "o", color=colour, markersize=4, label=name)
        ax.plot([p[0] for p in pts], [p[2] * 1e3 for p in pts], "-", color=colour, linewidth=1,
                label=f"  t_m {tm * 1e6:.1f} us, t_w {tw * 1e9:.3f} ns/B")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.grid(True, alpha=0.3)
    ax.set_xlabel(cases[0]["x_label"])
    ax.set_ylabel("ms per transfer")
    fig.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=7)
    fig.suptitle(f"redist-bench {suite}: measured (markers), paper 002 Eq. 1 fitted (lines)", fontsize=9)
    fig.tight_layout()
    path = out / f"{suite}_time.png"
    fig.savefig(path, dpi=80, bbox_inches="tight")
    plt.close(fig)
    return path


def plot_suite(suite, cases, out):
    names = method_names(cases)
    written = []
    if (path := plot_model(suite, cases, out)) is not None:
        written.append(path)
    ref = reference(names)
    for key, label, suffix in (("bandwidth_Bps", "GB/s (Eq. 3)", "bandwidth"),
                               ("speedup_vs_pdgemr2d", f"speedup over {ref}", "speedup")):
        # Only the series that have the quantity (random tiles have no pdgemr2d).
        groups = collections.OrderedDict((k, g) for k, g in by_series(cases).items()
                                         if key == "bandwidth_Bps" or any(m.get(key) for c in g for m in c["methods"]))
        if not groups:
            continue
        cols = 3 if len(groups) > 4 else len(groups)
        rows = math.ceil(len(groups) / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(max(3.6 * cols, 5.0), 2.8 * rows), squeeze=False, sharey=True)
        for ax, (series, group) in zip(axes.flat, groups.items()):
            panel(ax, group, key, [n for n in names if key == "bandwidth_Bps" or n != ref])
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
        fits = model_fits([c for c in data["cases"] if c["suite"] == s["suite"]])
        if fits:
            lines.append("  paper 002 Eq. 1 fitted per algorithm (least squares over the cases): "
                         "t_m, t_w, largest |fit - measured| / measured")
            for name, (tm, tw, pts) in fits.items():
                worst = max(abs(f - T) / T for _, T, f in pts)
                lines.append(f"  {name:12s} t_m {tm * 1e6:9.2f} us  t_w {tw * 1e9:8.4f} ns/B  worst {worst:6.1%}")
        for name, m in s["methods"].items():
            g = m["geomean_speedup_vs_pdgemr2d"]
            lines.append(f"  {name:10s} geomean speedup over {reference(s['methods'])} "
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
