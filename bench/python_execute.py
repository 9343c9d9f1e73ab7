"""Times Plan.execute from Python the way `redist run` times it in C++ (the
harness's time_interleaved: a barrier before each run, the slowest rank's time,
the median over repetitions), with DistArrays filled like the CLI's.

    scripts/mpirun.sh -np 2 .venv/bin/python bench/python_execute.py SRC DST [REGION] --strategy p2p --reps 5 [--storage heap|shared]

MPI starts at the thread level `redist run` uses for the strategy. Prints one JSON line on rank 0: {"median_s": ..., "min_s": ..., "times_s": [...]}.
bench/python_vs_cli.py runs it beside `redist run` (docs/python.md, "Speed").
"""
import argparse
import json
import statistics

import sys

import mpi4py

# MPI's thread level as `redist run` chooses it (apps/cli.cpp): MPI_THREAD_MULTIPLE
# only where taskgraph may run, else single. mpi4py's default is multiple, whose
# locking costs Open MPI time on every call: compare like with like.
mpi4py.rc.thread_level = "multiple" if any(s in sys.argv for s in ("taskgraph", "auto", "all")) else "single"

import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402

import redist  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("src")
ap.add_argument("dst")
ap.add_argument("region", nargs="?")
ap.add_argument("--strategy", default="p2p")
ap.add_argument("--reps", type=int, default=5)
ap.add_argument("--warmup", type=int, default=1)
ap.add_argument("--storage", choices=("heap", "shared"), default="heap",
                help="where the DistArrays live (redist run's --storage; default heap, as redist run's)")
args = ap.parse_args()

comm = MPI.COMM_WORLD
a = redist.fromfunction(lambda i, j: i + 1e4 * j, args.src, storage=args.storage)
b = redist.zeros(args.dst, storage=args.storage)
times = np.zeros(args.reps)
wtime, barrier = MPI.Wtime, comm.Barrier
with redist.make_plan(a.layout, b.layout, args.region, comm, strategy=args.strategy) as plan:
    execute = plan.execute
    for _ in range(args.warmup):
        execute(a, b)
    for r in range(args.reps):
        barrier()
        t0 = wtime()
        execute(a, b)
        times[r] = wtime() - t0
comm.Allreduce(MPI.IN_PLACE, times, op=MPI.MAX)  # each run's slowest rank
times = times.tolist()
if comm.rank == 0:
    print(json.dumps({"median_s": statistics.median(times), "min_s": min(times), "times_s": times}))
