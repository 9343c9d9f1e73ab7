"""redist-bench's smoke run and bench/plot.py on its results (docs/benchmarks.md)."""
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

from conftest import BUILD, MPIRUN, REDIST, ROOT

# The registry, in its order (src/exec/registry.cpp).
STRATEGIES = ["p2p", "segment", "p2p_pipelined", "alltoallv", "alltoallw", "direct", "shm", "phased", "phased_sendrecv", "phased_unsync",
              "phased_dt", "taskgraph", "centralized", "staged", "multistage", "hybrid", "aggregate"]

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
        assert set(STRATEGIES + ["auto"]) <= set(names)
        assert ("pdgemr2d" in names) == (case["suite"] not in ("blocksize",) and "random " not in case["name"])
        for m in case["methods"]:
            # alltoall moves no array: not verified (null), every other method is
            assert m["verified"] is (None if m["name"] == "alltoall" else True), m
            assert m["median_s"] > 0 and len(m["times_s"]) == 2
            # the model's time beside the measured one, for the strategies it models
            # (shm on the heap: its cross-memory attach model, as direct; not
            # blocksize's paper 001 schedules (bench/paper001.hpp), not strategies)
            modelled = m["name"] not in ("pdgemr2d", "alltoall", "sync simple", "sync random", "sync optimal")
            assert (m["predicted_s"] is not None and m["predicted_s"] > 0) == modelled
        # auto ran the strategy with the smallest prediction, and says so
        auto = next(m for m in case["methods"] if m["name"] == "auto")
        assert auto["chose"] == case["model_choice"]
        assert auto["predicted_s"] == next(m for m in case["methods"] if m["name"] == auto["chose"])["predicted_s"]
    assert (tmp_path / "results.csv").read_text().startswith("suite,series,case,")

    plots = tmp_path / "plots"
    res = subprocess.run([sys.executable, str(ROOT / "bench" / "plot.py"), str(tmp_path / "results.json"),
                          "--out", str(plots)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    for suite in suites:
        assert (plots / f"{suite}_bandwidth.png").stat().st_size > 1000
    assert (plots / "categories_speedup.png").exists()
    assert not (plots / "blocksize_speedup.png").exists()  # no pdgemr2d there


def test_one_rank_summary_has_no_ratio_to_a_bound(tmp_path):
    """On one rank nothing is remote: no bound, `-` in every row, and the summary's
    `best /bound` said 0.00 beside it (a second new user's trial)."""
    res = subprocess.run([str(MPIRUN), "-np", "1", str(BENCH), "volume", "--smoke", "--no-plots", "--out",
                          str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert ": 1 rank, " in res.stdout.splitlines()[0], res.stdout  # not "1 ranks"
    summary = res.stdout[res.stdout.index("best /bound"):].splitlines()[1:]
    rows = [line.split() for line in summary if line.startswith("  ") and "x (" in line]
    assert rows and all(r[-1] == "-" for r in rows), res.stdout


def test_plots_into_a_folder_whose_name_has_a_quote(tmp_path):
    """bench ran plot.py through a shell with the folder in single quotes: a
    quote in the name broke it (and could have run another command)."""
    out = tmp_path / "it's here; touch pwned"
    res = run_bench(["volume", "--smoke", "--out", str(out)])
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"plots: {out}/*.png" in res.stdout, res.stdout
    assert (out / "volume_bandwidth.png").stat().st_size > 1000
    assert not (tmp_path / "pwned").exists() and not pathlib.Path("pwned").exists()


def test_wrong_result_fails(tmp_path):
    res = run_bench(["submatrix", "--smoke", "--inject-error", "--out", str(tmp_path)])
    assert res.returncode == 1
    assert "wrong" in res.stderr and "FAILED" in res.stderr


def test_pool_launches(tmp_path):
    """Two launches of one suite pooled: every repetition kept, medians and ratios
    recomputed from the pooled times, and pooling a launch with itself changes no median."""
    runs = []
    for i in range(2):
        # blocksize: no pdgemr2d, a plain MPI_Alltoall beside the strategies
        res = run_bench(["blocksize", "--smoke", "--out", str(tmp_path / f"l{i}")])
        assert res.returncode == 0, res.stdout + res.stderr
        runs.append(json.loads((tmp_path / f"l{i}" / "results.json").read_text()))
    pool = [sys.executable, str(ROOT / "bench" / "pool.py")]
    res = subprocess.run(pool + [str(tmp_path / "l0" / "results.json"), str(tmp_path / "l1" / "results.json"),
                                 "--out", str(tmp_path / "pooled")], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "pooled 2 launches of blocksize" in res.stdout
    pooled = json.loads((tmp_path / "pooled" / "results.json").read_text())
    assert len(pooled["launches"]) == 2 and pooled["reps"] == runs[0]["reps"] + runs[1]["reps"]
    for k, case in enumerate(pooled["cases"]):
        for j, m in enumerate(case["methods"]):
            a, b = runs[0]["cases"][k]["methods"][j], runs[1]["cases"][k]["methods"][j]
            assert sorted(m["times_s"]) == sorted(a["times_s"] + b["times_s"])
            assert m["min_s"] == min(a["min_s"], b["min_s"])
            assert min(a["times_s"] + b["times_s"]) <= m["median_s"] <= max(a["times_s"] + b["times_s"])
            # Eq. 3: same numerator, pooled median
            assert abs(m["bandwidth_Bps"] * m["median_s"] - a["bandwidth_Bps"] * a["median_s"]) <= 1e-6 * (
                a["bandwidth_Bps"] * a["median_s"])
    # A launch pooled with itself: medians unchanged (each time twice), summary
    # unchanged; a launch named by its --out folder, as by its results.json.
    res = subprocess.run(pool + [str(tmp_path / "l0"), str(tmp_path / "l0" / "results.json"),
                                 "--out", str(tmp_path / "self")], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    same = json.loads((tmp_path / "self" / "results.json").read_text())
    for k, case in enumerate(same["cases"]):
        for j, m in enumerate(case["methods"]):
            # the C++ report prints medians with 6 significant digits
            assert m["median_s"] == pytest.approx(runs[0]["cases"][k]["methods"][j]["median_s"], rel=1e-5)
    assert same["summary"][0]["auto_within_10pct"] == runs[0]["summary"][0]["auto_within_10pct"]
    res = subprocess.run(pool + [str(tmp_path / "none"), "--out", str(tmp_path / "x")], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode != 0 and "none: no such file" in res.stderr
    # Nulls stay nulls (blocksize runs no pdgemr2d), and only auto records its choices.
    for k, case in enumerate(pooled["cases"]):
        for j, m in enumerate(case["methods"]):
            a = runs[0]["cases"][k]["methods"][j]
            for key in ("speedup_vs_pdgemr2d", "ratio_to_bound"):
                assert (m.get(key) is None) == (a.get(key) is None), (m["name"], key, m.get(key), a.get(key))
            assert ("chose_per_launch" in m) == (m["name"] == "auto"), m["name"]
    # The pooled summary has the C++ report's shape (null speedups included).
    for name, m in runs[0]["summary"][0]["methods"].items():
        assert set(same["summary"][0]["methods"][name]) == set(m), name
    # plot.py reads a pooled file like a single launch's
    res = subprocess.run([sys.executable, str(ROOT / "bench" / "plot.py"), str(tmp_path / "pooled" / "results.json")],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "pooled" / "blocksize_bandwidth.png").stat().st_size > 1000


def test_redist_bench_subcommand(tmp_path):
    """`redist bench SUITE` (the issue's name) runs redist-bench on every rank."""
    from conftest import REDIST
    res = subprocess.run([str(MPIRUN), "-np", "2", str(REDIST), "bench", "submatrix", "--smoke", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "summary submatrix" in res.stdout
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["suite"] == "submatrix" and data["cases"]
    bad = subprocess.run([str(MPIRUN), "-np", "2", str(REDIST), "bench", "nosuchsuite"], capture_output=True,
                         text=True, timeout=120)
    assert bad.returncode == 2 and "unknown suite 'nosuchsuite'" in bad.stderr
    helped = subprocess.run([str(REDIST), "help", "bench"], capture_output=True, text=True, timeout=60)
    assert helped.returncode == 0 and "SUITE: categories" in helped.stdout
    assert "compare SRC DST" in helped.stdout and "pingpong|sched|tasks|cholesky|gemm" in helped.stdout
    # the task runtime's benchmarks behind the same subcommand
    for name in ("pingpong", "sched", "tasks", "cholesky", "gemm"):
        h = subprocess.run([str(REDIST), "bench", name, "--help"], capture_output=True, text=True, timeout=60)
        program = "redist-cholesky" if name == "cholesky" else "redist-bench-" + name
        assert h.returncode == 0 and h.stdout.startswith(program + ":"), (name, h.stdout, h.stderr)
    tasks = subprocess.run([str(MPIRUN), "-np", "2", str(REDIST), "bench", "tasks", "--tasks", "500", "--reps", "1"],
                           capture_output=True, text=True, timeout=300)
    assert tasks.returncode == 0, tasks.stdout + tasks.stderr


def test_a_case_on_the_whole_array_says_so(tmp_path):
    """The volume suite's cases move the whole array: their 'region' line was
    followed by nothing."""
    r = run_bench(["volume", "--smoke", "--no-plots", "--out", str(tmp_path)])
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines().count("  region the whole array") == 2, r.stdout


def test_bad_arguments_fail_before_running(tmp_path):
    """Bad arguments end a benchmark at once with one message and a non-zero exit,
    before anything runs: a results folder that cannot be written (it once ran
    the whole suite, said "cannot write" and exited 0), redist-apps' unknown
    algorithm (it once crashed in DGEMM), unknown option, stray word or missing
    value (each once ran the default sizes) and CSV that cannot be opened, the
    runtime benchmarks' sizes below 1, numbers that are not numbers and options
    without their values."""
    from conftest import REDIST
    blocked = tmp_path / "file"
    blocked.write_text("")  # a file where the folder should be
    r = subprocess.run([str(MPIRUN), "-np", "2", str(REDIST), "bench", "volume", "--smoke", "--no-plots", "--out",
                        str(blocked / "sub")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "cannot write results.json" in r.stderr, r.stdout + r.stderr
    assert "[1/" not in r.stderr + r.stdout  # no case ran
    # redist bench's own options: the whole value or nothing (atoi once ran --reps 1.5 as 1 and --scale inf as
    # 16x16 arrays), a value missing, no suite
    for args, words in [(["volume", "--reps", "1.5"], "--reps needs a whole number from 1 to 1000000, got '1.5'"),
                        (["volume", "--reps", "2", "--reps", "3"], "--reps is given twice; give it once"),
                        (["volume", "--reps", "2x"], "--reps needs a whole number from 1 to 1000000, got '2x'"),
                        (["volume", "--threads", "abc"], "--threads needs a whole number from 1 to 1024, got 'abc'"),
                        (["volume", "--scale", "inf"], "--scale needs a number above 0 and at most 1000, got 'inf'"),
                        (["volume", "--scale", "1e300"], "--scale needs a number above 0 and at most 1000"),
                        (["volume", "--scale", "0"], "--scale needs a number above 0"),
                        (["volume", "--out"], "--out needs a value"),
                        ([], "give a suite")]:
        r = subprocess.run([str(MPIRUN), "-np", "2", str(REDIST), "bench"] + args, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 2 and words in r.stderr, (args, r.stdout, r.stderr)
        assert "[1/" not in r.stderr + r.stdout  # no case ran
    apps = BUILD / "bench" / "apps" / "redist-apps"
    for args, words in [(["--alg", "potrf,foo", "--n", "100"], "unknown algorithm 'foo'"),
                        (["--alg", "potrf,", "--n", "100"], "unknown algorithm ''"),
                        (["--bogus"], "unknown option --bogus"),
                        (["--n", "1000x"], "--n needs an integer, got '1000x'"),
                        (["--n", "-5"], "--n must be at least 1"),
                        (["--reps", "0"], "--reps must be at least 1"),
                        (["--at", "-1"], "--at must be at least 0"),
                        (["--push", "2"], "--push must be 0 or 1"),
                        (["--in-place", "2"], "--in-place must be 0 or 1"),
                        (["--storage", "disk"], "--storage must be heap or shared, got 'disk'"),
                        (["--work-storage", "disk"], "--work-storage must be heap or shared, got 'disk'"),
                        (["--huge-pages", "yes"], "--huge-pages must be auto, on or off, got 'yes'"),
                        (["--grid", "3x2"], "--grid must be PxQ with P x Q = 2 ranks, got '3x2'"),
                        (["--grid", "2"], "--grid must be PxQ with P x Q = 2 ranks, got '2'"),
                        (["--n", "100", "--csv", str(blocked / "x.csv")], "cannot open it"),
                        # a word that is no option's value, a value missing at the end, a flag given a value,
                        # mpirun's option after the program (each once ran the default sizes), lending on the heap
                        (["-n", "50", "--alg", "potrf"], "unexpected argument '-n'"),
                        (["--alg", "potrf", "--n"], "--n needs a value"),
                        (["--repeat", "1", "--n", "100"], "unexpected argument '1'"),
                        (["--bind-to", "none", "--n", "100"], "--bind-to is not an option of this program"),
                        (["--n", "100", "--lend", "1"], "--lend 1 needs --storage shared"),
                        (["--strategy", "nosuch", "--n", "100"], "unknown strategy 'nosuch'"),
                        # a new user's trial (2 Dec): --threads 99999 ran until killed, 4294967297 wrapped
                        # to 1, '500,' read as 500, --n 10000000 ended in "std::bad_alloc"
                        (["--n", "100", "--threads", "99999"], "--threads must be at most 1024, got 99999"),
                        (["--n", "100", "--threads", "4294967297"], "--threads must be at most 1024, got 4294967297"),
                        (["--n", "100,"], "--n needs a comma-separated list of numbers, got '100,'"),
                        (["--n", "100", "--n", "200"], "--n is given twice; give it once"),
                        (["--n", "10000000", "--alg", "potrf"], "--n 10000000: the matrices need 1600000.0 GB")]:
        r = subprocess.run([str(MPIRUN), "-np", "2", str(apps)] + args, capture_output=True, text=True, timeout=120)
        assert r.returncode != 0 and words in r.stderr, (args, r.stdout, r.stderr)
        assert r.stderr.count("redist-apps:") == 1, r.stderr  # rank 0 speaks for all
        assert "GF" not in r.stdout  # nothing timed
    for args, words in [(["sched", "--sizes", "-10"], "--sizes must be at least 1"),
                        # the trial's: --push 2 read as 1, an unknown variant exited 1 with the usage,
                        # --nb 0 refused after the first line, reps wrapped
                        (["pingpong", "--push", "2"], "--push must be at most 1, got 2"),
                        (["sched", "--reps", "2", "--reps", "3"], "--reps is given twice; give it once"),
                        (["pingpong", "--reps", "4294967297"], "--reps must be at most 1000000"),
                        (["cholesky", "--n", "300", "--variants", "nosuch"], "unknown variant 'nosuch'"),
                        (["cholesky", "--n", "300", "--nb", "0"], "--nb must be at least 1, got 0"),
                        (["tasks", "--threads", "1,"], "--threads needs a comma-separated list of numbers"),
                        (["cholesky", "--n", "-3"], "--n must be at least 1"),
                        (["cholesky", "--n", "300", "--bogus"], "unknown option --bogus"),
                        (["cholesky", "--n", "300", "--check", "yes"], "unexpected argument 'yes'"),
                        (["sched", "--reps"], "--reps needs a value"),
                        (["pingpong", "--mode", "bogus"], "--mode must be multiple, funneled or workers"),
                        (["pingpong", "--min", "100", "--max", "10"], "--max 10 is below --min 100"),
                        # --grid read strictly (trailing text and a missing Q had read as 0x0, exit 1)
                        (["cholesky", "--n", "300", "--grid", "2x1junk"], "--grid must be PxQ with P x Q = 2 ranks"),
                        (["cholesky", "--n", "300", "--grid", "3x"], "--grid must be PxQ with P x Q = 2 ranks, got '3x'"),
                        (["gemm", "--n", "100", "--grid", "1x1"], "--grid must be PxQ with P x Q = 2 ranks, got '1x1'"),
                        (["gemm", "--n", "100", "--grid", "+1x2"], "--grid must be PxQ with P x Q = 2 ranks, got '+1x2'"),
                        (["gemm", "--n", "100", "--reads", "tasks,foo"], "--reads: unknown form 'foo'")]:
        r = subprocess.run([str(MPIRUN), "-np", "2", str(REDIST), "bench"] + args, capture_output=True, text=True,
                           timeout=120)
        # exit 2 on bad arguments, as redist bench's help says (they exited 1), named for the program
        assert r.returncode == 2 and words in r.stderr, (args, r.stdout, r.stderr)
        assert re.search(r"redist-(bench-)?\w+: error: ", r.stderr), r.stderr


def test_apps_csv_names_its_columns_and_each_launchs_settings(tmp_path):
    """redist-apps --csv: a new file starts with a comment line naming the columns,
    each launch appends a comment line with its settings (it once recorded neither:
    launches with other --storage or --strategy pooled silently), and plot_apps.py
    pools the rows, skipping the comments."""
    apps = BUILD / "bench" / "apps" / "redist-apps"
    out = tmp_path / "apps.csv"
    printed = {}
    for storage in ["heap", "shared"]:  # the second with the round trip's working copy in shared windows too
        r = subprocess.run([str(MPIRUN), "-np", "2", str(apps), "--alg", "potrf", "--n", "200", "--src-tile", "64",
                            "--tile", "48", "--storage", storage, "--work-storage", storage, "--csv", str(out)],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        # the settings line (after report_cpus' line, and on a CPU OpenBLAS does not
        # know after its warning: the line was looked for by its index)
        settings = next((line for line in r.stdout.splitlines() if line.startswith("# ranks=")), "")
        assert f"storage={storage}" in settings, r.stdout
        printed[storage] = next(line.split() for line in r.stdout.splitlines() if line.split()[:1] == ["potrf"])
    lines = out.read_text().splitlines()
    assert len(lines) == 5, lines
    columns = lines[0].lstrip("# ").split(" ")[0].split(",")
    assert columns[:4] == ["ranks", "threads", "alg", "n"] and len(columns) == 15, lines[0]
    for settings, row, storage in [(lines[1], lines[2], "heap"), (lines[3], lines[4], "shared")]:
        assert settings.startswith("# ranks=2 threads/rank=1 ") and f"storage={storage}" in settings, settings
        assert "strategy=shm" in settings and "comm_mode=workers" in settings, settings
        assert f"work_storage={storage}" in settings and "work_grid=default" in settings, settings
        assert "huge_pages=auto" in settings, settings
        values = row.split(",")
        assert len(values) == len(columns) and values[:6] == ["2", "1", "potrf", "200", "64", "48"], row
        # The phases' seconds carry the digits their overhead needs (the CSV's 4
        # decimals, the table's 3, printed 0.000 beside an overhead of 400%).
        to, comp, back = (float(v) for v in values[10:13])
        assert to > 0 and comp > 0 and back > 0, row
        assert abs(100 * (to + back) / comp - float(printed[storage][10])) <= 0.051 + 1e-3 * float(printed[storage][10])
        assert all(float(v) > 0 for v in printed[storage][7:10]), printed[storage]
    plots = tmp_path / "new" / "folder"  # made, as bench/plot.py makes its own (it raised FileNotFoundError)
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "plot_apps.py"), str(out), "--out", str(plots),
                        "--table"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "| potrf | 200 | 2 |" in r.stdout, r.stdout  # both launches pooled
    assert (plots / "apps_potrf.png").stat().st_size > 0


def test_apps_submatrix_at_an_offset():
    """redist-apps --at R: the calls work on the N x N submatrix at (R, R) of an
    (N+R)^2 ScaLAPACK matrix (apps::Submatrix; its results are checked bit for bit by
    ctest's apps_*). pdpotrf refuses a submatrix whose first row is not on a block
    boundary: not run, said once, its columns nan; pdgemm takes any offset."""
    apps = BUILD / "bench" / "apps" / "redist-apps"
    for at, pd_runs in [(40, False), (64, True)]:
        r = subprocess.run([str(MPIRUN), "-np", "2", str(apps), "--alg", "potrf,gemm", "--n", "200", "--at", str(at),
                            "--src-tile", "64", "--tile", "48"], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        settings = next((line for line in r.stdout.splitlines() if line.startswith("# ranks=")), "")
        assert f"submatrix at {at}x{at}" in settings, r.stdout
        rows = {line.split()[0]: line.split() for line in r.stdout.splitlines() if line.split()[:1] in (["potrf"], ["gemm"])}
        assert set(rows) == {"potrf", "gemm"}, r.stdout
        assert (rows["potrf"][3] == "nan") != pd_runs, r.stdout
        assert ("pdpotrf not run" in r.stdout) != pd_runs, r.stdout
        assert rows["gemm"][3] != "nan" and float(rows["gemm"][6]) > 0, r.stdout  # pdgemm ran; the round trip too
        assert "illegal value" not in r.stdout + r.stderr


def test_bench_compare_suite(tmp_path):
    """`redist bench compare SRC DST REGION`: the user's case beside pdgemr2d (it was redist-compare)."""
    from conftest import REDIST
    res = subprocess.run([str(MPIRUN), "-np", "2", str(REDIST), "bench", "compare",
                          "300x200 tile=16x11 block_cyclic grid=1x2", "280x210 tile=9x20 block_cyclic grid=2x1",
                          "100x90 from=3x5 to=7x11", "--reps", "2", "--no-plots", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    (case,) = json.loads((tmp_path / "results.json").read_text())["cases"]
    assert case["suite"] == "compare" and "storage=local_array" in case["src"]
    names = [m["name"] for m in case["methods"]]
    assert names == STRATEGIES + ["auto", "pdgemr2d"]
    assert all(m["verified"] is True for m in case["methods"])
    assert case["total_remote_bytes"] + case["total_local_bytes"] == 100 * 90 * 8
    # its one case has x = 0: plotted on a linear axis (a log axis drew no point: "Data has no positive values")
    plots = subprocess.run([sys.executable, str(ROOT / "bench" / "plot.py"), str(tmp_path / "results.json"), "--out",
                            str(tmp_path / "png")], capture_output=True, text=True, timeout=300)
    assert plots.returncode == 0, plots.stderr
    assert "no positive values" not in plots.stderr and list((tmp_path / "png").glob("*.png")), plots.stderr
    bad = subprocess.run([str(MPIRUN), "-np", "2", str(REDIST), "bench", "compare", "10x10 tile=3x3 random ranks=2",
                          "10x10 tile=3x3 block_cyclic grid=1x2"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "block_cyclic" in bad.stderr, bad.stderr
    # a transpose between two grids: ScaLAPACK has no call for it (its row was left out without a word)
    tran = subprocess.run([str(MPIRUN), "-np", "2", str(REDIST), "bench", "compare", "8x8 tile=2x2 block_cyclic grid=1x2",
                           "8x8 tile=4x4 block_cyclic grid=2x1", "8x8 axes=1,0", "--no-plots", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert tran.returncode == 2 and tran.stderr.count("ScaLAPACK has no call for this case") == 1, tran.stderr
    assert "pdtran needs A and C on one grid" in tran.stderr and "redist run" in tran.stderr, tran.stderr


def test_bench_auto_trials(tmp_path):
    """`--auto-trials 2`: auto's 4 trials run before its verified warm-up (here 1 warm-up + 2 timed runs,
    fewer than the trials: without them first, auto would not have decided by the end), alternating between
    two strategies; results.json lists them under auto's `trials`; auto's choice is one of the two.
    Without the option there are no trials. Values outside 0..1000 are refused with exit code 2."""
    from conftest import REDIST
    case = ["compare", "120x100 tile=16x11 block_cyclic grid=1x2", "120x100 tile=9x20 block_cyclic grid=2x1"]
    res = subprocess.run([str(MPIRUN), "-np", "2", str(REDIST), "bench"] + case +
                         ["--reps", "2", "--auto-trials", "2", "--no-plots", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    (c,) = json.loads((tmp_path / "results.json").read_text())["cases"]
    auto = next(m for m in c["methods"] if m["name"] == "auto")
    trials = auto["trials"]
    assert [t["strategy"] for t in trials] == [trials[0]["strategy"], trials[1]["strategy"]] * 2, trials
    assert trials[0]["strategy"] != trials[1]["strategy"] and all(t["seconds"] > 0 for t in trials)
    assert set(t["strategy"] for t in trials) <= set(STRATEGIES)
    assert auto["chose"] in (trials[0]["strategy"], trials[1]["strategy"]), auto
    assert auto["verified"] is True and len(auto["times_s"]) == 2
    assert all("trials" not in m for m in c["methods"] if m["name"] != "auto")
    plain = subprocess.run([str(MPIRUN), "-np", "2", str(REDIST), "bench"] + case +
                           ["--reps", "1", "--no-plots", "--out", str(tmp_path / "plain")],
                           capture_output=True, text=True, timeout=300)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    (c,) = json.loads((tmp_path / "plain" / "results.json").read_text())["cases"]
    assert all("trials" not in m for m in c["methods"])
    # Pooled (bench/pool.py): every launch's trials in launch order, each with its launch's index;
    # a launch without trials adds none; auto's choice per launch.
    plain_auto = next(m for m in c["methods"] if m["name"] == "auto")
    for inputs, want in (([tmp_path, tmp_path], [0, 1]), ([tmp_path / "plain", tmp_path], [1])):
        out = tmp_path / f"pooled{len(want)}"
        res = subprocess.run([sys.executable, str(ROOT / "bench" / "pool.py")] +
                             [str(p / "results.json") for p in inputs] + ["--out", str(out)],
                             capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, res.stderr
        (pc,) = json.loads((out / "results.json").read_text())["cases"]
        pa = next(m for m in pc["methods"] if m["name"] == "auto")
        assert pa["trials"] == [dict(t, launch=k) for k in want for t in trials], pa["trials"]
        chose = {tmp_path: auto["chose"], tmp_path / "plain": plain_auto["chose"]}
        assert pa["chose_per_launch"] == [chose[p] for p in inputs]
        assert all("trials" not in m for m in pc["methods"] if m["name"] != "auto")
    for bad in ("1001", "-1", "two", ""):
        res = subprocess.run([str(MPIRUN), "-np", "2", str(REDIST), "bench"] + case + ["--auto-trials", bad],
                             capture_output=True, text=True, timeout=120)
        assert res.returncode == 2, (bad, res.stdout, res.stderr)
        assert f"--auto-trials needs a whole number from 0 to 1000, got '{bad}'" in res.stderr, res.stderr


def test_repartition_suite(tmp_path):
    """Paper 003's suite: per patch (segment) and per rank (p2p) only, verified,
    with the summary table; greedy moves no more than balanced."""
    res = run_bench(["repartition", "--smoke", "--scale", "0.125", "--no-plots", "--out", str(tmp_path)])
    assert res.returncode == 0, res.stdout + res.stderr
    cases = json.loads((tmp_path / "results.json").read_text())["cases"]
    assert [c["name"] for c in cases] == ["35^3 greedy patch 16", "66^3 balanced patch 64"]
    for c in cases:
        assert [m["name"] for m in c["methods"]] == ["segment", "p2p"]
        assert all(m["verified"] is True for m in c["methods"])
        assert "of=(" in c["dst"]
    assert "per-patch / per-rank time: median" in res.stdout
    # the summary's times in ms (it printed seconds, 0.0000 at this size), and the median of two cases their mean
    ratios = []
    for c in cases:
        t = {m["name"]: m["median_s"] for m in c["methods"]}
        ratios.append(t["segment"] / t["p2p"])
        row = re.search(rf"^{re.escape(c['name'])} .* ([\d.]+) +([\d.]+) +[\d.]+ +[\d.]+ +[\d.]+ +[\d.]+$",
                        res.stdout, re.M)
        assert row and abs(float(row.group(1)) - t["segment"] * 1e3) < 1e-3, res.stdout
    median = float(re.search(r"per-patch / per-rank time: median ([\d.]+)", res.stdout).group(1))
    assert abs(median - sum(ratios) / 2) < 1.5e-3, (median, ratios, res.stdout)


def test_groups_fit_recovers_eq1(tmp_path):
    """bench/plot.py's paper 002 Eq. 1 fit on the groups suite's figures: times made
    from known t_m and t_w (per algorithm) give them back; the 2-rank smoke run
    carries the route figures (messages, bytes) it fits to."""
    sys.path.insert(0, str(ROOT / "bench"))
    import plot
    true = {"p2p": (20e-6, 0.3e-9), "centralized": (50e-6, 0.5e-9)}
    msgs = {"p2p": lambda n: 16 * n, "centralized": lambda n: 7 + n}
    cases = []
    for i, n in enumerate([1, 2, 4, 8]):
        methods = []
        for name, (tm, tw) in true.items():
            m, d = msgs[name](n), 1e6 * n * n * (2 if name == "centralized" else 1)
            methods.append({"name": name, "median_s": tm * m + tw * d / 4, "route_messages": m, "route_bytes": d})
        cases.append({"x": n, "ranks": 8, "methods": methods})
    fits = plot.model_fits(cases)
    for name, (tm, tw) in true.items():
        assert fits[name][0] == pytest.approx(tm, rel=1e-6) and fits[name][1] == pytest.approx(tw, rel=1e-6)
    res = run_bench(["groups", "--smoke", "--no-plots", "--out", str(tmp_path)])
    assert res.returncode == 0, res.stderr
    data = json.loads((tmp_path / "results.json").read_text())
    for c in data["cases"]:
        by = {m["name"]: m for m in c["methods"]}
        assert by["p2p"]["route_messages"] == 1 and by["centralized"]["route_messages"] == 1, by["p2p"]
        assert by["p2p"]["route_bytes"] == c["total_remote_bytes"], c
    assert set(plot.model_fits(data["cases"])) == {"p2p", "centralized", "staged", "multistage", "hybrid"}


def test_plan_time_leaves_out_a_model_measured_before(tmp_path):
    """Without a calibration file the bench measures the machine once (a few
    seconds) and passes that model to every plan; the harness left the
    measurement's seconds out of each group case's plan time although make_plan
    had not spent them: plan_s -3.6 s. It leaves out what make_plan spent."""
    import os
    env = {k: v for k, v in os.environ.items() if k != "REDIST_CALIBRATION"}
    env["HOME"] = str(tmp_path / "home")  # no ~/.cache/redist/calibration.json
    res = subprocess.run([str(MPIRUN), "-np", "4", str(BENCH), "groups", "--smoke", "--no-plots", "--out",
                          str(tmp_path / "out")], capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 0, res.stderr
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    assert data["cases"], data
    for c in data["cases"]:
        assert c["plan_s"] >= 0, c["plan_s"]


def test_shm_suite_times_the_single_copy_limit(tmp_path):
    """The shm suite times the single-copy limit beside the methods (`single copy`,
    harness::CaseRun::add_single_copy): its median is the case's single_copy_s and
    every method's x1copy is its median over that one; pool.py recomputes both."""
    res = run_bench(["shm", "--smoke", "--out", str(tmp_path / "l0")])
    assert res.returncode == 0, res.stdout + res.stderr
    assert "(measured in this run: `single copy`)" in res.stdout
    data = json.loads((tmp_path / "l0" / "results.json").read_text())
    for case in data["cases"]:
        assert case["single_copy_measured"] is True
        once = next(m for m in case["methods"] if m["name"] == "single copy")
        assert once["verified"] is None and once["median_s"] > 0
        assert case["single_copy_s"] == pytest.approx(once["median_s"], rel=1e-5)
        for m in case["methods"]:
            assert m["times_single_copy"] == pytest.approx(m["median_s"] / case["single_copy_s"], rel=1e-4), m
    res = subprocess.run([sys.executable, str(ROOT / "bench" / "pool.py"), str(tmp_path / "l0" / "results.json"),
                          str(tmp_path / "l0" / "results.json"), "--out", str(tmp_path / "pooled")],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    for case in json.loads((tmp_path / "pooled" / "results.json").read_text())["cases"]:
        once = next(m for m in case["methods"] if m["name"] == "single copy")
        assert case["single_copy_s"] == once["median_s"]
        assert once["times_single_copy"] == pytest.approx(1.0)


def test_threads_suite_times_each_strategy_on_one_and_on_t_copy_threads(tmp_path):
    """The threads suite (Options::copy_threads): each of its strategies on one copy
    thread and again on a plan with --copy-threads T, both verified in the same
    rounds, and a line per strategy with the ratio of the two medians; a count
    below 2 is refused before anything runs."""
    res = run_bench(["threads", "--smoke", "--copy-threads", "3", "--no-plots", "--out", str(tmp_path)])
    assert res.returncode == 0, res.stdout + res.stderr
    data = json.loads((tmp_path / "results.json").read_text())
    assert {c["suite"] for c in data["cases"]} == {"threads"}
    for case in data["cases"]:
        names = {m["name"]: m for m in case["methods"]}
        threaded = [n for n in names if n.endswith(" x3 threads")]
        assert threaded, names
        for n in threaded:
            assert names[n]["verified"] is True and names[n]["median_s"] > 0
            assert n.split(" ")[0] in names  # the same strategy on one thread
    assert res.stdout.count("copy threads: ") >= 2 and "3 threads" in res.stdout
    r = run_bench(["threads", "--smoke", "--copy-threads", "1", "--no-plots", "--out", str(tmp_path / "x")])
    assert r.returncode == 2 and "--copy-threads needs a whole number from 2 to 1024, got '1'" in r.stderr, r.stdout + r.stderr
    assert "[1/" not in r.stdout


def test_tran_suite_is_measured_against_pdtran(tmp_path):
    """`tran`: the transposes beside ScaLAPACK's pdtran (shm among the strategies,
    the fastest there); its speedups, summaries and plot say pdtran, not pdgemr2d."""
    res = run_bench(["tran", "--smoke", "--out", str(tmp_path)])
    assert res.returncode == 0, res.stdout + res.stderr
    assert "geomean vs pdtran" in res.stdout and "geomean vs pdgemr2d" not in res.stdout
    data = json.loads((tmp_path / "results.json").read_text())
    for case in data["cases"]:
        names = [m["name"] for m in case["methods"]]
        assert {"p2p", "shm", "auto", "pdtran"} <= set(names) and "pdgemr2d" not in names, names
        assert all(m["verified"] for m in case["methods"]), case["name"]
    plots = tmp_path / "plots"
    res = subprocess.run([sys.executable, str(ROOT / "bench" / "plot.py"), str(tmp_path / "results.json"),
                          "--out", str(plots)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "geomean speedup over pdtran" in res.stdout and "over pdgemr2d" not in res.stdout
    assert (plots / "tran_speedup.png").stat().st_size > 1000
    res = subprocess.run([sys.executable, str(ROOT / "bench" / "pool.py"), str(tmp_path / "results.json"),
                          "--out", str(tmp_path / "pooled")], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "speedup over pdtran" in res.stdout and "over pdgemr2d" not in res.stdout


def test_benches_choose_blas_kernels_openblas_does_not_know():
    """On a CPU model OpenBLAS does not know (this VM's masked "Intel(R) Xeon(R)
    Processor") it ran its generic Prescott kernels and the benches only warned:
    potrf at N = 6000 23.8 GFLOP/s against 77. The programs now start again with
    OPENBLAS_CORETYPE naming the kernels the CPU has (said in a line), never run
    with the warning's condition, and leave a user's own choice alone."""
    apps = BUILD / "bench" / "apps" / "redist-apps"
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "REDIST_BLAS_CHOSEN")}
    for cmd in ([str(apps), "--alg", "potrf", "--n", "200", "--tile", "48"],
                [str(REDIST), "bench", "cholesky", "--n", "300", "--nb", "100", "--no-scalapack"]):
        r = subprocess.run([str(MPIRUN), "-np", "2"] + cmd, capture_output=True, text=True, timeout=300, env=env)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "WARNING: OpenBLAS runs its generic" not in r.stdout, r.stdout
        chosen = re.search(r"^# OpenBLAS: .* its (\w+) kernels were chosen for it \(OPENBLAS_CORETYPE=\1,", r.stdout,
                           re.M)
        assert chosen is None or chosen.group(1) in ("SkylakeX", "Haswell"), r.stdout
        mine = subprocess.run([str(MPIRUN), "-np", "2"] + cmd, capture_output=True, text=True, timeout=300,
                              env=dict(env, OPENBLAS_CORETYPE="Prescott"))
        assert mine.returncode == 0 and "# OpenBLAS:" not in mine.stdout, mine.stdout + mine.stderr
