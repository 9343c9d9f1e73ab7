#!/usr/bin/env python3
"""Pools several launches of one redist-bench suite into one result.

    scripts/mpirun.sh -np 2 build/bench/redist-bench volume --out results/volume-1
    scripts/mpirun.sh -np 2 build/bench/redist-bench volume --out results/volume-2
    .venv/bin/python bench/pool.py results/volume-*/results.json --out results/volume-pooled
    .venv/bin/python bench/plot.py results/volume-pooled/results.json

Timings on this kind of machine jump between two levels from one launch to the
next, so one launch's median can sit on either level. Pooling puts every
repetition of every launch of a case and method into one list, then takes the
median and minimum of that; bandwidth (paper 000 Eq. 3), ratio to the bound and
speedup over pdgemr2d are recomputed from the pooled medians, and so is the
summary. The pooled JSON has the same format as one launch's (plot.py reads it)
plus "launches": the run facts of each launch. auto's "trials" (--auto-trials)
are every launch's, in launch order, each with "launch" (its index in
"launches"); auto's "chose" stays the first launch's, "chose_per_launch" lists
every launch's choice.
"""
import argparse
import json
import math
import pathlib
import statistics
import sys

# The registry's strategies, for results written before they listed them ("strategies").
OLD_STRATEGIES = ("p2p", "segment", "alltoallv", "alltoallw", "direct")


def geomean(values):
    values = [v for v in values if v and v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def case_key(case):
    return (case["series"], case["name"], case["src"], case["dst"], case.get("region", ""))


def pool_case(cases):
    """cases: the same case from every launch -> one pooled case."""
    out = dict(cases[0])
    methods = []
    for i, m0 in enumerate(cases[0]["methods"]):
        same = [c["methods"][i] for c in cases]
        if any(m["name"] != m0["name"] for m in same):
            sys.exit(f"pool.py: launches list different methods for case {cases[0]['name']}")
        times = [t for m in same for t in m["times_s"]]
        median = statistics.median(times)
        # Eq. 3's numerator (max over ranks of remote bytes) is the same in every launch.
        numerator = m0["bandwidth_Bps"] * m0["median_s"]
        bandwidth = numerator / median if median > 0 else 0.0
        bound = out.get("bound_Bps") or 0.0
        pooled = dict(m0, times_s=times, median_s=median, min_s=min(times), bandwidth_Bps=bandwidth,
                      ratio_to_bound=bandwidth / bound if bound else None,  # null without a bound, as the C++ writes it
                      verified=None if any(m["verified"] is None for m in same)
                      else all(m["verified"] for m in same))
        # auto with --auto-trials: every launch's trials, in launch order, each with
        # the index of its launch (into "launches"); and what auto chose in each launch.
        if any("trials" in m for m in same):
            pooled["trials"] = [dict(t, launch=k) for k, m in enumerate(same) for t in m.get("trials", [])]
        if any(m.get("chose") for m in same):  # auto (the C++ writes "" for every other method)
            pooled["chose_per_launch"] = [m.get("chose") for m in same]
        methods.append(pooled)
    pd = next((m for m in methods if m["name"] in ("pdgemr2d", "pdtran")), None)  # pdtran: the `tran` suite
    # The single-copy limit: the pooled median of its own method when the run timed
    # it (single_copy_measured), else the calibrated one, the same in every launch.
    once = next((m for m in methods if m["name"] == "single copy"), None)
    if out.get("single_copy_measured") and once:
        out["single_copy_s"] = once["median_s"]
    for m in methods:
        if "speedup_vs_pdgemr2d" in m:
            # null where pdgemr2d did not run, as the C++ writes it
            m["speedup_vs_pdgemr2d"] = pd["median_s"] / m["median_s"] if pd and m["median_s"] > 0 else None
        if m.get("times_single_copy") is not None and out.get("single_copy_s"):
            m["times_single_copy"] = m["median_s"] / out["single_copy_s"]
    out["methods"] = methods
    return out


def summarize(cases, strategies):
    """One summary entry per suite, in the order the suites appear (an `all` run holds several);
    `strategies`: the registry's names, as the results list them (auto is measured against them)."""
    suites = list(dict.fromkeys(c["suite"] for c in cases))
    out = []
    for suite in suites:
        mine = [c for c in cases if c["suite"] == suite]
        within = 0
        for c in mine:
            t = {m["name"]: m["median_s"] for m in c["methods"]}
            best = min((t[n] for n in strategies if n in t), default=None)
            if best and "auto" in t and t["auto"] <= 1.1 * best:
                within += 1
        methods = {}
        for n in dict.fromkeys(m["name"] for c in mine for m in c["methods"]):
            ms = [m for c in mine for m in c["methods"] if m["name"] == n]
            entry = {"best_ratio_to_bound": max((m.get("ratio_to_bound") or 0.0 for m in ms), default=0.0)}
            # null where pdgemr2d did not run, as the C++ report writes it
            entry["geomean_speedup_vs_pdgemr2d"] = geomean([m.get("speedup_vs_pdgemr2d") for m in ms]) or None
            methods[n] = entry
        out.append({"suite": suite, "cases": len(mine), "auto_within_10pct": within, "methods": methods})
    return out


def pool(datas):
    suite = datas[0]["suite"]
    if any(d["suite"] != suite for d in datas):
        sys.exit("pool.py: the inputs are not all the same suite")
    keys = [case_key(c) for c in datas[0]["cases"]]
    index = [{case_key(c): c for c in d["cases"]} for d in datas]
    if any(set(ix) != set(keys) for ix in index):
        sys.exit("pool.py: the launches do not hold the same cases (same suite, --scale and sizes needed)")
    cases = [pool_case([ix[k] for ix in index]) for k in keys]
    out = dict(datas[0], cases=cases, summary=summarize(cases, datas[0].get("strategies", OLD_STRATEGIES)),
               reps=sum(d["reps"] for d in datas), launches=[d["run"] for d in datas])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="+", type=pathlib.Path,
                    help="results.json of each launch, or the folder (--out DIR) that holds it")
    ap.add_argument("--out", type=pathlib.Path, required=True, help="folder for the pooled results.json")
    a = ap.parse_args()
    files = [p / "results.json" if p.is_dir() else p for p in a.inputs]
    for f in files:
        if not f.is_file():
            sys.exit(f"pool.py: {f}: no such file (give each launch's results.json or its --out folder)")
    datas = [json.loads(f.read_text()) for f in files]
    pooled = pool(datas)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "results.json").write_text(json.dumps(pooled, indent=1))
    for s in pooled["summary"]:
        print(f"pooled {len(datas)} launches of {s['suite']}: {s['cases']} cases, "
              f"auto within 10% of the fastest strategy in {s['auto_within_10pct']}/{s['cases']}")
        for name, m in s["methods"].items():
            g = m.get("geomean_speedup_vs_pdgemr2d")
            ref = "pdtran" if "pdtran" in s["methods"] else "pdgemr2d"  # the key keeps pdgemr2d's name
            print(f"  {name:10s} best ratio to bound {m['best_ratio_to_bound']:.2f}"
                  + (f", geomean speedup over {ref} {g:.2f}" if g else ""))

if __name__ == "__main__":
    main()
