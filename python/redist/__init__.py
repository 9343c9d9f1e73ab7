"""redist: moves distributed arrays between data distributions over MPI.

The Python front end of the C++ library (docs/python.md): the same layouts (spec
strings, docs/spec.md, or keyword constructors), regions, plans, strategies,
plan statistics and cost-model predictions, with numpy arrays and mpi4py
communicators (default ``mpi4py.MPI.COMM_WORLD``)::

    import numpy as np, redist
    src = redist.Layout("8000x8000 tile=400x400 block_cyclic grid=1x2")
    a = redist.fromfunction(lambda i, j: i + 1000.0 * j, src)   # each rank fills its tiles
    b = redist.redistribute(a, "8000x8000 tile=300x300 block_cyclic grid=2x1")
    full = b.gather()                                             # on rank 0, None elsewhere

Errors in the arguments raise :class:`redist.Error` (a ``ValueError``) with the
same message on every rank.
"""
from ._core import (Error, LocalIndex, Layout, Machine, MismatchError, MpiError, Ownership, Plan, PlanStats, Region,
                    agree, calibrate, check_strategy, default_calibration_path, machine_for, make_plan,
                    placement_summary, plan_stats, predict, reclaim_shared, register_owner_function, shared_windows,
                    strategies, strategy_names)
from ._array import DistArray, empty, fromfunction, redistribute, scatter, zeros

# The exceptions are made in the extension but belong to the package: tracebacks,
# reprs and pickles name them redist.Error etc., as docs/python.md does (they
# said redist._core.Error).
for _exception in (Error, MpiError, MismatchError):
    _exception.__module__ = __name__
del _exception

block_cyclic = Ownership.block_cyclic
random = Ownership.random
band = Ownership.band
table = Ownership.table
function = Ownership.function
greedy = Ownership.greedy
balanced = Ownership.balanced

__all__ = [
    "Error", "MpiError", "MismatchError", "Layout", "Ownership", "Region", "LocalIndex", "Plan", "PlanStats", "Machine",
    "make_plan", "plan_stats", "predict", "strategies", "strategy_names", "check_strategy", "calibrate",
    "machine_for", "default_calibration_path", "register_owner_function", "placement_summary", "agree",
    "block_cyclic", "random", "band", "table", "function", "greedy", "balanced",
    "DistArray", "empty", "zeros", "fromfunction", "scatter", "redistribute", "reclaim_shared", "shared_windows",
]
