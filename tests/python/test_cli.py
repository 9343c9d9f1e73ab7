"""The `redist` command line as a user meets it: help, plan, run, errors.
Figures are checked against values computed here independently (volumes of the
region, tile counts), not against the program's own output."""
import json
import os
import re

import pytest

# The registry, in its order (src/exec/registry.cpp).
STRATEGIES = ["p2p", "segment", "p2p_pipelined", "alltoallv", "alltoallw", "direct", "shm", "phased", "phased_sendrecv", "phased_unsync",
              "phased_dt", "taskgraph", "centralized", "staged", "multistage", "hybrid", "aggregate"]

SRC = "120x90 tile=16x11 block_cyclic grid=1x2"
DST = "100x130 tile=9x20 block_cyclic grid=2x1 storage=local_array"


def test_help_for_every_subcommand(redist):
    top = redist(["--help"])
    assert top.returncode == 0 and "redist run" in top.stdout and "redist plan" in top.stdout
    assert "redist calibrate" in top.stdout
    for sub in ("run", "plan", "calibrate", "repartition"):
        r = redist([sub, "--help"])
        assert r.returncode == 0
        assert r.stdout.startswith("usage:") and "--help" in r.stdout
    run_help = redist(["run", "--help"]).stdout
    assert "--timeout S" in run_help and "exit codes" in run_help
    assert "--test-ready-file" not in run_help  # the tests' option stays hidden
    spec = redist(["help", "spec"])
    assert spec.returncode == 0 and "block_cyclic" in spec.stdout
    # the registry, as --strategy takes it: every strategy with its line, then auto
    st = redist(["help", "strategies"])
    assert st.returncode == 0
    names = re.findall(r"^  (\w+) ", st.stdout, re.M)
    assert names == STRATEGIES + ["auto"], st.stdout


def test_help_under_mpirun_is_printed_once(redist):
    """`mpirun -np 3 redist run --help` printed the help three times (each rank
    answers --help before MPI starts): rank 0 alone prints it now, and an unknown
    command or help topic once, the job failing."""
    for args in (["run", "--help"], ["plan", "--help"], ["calibrate", "-h"], ["repartition", "--help"], ["--help"],
                 ["help", "run"], ["help", "spec"], ["help", "strategies"]):
        r = redist(args, ranks=3)
        assert r.returncode == 0, (args, r.stderr)
        first = r.stdout.splitlines()[0]
        assert r.stdout.count(first + "\n") == 1, (args, r.stdout)
    # rank 0 says it and fails the job; the others end quietly (failing first, they
    # had mpirun kill rank 0 before it spoke: seen under AddressSanitizer)
    for args, words in ((["frobnicate"], "unknown command 'frobnicate'"), (["help", "nosuch"], "no topic 'nosuch'")):
        r = redist(args, ranks=3)
        assert r.returncode != 0 and r.stderr.count(words) == 1, r.stderr


def test_unknown_command_is_an_error(redist):
    r = redist(["frobnicate"])
    assert r.returncode == 2 and "unknown command" in r.stderr


def test_no_command_is_an_error_and_version_is_said(redist):
    """`redist` alone printed the usage and exited 0 (a script that lost its
    arguments went on); `--version` names the build's version and MPI."""
    r = redist([])
    assert r.returncode == 2 and "no command given" in r.stderr and "usage:" in r.stderr, r.stdout + r.stderr
    r = redist([], ranks=2)
    assert r.returncode != 0 and r.stderr.count("no command given") == 1, r.stderr
    r = redist(["--version"])
    assert r.returncode == 0 and re.fullmatch(r"redist \d+\.\d+\.\d+ \(built with .*MPI.*\)\n", r.stdout), r.stdout


@pytest.mark.parametrize("ranks", [1, 2, 3, 4])
def test_run_json_verifies_every_strategy(redist, ranks):
    region = "70x60 from=11x7 to=20x33"
    r = redist(["run", SRC.replace("grid=1x2", f"grid=1x{ranks}"),
                DST.replace("grid=2x1", f"grid={ranks}x1"), region,
                "--reps", "2", "--json"], ranks=ranks)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["schema"] == "redist-results-1" and doc["tool"] == "redist run"
    assert doc["run"]["ranks"] == ranks
    (out,) = doc["cases"]  # the same schema as every bench suite's results.json
    assert out["ranks"] == ranks
    # `all`: every strategy of the registry, then auto
    assert [e["name"] for e in out["methods"]] == STRATEGIES + ["auto"]
    for e in out["methods"]:
        assert e["verified"] is True and e["wrong"] == 0 and e["checked"] > 0
        assert len(e["times_s"]) == 2 and e["median_s"] > 0
    assert out["methods"][-1]["chose"] == out["model_choice"]
    # every element of the region is either sent or copied locally, once
    assert out["total_remote_bytes"] + out["total_local_bytes"] == 70 * 60 * 8
    assert sum(p["sent_bytes"] for p in doc["per_rank"]) == sum(p["received_bytes"] for p in doc["per_rank"])
    assert out["total_remote_bytes"] == sum(p["sent_bytes"] for p in doc["per_rank"])
    assert out["max_remote_bytes"] == max(max(p["sent_bytes"], p["received_bytes"]) for p in doc["per_rank"])
    if ranks == 1:
        assert out["total_remote_bytes"] == 0 and out["max_remote_bytes"] == 0


# Two process groups (paper 002, docs/groups.md): the first N ranks send with SRC,
# the others (every rank with --overlap) receive with DST; every strategy verified.
@pytest.mark.parametrize("ranks,senders,overlap", [(2, 1, False), (3, 2, False), (3, 1, True)])
def test_run_two_groups_verifies_every_strategy(redist, ranks, senders, overlap):
    receivers = ranks if overlap else ranks - senders
    src = f"60x50 tile=7x50 block_cyclic grid={senders}x1"
    dst = f"60x50 tile=60x6 block_cyclic grid=1x{receivers} storage=local_array"
    r = redist(["run", src, dst, "--senders", str(senders), "--reps", "1", "--json"] + (["--overlap"] if overlap else []),
               ranks=ranks)
    assert r.returncode == 0, r.stderr
    (out,) = json.loads(r.stdout)["cases"]
    assert [e["name"] for e in out["methods"]] == STRATEGIES + ["auto"]
    for e in out["methods"]:
        assert e["verified"] is True and e["wrong"] == 0 and e["checked"] == 60 * 50, e


def test_run_table_has_time_bandwidth_and_bound(redist):
    r = redist(["run", SRC, DST, "90x90", "--strategy", "p2p,alltoallw", "--reps", "3"], ranks=2)
    assert r.returncode == 0, r.stderr
    for word in ("median", "bandwidth", "of bound", "Bnet", "Bmemcpy", "p2p", "alltoallw", "ok ("):
        assert word in r.stdout


def test_run_settles_shm_slot_stores_before_timing(redist):
    """shm on the heap sending 4 MB or more per rank times its rings' slot stores
    on its first executes (docs/shm.md "Slots by timing"); `redist run` runs
    those 5 tuning executes before the warm-up, so the describe line counts 5 +
    warm-up + reps executes, the choice made with both modes timed."""
    src = "2000x2000 tile=10x10 block_cyclic grid=1x2 storage=local_array"
    dst = "2000x2000 tile=10x10 block_cyclic grid=2x1 storage=local_array"
    if os.environ.get("REDIST_FIFO_STREAM"):
        pytest.skip("REDIST_FIFO_STREAM fixes the slot stores: nothing is timed")
    r = redist(["run", src, dst, "--strategy", "shm", "--warmup", "2", "--reps", "3", "--storage", "heap"], ranks=2)
    assert r.returncode == 0 and "ok (" in r.stdout, r.stdout + r.stderr
    m = re.search(r"slots (streamed|written with ordinary stores) \(chosen by timing, (\d+) executes; "
                  r"this rank's estimates: streamed ([0-9.]+) ms, ordinary stores ([0-9.]+) ms\)", r.stdout)
    assert m, r.stdout
    assert int(m.group(2)) == 5 + 2 + 3, r.stdout
    assert float(m.group(3)) > 0 and float(m.group(4)) > 0, r.stdout


def test_taskgraph_groups_many_tiny_segments_in_few_tiles(redist, tmp_path):
    """grain auto groups one-element segments when the region has many of them,
    even in few target tiles (20 tiles of 1000 segments here: it once ran one
    Send task per segment, 497 ms against p2p's 0.5 ms at 200000x1): the graph
    `redist plan --dot` writes has a few grouped Send tasks, with --tg-grain 1
    at least one per segment; the grouped run verifies."""
    src, dst = "20000x1 tile=1x1 block_cyclic grid=2x1", "20000x1 tile=1000x1 block_cyclic grid=2x1"
    sends = {}
    for grain in ("auto", "1"):
        dot = tmp_path / f"g{grain}.dot"
        r = redist(["plan", src, dst, "--ranks", "2", "--dot", str(dot), "--tg-grain", grain])
        assert r.returncode == 0, r.stdout + r.stderr
        sends[grain] = sum(1 for line in dot.read_text().splitlines() if line.lstrip().startswith("Send_") and "label" in line)
    assert sends["1"] >= 20000 and 0 < sends["auto"] <= 8, sends
    r = redist(["run", src, dst, "--strategy", "taskgraph", "--reps", "2"], ranks=2)
    assert r.returncode == 0 and "ok (" in r.stdout, r.stdout + r.stderr


def test_run_warns_when_ranks_outnumber_cores(redist):
    """More ranks on the node than cores: the text says the times do not measure
    speed (the JSON said so alone before); fewer: no warning. Cores as the
    harness counts them (hardware threads of the node)."""
    import os
    r = redist(["run", "100x100", "100x100 tile=30x30 block_cyclic grid=3x1", "--reps", "1", "--strategy", "p2p"],
               ranks=3)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("redist run on 3 ranks\n")
    assert ("oversubscribed" in r.stdout) == (3 > os.cpu_count()), r.stdout
    one = redist(["run", "100x100", "100x100 tile=30x30", "--reps", "1", "--strategy", "p2p"], ranks=1)
    assert one.returncode == 0 and one.stdout.startswith("redist run on 1 rank\n") and "oversubscribed" not in one.stdout


def test_plan_statistics_for_many_ranks(redist):
    # 4096 ranks, 512 -> 384 tiles: all bytes of the array are accounted for.
    r = redist(["plan", "65536x65536 tile=512x512 block_cyclic grid=64x64",
                "65536x65536 tile=384x384 block_cyclic grid=32x128", "--ranks", "4096", "--top", "3"])
    assert r.returncode == 0, r.stderr
    assert "4096 simulated ranks" in r.stdout and "heaviest peer pairs" in r.stdout
    assert "remote 34.35 GB, local 7.86 MB" in r.stdout   # 65536^2 * 8 B = 34.36 GB in all
    # 384-tiles: ceil(65536/384) = 171 per dimension -> 29241 target tiles
    assert "29241 target tiles" in r.stdout


def test_plan_shm_buffers_follow_storage_and_nodes(redist):
    """`redist plan`'s buffers of shm: nothing through shared windows on one node,
    a ring per sender on the heap (4 slots of 64 KB and a control page, page
    aligned), the packed volume each way with peers on other nodes; a budget still
    counts the packed volume (what Plan and auto count)."""
    src, dst = "2000x2000 tile=10x10 block_cyclic grid=1x2", "2000x2000 tile=10x10 block_cyclic grid=2x1"

    def line(args, name):
        r = redist(["plan", src, dst] + args)
        assert r.returncode == 0, r.stderr
        return next(l for l in r.stdout.splitlines() if l.split()[:1] == [name] and "B" in l.split()[2])

    p2p = line([], "p2p").split()
    assert p2p[1:3] == ["16.00", "MB"]   # 8 MB sent + 8 MB received per rank
    heap = line([], "shm")
    ring = -(-(256 + 4 * 65536) // 4096) * 4096   # one sender per rank
    assert heap.split()[1:3] == [f"{ring / 1000:.2f}", "KB"], heap
    assert "rings in /dev/shm" in heap and "a budget counts 16.00 MB" in heap
    shared = line(["--storage", "shared"], "shm")
    assert shared.split()[1:3] == ["0", "B"] and "shared windows" in shared
    apart = line(["--ranks-per-node", "1"], "shm")   # every peer on another node: messages
    assert apart.split()[1:3] == ["16.00", "MB"] and "budget" not in apart
    assert "over the budget" in line(["--memory", "1000000"], "shm")


# The bad-input catalogue of the command line (docs/errors.md is written from
# these lists by scripts/errors_table.py): (input, where it is checked, args,
# key words of the message). `redist run` cases run on 2 ranks.
BAD_RUN = [
    ("a tile size 0", "Layout::check in make_plan",
     ["100x100 tile=0x10", "100x100"], ["tile size of dimension 0 must be > 0"]),
    ("a malformed spec", "Layout::parse",
     ["100x100", "100x100 grid=ax2"], ["bad layout spec at column", "expected an integer"]),
    ("a region that leaves the target", "Region::check in make_plan",
     ["100x100", "50x50"], ["leaves the target array"]),
    ("a malformed region", "Region::parse",
     ["100x100", "100x100", "10xa"], ["bad region", "integers joined by 'x'"]),
    ("--copy-threads 0", "redist run options",
     ["100x100", "100x100", "--copy-threads", "0"], ["option --copy-threads needs an integer >= 1 and <= 1024"]),
    ("--senders 2 on 2 ranks without --overlap (no receiver left)", "redist run options",
     ["100x100", "100x100", "--senders", "2"], ["option --senders needs an integer >= 1 and <= 1"]),
    ("a sender layout for more ranks than --senders gives the group", "make_group_plan",
     ["100x100 tile=50x100 block_cyclic grid=2x1", "100x100", "--senders", "1"],
     ["sender layout (a group of 1 ranks)", "needs 2 ranks"]),
    ("an unknown strategy", "check_strategy",
     ["100x100", "100x100", "--strategy", "fast"], ["unknown strategy 'fast'", "p2p", "auto"]),
    ("a value given to a flag (--no-verify=false would still skip the check)", "redist run options",
     ["100x100", "100x100", "--no-verify=false"], ["option --no-verify takes no value, got '--no-verify=false'"]),
    ("a strategy list none of which applies the arithmetic (it ran nothing, exit 0)", "redist run options",
     ["60x40 tile=10x10 block_cyclic grid=1x2", "40x60 tile=7x9 block_cyclic grid=2x1", "40x60 axes=1,0",
      "--strategy", "taskgraph,direct", "--type", "f64", "--alpha", "2"],
     ["--strategy taskgraph,direct: none of these applies the arithmetic", "the strategies that do: p2p"]),
    ("an option where a value belongs (the next words were read as a REGION)", "redist run options",
     ["100x100", "100x100", "--senders", "--overlap"], ["option --senders needs a value, got the option --overlap"]),
    ("--reps 0", "redist run options",
     ["100x100", "100x100", "--reps", "0"], ["--reps needs an integer >= 1"]),
    ("--reps beyond an int (used to wrap)", "redist run options",
     ["100x100", "100x100", "--reps", "4294967297"], ["--reps needs an integer >= 1 and <= 2147483647"]),
    ("a negative --warmup", "redist run options",
     ["100x100", "100x100", "--warmup", "-1"], ["--warmup needs an integer >= 0"]),
    ("a memory budget the named strategy does not fit", "make_plan (Options::max_buffer_bytes)",
     ["100x100 tile=10x10 block_cyclic grid=1x2", "100x100 tile=10x10 block_cyclic grid=2x1", "--memory", "10",
      "--strategy", "p2p"],
     ["--memory 10 is too small for strategy p2p", "strategy segment needs no buffer at all (any budget)"]),
    ("no REGION, and the whole source does not fit the target", "redist run arguments",
     ["9x9", "8x8"], ["no REGION given: the default moves the whole source 9x9 to offset 0 of the target 8x8",
                      "leaves the target array 8x8 in dimension 0", "give a REGION, such as 8x8"]),
    ("--memory 0", "redist run options",
     ["100x100", "100x100", "--memory", "0"], ["--memory needs an integer >= 1"]),
    ("--max-message 0", "redist run options",
     ["100x100", "100x100", "--max-message", "0"], ["--max-message needs an integer >= 1"]),
    ("--timeout 0", "redist run options",
     ["100x100", "100x100", "--timeout", "0"], ["--timeout needs an integer >= 1"]),
    ("--timeout in fractions of a second", "redist run options",
     ["100x100", "100x100", "--timeout", "2.5"], ["--timeout needs an integer >= 1 and <= 2147483647", "got '2.5'"]),
    ("--timeout that is not a number", "redist run options",
     ["100x100", "100x100", "--timeout=soon"], ["--timeout needs an integer >= 1", "got 'soon'"]),
    ("an option without its value", "redist run options",
     ["100x100", "100x100", "--strategy"], ["option --strategy needs a value"]),
    ("an unknown option", "redist run options",
     ["100x100", "100x100", "--bogus"], ["unknown option '--bogus'"]),
    ("a missing target spec", "redist run arguments",
     ["100x100"], ["expected SRC DST [REGION], got 1 arguments"]),
    ("a grid larger than the communicator", "Layout::check in make_plan",
     ["100x100 block_cyclic grid=1x3", "100x100"], ["needs 3 ranks, the communicator has 2"]),
    ("a table owner outside the communicator", "Layout::check in make_plan",
     ["4x4 tile=2x2 table owners=0,1,2,1", "4x4"], ["needs 3 ranks, the communicator has 2"]),
    ("ld=10 for 100 rows (was a heap overflow)", "LocalIndex in make_plan",
     ["100x100 tile=10x10 block_cyclic grid=2x1 storage=local_array ld=10", "100x100"],
     ["source layout", "ld=10 is smaller than the 50 local rows", "ld must be >= 50"]),
    ("block_cyclic super=0x1 (was a division by zero)", "Layout::check in make_plan",
     ["100x100 tile=10x10 block_cyclic grid=1x2 super=0x1", "100x100"], ["super=0x1: every entry must be >= 1"]),
    ("random ranks=0 (was a division by zero)", "Layout::check in make_plan",
     ["100x100 tile=10x10 random seed=1 ranks=0", "100x100"], ["random ranks=0 must be >= 1"]),
    ("random ranks=-3 (was a message from overflowed values)", "Layout::check in make_plan",
     ["8x8 tile=4x4 random ranks=-3", "8x8"], ["random ranks=-3 must be >= 1"]),
    ("random with storage=local_array (was std::bad_variant_access)", "Layout::check in make_plan",
     ["100x100 tile=10x10 random seed=2 ranks=2 storage=local_array", "100x100"],
     ["storage=local_array needs a per-dimension ownership (block_cyclic)"]),
    ("esize=100000000 on 100x100 (was std::bad_alloc, abort)", "CaseRun: memory per node, before allocating",
     ["100x100 esize=100000000", "100x100 esize=100000000"],
     ["not enough memory", "this case needs 1862.6 GiB of storage on rank 0", "the node has"]),
    ("3000000x3000000 doubles (was std::bad_alloc, abort)", "CaseRun: memory per node, before allocating",
     ["3000000x3000000 tile=1000x1000", "3000000x3000000 tile=1000x1000"],
     ["not enough memory", "GiB of storage on rank 0 (source", "the node has"]),
    ("4294967296x4294967296 doubles (was an abort after the message)", "Layout::check in make_plan",
     ["4294967296x4294967296 tile=1000x1000", "4294967296x4294967296 tile=1000x1000"],
     ["array 4294967296x4294967296 of 8-byte elements overflows 64-bit byte counts"]),
    ("tile=9223372036854775807 (was a silent wrong result)", "Layout::check in make_plan",
     ["8x8 tile=9223372036854775807x4 block_cyclic grid=1x2", "8x8 tile=4x4 block_cyclic grid=2x1"],
     ["tile size 9223372036854775807 of dimension 0 is too large", "overflows 64-bit"]),
    ("a negative extent without REGION (said: give a REGION, such as 8x-8)", "Layout::check in make_plan",
     ["8x-8", "8x8"], ["source layout: extent of dimension 1 must be >= 0, got -8"]),
    ("an extent of 2^63-1 without tile= (said: the extent may be at most 0)", "Layout::check in make_plan",
     ["9223372036854775807x2", "9223372036854775807x2"],
     ["with one tile of the whole extent (no tile= given", "the extent may be at most 4611686018427387903"]),
    ("an option given twice (the last was kept without a word)", "redist run options",
     ["100x100", "100x100", "--reps", "3", "--reps", "4"], ["option --reps is given twice ('3' and '4'); give it once"]),
    ("an empty value (a script's unset variable)", "redist run options",
     ["100x100", "100x100", "--strategy", ""], ["option --strategy needs a value, got an empty one"]),
    ("--type whose size is not the layouts' (said: options.arithmetic ... (esize=))", "make_plan (options.arithmetic)",
     ["100x100", "100x100", "--type", "f32"],
     ["--type, --alpha, --beta, --conj: element type f32 has 4 bytes, the layouts' elements have 8 (esize=8)"]),
    ("--alpha without --type (the message did not name --type)", "make_plan (options.arithmetic)",
     ["100x100", "100x100", "--alpha", "2"], ["needs arithmetic on the elements: name their type with --type (f32"]),
    ("--alpha on integers (said: name their type, which was named)", "make_plan (options.arithmetic)",
     ["100x100", "100x100", "--type", "i64", "--alpha", "2"],
     ["alpha=2 beta=0 on i64 elements: integer elements move only as they are"]),
    ("a memory budget no strategy of a list fits (said less than for one strategy)", "redist run options",
     ["100x100 tile=10x10 block_cyclic grid=1x2", "100x100 tile=10x10 block_cyclic grid=2x1", "--memory", "10",
      "--strategy", "p2p,alltoallv"],
     ["--memory 10: no strategy of --strategy p2p,alltoallv fits in it", "p2p needs", "alltoallv needs",
      "give --memory"]),
]

BAD_PLAN = [
    ("random ranks=0", "Layout::check in redist plan",
     ["100x100", "100x100 random ranks=0"], ["random ranks=0 must be >= 1"]),
    ("random ranks=-3 without --ranks (was a message from overflowed values)", "Layout::check in redist plan",
     ["8x8 tile=4x4 random ranks=-3", "8x8"], ["source layout: random ranks=-3 must be >= 1"]),
    ("tile=9223372036854775807 (was a silent wrong result)", "Layout::check in redist plan",
     ["8x8 tile=9223372036854775807x4 block_cyclic grid=1x2", "8x8 tile=4x4 block_cyclic grid=2x1", "--ranks", "2"],
     ["tile size 9223372036854775807 of dimension 0 is too large"]),
    ("a random ownership of 10^10 tiles (planning ran until memory ran out)", "Layout::check in redist plan",
     ["100000x100000 tile=1x1 random ranks=4", "100000x100000 tile=1000x1000 block_cyclic grid=1x4", "--ranks", "4"],
     ["random ownership decides each tile's owner apart", "at most 2^25 (33554432) tiles"]),
    ("ld=10 for 100 rows (was accepted without a word)", "LocalIndex in plan_rank",
     ["100x100 tile=10x10 block_cyclic grid=2x1 storage=local_array ld=10", "100x100"],
     ["source layout: storage=local_array ld=10 is smaller than the 50 local rows of rank 0"]),
    ("a negative target extent without REGION (said: give a REGION, such as 8x-8)", "Layout::check in redist plan",
     ["8x8", "8x-8", "--ranks", "2"], ["target layout: extent of dimension 1 must be >= 0, got -8"]),
    ("--ranks 0", "redist plan options",
     ["8x8", "8x8", "--ranks", "0"], ["--ranks needs an integer >= 1"]),
    ("--rank outside --ranks", "redist plan options",
     ["8x8", "8x8", "--ranks", "2", "--rank", "2"], ["--rank 2 must be < --ranks 2"]),
    ("--senders leaving no receivers", "redist plan options",
     ["8x8", "8x8", "--ranks", "2", "--senders", "2"], ["--senders 2 leaves no receivers among --ranks 2"]),
    ("--overlap without --senders", "redist plan options",
     ["8x8", "8x8", "--overlap"], ["--overlap needs --senders N"]),
    ("a sender layout for more ranks than the senders", "Layout::check in redist plan",
     ["8x8 tile=4x4 block_cyclic grid=2x1", "8x8", "--ranks", "3", "--senders", "1"],
     ["source layout (in the group of --senders): the ownership needs 2 ranks"]),
    ("more senders than ranks", "redist plan options",
     ["8x8", "8x8", "--ranks", "4", "--senders", "5"], ["--senders 5 is more than --ranks 4"]),
    ("--ranks 2000000000 (planned until memory ran out)", "redist plan options",
     ["100x100", "100x100", "--ranks", "2000000000"],
     ["option --ranks needs an integer >= 1 and <= 8388608 when every rank is planned, got '2000000000'"]),
    ("a task-graph option without --dot (--tg-grain 0 passed)", "redist plan options",
     ["100x100", "100x100", "--tg-grain", "0"], ["option --tg-grain needs an integer >= 1"]),
    ("--tg-chained without --dot (it did nothing)", "redist plan options",
     ["100x100", "100x100", "--tg-chained"], ["option --tg-chained shapes the task graph that --dot FILE writes"]),
    ("an empty file name (said: cannot open  (run ... --out  first))", "redist plan options",
     ["100x100", "100x100", "--calibration", ""], ["option --calibration needs a value, got an empty one"]),
    ("--dot with an empty file name (said: cannot write )", "redist plan options",
     ["100x100", "100x100", "--dot", ""], ["option --dot needs a value, got an empty one"]),
    # Calibration files (`redist calibrate` writes them; these are edited by hand
    # or damaged): each number is required and in a range no machine leaves.
    ("a calibration file with a word for a number (\"bnet\": \"fast\" was read as 0)", "load_machine in redist plan",
     ["8x8", "8x8", "--predict", "--calibration", "tests/python/bad_calibration/bnet_fast.json"],
     ["bnet_fast.json is not a calibration file (calibration JSON: key 'bnet' must be a number >= 0 and < 1e15",
      "got \"fast\""]),
    ("a calibration file without startup_s (was read as 0)", "load_machine in redist plan",
     ["8x8", "8x8", "--predict", "--calibration", "tests/python/bad_calibration/no_startup.json"],
     ["key 'startup_s' must be a number >= 0 and < 3600 (seconds", "got nothing (the key is missing)"]),
    ("a calibration file without pingpong_s (said: pingpong_bytes and pingpong_s differ in length)",
     "load_machine in redist plan",
     ["8x8", "8x8", "--predict", "--calibration", "tests/python/bad_calibration/no_pingpong_s.json"],
     ["key 'pingpong_s' must be an array of numbers >= 0 and < 3600 (seconds), as many as 'pingpong_bytes' has (3)"]),
    ("a calibration file with \"startup_s\": 1e300 (broke the --predict columns)", "load_machine in redist plan",
     ["8x8", "8x8", "--predict", "--calibration", "tests/python/bad_calibration/startup_1e300.json"],
     ["key 'startup_s' must be a number >= 0 and < 3600", "got 1e+300"]),
]


def _run_every_rank_prints(args, ranks=2):
    """redist ARGS under mpirun, every rank printing its error (REDIST_SHOW_ERRORS=1)."""
    import os
    import subprocess
    from conftest import MPIRUN, REDIST
    env = dict(os.environ, REDIST_SHOW_ERRORS="1")
    return subprocess.run([str(MPIRUN), "-np", str(ranks), str(REDIST)] + args, capture_output=True, text=True,
                          timeout=120, env=env)


def _error_lines(stderr, command):
    return [line for line in stderr.splitlines() if line.startswith(f"redist {command}: error")]


@pytest.mark.parametrize("case", BAD_RUN, ids=[c[0] for c in BAD_RUN])
def test_bad_input_is_one_clear_error(redist, case):
    _, _, args, words = case
    # printed once, not once per rank
    r = redist(["run"] + args, ranks=2)
    assert r.returncode == 2, r.stderr
    for w in words:
        assert w in r.stderr, r.stderr
    assert r.stderr.count("error:") == 1, r.stderr
    # the same message on every rank (each prints it when asked to)
    every = _run_every_rank_prints(["run"] + args)
    assert every.returncode == 2, every.stderr
    lines = _error_lines(every.stderr, "run")
    assert len(lines) == 2 and lines[0] == lines[1], every.stderr
    for w in words:
        assert w in lines[0]


@pytest.mark.parametrize("case", BAD_PLAN, ids=[c[0] for c in BAD_PLAN])
def test_plan_bad_input(redist, case):
    _, _, args, words = case
    r = redist(["plan"] + args)
    assert r.returncode == 2, r.stdout + r.stderr
    for w in words:
        assert w in r.stderr, r.stderr
    assert "volume" not in r.stdout  # no statistics from a bad plan
    assert "simulated ranks" not in r.stdout, r.stdout  # nor a header before the error


# Ranks launched with different arguments (MPMD): they would take different
# paths (another --reps: another number of collectives). The command line is
# compared before anything is parsed.
@pytest.mark.parametrize("extra", [["--reps", "3"], ["--no-verify"]], ids=["reps", "no-verify"])
def test_options_that_differ_between_ranks(extra):
    import os
    import subprocess
    from conftest import MPIRUN, REDIST
    base = [str(REDIST), "run", "8x8 tile=4x4 block_cyclic grid=1x2", "8x8", "--reps", "2"]
    env = dict(os.environ, REDIST_SHOW_ERRORS="1")
    r = subprocess.run([str(MPIRUN), "-np", "1"] + base + [":", "-np", "1"] + base + extra, capture_output=True,
                       text=True, timeout=120, env=env)
    assert r.returncode == 2, r.stderr
    lines = _error_lines(r.stderr, "run")
    assert len(lines) == 2 and lines[0] == lines[1], r.stderr
    assert "rank 1: the command line differs between ranks" in lines[0]
    assert "every rank must get the same arguments" in lines[0] and " ".join(extra) in lines[0]


# The REDIST_* environment likewise: REDIST_STORAGE or REDIST_NODE_SIZE on one rank
# only hung the job (one rank made shared windows, the others waited elsewhere).
@pytest.mark.parametrize("var", ["REDIST_STORAGE=shared", "REDIST_NODE_SIZE=1"])
def test_environment_that_differs_between_ranks(var):
    import os
    import subprocess
    from conftest import MPIRUN, REDIST
    base = [str(REDIST), "run", "100x100 tile=10x10 block_cyclic grid=1x2", "100x100 tile=7x7 block_cyclic grid=2x1",
            "--reps", "1", "--strategy", "shm"]
    env = dict(os.environ, REDIST_SHOW_ERRORS="1")
    r = subprocess.run([str(MPIRUN), "-np", "1"] + base + [":", "-np", "1", "env", var] + base, capture_output=True,
                       text=True, timeout=120, env=env)
    assert r.returncode == 2, r.stderr
    lines = _error_lines(r.stderr, "run")
    assert len(lines) == 2 and lines[0] == lines[1], r.stderr
    assert "rank 1: the REDIST_* environment differs between ranks: rank 0 has '" in lines[0], lines[0]
    assert f"{var}'; every rank must get the same arguments and REDIST_* environment" in lines[0], lines[0]


def test_calibrate_writes_json_and_reuses_it(redist, tmp_path):
    out = tmp_path / "cal.json"
    r = redist(["calibrate", "--max-size", "65536", "--out", str(out)], ranks=2)
    assert r.returncode == 0, r.stderr
    assert "calibrate: ping-pong" in r.stderr          # progress while it runs
    assert "saved" in r.stdout
    # no 1 MB message at --max-size 65536: the bandwidth of the largest, not an extrapolation
    assert "Bnet" in r.stdout and "at the largest size (65.54 KB)" in r.stdout and "at 1 MB" not in r.stdout, r.stdout
    assert ("WARNING" in r.stdout) == ((os.cpu_count() or 1) < 2), r.stdout
    cal = json.loads(out.read_text())
    assert cal["format"] == "redist-calibration-3"
    assert cal["hostname"] and cal["cores"] >= 1 and cal["ranks"] == 2
    assert "Open MPI" in cal["mpi_library"] or cal["mpi_library"]
    assert cal["build"] and cal["created"]
    # 8 B .. 64 KB: powers of 2 and 1.5 x powers of 2, ascending, times positive
    sizes = cal["pingpong_bytes"]
    assert sizes[0] == 8 and sizes[-1] == 65536 and 4096 in sizes and 6144 in sizes
    assert sizes == sorted(sizes) and len(cal["pingpong_s"]) == len(sizes)
    assert all(t > 0 for t in cal["pingpong_s"])
    assert 0 < cal["startup_s"] < 1e-3 and cal["bmemcpy"] > 1e8
    for key in ("copy", "datatype", "vm_read", "copy_small"):
        rows = cal[f"{key}_row_bytes"]
        assert 80 in rows and 2048 in rows and len(cal[f"{key}_s_per_byte"]) == len(rows)
    assert len(cal["stream_messages"]) == len(cal["stream_s_per_message"]) >= 2
    # where the caches end: footprints from the small to the large one, ascending
    fp = cal["footprint_bytes"]
    assert fp[0] == cal["small_footprint_bytes"] and fp[-1] == cal["large_footprint_bytes"]
    assert fp == sorted(fp) and len(cal["footprint_s_per_byte"]) == len(fp) >= 3
    # reused unless --force
    again = redist(["calibrate", "--out", str(out)], ranks=2)
    assert again.returncode == 0 and "reused" in again.stdout and "ping-pong" not in again.stderr
    assert json.loads(out.read_text())["created"] == cal["created"]


def test_calibrate_warns_when_oversubscribed(redist, tmp_path):
    """More ranks than cores measure the crowding (3 ranks on 2 cores: Bnet 0.84
    GB/s against 4.49): said before and after, the file still written."""
    r = redist(["calibrate", "--max-size", "8192", "--out", str(tmp_path / "c.json")], ranks=3)
    assert r.returncode == 0 and "saved" in r.stdout, r.stderr
    crowded = (os.cpu_count() or 1) < 3
    assert ("3 ranks on a node of" in r.stdout and "oversubscribed" in r.stdout) == crowded, r.stdout
    assert ("redist calibrate: WARNING: 3 ranks" in r.stderr) == crowded, r.stderr


def test_calibrate_does_not_replace_a_file_it_did_not_write(redist, tmp_path):
    """calibrate --out on a file that is no calibration (a user's notes) measured
    and replaced it: refused now, on every rank, unless --force; the file kept."""
    notes = tmp_path / "notes.txt"
    notes.write_text("my precious notes\n")
    r = redist(["calibrate", "--max-size", "8192", "--out", str(notes)], ranks=2)
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"--out {notes} exists: {notes} is not a calibration file" in r.stderr, r.stderr
    assert "--force to replace it" in r.stderr and "ping-pong" not in r.stderr  # nothing measured
    assert notes.read_text() == "my precious notes\n"
    r = redist(["calibrate", "--max-size", "8192", "--out", str(notes), "--force"], ranks=2)
    assert r.returncode == 0 and json.loads(notes.read_text())["format"] == "redist-calibration-3", r.stderr


def test_calibrate_needs_two_ranks(redist, tmp_path):
    r = redist(["calibrate", "--out", str(tmp_path / "c.json")], ranks=1)
    assert r.returncode == 2 and "needs 2 or more ranks" in r.stderr


def test_calibration_files_that_cannot_serve_say_why(redist, tmp_path):
    """A calibration file that is not one, or missing, is named with the reason
    (it once said "cannot read" of a file it had read); --calibration alone says
    it implies --predict; calibrate refuses an --out it cannot write before it
    measures (it once measured for seconds first), leaving nothing behind; `redist
    help` of an unknown topic is an error naming the topics."""
    import os
    import subprocess
    from conftest import MPIRUN, REDIST
    junk = tmp_path / "junk.json"
    junk.write_text("not json")
    src, dst = "100x100 tile=10x10 block_cyclic grid=1x2", "100x100 tile=7x9 block_cyclic grid=2x1"
    r = redist(["plan", src, dst, "--predict", "--calibration", str(junk)])
    assert r.returncode == 2 and f"{junk} is not a calibration file" in r.stderr, r.stderr
    # JSON of the right format without its rates predicted 0 s for everything
    empty = tmp_path / "empty.json"
    empty.write_text('{"format": "redist-calibration-3", "bnet": -5}')
    r = redist(["plan", src, dst, "--predict", "--calibration", str(empty)])
    assert r.returncode == 2 and f"{empty} is not a calibration file" in r.stderr, r.stderr
    assert "key 'bnet' must be a number >= 0 and < 1e15 (bytes per second" in r.stderr and "got -5" in r.stderr, r.stderr
    r = redist(["plan", src, dst, "--calibration", str(tmp_path / "none.json")])
    assert r.returncode == 2 and "--calibration (it implies --predict)" in r.stderr and "cannot open" in r.stderr
    env = dict(os.environ, REDIST_CALIBRATION=str(junk))  # the default file: measured quickly, the reason said
    r = subprocess.run([str(MPIRUN), "-np", "2", str(REDIST), "run", src, dst, "--reps", "1", "--strategy", "p2p"],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0 and re.search(rf"measured in this run in [0-9.]+ m?s: {re.escape(str(junk))} is not a "
                                           "calibration file", r.stdout), r.stdout
    blocked = tmp_path / "file"
    blocked.write_text("")
    r = redist(["calibrate", "--out", str(blocked / "c.json")], ranks=2)
    assert r.returncode == 2 and "cannot make its folder" in r.stderr and "ping-pong" not in r.stderr, r.stderr
    r = redist(["help", "bogus"])
    assert r.returncode == 2 and "no topic 'bogus'" in r.stderr and "spec and strategies" in r.stderr
    # A file that exists but is no calibration: the advice is not to calibrate into it
    # (calibrate refuses that file); a folder is named as one, read by no rank.
    r = redist(["plan", src, dst, "--predict", "--calibration", str(junk)])
    assert "give a file that `redist calibrate --out FILE` wrote" in r.stderr, r.stderr
    assert f"calibrate --out {junk}" not in r.stderr, r.stderr
    r = redist(["plan", src, dst, "--predict", "--calibration", str(tmp_path / "none.json")])
    assert f"run `mpirun -np 2 redist calibrate --out {tmp_path / 'none.json'}` first" in r.stderr, r.stderr
    r = redist(["plan", src, dst, "--predict", "--calibration", str(tmp_path)])
    assert r.returncode == 2 and f"{tmp_path} is a folder, not a calibration file" in r.stderr, r.stderr
    for force in ([], ["--force"]):  # without --force rank 0 alone threw reading it, and the job was killed
        r = redist(["calibrate", "--max-size", "4096", "--out", str(tmp_path)] + force, ranks=2)
        assert r.returncode == 2 and r.stderr.count(f"--out {tmp_path} is a folder: give a file's path, such as "
                                                    f"{tmp_path / 'calibration.json'}") == 1, r.stderr
        assert "ping-pong" not in r.stderr and "ORTE" not in r.stderr, r.stderr


def test_run_auto_uses_the_calibration_and_names_its_choice(redist, tmp_path):
    import os
    import subprocess
    out = tmp_path / "cal.json"
    assert redist(["calibrate", "--max-size", "65536", "--out", str(out)], ranks=2).returncode == 0
    env = dict(os.environ, REDIST_CALIBRATION=str(out))
    from conftest import MPIRUN, REDIST
    cmd = [str(MPIRUN), "-np", "2", str(REDIST), "run", SRC, DST, "90x90", "--strategy", "auto,p2p", "--reps", "2", "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["machine"]["source"] == str(out)
    o = doc["cases"][0]
    auto, p2p = o["methods"]
    assert auto["name"] == "auto" and p2p["name"] == "p2p"
    assert auto["chose"] in STRATEGIES
    assert auto["chose"] == o["model_choice"]
    assert auto["verified"] is True and p2p["verified"] is True
    assert auto["predicted_s"] > 0 and p2p["predicted_s"] > 0
    # the table: a predicted column and auto's choice
    t = subprocess.run(cmd[:-1], capture_output=True, text=True, timeout=300, env=env)
    assert t.returncode == 0, t.stderr
    assert "predicted" in t.stdout and f"auto({auto['chose']})" in t.stdout
    assert f"calibration {out}" in t.stdout


def test_run_without_calibration_file_measures_quickly(redist, tmp_path):
    import os
    import subprocess
    from conftest import MPIRUN, REDIST
    env = dict(os.environ, REDIST_CALIBRATION=str(tmp_path / "none.json"))
    cmd = [str(MPIRUN), "-np", "2", str(REDIST), "run", SRC, DST, "90x90", "--strategy", "auto", "--reps", "1"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    assert "calibration quick" in r.stdout and "auto(" in r.stdout and "ok (" in r.stdout
    assert not (tmp_path / "none.json").exists()   # a quick measurement is not saved


def test_plan_predict_matches_the_pick_of_a_run(redist, tmp_path):
    """`redist plan --predict` simulates every rank without MPI; its pick must be
    what the MPI run's model (same calibration, max over real ranks) picks."""
    import os
    import re
    import subprocess
    from conftest import MPIRUN, REDIST
    out = tmp_path / "cal.json"
    assert redist(["calibrate", "--max-size", "65536", "--out", str(out)], ranks=2).returncode == 0
    for src, dst in (("120x90 tile=16x11 block_cyclic grid=1x2",
                      "120x90 tile=9x20 block_cyclic grid=2x1 storage=local_array"),
                     ("300x200 tile=10x10 block_cyclic grid=1x2", "300x200 tile=37x23 block_cyclic grid=2x1"),
                     ("64x64x8 tile=16x16x8 random ranks=2", "64x64x8 tile=8x32x4 block_cyclic grid=2x1x1")):
        p = redist(["plan", src, dst, "--ranks", "2", "--predict", "--calibration", str(out)])
        assert p.returncode == 0, p.stderr
        times = dict(re.findall(r"^\s+(" + "|".join(STRATEGIES) + r")\s+([\d.]+ \w+)", p.stdout, re.M))
        assert set(times) == set(STRATEGIES), p.stdout
        picks = re.findall(r"^\s+(\w+)\s+[\d.]+ \w+\s+<- auto\b", p.stdout, re.M)
        assert len(picks) == 1, p.stdout
        env = dict(os.environ, REDIST_CALIBRATION=str(out))
        r = subprocess.run([str(MPIRUN), "-np", "2", str(REDIST), "run", src, dst, "--strategy", "p2p",
                            "--reps", "1", "--json"], capture_output=True, text=True, timeout=300, env=env)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["cases"][0]["model_choice"] == picks[0]
    # centralized's hub (union rank 0) forwards every remote byte: on 64 ranks its time is at least half
    # the remote volume at the largest ping-pong's bandwidth (the per-rank model, a 64th of it, said ~300x
    # too little at 4096 ranks)
    cal = json.loads(out.read_text())
    bnet = cal["pingpong_bytes"][-1] / cal["pingpong_s"][-1]
    p = redist(["plan", "1024x1024 tile=64x64 block_cyclic grid=8x8", "1024x1024 tile=48x48 block_cyclic grid=4x16",
                "--ranks", "64", "--predict", "--calibration", str(out)])
    assert p.returncode == 0, p.stderr
    remote = re.search(r"^volume +remote ([\d.]+) MB", p.stdout, re.M)
    unit = {"us": 1e-6, "ms": 1e-3, "s": 1.0}
    hub = re.search(r"^  centralized +([\d.]+) (us|ms|s)  \(from every rank's schedule of the routes\)", p.stdout, re.M)
    assert remote and hub, p.stdout
    seconds = float(hub.group(1)) * unit[hub.group(2)]
    assert seconds >= 0.5 * float(remote.group(1)) * 1e6 / bnet, (seconds, remote.group(1), bnet, p.stdout)
    # the relay strategies' figures are the MPI run's model's (each rank's schedule of the routes), here on 6
    # ranks in two groups: the plan's printed times against the run's predicted_s
    src, dst = "64x64 tile=8x8 block_cyclic grid=2x1", "64x64 tile=4x4 block_cyclic grid=2x2"
    relays = ["centralized", "staged", "multistage", "hybrid"]
    p = redist(["plan", src, dst, "--senders", "2", "--ranks", "6", "--predict", "--calibration", str(out)])
    assert p.returncode == 0, p.stderr
    # name -> (seconds, half the printed last digit)
    planned = {n: (float(v) * unit[u], 0.5 * 10 ** -len(v.partition(".")[2]) * unit[u]) for n, v, u in
               re.findall(r"^  (" + "|".join(relays) + r") +([\d.]+) (us|ms|s)  \(from every", p.stdout, re.M)}
    assert set(planned) == set(relays), p.stdout
    env = dict(os.environ, REDIST_CALIBRATION=str(out))
    r = subprocess.run([str(MPIRUN), "-np", "6", str(REDIST), "run", src, dst, "--senders", "2", "--strategy",
                        ",".join(relays), "--reps", "1", "--json"], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    for m in json.loads(r.stdout)["cases"][0]["methods"]:
        seconds, digit = planned[m["name"]]
        assert abs(m["predicted_s"] - seconds) <= digit * 1.01, (m, planned)
    missing = redist(["plan", SRC, SRC, "--ranks", "2", "--predict", "--calibration", str(tmp_path / "none.json")])
    assert missing.returncode == 2 and "cannot open" in missing.stderr and "redist calibrate" in missing.stderr


# Faults (docs/strategies.md, "Faults"): a rank that dies or stops in the middle
# of the timed executes. --test-ready-file (hidden) makes every rank write its
# pid to FILE.RANK after the first timed round; the test then kills or stops
# rank 1. The case runs for minutes unless ended, so the signal lands in an
# execute, a barrier or a reduction of a timed round.
FAULT_CASE = ["1000x1000 tile=100x100 block_cyclic grid=1x2", "1000x1000 tile=70x90 block_cyclic grid=2x1",
              "--reps", "100000"]


def _run_and_signal(tmp_path, extra, sig, mpirun_args=()):
    """Starts `redist run FAULT_CASE EXTRA` on 2 ranks, sends `sig` to rank 1 once
    the timed rounds run, and returns (seconds from the signal to the end of the
    job, exit code, stderr). Leaves no process behind, whatever happens."""
    import os
    import signal
    import subprocess
    import time
    from conftest import MPIRUN, REDIST
    ready = tmp_path / "ready"
    err = open(tmp_path / "stderr", "w+")
    proc = subprocess.Popen([str(MPIRUN), *mpirun_args, "-np", "2", str(REDIST), "run", *FAULT_CASE, *extra,
                             "--test-ready-file", str(ready)], stdout=subprocess.DEVNULL, stderr=err)
    pids = []
    try:
        deadline = time.monotonic() + 120
        while not all((tmp_path / f"ready.{r}").exists() for r in (0, 1)):
            assert proc.poll() is None, f"redist run ended early ({proc.returncode})"
            assert time.monotonic() < deadline, "the timed rounds did not start within 120 s"
            time.sleep(0.05)
        pids = [int((tmp_path / f"ready.{r}").read_text()) for r in (0, 1)]
        os.kill(pids[1], sig)
        t0 = time.monotonic()
        try:
            proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            pass
        elapsed = time.monotonic() - t0
        err.seek(0)
        return elapsed, proc.poll(), err.read()
    finally:
        for pid in pids:  # a rank left stopped or hanging
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        err.close()


def test_a_killed_rank_ends_the_job(tmp_path):
    """SIGKILL on rank 1: mpirun ends the job and names the rank (issue 18's
    target: within 30 s; about 1 s here)."""
    import signal
    elapsed, rc, err = _run_and_signal(tmp_path, ["--strategy", "p2p"], signal.SIGKILL)
    print(f"job ended {elapsed:.1f} s after the kill, exit code {rc}")
    assert rc is not None and elapsed < 30, f"still running {elapsed:.0f} s after the kill:\n{err}"
    assert rc != 0, err
    assert "rank 1" in err and "signal 9" in err, err


# A rank that stops (SIGSTOP: swapped out, stuck in a debugger, a deadlock) or
# dies while the launcher keeps the job alive (`--mca orte_abort_on_non_zero_status
# 0`, as some batch launchers do): without --timeout the other rank waits in MPI
# forever. With it, rank 0's watchdog names the step and ends the job.
@pytest.mark.parametrize("sig,mpirun_args", [("SIGSTOP", ()), ("SIGKILL", ("--mca", "orte_abort_on_non_zero_status", "0"))],
                         ids=["stopped", "killed-launcher-waits"])
def test_timeout_ends_a_job_that_would_hang(tmp_path, sig, mpirun_args):
    import signal
    # 10 s: each step before the timed rounds (the model: the session's calibration
    # file, conftest.py; make_plan) well within it, under AddressSanitizer too
    elapsed, rc, err = _run_and_signal(tmp_path, ["--strategy", "all", "--timeout", "10"], getattr(signal, sig),
                                       mpirun_args)
    print(f"job ended {elapsed:.1f} s after {sig}, exit code {rc}")
    assert rc is not None and elapsed < 60, f"still running {elapsed:.0f} s after {sig}:\n{err}"
    # not long before the limit: the step watched began at most one execute before the signal
    assert elapsed > 5, f"ended {elapsed:.1f} s after {sig}, well before the 10 s limit:\n{err}"
    assert rc != 0, err
    if sig == "SIGSTOP":
        assert rc == 3, err  # MPI_Abort's code (a killed rank's signal may be reported instead)
    line = re.search(r"^redist run: rank 0: (.*) exceeded --timeout 10 s \(.*\); ending the job$", err, re.M)
    assert line, err
    assert re.fullmatch(r"execute (" + "|".join(STRATEGIES + ["auto"]) + r") \(timed repetition \d+ of 100000\)",
                        line.group(1)), line.group(0)


def test_run_with_timeout_verifies_and_exits(redist):
    """--timeout on a normal run: the watchdog never fires, its thread ends, MPI
    runs with MPI_THREAD_MULTIPLE, every strategy verifies."""
    r = redist(["run", SRC, DST, "90x90", "--reps", "2", "--json", "--timeout", "60"], ranks=2, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "exceeded" not in r.stderr
    assert all(m["verified"] is True for m in json.loads(r.stdout)["cases"][0]["methods"])


@pytest.mark.parametrize("ranks,size,line", [
    (2, 5, "nodes    one: node size 5 is not below the 2 ranks sharing memory here, so every path is on-node"),
    (3, 2, "nodes    2 (node size 2, the last of 1 rank) among the 3 ranks sharing memory here: on-node and "
           "off-node paths"),
    (2, 1, "nodes    2 (node size 1) among the 2 ranks sharing memory here: on-node and off-node paths")])
def test_run_says_the_nodes_a_forced_node_size_makes(redist, ranks, size, line):
    """--node-size K above the ranks on one machine made one node silently (every
    path on-node, shm's off-node path never tried): the header says what nodes
    the size makes. Without it, no line."""
    r = redist(["run", SRC, DST, "90x90", "--reps", "1", "--strategy", "shm", "--node-size", str(size)], ranks=ranks)
    assert r.returncode == 0, r.stderr
    assert line in r.stdout.splitlines(), r.stdout
    r = redist(["run", SRC, DST, "90x90", "--reps", "1", "--strategy", "shm"], ranks=ranks)
    assert r.returncode == 0 and "nodes " not in r.stdout, r.stdout


def test_repartition_says_which_ranks_hold_no_data(redist):
    """An explicit --grid whose blocks of ceil(extent / grid) leave ranks empty (9
    cells on 4: 3, 3, 3, 0) ran silently: a note says so, and names the default
    grid where it fills more. A grid that fills every rank: no note."""
    r = redist(["repartition", "--shape", "9x8x8", "--patch", "4x4x4", "--grid", "4x1x1", "--reps", "1"], ranks=4)
    assert r.returncode == 0, r.stderr
    assert ("note     1 rank holds no data: blocks of 3x8x8 fill 3x1x1 of the rank grid 4x1x1 (the default grid, "
            "2x2x1, fills more)") in r.stdout.splitlines(), r.stdout
    r = redist(["repartition", "--shape", "9x8x8", "--patch", "4x4x4", "--grid", "2x2x1", "--reps", "1"], ranks=4)
    assert r.returncode == 0 and "note " not in r.stdout, r.stdout + r.stderr


def _greedy_moved(shape, grid, patch):
    """Elements greedy placement moves, computed here: per dimension, the overlap of
    each patch interval with each rank's block; a patch keeps its largest part."""
    per_dim = []
    for n, g, p in zip(shape, grid, patch):
        b = -(-n // g)
        rows = []
        for lo in range(0, n, p):
            hi = min(n, lo + p)
            rows.append([max(0, min(hi, (c + 1) * b) - max(lo, c * b)) for c in range(g)])
        per_dim.append(rows)
    moved = 0
    for x in per_dim[0]:
        for y in per_dim[1]:
            for z in per_dim[2]:
                moved += sum(x) * sum(y) * sum(z) - max(x) * max(y) * max(z)
    return moved


@pytest.mark.parametrize("ranks,grid", [(1, (1, 1, 1)), (2, (2, 1, 1)), (3, (3, 1, 1)), (4, (2, 2, 1))])
def test_repartition_greedy_and_balanced(redist, ranks, grid):
    shape, patch = (30, 22, 14), (7, 6, 5)
    r = redist(["repartition", "--shape", "30x22x14", "--patch", "7x6x5", "--reps", "1"], ranks=ranks)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert f"rank grid {grid[0]}x{grid[1]}x{grid[2]}" in out
    npatch = 5 * 4 * 3
    moved = [int(m) for m in re.findall(r"moved (\d+) elements", out)]
    assert len(moved) == 2  # greedy, then balanced
    assert moved[0] == _greedy_moved(shape, grid, patch)
    assert moved[1] >= moved[0]  # greedy moves the least
    loads = re.findall(r"patches min (\d+) max (\d+)", out)
    assert int(loads[1][1]) - int(loads[1][0]) <= 1  # balanced: within one patch
    assert int(loads[1][0]) == npatch // ranks
    # both communications verified, for both placements
    assert out.count("per-patch (segment)") == 2 and out.count("per-rank (p2p)") == 2
    assert out.count("ok (9240 elements)") == 4, out


def test_plan_balanced_over_a_huge_grid_with_few_holders(redist):
    """A balanced placement whose source grid has 2^24 ranks, 8 of them holding
    data (make fuzz found such a spec taking seconds and 1.8 GB: the flow had a
    node per rank). 64 patches on 2^24 ranks: at most one per rank, 8 kept in
    place (each holder keeps one of its 8 patches); the plan of rank 3 sends its
    other 7 patches to 7 ranks that held nothing."""
    src = "8x8 tile=1x4 block_cyclic grid=16777216x1"
    p = redist(["plan", src, "8x8 tile=1x1 balanced of=(8x8 tile=1x4 block_cyclic grid=16777216x1)",
                "--ranks", "16777216", "--rank", "3", "--top", "0"])
    assert p.returncode == 0, p.stderr
    assert "placement 64 patches (0 shared), moved 448 B of 512 B" in p.stdout, p.stdout
    assert "patches per rank min 0 max 1" in p.stdout, p.stdout
    assert "rank 3: sends 56 B in 7 messages" in p.stdout, p.stdout
    assert "copies 8 B locally" in p.stdout, p.stdout


def test_repartition_overflow_is_every_ranks_error(redist):
    """An array whose element count overflows: rank 0 alone computed it (for its
    header) and failed, the others went on into a collective: a hang."""
    r = redist(["repartition", "--shape", "4611686018427387904x2x1"], ranks=3)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.count("element count overflows 64 bits") == 1, r.stderr


def test_plan_one_rank_and_buffer_notes(redist):
    """`plan --rank R` says what that rank sends and receives (it said "remote 0 B"
    of a rank receiving 31 MB); the storage note of the buffers table is shm's
    alone (it was printed for centralized and multistage, whose figure the
    routes replace)."""
    src, dst = "64x64 tile=4x4 block_cyclic grid=4x1", "64x64 tile=3x3 block_cyclic grid=1x4"
    p = redist(["plan", src, dst, "--ranks", "4", "--rank", "1"])
    assert p.returncode == 0, p.stderr
    one = re.search(r"^rank 1: sends ([\d.]+ \w?B) in (\d+) messages .* receives ([\d.]+ \w?B) in (\d+) messages",
                    p.stdout, re.M)
    assert one, p.stdout
    assert f"volume    sent {one.group(1)}, received {one.group(3)}, local" in p.stdout, p.stdout
    assert f"messages  {one.group(2)} sent, {one.group(4)} received;" in p.stdout, p.stdout
    p = redist(["plan", src, dst, "--ranks", "4"])
    assert p.returncode == 0, p.stderr
    noted = re.findall(r"^  (\w+) +[\d.]+ \w?B  \((?:rings in /dev/shm|shared windows)", p.stdout, re.M)
    assert noted in ([], ["shm"]), p.stdout


def test_empty_region_is_the_whole_and_calibrate_max_size(redist):
    """An empty REGION (a script's unset variable, quoted) is the whole source, as
    no REGION is; calibrate refuses a --max-size below 4096 (8-byte messages gave
    a bandwidth of 17 MB/s, saved without a word)."""
    src, dst = "40x30 tile=8x8 block_cyclic grid=1x2", "40x30 tile=5x7 block_cyclic grid=2x1"
    whole = redist(["plan", src, dst])
    empty = redist(["plan", src, dst, " "])
    assert whole.returncode == 0 and empty.returncode == 0, empty.stderr
    assert "region  40x30 from=0x0 to=0x0" in empty.stdout, empty.stdout
    assert empty.stdout.split("planning")[0] == whole.stdout.split("planning")[0]
    r = redist(["calibrate", "--max-size", "8", "--out", "/nonexistent-redist-test/x.json"], ranks=2)
    assert r.returncode == 2 and "--max-size" in r.stderr and "4096" in r.stderr, r.stderr


def test_repartition_default_grid_follows_the_shape(redist):
    """Without --grid the rank grid holds data on as many ranks as the volume allows:
    1x1x2 cells on 4 ranks is 2x1x2 (the grid by prime factors, 2x2x1, left 3 ranks
    without data); 128^3 keeps 2x2x1."""
    r = redist(["repartition", "--shape", "1x1x2", "--patch", "1x1x1", "--reps", "1"], ranks=4)
    assert r.returncode == 0, r.stderr
    assert "redist repartition on 4 ranks: 1x1x2 doubles" in r.stdout and "rank grid 2x1x2" in r.stdout, r.stdout
    r = redist(["repartition", "--shape", "64x64x64", "--patch", "32x32x32", "--reps", "1"], ranks=1)
    assert r.returncode == 0 and "on 1 rank:" in r.stdout and "rank grid 1x1x1" in r.stdout, r.stdout


def test_repartition_bad_grid_is_one_clear_error(redist):
    r = redist(["repartition", "--grid", "3x1x1", "--shape", "8x8x8"], ranks=2)
    assert r.returncode == 2
    assert r.stderr.count("--grid 3x1x1 has 3 ranks, 2 are launched") == 1, r.stderr
    r = redist(["repartition", "--patch", "4x4"], ranks=1)
    assert r.returncode == 2 and "three positive integers" in r.stderr


def test_plan_prints_buffers_and_phased_rounds(redist):
    """Paper 001's example, P = 16 and K = 12: phased needs K rounds; under a budget
    only the strategies that buffer one message each way (or none) fit, and
    p2p_pipelined, whose pieces shrink until its slots fit."""
    p = redist(["plan", "1x1600000 tile=1x4 block_cyclic grid=1x16", "1x1600000 tile=1x48 block_cyclic grid=1x16",
                "--memory", "200000"])
    assert p.returncode == 0, p.stderr
    assert re.search(r"^phased +12 rounds", p.stdout, re.M), p.stdout
    lines = dict(re.findall(r"^  (\w+) +([\d.]+ \w?B.*)$", p.stdout, re.M))
    assert set(lines) == set(STRATEGIES), p.stdout
    over = {n for n, rest in lines.items() if "over the budget" in rest}
    assert over == {"p2p", "segment", "alltoallv", "direct", "shm", "phased_unsync", "taskgraph", "centralized", "staged",
                    "multistage", "hybrid", "aggregate"}, p.stdout


def _paper002(stdout):
    """The `paper 002 algorithms` table: strategy -> (steps, messages, max out, max in)."""
    rows = re.findall(r"^  (p2p|centralized|staged|multistage|hybrid) +(\d+) +(\d+) +(\d+) +(\d+) ", stdout, re.M)
    return {n: tuple(int(x) for x in v) for n, *v in rows}


@pytest.mark.parametrize("S,R", [(64, 64), (96, 32), (1, 3)])
def test_plan_two_groups_paper002_counts(redist, S, R):
    """(BLOCK,*) on S senders -> (*,BLOCK) on R receivers, every sender has a block
    for every receiver: paper 002's message counts, computed here in closed form.
    (test_groups checks the same figures per rank against a real run.)"""
    n = 192
    p = redist(["plan", f"{n}x{n} tile={-(-n // S)}x{n} block_cyclic grid={S}x1",
                f"{n}x{n} tile={n}x{-(-n // R)} block_cyclic grid=1x{R}", "--ranks", str(S + R), "--senders", str(S)])
    assert p.returncode == 0, p.stderr
    senders, receivers = f"{S} sender{'s' * (S != 1)}", f"{R} receiver{'s' * (R != 1)}"
    assert f"{senders} (union ranks 0 .. {S - 1}) -> {receivers} (union ranks {S} .. {S + R - 1})" in p.stdout
    rows = _paper002(p.stdout)
    C, logp = min(S, R), (S + R - 1).bit_length()
    assert rows["p2p"] == (1, S * R, R, S), p.stdout
    # the hub (sender 0) receives from the other senders, sends each receiver one
    assert rows["centralized"] == (2, S + R - 1, R, max(S - 1, 1)), p.stdout
    # C stages (the first senders): each sender one message to each other stage,
    # each stage one to each of its receivers
    stage_out = C - 1 + -(-R // C)
    assert rows["staged"] == (2, S * C - C + R, max(stage_out, C if S > C else 0), max(S - 1, 1)), p.stdout
    assert rows["multistage"][0] == logp and rows["multistage"][2] <= logp and rows["multistage"][3] <= logp, p.stdout
    if S <= R:  # all-to-all in R contention-free rounds
        assert rows["hybrid"] == (R, S * R, R, S), p.stdout
    else:  # R rounds from the active senders, then one from the gatherers
        assert rows["hybrid"][0] == R + 1, p.stdout


def test_plan_prints_paper_variants(redist):
    """Paper 001's case in 1-D, P = 16 and K = 12: the Fig. 13 variants, K rounds;
    the optimal schedule's rounds are contention free, the simple one's put K
    messages on a receiver in one round. Not the case in 2-D: no such block."""
    p = redist(["plan", "1600000 tile=4 block_cyclic grid=16", "1600000 tile=48 block_cyclic grid=16", "--ranks", "16"])
    assert p.returncode == 0, p.stderr
    assert "paper 001  the paper's case: block size 4 -> 48, K = 12 on P = 16" in p.stdout, p.stdout
    rows = {name: (int(r), int(m)) for name, r, m in
            re.findall(r"^  (synchronized \w+|sendrecv \(optimal\)|unsynchronized) +(\d+) +(\d+) ", p.stdout, re.M)}
    assert rows == {"synchronized simple": (12, 12), "synchronized random": (12, rows["synchronized random"][1]),
                    "synchronized optimal": (12, 1), "sendrecv (optimal)": (12, 1), "unsynchronized": (1, 12)}, p.stdout
    assert 1 < rows["synchronized random"][1] < 12, p.stdout
    q = redist(["plan", "1x1600000 tile=1x4 block_cyclic grid=1x16", "1x1600000 tile=1x48 block_cyclic grid=1x16"])
    assert q.returncode == 0 and "paper 001" not in q.stdout, q.stdout


def test_run_with_memory_budget_runs_what_fits(redist):
    """3 ranks, r -> 3r: p2p buffers two messages each way, phased one; a budget
    between the two runs phased (verified), not p2p, and the measured buffers stay
    within it."""
    r = redist(["run", "1x6000 tile=1x4 block_cyclic grid=1x3", "1x6000 tile=1x12 block_cyclic grid=1x3",
                "--memory", "12000", "--reps", "1"], ranks=3)
    assert r.returncode == 0, r.stdout + r.stderr
    ran = re.findall(r"^(\w+(?:\(\w+\))?) +[\d.]+ \w+ ", r.stdout, re.M)
    assert "phased" in ran and "alltoallw" in ran and "p2p" not in ran, r.stdout
    m = re.search(r"^buffers +([\d.]+) (\w?B) at most on a rank, measured .* within --memory", r.stdout, re.M)
    assert m, r.stdout
    scale = {"B": 1, "KB": 1e3, "MB": 1e6}[m.group(2)]
    assert 0 < float(m.group(1)) * scale <= 12000, r.stdout


def test_run_with_memory_budget_counts_the_forwarding_slots(redist):
    """The forwarding strategies keep slots beyond what the plan's statistics
    show: `all` under --memory filtered them by that lower figure, so centralized
    (16,800 B needed on 4 ranks) stayed in and was refused at execute (exit 2).
    On 2 ranks each fits 7,000 B alone; run in turn, the plan held all their
    slots (38.40 KB "within --memory 7.00 KB"): now a strategy that does not fit
    beside what the others keep drops it first."""
    r = redist(["run", "40x40 tile=10x40 block_cyclic grid=4x1", "40x40 tile=40x10 block_cyclic grid=1x4",
                "--memory", "6000", "--reps", "1"], ranks=4)
    assert r.returncode == 0, r.stdout + r.stderr
    ran = re.findall(r"^(\w+)(?:\(\w+\))? +[\d.]+ \w+ ", r.stdout, re.M)
    assert "centralized" not in ran and "staged" in ran and "auto" in ran, r.stdout
    r = redist(["run", "40x40 tile=20x40 block_cyclic grid=2x1", "40x40 tile=40x20 block_cyclic grid=1x2",
                "--memory", "7000", "--reps", "2"], ranks=2)
    assert r.returncode == 0, r.stdout + r.stderr
    ran = re.findall(r"^(\w+)(?:\(\w+\))? +[\d.]+ \w+ ", r.stdout, re.M)
    assert {"centralized", "staged", "multistage", "hybrid", "aggregate"} <= set(ran), r.stdout
    m = re.search(r"^buffers +([\d.]+) (\w?B) at most on a rank, measured .* within --memory", r.stdout, re.M)
    assert m and 0 < float(m.group(1)) * {"B": 1, "KB": 1e3, "MB": 1e6}[m.group(2)] <= 7000, r.stdout


def test_run_names_the_strategies_the_arithmetic_leaves_out(redist):
    """A list with strategies that do not apply --alpha: those run that do, and
    the others are named, not left out without a word."""
    r = redist(["run", "60x40 tile=10x10 block_cyclic grid=1x2", "40x60 tile=7x9 block_cyclic grid=2x1",
                "40x60 axes=1,0", "--strategy", "taskgraph,p2p", "--type", "f64", "--alpha", "2", "--reps", "1"],
               ranks=2)
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"^skipped  not run: taskgraph \(no arithmetic; the strategies that apply it: p2p,", r.stdout,
                     re.M), r.stdout
    assert re.search(r"^p2p +[\d.]+ \w+ .* ok \(2400 elements\)", r.stdout, re.M), r.stdout


def test_plan_ranks_per_node_counts_node_messages(redist):
    """`--ranks-per-node`: a node's messages leaving it, one per rank pair and with
    `aggregate` a few per node pair, against the peers each of its ranks lists with
    `--rank` (an independent count: the node's ranks' plans, one by one)."""
    src, dst = "64x64 tile=4x4 block_cyclic grid=4x4", "64x64 tile=3x3 block_cyclic grid=2x8"
    per_node, node = 4, 1
    pairs, nodes_to = 0, set()
    for r in range(node * per_node, (node + 1) * per_node):
        p = redist(["plan", src, dst, "--ranks", "16", "--rank", str(r)])
        assert p.returncode == 0, p.stderr
        for peer in map(int, re.findall(r"^  -> (\d+) ", p.stdout, re.M)):
            if peer // per_node != node:
                pairs += 1
                nodes_to.add(peer // per_node)
    assert pairs > len(nodes_to) > 0
    p = redist(["plan", src, dst, "--ranks", "16", "--rank", str(node * per_node + 2), "--ranks-per-node", str(per_node)])
    assert p.returncode == 0, p.stderr
    assert f"4 nodes of 4 ranks; node {node} (ranks 4..7" in p.stdout, p.stdout
    direct = re.search(r"^  rank pairs +(\d+) +(\d+) +(\d+)", p.stdout, re.M)
    agg = re.search(r"^  aggregate +(\d+) +(\d+) +(\d+)", p.stdout, re.M)
    assert direct and agg, p.stdout
    assert int(direct.group(1)) == pairs, p.stdout
    # lanes by volume (docs/shm.md): at least one message per node pair, at most one per
    # rank of the node (3 peer nodes <= 4 ranks: lanes are different ranks) and per rank pair
    assert len(nodes_to) <= int(agg.group(1)) <= min(pairs, per_node), p.stdout
    # Without --rank the lanes come from the main loop's plans of every rank, with
    # --rank from a pass of their own: each column of the whole run is the largest
    # of the four nodes' own figures.
    unit = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}
    row = re.compile(r"^  (rank pairs|aggregate) +(\d+) +(\d+) +(\d+) / (\d+) +([\d.]+ \w?B) / ([\d.]+ \w?B)$", re.M)

    def figures(out):  # per row: messages as ints, bytes as (value, text)
        got = {}
        for m in row.finditer(out):
            b = [(float(t.split()[0]) * unit[t.split()[1]], t) for t in m.groups()[5:]]
            got[m.group(1)] = [int(x) for x in m.groups()[1:5]] + b
        assert set(got) == {"rank pairs", "aggregate"}, out
        return got
    per = [figures(redist(["plan", src, dst, "--ranks", "16", "--rank", str(n * per_node), "--ranks-per-node",
                           str(per_node)]).stdout) for n in range(4)]
    whole = redist(["plan", src, dst, "--ranks", "16", "--ranks-per-node", str(per_node)])
    assert whole.returncode == 0 and "each figure the largest of any node" in whole.stdout, whole.stderr
    for name, got in figures(whole.stdout).items():
        assert got == [max(c) for c in zip(*(f[name] for f in per))], (name, per, whole.stdout)
    bad = redist(["plan", src, dst, "--ranks", "16", "--ranks-per-node", "0"])
    assert bad.returncode != 0 and "--ranks-per-node" in bad.stderr, bad.stderr


def test_what_a_cli_trial_found(redist, tmp_path):
    """A new user's trial of the command line (2026-11-30): --senders on one rank
    said "needs an integer >= 1 and <= 0"; a --grid whose product overflows was
    "0 ranks" or passed the check; `bench tran` on one rank said its suite did not
    exist (its two grids were the same and both were dropped)."""
    r = redist(["run", "100x100", "100x100", "--senders", "1"], ranks=1)
    assert r.returncode == 2 and "option --senders cannot be used here" in r.stderr, r.stderr
    for grid in ["4294967296x4294967296x1", "7x7905747460161236407x1"]:
        r = redist(["repartition", "--grid", grid], ranks=2)
        assert r.returncode == 2 and f"--grid {grid} has more ranks than the 2 launched" in r.stderr, r.stderr
    r = redist(["bench", "tran", "--smoke", "--no-plots", "--out", str(tmp_path / "tran")], ranks=1)
    assert r.returncode == 0 and "tran transpose tile=32 grid=1x1" in r.stdout, r.stdout + r.stderr


def test_fuzz_seeds_come_from_the_docs(tmp_path):
    """scripts/fuzz_corpus.py (make fuzz, CI's last step) reads its seeds from the
    docs: a docs change once broke it (an empty Region::parse("") in spec.md), found
    only at the end of CI. Here in make test: it runs, and finds every kind of seed."""
    import subprocess
    import sys
    from conftest import ROOT
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "fuzz_corpus.py"), str(tmp_path)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    counts = {t: len(list((tmp_path / t).iterdir())) for t in ("fuzz_spec", "fuzz_region", "fuzz_plan")}
    assert counts["fuzz_spec"] >= 100 and counts["fuzz_region"] >= 20 and counts["fuzz_plan"] >= 500, counts


def test_what_a_second_cli_trial_found(redist, tmp_path):
    """A new user's trial (2026-12-01): ranks of one launch running different
    commands (`run : plan` hung or crashed, plan started no MPI; `run : bench`
    hung); calibrate's unwritable --out was explained by rank 0 alone; `bench
    compare` printed its header and measured the machine before a bad layout's
    error, which lacked "error:"; repartition placed the patches of a volume that
    cannot fit for seconds before refusing it; `all` under --memory dropped
    strategies without a word."""
    import subprocess
    from conftest import MPIRUN, REDIST
    env = dict(os.environ, REDIST_SHOW_ERRORS="1")
    run = [str(REDIST), "run", "100x100", "100x100", "--reps", "1"]
    for other, command in ((["plan", "100x100", "100x100"], "plan"), (["bench", "volume", "--smoke"], "bench")):
        r = subprocess.run([str(MPIRUN), "-np", "1"] + run + [":", "-np", "1", str(REDIST)] + other,
                           capture_output=True, text=True, timeout=120, env=env)
        assert r.returncode == 2, r.stdout + r.stderr
        mine, theirs = _error_lines(r.stderr, "run"), _error_lines(r.stderr, command)
        assert len(mine) == 1 and len(theirs) == 1, r.stderr
        assert mine[0].split("error: ", 1)[1] == theirs[0].split("error: ", 1)[1], r.stderr
        assert "rank 1: the command line differs between ranks: rank 0 has 'run 100x100" in mine[0], mine[0]
    # plan on several ranks: one report, from rank 0
    r = redist(["plan", "100x100 tile=10x10 block_cyclic grid=1x2", "100x100", "--ranks", "2"], ranks=2)
    assert r.returncode == 0 and r.stdout.count("redist plan for 2 simulated ranks") == 1, r.stdout + r.stderr
    r = _run_every_rank_prints(["calibrate", "--out", "/proc/nope/c.json"])
    lines = _error_lines(r.stderr, "calibrate")
    assert r.returncode == 2 and len(lines) == 2 and lines[0] == lines[1], r.stderr
    assert "rank 0: --out /proc/nope/c.json: cannot make its folder /proc/nope" in lines[0], lines[0]
    r = redist(["bench", "compare", "100x100 tile=0x1", "100x100", "--out", str(tmp_path / "c")], ranks=2)
    assert r.returncode == 2 and r.stdout == "", r.stdout
    assert r.stderr.count("redist bench: error: SRC: tile size of dimension 0 must be > 0") == 1, r.stderr
    r = redist(["repartition", "--shape", "100000x100000x100"], ranks=2, timeout=30)
    assert r.returncode == 2 and r.stdout == "", r.stdout
    assert r.stderr.count("not enough memory: the volume 100000x100000x100 of doubles needs 16.00 TB") == 1, r.stderr
    r = redist(["run", "100x100 tile=10x10 block_cyclic grid=1x2", "100x100 tile=10x10 block_cyclic grid=2x1",
                "--memory", "400", "--reps", "1"], ranks=2)
    assert r.returncode == 0, r.stdout + r.stderr
    skipped = re.search(r"^skipped  over --memory 400 B, the buffers they need per rank: (.*)$", r.stdout, re.M)
    assert skipped and "p2p (40.00 KB)" in skipped.group(1), r.stdout
    ran = re.findall(r"^(\w+)(?:\(\w+\))? +[\d.]+ \w+ ", r.stdout, re.M)
    assert "p2p" not in ran and "segment" in ran, r.stdout
