"""A 3-D volume repartition (paper 003): a 96x96x64 volume of float32 held in
z-slabs, one per rank, moved onto a grid of 24x24x24 patches (the last layer 16 thick), each patch whole on
the rank that holds its largest part (the greedy placement, docs/spec.md).

    scripts/mpirun.sh -np 4 .venv/bin/python examples/repartition_3d.py
"""
import numpy as np
from mpi4py import MPI

import redist

comm = MPI.COMM_WORLD
P = comm.Get_size()
slabs = f"96x96x64 tile=96x96x{-(-64 // P)} block_cyclic grid=1x1x{P}"
patches = redist.Layout(f"96x96x64 tile=24x24x24 greedy of=({slabs})")


def density(x, y, z):
    return np.float32(x) + 100 * np.float32(y) + 10000 * np.float32(z)


volume = redist.fromfunction(density, slabs, np.float32)
moved = redist.redistribute(volume, patches)  # out of place: a new DistArray

# Every patch this rank now holds is whole and right.
for lo, patch in zip(moved.tile_lo, moved.tiles):
    x, y, z = np.ogrid[tuple(slice(l, l + n) for l, n in zip(lo, patch.shape))]
    assert np.array_equal(patch, density(x, y, z))
summary = redist.placement_summary(patches)
counts = comm.gather(len(moved.tiles))
if comm.Get_rank() == 0:
    print(f"repartition_3d: ok, {summary['patches']} patches, patches per rank {counts}, "
          f"{summary['moved_elements']} of {summary['total_elements']} elements moved")
