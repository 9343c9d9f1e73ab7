"""redist-bench's smoke run and bench/plot.py on its results (docs/benchmarks.md)."""
import json
import subprocess
import sys

import pytest

from conftest import BUILD, MPIRUN, ROOT

BENCH = BUILD / "bench" / "redist-bench"


def run_bench(args, timeout=300):
    if not BENCH.exists():
        pytest.fail(f"{BENCH} is missing: build first (make build)")
    return subprocess.run([str(MPIRUN), "-np", "2", str(BENCH)] + args, capture_output=True, text=True,
                          timeout=timeout)


def test_smoke_results_and_plots(tmp_path):
    res = run_bench(["all", "--smoke", "--out", str(tmp_path)])
    assert res.returncode == 0, res.stdout + res.stderr
    assert "summary categories" in res.stdout
    assert "[case 1/" in res.stderr  # the progress line
    data = json.loads((tmp_path / "results.json").read_text())
    for key in ("hostname", "cores", "build_type", "compiler", "mpi_library", "date"):
        assert data["run"][key], key
    suites = {c["suite"] for c in data["cases"]}
    assert suites == {"categories", "volume", "scatter", "gather", "random", "blocksize", "submatrix"}
    for case in data["cases"]:
        names = [m["name"] for m in case["methods"]]
        assert {"p2p", "segment", "alltoallv", "alltoallw", "direct", "auto"} <= set(names)
        assert ("pdgemr2d" in names) == (case["suite"] not in ("blocksize",) and "random " not in case["name"])
        for m in case["methods"]:
            assert m["verified"] and m["median_s"] > 0 and len(m["times_s"]) == 2
    assert (tmp_path / "results.csv").read_text().startswith("suite,series,case,")

    plots = tmp_path / "plots"
    res = subprocess.run([sys.executable, str(ROOT / "bench" / "plot.py"), str(tmp_path / "results.json"),
                          "--out", str(plots)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    for suite in suites:
        assert (plots / f"{suite}_bandwidth.png").stat().st_size > 1000
    assert (plots / "categories_speedup.png").exists()
    assert not (plots / "blocksize_speedup.png").exists()  # no pdgemr2d there


def test_wrong_result_fails(tmp_path):
    res = run_bench(["submatrix", "--smoke", "--inject-error", "--out", str(tmp_path)])
    assert res.returncode == 1
    assert "wrong" in res.stderr and "FAILED" in res.stderr
