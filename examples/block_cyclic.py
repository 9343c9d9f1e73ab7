"""Block-cyclic to block-cyclic, the README's case at a small size:
a 700x700 submatrix of a 800x800 array of doubles, at (50, 30), from 40x40 tiles
on a 1xP process grid to 30x30 tiles on a Px1 grid, at (100, 0).

    scripts/mpirun.sh -np 2 .venv/bin/python examples/block_cyclic.py
"""
import numpy as np
from mpi4py import MPI

import redist

P = MPI.COMM_WORLD.Get_size()
src = redist.Layout(f"800x800 tile=40x40 block_cyclic grid=1x{P}")
dst = redist.Layout(f"800x800 tile=30x30 block_cyclic grid={P}x1")
region = redist.Region("700x700 from=50x30 to=100x0")

a = redist.fromfunction(lambda i, j: i + 1000.0 * j, src)  # each rank fills its own tiles
b = redist.zeros(dst)
with redist.make_plan(src, dst, region, strategy="p2p") as plan:  # collective; make once
    for _ in range(3):
        plan.execute(a, b)  # execute as often as needed
    sent = MPI.COMM_WORLD.allreduce(plan.stats.bytes_sent)

full = b.gather()  # the whole target on rank 0 (small data)
if MPI.COMM_WORLD.Get_rank() == 0:
    i, j = np.ogrid[0:700, 0:700]
    assert np.array_equal(full[100:800, 0:700], (i + 50) + 1000.0 * (j + 30))
    assert not full[:100].any() and not full[:, 700:].any()
    print(f"block_cyclic: ok, {sent} bytes sent between {P} ranks")
