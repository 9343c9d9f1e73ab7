"""Distributed arrays over numpy (docs/python.md): a rank's local storage of a
layout as numpy arrays without copies, and the helpers around it. Every data
movement here is one redist plan (scatter and gather included: the global array
is a one-tile layout on the root rank); nothing is reimplemented in Python.
"""
from __future__ import annotations

import hashlib
import math
import operator
import re
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from ._core import (Error, Layout, LocalIndex, MismatchError, MpiError, Ownership, Region, agree, make_plan,
                    shared_allocate)

LayoutLike = Union[Layout, str]
RegionLike = Union[Region, str, None]


def _comm(comm: Any) -> Any:
    from mpi4py import MPI
    # After MPI.Finalize() the first MPI call aborted the job (a helper's trial).
    if MPI.Is_finalized():
        raise Error(_AFTER_FINALIZE)
    return MPI.COMM_WORLD if comm is None else comm


_AFTER_FINALIZE = ("redist: called after MPI.Finalize(): redist's calls communicate through MPI, which mpi4py "
                   "starts at import and MPI.Finalize() (or the interpreter's exit) ends")


def _checked(comm: Any, step: Callable[[], Any]) -> Any:
    """Collective: step() on every rank, what it raises on any rank agreed, so
    that no rank is left waiting: every rank raises redist.Error with the same
    message, except that a rank whose step raised something other than a
    ValueError (a TypeError, numpy's SyntaxError for a malformed dtype string)
    raises that, as make_plan does."""
    err, own, out = "", None, None
    try:
        out = step()
    except ValueError as e:  # redist.Error, and numpy's
        err = str(e) or type(e).__name__  # never empty: "" means no error
    except Exception as e:  # noqa: BLE001 - anything else would leave the other ranks waiting
        err, own = str(e) or type(e).__name__, e
    if own is not None:
        try:
            agree(comm, err)
        except Error:  # raised as what it is on this rank
            pass
        raise own
    agree(comm, err)
    return out


def _agree_root(comm: Any, root: Any, call: str) -> int:
    """Collective: the root as an int, the same on every rank; an agreed
    redist.Error when it is not a rank of `comm` on some rank, or differs between
    ranks (a TypeError on a rank that gave no integer), before anything else
    moves (scatter's dtype broadcast from the root once waited for a root that a
    rank named differently)."""
    size = comm.Get_size()

    def check() -> int:
        r = operator.index(root)  # TypeError for "0", 0.0, None
        if not 0 <= r < size:
            raise Error(f"{call}: root={r} is not a rank of the communicator (0 .. {size - 1})")
        return r

    r = _checked(comm, check)
    roots = comm.allgather(r)
    other = next((k for k, x in enumerate(roots) if x != roots[0]), None)
    if other is not None:
        agree(comm, f"{call}: every rank must give the same root: rank {other} gave {roots[other]}, rank 0 {roots[0]}",
              mismatch=True)
    return r


def _same_everywhere(comm: Any, layout: Layout, dt: np.dtype, storage: Optional[str]) -> None:
    """Collective: an agreed redist.MismatchError unless every rank gave the same layout
    (its ld= aside: each rank may have its own, as ScaLAPACK's LLD), dtype and
    storage (the window is made collectively: a rank on the heap left the others
    waiting in it), naming the first rank that differs from rank 0 and both."""
    # str(dt): fields too (dt.str is '|V8' for any 8-byte record)
    mine = (re.sub(r"\s*\bld=\d+", "", layout.spec), str(dt), str(storage))
    digest = hashlib.sha256(repr(mine).encode()).digest()
    digests = comm.allgather(digest)
    other = next((r for r, d in enumerate(digests) if d != digests[0]), None)
    if other is None:
        return
    theirs, first = comm.bcast(mine, root=other), comm.bcast(mine, root=0)
    agree(comm, f"every rank must give the same layout, dtype and storage (ld= aside): rank {other} gave "
                f"'{theirs[0]}' of dtype {theirs[1]}, storage={theirs[2]}, rank 0 '{first[0]}' of dtype {first[1]}, "
                f"storage={first[2]}", mismatch=True)


def _layout(layout: LayoutLike) -> Layout:
    if isinstance(layout, Layout):
        return layout
    if isinstance(layout, str):
        return Layout(layout)
    raise TypeError(f"layout must be a redist.Layout or a spec string, got {type(layout).__name__}")


def _dtype(layout: Layout, dtype: Any) -> np.dtype:
    """The layout's elements as a numpy dtype: float64 for esize=8 and raw bytes
    (np.dtype('V<esize>')) otherwise when none is given."""
    if dtype is None:
        return np.dtype(np.float64) if layout.esize == 8 else np.dtype((np.void, layout.esize))
    dt = np.dtype(dtype)
    if dt.hasobject or dt.itemsize == 0:
        raise Error(f"dtype {dt} is not a fixed-size element type (no Python objects, itemsize > 0)")
    if dt.subdtype is not None:  # numpy would give arrays one dimension more
        raise Error(f"dtype {dt} is a subarray dtype: give a record of it, np.dtype([('x', {dt.subdtype[0].str!r}, "
                    f"{dt.subdtype[1]})]), or esize={dt.itemsize} raw bytes")
    if dt.kind in "mM":
        raise Error(f"dtype {dt}: numpy cannot pass datetime64/timedelta64 through the buffer protocol; move them as "
                    f"int64 (array.view('i8'), dtype='i8') and view the result back")
    return dt


def _one_tile(shape: Sequence[int], root: int, esize: int) -> Layout:
    """The whole array as one column-major tile on rank `root`."""
    return Layout(tuple(shape), ownership=Ownership.block_cyclic((1,) * len(shape), first=root), esize=esize)


class DistArray:
    """This rank's part of an array distributed by `layout` over `comm`.

    The bytes live in ``blocks`` (numpy arrays, one per storage block: one for
    storage tile and local_array, one per local tile for tile_pointers); the
    views share them, no copies:

    - ``tiles``: one Fortran-ordered array per local tile (storage tile and
      tile_pointers), in storage order, with ``tile_index`` and ``tile_lo``;
    - ``local_array``: the ScaLAPACK-style local array (storage local_array),
      Fortran-ordered, local rows x local columns (its leading dimension ld may
      be larger).

    The layout's element size is the dtype's (``layout.with_esize``).
    ``storage``: ``"shared"`` puts the blocks in one MPI-3 shared window per node
    (redist's ``shared_allocate``), where the ``shm`` strategy copies each element
    once between the ranks of a node (``redistribute`` then uses ``shm``);
    ``"heap"``, ordinary numpy memory; None (the default): shared, or the heap
    where MPI cannot make the window (every rank alike). ``self.storage`` says
    which. A window is freed once no rank holds the array or a view of it, at a
    later collective allocation over the same communicator,
    ``redist.reclaim_shared(comm)`` or ``comm.Free()``; one still held when the
    communicator is freed stays valid until the process ends, one read after
    ``MPI.Finalize()`` crashes (docs/python.md, "Storage").
    Collective: every rank of `comm` makes it, with the same layout, dtype and storage. A
    bad argument on any rank (a spec that does not parse, a layout that does not
    fit, a dtype that is not an element type, layouts or dtypes that differ
    between ranks) raises redist.Error on every rank; a wrong type raises
    TypeError on the ranks that gave it, redist.Error on the others.
    """

    def __init__(self, layout: LayoutLike, dtype: Any = None, comm: Any = None, *, fill_zero: bool = True,
                 storage: Optional[str] = None):
        comm = _comm(comm)
        rank, size = comm.Get_rank(), comm.Get_size()

        def build() -> tuple:
            if storage not in (None, "shared", "heap"):
                raise Error(f"storage must be 'shared', 'heap' or None (shared where MPI can make the window), "
                            f"got {storage!r}")
            lay = _layout(layout)
            dt = _dtype(lay, dtype)
            if lay.esize != dt.itemsize:
                lay = lay.with_esize(dt.itemsize)
            err = lay.check(size)
            if err:
                raise Error(err)
            return lay, dt, LocalIndex(lay, rank)  # LocalIndex: e.g. ld= below this rank's local rows

        layout, dt, local = _checked(comm, build)
        # The same layout, dtype and storage on every rank: one rank's different tiles
        # would move its part to the wrong place.
        _same_everywhere(comm, layout, dt, storage)
        self.layout, self.dtype, self.comm, self.rank = layout, dt, comm, rank
        self.local_index = local
        shared = _shared_blocks(comm, local, dt, fill_zero, storage) if storage != "heap" else None
        self.storage = "heap" if shared is None else "shared"
        alloc = np.zeros if fill_zero else np.empty
        self.blocks = shared if shared is not None else [alloc(local.block_elements(b), dtype=dt)
                                                         for b in range(local.nblocks)]
        self._redist_blocks = self.blocks  # what Plan.execute reads: the storage blocks (no copy)
        self.tile_index, self.tile_lo, self.tiles = [], [], []
        self.local_array: Optional[np.ndarray] = None
        if layout.storage == "local_array":
            ext, ld = local.local_extent, local.ld
            if math.prod(ext) == 0:  # nothing stored here (ld 0): local rows but no columns, or none
                self.local_array = self.blocks[0][:0].reshape(tuple(ext), order="F")
            else:
                full = self.blocks[0][: ld * math.prod(ext[1:])].reshape((ld,) + tuple(ext[1:]), order="F")
                self.local_array = full[: ext[0]]
        else:
            for t, lo, sz, b, off in local.tiles():
                self.tile_index.append(t)
                self.tile_lo.append(lo)
                self.tiles.append(self.blocks[b][off: off + math.prod(sz)].reshape(sz, order="F"))

    @property
    def shape(self) -> tuple:
        """The global shape."""
        return self.layout.shape

    @property
    def ndim(self) -> int:
        return self.layout.ndim

    def __repr__(self) -> str:
        return f"DistArray(rank={self.rank}, dtype={self.dtype}, layout='{self.layout.spec}')"

    def fill(self, fn: Callable[..., Any]) -> "DistArray":
        """Sets every local element (i0, i1, ...) to fn(i0, i1, ...), vectorized:
        fn gets one int64 index array per dimension, shaped to broadcast (like
        np.ogrid), once per local tile (once for local_array storage)."""
        if self.local_array is not None:
            idx = []
            for d in range(self.ndim):
                g = self.local_index.globals(d)
                shape = [1] * self.ndim
                shape[d] = g.size
                idx.append(g.reshape(shape))
            self.local_array[...] = fn(*idx)
            return self
        for lo, view in zip(self.tile_lo, self.tiles):
            idx = []
            for d in range(self.ndim):
                shape = [1] * self.ndim
                shape[d] = view.shape[d]
                idx.append(np.arange(lo[d], lo[d] + view.shape[d], dtype=np.int64).reshape(shape))
            view[...] = fn(*idx)
        return self

    def gather(self, root: int = 0, strategy: Optional[str] = None) -> Optional[np.ndarray]:
        """Collective: the whole array as one Fortran-ordered numpy array on
        `root`, None on the other ranks (for small data and tests)."""
        root = _agree_root(_comm(self.comm), root, "gather")  # _comm: refused after MPI.Finalize()
        dst = _one_tile(self.shape, root, self.dtype.itemsize)
        out = np.empty(self.shape if self.rank == root else (0,), dtype=self.dtype, order="F")
        with make_plan(self.layout, dst, None, self.comm, strategy=strategy or "p2p") as plan:
            plan.execute(self, out.reshape(-1, order="F"))
        return out if self.rank == root else None


def _shared_blocks(comm: Any, local: LocalIndex, dt: np.dtype, zero: bool,
                   storage: Optional[str]) -> Optional[list]:
    """Collective: the storage blocks as views of one shared window (each on a
    64-byte boundary), or None where MPI could not make it and `storage` is
    None (the error is agreed: every rank returns None)."""
    sizes = [local.block_elements(b) * dt.itemsize for b in range(local.nblocks)]
    offsets, total = [], 0
    for n in sizes:
        offsets.append(total)
        total += -(-n // 64) * 64
    try:
        window = shared_allocate(comm, total, zero)
    except (MpiError, MismatchError):
        raise
    except Error as e:
        # Only where MPI cannot make the window (the room in /dev/shm, MPI's
        # refusal: shared_allocate's own messages); a bad $REDIST_NODE_SIZE is an
        # error of the job's set-up, not a reason for the heap.
        if storage == "shared" or not re.match(r"(redist: rank \d+: )?shared_allocate: ", str(e)):
            raise
        return None
    return [window[o: o + n].view(dt) for o, n in zip(offsets, sizes)]


def empty(layout: LayoutLike, dtype: Any = None, comm: Any = None, *, storage: Optional[str] = None) -> DistArray:
    """Collective: a DistArray for `layout`, not initialized (storage: as DistArray's)."""
    return DistArray(layout, dtype, comm, fill_zero=False, storage=storage)


def zeros(layout: LayoutLike, dtype: Any = None, comm: Any = None, *, storage: Optional[str] = None) -> DistArray:
    """Collective: a DistArray for `layout`, zeroed (storage: as DistArray's)."""
    return DistArray(layout, dtype, comm, storage=storage)


def fromfunction(fn: Callable[..., Any], layout: LayoutLike, dtype: Any = None, comm: Any = None, *,
                 storage: Optional[str] = None) -> DistArray:
    """Collective: a DistArray whose element (i0, i1, ...) is fn(i0, i1, ...),
    each rank computing its own elements (see DistArray.fill; storage: as
    DistArray's)."""
    out = DistArray(layout, dtype, comm, fill_zero=False, storage=storage)
    return _checked(out.comm, lambda: out.fill(fn))  # fn raising on one rank: every rank's error


def scatter(array: Optional[np.ndarray], layout: LayoutLike, root: int = 0, comm: Any = None,
            strategy: Optional[str] = None, *, storage: Optional[str] = None) -> DistArray:
    """Collective: distributes `array` (a global numpy array of the layout's
    shape, element (i0, i1, ...) at array[i0, i1, ...], given on `root`; None
    elsewhere) over `layout`. The dtype is the root's (storage: as DistArray's)."""
    comm = _comm(comm)
    layout = _checked(comm, lambda: _layout(layout))
    rank = comm.Get_rank()
    root = _agree_root(comm, root, "scatter")
    err, a = "", None
    if rank == root:
        if array is None:
            err = "scatter: the root rank must give the global array"
        else:
            a = np.asarray(array)
            if tuple(a.shape) != tuple(layout.shape):
                err = f"scatter: the array's shape {tuple(a.shape)} is not the layout's {tuple(layout.shape)}"
            elif a.dtype.hasobject or a.dtype.itemsize == 0:
                err = f"scatter: dtype {a.dtype} is not a fixed-size element type"
    dt = comm.bcast(a.dtype if a is not None and not err else None, root=root)
    agree(comm, err)
    out = DistArray(layout, dt, comm, fill_zero=False, storage=storage)
    src = _one_tile(layout.shape, root, dt.itemsize)
    buf = np.asfortranarray(a).reshape(-1, order="F") if rank == root else np.empty(0, dtype=dt)
    with make_plan(src, out.layout, None, comm, strategy=strategy or "p2p") as plan:
        plan.execute(buf, out)
    return out


def redistribute(array: DistArray, layout: Optional[LayoutLike] = None, region: RegionLike = None,
                 out: Optional[DistArray] = None, *, strategy: Optional[str] = None,
                 storage: Optional[str] = None) -> DistArray:
    """Collective: `array` (or its `region`) moved to `layout`, in a new zeroed
    DistArray (storage: as DistArray's), or into `out` (then `layout` may be
    omitted). One plan, made and executed once: to move the same way again, keep
    a Plan (make_plan). The strategy: `strategy`, else ``shm`` when both arrays
    lie in shared windows (each element copied once on a node), else ``p2p``."""
    def check() -> None:
        if not isinstance(array, DistArray):
            raise TypeError(f"redistribute: array must be a redist.DistArray, got {type(array).__name__}")
        if out is None:
            if layout is None:
                raise TypeError("redistribute: give the target layout or out=")
        elif not isinstance(out, DistArray):
            raise TypeError(f"redistribute: out must be a redist.DistArray, got {type(out).__name__}")
        elif layout is not None and _layout(layout).with_esize(out.dtype.itemsize) != out.layout:
            raise Error(f"redistribute: out's layout {out.layout.spec} is not the layout given, "
                        f"{_layout(layout).spec}")

    # the arrays' communicator; a rank that has neither array agrees over the
    # default (COMM_WORLD): arrays on another communicator leave it waiting
    _checked(array.comm if isinstance(array, DistArray) else out.comm if isinstance(out, DistArray) else _comm(None),
             check)
    if out is None:
        out = DistArray(layout, array.dtype, array.comm, storage=storage)
    if not strategy:  # the same on every rank: DistArray agreed on its storage
        strategy = "shm" if array.storage == "shared" and out.storage == "shared" else "p2p"
    with make_plan(array.layout, out.layout, region, array.comm, strategy=strategy) as plan:
        plan.execute(array, out)
    return out
