"""The Python binding on 1-4 ranks (run by tests/python/test_binding.py under
mpirun): every layout kind, storage, dtype, regions, plans, strategies and
errors, checked against numpy on the gathered result and on each rank's tiles."""
import gc
import math
import re

import numpy as np
import pytest
from mpi4py import MPI

import redist
from conftest import same_everywhere

P = MPI.COMM_WORLD.Get_size()
R = MPI.COMM_WORLD.Get_rank()


def value(*idx):
    """Element (i0, i1, ...) of the test array: distinct for every index."""
    v = np.zeros(np.broadcast_shapes(*[np.shape(i) for i in idx]), dtype=np.float64)
    for d, i in enumerate(idx):
        v = v + (i + 1) * 1000.0 ** d
    return v


def expected(shape, region=None, dst_shape=None, dtype=np.float64):
    """The target as numpy: `value` moved by the region, zeros elsewhere."""
    g = np.fromfunction(value, shape, dtype=np.int64).astype(dtype)
    if region is None:
        return g
    r = redist.Region(region)
    out = np.zeros(dst_shape, dtype=dtype)
    s = tuple(slice(o, o + n) for o, n in zip(r.src_offset, r.size))
    d = tuple(slice(o, o + n) for o, n in zip(r.dst_offset, r.size))
    out[d] = g[s]
    return out


def check_tiles(a, fn):
    """Each local tile (or the local array) equals fn at its global indices: no gather."""
    ref = redist.empty(a.layout, a.dtype, a.comm).fill(fn)
    if a.local_array is not None:
        assert np.array_equal(a.local_array, ref.local_array)
    assert len(a.tiles) == len(ref.tiles)
    for x, y in zip(a.tiles, ref.tiles):
        assert np.array_equal(x, y)


def grid2(p):
    return (2, p // 2) if p % 2 == 0 and p > 1 else (1, p)


# Every ownership kind, several partitions and storages, as spec strings.
def layouts_2d():
    g0, g1 = grid2(P)
    fn = "myowner"
    redist.register_owner_function(fn, lambda t: (t[0] * 7 + t[1] * 3) % P)
    ntiles = math.ceil(23 / 5) * math.ceil(17 / 4)
    owners = ",".join(str((i * 5) % P) for i in range(ntiles))
    return {
        "block_cyclic": f"23x17 tile=5x4 block_cyclic grid={g0}x{g1}",
        "block_cyclic_col_src_super": f"23x17 tile=3x2 block_cyclic grid={g0}x{g1} order=col src={g0 - 1}x0 super=2x1",
        "offset": f"23x17 tile=5x4 offset=2x3 block_cyclic grid={g1}x{g0}",
        "irregular": f"23x17 tile=[0,3,10,23]x[0,1,9,17] block_cyclic grid=1x{P}",
        "random": f"23x17 tile=4x4 random seed=11 ranks={P}",
        "band": f"23x17 tile=3x3 band width=1 near=(block_cyclic grid={g0}x{g1}) far=(random seed=3 ranks={P})",
        "table": f"23x17 tile=5x4 table owners={owners}",
        "function": f"23x17 tile=6x5 function name={fn} ranks={P}",
        "greedy": f"23x17 tile=4x4 greedy of=(23x17 tile=12x17 block_cyclic grid={P}x1)",
        "balanced": f"23x17 tile=[0,5,7,23]x[0,9,17] balanced of=(23x17 tile=6x6 block_cyclic grid={g0}x{g1})",
        "local_array": f"23x17 tile=4x3 storage=local_array block_cyclic grid={g0}x{g1}",
        "local_array_ld": f"23x17 tile=4x3 storage=local_array ld=40 block_cyclic grid={g0}x{g1}",
        "tile_pointers": f"23x17 tile=5x4 storage=tile_pointers random seed=5 ranks={P}",
        "rank0": "23x17",
    }


KINDS = list(layouts_2d())


@pytest.mark.parametrize("src", KINDS)
def test_every_kind_round_trip(src):
    L = layouts_2d()
    dst = L["block_cyclic_col_src_super"] if src != "block_cyclic_col_src_super" else L["random"]
    a = redist.fromfunction(value, L[src])
    check_tiles(a, value)
    b = redist.redistribute(a, dst)
    check_tiles(b, value)
    c = redist.redistribute(b, L[src])
    check_tiles(c, value)
    full = c.gather()
    if R == 0:
        assert np.array_equal(full, expected((23, 17)))
    else:
        assert full is None


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128, np.int32, np.int64,
                                   np.uint8, np.dtype([("a", "<i4"), ("b", "<f8")]), np.dtype([("a", "f8"), ("b", "i4")]),
                                   np.dtype("V3")])
def test_dtypes_scatter_redistribute_gather(dtype):
    dt = np.dtype(dtype)
    shape = (19, 11)
    g = None
    if R == 0:
        raw = np.arange(math.prod(shape) * dt.itemsize, dtype=np.uint64) * 2654435761 % 251
        g = raw.astype(np.uint8).view(dt).reshape(shape, order="F")
    a = redist.scatter(g, f"19x11 tile=4x3 random seed=2 ranks={P}")
    assert a.dtype == dt and a.layout.esize == dt.itemsize
    b = redist.redistribute(a, f"19x11 tile=2x5 storage=local_array block_cyclic grid={P}x1")
    back = b.gather()
    if R == 0:
        assert back.dtype == dt and back.tobytes(order="F") == g.tobytes(order="F")


@pytest.mark.parametrize("region", ["7x5", "7x5 from=3x2", "10x9 from=13x8 to=1x0", "0x5 from=3x2"])
def test_regions(region):
    src = f"23x17 tile=5x4 block_cyclic grid={P}x1"
    dst = f"15x12 tile=3x5 storage=local_array block_cyclic grid=1x{P}"
    a = redist.fromfunction(value, src)
    b = redist.redistribute(a, dst, region=region)
    full = b.gather()
    if R == 0:
        assert np.array_equal(full, expected((23, 17), region, (15, 12)))


def test_region_keywords_and_out():
    a = redist.fromfunction(value, f"23x17 tile=5x4 block_cyclic grid=1x{P}")
    out = redist.zeros(f"15x12 tile=4x4 random seed=1 ranks={P}")
    region = redist.Region((7, 5), src_offset=(3, 2), dst_offset=(8, 7))
    assert str(region) == "7x5 from=3x2 to=8x7"
    res = redist.redistribute(a, region=region, out=out)
    assert res is out
    full = out.gather()
    if R == 0:
        assert np.array_equal(full, expected((23, 17), "7x5 from=3x2 to=8x7", (15, 12)))


def test_volume_3d_repartition():
    # Paper 003: a 3-D volume from slabs onto a patch grid placed greedily, and back.
    src = f"24x20x16 tile=24x20x{math.ceil(16 / P)} block_cyclic grid=1x1x{P}"
    dst = f"24x20x16 tile=8x8x8 greedy of=({src})"
    a = redist.fromfunction(value, src, np.float32)
    b = redist.redistribute(a, dst)
    check_tiles(b, lambda i, j, k: value(i, j, k).astype(np.float32))
    summary = redist.placement_summary(dst)
    assert summary["patches"] == 3 * 3 * 2
    c = redist.redistribute(b, src)
    check_tiles(c, lambda i, j, k: value(i, j, k).astype(np.float32))


def test_keyword_layouts_equal_specs():
    g0, g1 = grid2(P)
    kw = redist.Layout((23, 17), (5, 4), ownership=redist.block_cyclic((g0, g1), order="col", src=(0, g1 - 1)),
                       storage="local_array", ld=30)
    spec = redist.Layout(f"23x17 tile=5x4 storage=local_array ld=30 block_cyclic grid={g0}x{g1} order=col src=0x{g1 - 1}")
    assert kw == spec and kw.spec == spec.spec and hash(kw) == hash(spec)
    irr = redist.Layout((10, 6), ([0, 3, 10], 2), ownership=redist.random(seed=4, ranks=P), esize=4)
    assert irr == redist.Layout(f"10x6 tile=[0,3,10]x2 esize=4 random seed=4 ranks={P}")
    assert irr.tile_bounds(0) == [0, 3, 10] and irr.ntiles == (2, 3)
    band = redist.Layout((9, 9), (3, 3), ownership=redist.band(1, redist.block_cyclic((1, P)), redist.random(seed=2, ranks=P)))
    assert band == redist.Layout(f"9x9 tile=3x3 band width=1 near=(block_cyclic grid=1x{P}) far=(random seed=2 ranks={P})")
    src = redist.Layout((8, 8), (8, 4), ownership=redist.block_cyclic((1, P)))
    assert redist.Layout((8, 8), (2, 2), ownership=redist.greedy(src)).ownership.kind == "greedy"
    assert redist.Layout((8, 8), (2, 2), ownership=redist.table([0] * 16)).ownership.kind == "table"
    assert redist.Layout("8x8 tile=4x4").ownership.kind == "block_cyclic"


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_transpose_alpha_beta_against_numpy(dtype):
    """C := beta C + alpha op(A)^T while redistributing (docs/transforms.md)."""
    src = f"23x17 tile=5x4 block_cyclic grid={P}x1"
    dst = f"20x25 tile=3x7 storage=local_array block_cyclic grid=1x{P} esize={np.dtype(dtype).itemsize}"
    region = redist.Region((15, 9), src_offset=(2, 1), dst_offset=(4, 1), axes=(1, 0))
    assert str(region) == "15x9 from=2x1 to=4x1 axes=1,0" and tuple(region.axes) == (1, 0)
    fa = (lambda i, j: value(i, j) * (1 - 0.5j)) if dtype == np.complex128 else value
    a = redist.fromfunction(fa, src, dtype=dtype)
    c = redist.fromfunction(lambda i, j: value(i, j) / 7, dst, dtype=dtype)
    alpha, beta = (0.5 - 2j, 1.5) if dtype == np.complex128 else (2.5, -1.0)
    conj = dtype == np.complex128
    etype = "c128" if dtype == np.complex128 else "f64"
    with redist.make_plan(a.layout, c.layout, region, element_type=etype, alpha=alpha, beta=beta,
                          conjugate=conj) as plan:
        plan.execute(a, c)
    full = c.gather()
    if R == 0:
        ga = np.fromfunction(fa, (23, 17), dtype=np.int64).astype(dtype)
        want = (np.fromfunction(value, (20, 25), dtype=np.int64) / 7).astype(dtype)
        op = ga[2:2 + 9, 1:1 + 15].T
        want[4:4 + 15, 1:1 + 9] = alpha * (np.conj(op) if conj else op) + beta * want[4:4 + 15, 1:1 + 9]
        assert np.array_equal(full, want)
    with pytest.raises(redist.Error, match="cannot apply options.arithmetic"):
        redist.make_plan(a.layout, c.layout, region, element_type=etype, alpha=alpha, strategy="alltoallw")


def test_plan_execute_many_context_manager_and_stats():
    src = f"64x48 tile=8x8 block_cyclic grid=1x{P}"
    dst = f"64x48 tile=6x10 block_cyclic grid={P}x1"
    a = redist.fromfunction(value, src)
    b = redist.zeros(dst)
    with redist.make_plan(src, dst, strategy="alltoallv") as plan:
        assert plan.strategy == "alltoallv" and plan.rank == R and plan.size == P
        for name in redist.strategy_names():
            b.blocks[0][:] = 0
            plan.execute(a, b, strategy=name)
            check_tiles(b, value)
        st = plan.stats
        offline = redist.plan_stats(src, dst, rank=R, ranks=P)
        assert st.bytes_sent == offline.bytes_sent and st.as_dict() == offline.as_dict()
        total = MPI.COMM_WORLD.allreduce(st.bytes_sent + st.bytes_local)
        assert total == 64 * 48 * 8
    assert plan.closed
    with pytest.raises(redist.Error, match="closed"):
        plan.execute(a, b)


def test_plain_numpy_buffers_and_tile_pointers():
    src = redist.Layout(f"12x10 tile=3x4 block_cyclic grid=1x{P}")
    dst = redist.Layout(f"12x10 tile=5x5 storage=tile_pointers random seed=9 ranks={P}")
    sidx, didx = redist.LocalIndex(src, R), redist.LocalIndex(dst, R)
    a = redist.fromfunction(value, src)
    plain_src = a.blocks[0].copy()                      # a plain 1-D numpy array
    tiles = [np.zeros(didx.block_elements(b)) for b in range(didx.nblocks)]
    with redist.make_plan(src, dst) as plan:
        plan.execute(memoryview(plain_src), tiles)        # any buffer-protocol object
    b = redist.empty(dst)
    for t, x in zip(b.blocks, tiles):
        t[:] = x
    check_tiles(b, value)


def test_local_array_plain_fortran_array():
    dst = redist.Layout(f"12x10 tile=2x3 storage=local_array block_cyclic grid={P}x1")
    li = redist.LocalIndex(dst, R)
    local = np.zeros(li.local_extent, order="F")
    a = redist.fromfunction(value, f"12x10 tile=12x10")
    with redist.make_plan(a.layout, dst) as plan:
        plan.execute(a, local)
    g0, g1 = np.ix_(li.globals(0), li.globals(1))
    assert np.array_equal(local, value(g0, g1))


def test_auto_and_predictions():
    src = f"32x32 tile=8x8 block_cyclic grid=1x{P}"
    dst = f"32x32 tile=4x4 block_cyclic grid={P}x1"
    a = redist.fromfunction(value, src)
    b = redist.zeros(dst)
    with redist.make_plan(src, dst, strategy="auto") as plan:
        plan.execute(a, b)
        assert plan.auto_choice in redist.strategy_names()
        pred = plan.predictions()
        assert list(pred) == redist.strategy_names() and all(t >= 0 for t in pred.values())
        assert same_everywhere(MPI.COMM_WORLD, repr(sorted(pred.items())))
        offline = redist.predict(src, dst, rank=R, ranks=P, machine=plan.machine)
        assert set(offline) == set(pred)
    check_tiles(b, value)


def test_owner_and_tile_box_take_tile_coordinates():
    """Layout.owner and Layout.tile_box take a tile's coordinates, one per
    dimension, each inside the tile grid: the README's 10x10 tile=4x3 grid=2x2
    table, checked against the block-cyclic rule; a bare int on a 2-D layout (it
    once read as the tile (1,) and answered rank 1 for tile (1, 0), owned by rank
    2), a coordinate outside the grid and a negative one raise, naming the grid."""
    l = redist.Layout("10x10 tile=4x3 block_cyclic grid=2x2")
    for i in range(3):
        for j in range(4):
            assert l.owner((i, j)) == (i % 2) * 2 + j % 2, (i, j)  # row-major grid order
            lo, size = l.tile_box((i, j))
            assert lo == (4 * i, 3 * j) and size == (min(4, 10 - 4 * i), min(3, 10 - 3 * j)), (i, j, lo, size)
    assert l.owner((1, 0)) == 2
    for bad, words in [(1, "needs 2"), ((1, 0, 0), "needs 2"), ((3, 0), "outside the tile grid 3x4"),
                       ((0, -1), "outside the tile grid 3x4"), ((0, 4), "(0 to 3)")]:
        for call in (l.owner, l.tile_box):
            with pytest.raises(redist.Error, match=re.escape(words)):
                call(bad)
    one = redist.Layout("10 tile=4")
    assert one.owner(2) == 0 and one.tile_box(2) == ((8,), (2,))
    with pytest.raises(redist.Error, match="at least 1 rank"):
        l.check(0)
    for rank, ranks in [(5, 2), (-1, 2), (0, 0)]:
        with pytest.raises(redist.Error, match=r"plan_stats: (rank|ranks)"):
            redist.plan_stats(l, l, rank=rank, ranks=ranks)


def test_predictions_take_the_storage():
    """predict() and Plan.predictions() take the arrays' storage like `redist plan
    --predict --storage`: 'heap' (the default: numpy arrays) gives shm its heap
    model, 'shared' its model of shared windows; the plan's value is the max over
    ranks of each rank's offline prediction for the same storage, and auto (no
    trials) runs the smallest of the heap predictions. Forced nodes
    (ranks_per_node) make shm's pairs across nodes messages."""
    src = f"40x36 tile=5x6 block_cyclic grid=1x{P}"
    dst = f"40x36 tile=7x4 block_cyclic grid={P}x1"
    a = redist.fromfunction(value, src, storage="heap")
    b = redist.zeros(dst, storage="heap")
    with redist.make_plan(src, dst, strategy="auto") as plan:
        online = {st: plan.predictions(storage=st) for st in ("heap", "shared")}
        assert plan.predictions() == online["heap"]
        for st in ("heap", "shared"):
            mine = redist.predict(src, dst, rank=R, ranks=P, machine=plan.machine, storage=st)
            assert list(mine) == redist.strategy_names()
            # (the forwarding strategies' model in a plan follows their routes, collectively)
            for name in ("shm", "p2p", "direct", "alltoallw"):
                assert MPI.COMM_WORLD.allreduce(mine[name], op=MPI.MAX) == online[st][name], (st, name)
        assert redist.predict(src, dst, rank=R, ranks=P, machine=plan.machine) == \
            redist.predict(src, dst, rank=R, ranks=P, machine=plan.machine, storage="heap")
        for name in redist.strategy_names():
            if name != "shm":
                assert online["heap"][name] == online["shared"][name], name
        if P > 1:
            assert online["heap"]["shm"] != online["shared"]["shm"]
            # nodes of one rank: every pair a message, more than one copy through a window
            # (a case of 7 MB: on the 40x36 one a few hundred bytes per pair made the
            # messages' startups and the windows' two per peer a toss-up, by calibration)
            big_src, big_dst = f"1000x900 tile=50x60 block_cyclic grid=1x{P}", f"1000x900 tile=70x40 block_cyclic grid={P}x1"
            alone = redist.predict(big_src, big_dst, rank=R, ranks=P, machine=plan.machine, storage="shared",
                                   ranks_per_node=1)
            whole = redist.predict(big_src, big_dst, rank=R, ranks=P, machine=plan.machine, storage="shared")
            assert MPI.COMM_WORLD.allreduce(alone["shm"], op=MPI.MAX) > MPI.COMM_WORLD.allreduce(whole["shm"], op=MPI.MAX)
            assert alone["p2p"] == whole["p2p"]
        plan.execute(a, b)
        assert plan.auto_choice == min(online["heap"], key=online["heap"].get)
    # arrays in shared windows (DistArray's default): auto runs the smallest of the shared predictions
    a, b = redist.fromfunction(value, src), redist.zeros(dst)
    assert (a.storage, b.storage) == ("shared", "shared")
    with redist.make_plan(src, dst, strategy="auto") as plan:
        shared = plan.predictions(storage="shared")  # this plan's machine model (a quick measurement may differ)
        plan.execute(a, b)
        assert plan.auto_choice == min(shared, key=shared.get)
        with pytest.raises(redist.Error, match="storage 'disk': expected heap or shared"):
            plan.predictions(storage="disk")
        if P > 1:
            # not a str on the last rank: TypeError there, redist.Error on the others (this hung them)
            bad = R == P - 1
            with pytest.raises(TypeError if bad else redist.Error, match="storage must be a str" if bad else "<int>"):
                plan.predictions(storage=5 if bad else "heap")
            # two models in one max: refused on every rank, naming both
            with pytest.raises(redist.MismatchError, match="storage differs between ranks: rank 0 has 'heap'"):
                plan.predictions(storage="shared" if bad else "heap")
        with pytest.raises(redist.Error, match="storage 'disk'"):
            redist.predict(src, dst, rank=R, ranks=P, machine=plan.machine, storage="disk")
    check_tiles(b, value)


@pytest.mark.parametrize("trials", [0, 2])
def test_auto_trials(trials):
    """auto_trials=k: auto_choice stays '' for the first 2k - 1 executes (each one
    moves the data right: a trial is a real execute), then names a strategy with a
    finite prediction, the same on every rank; k = 0 decides on the first execute."""
    src = f"24x20 tile=5x3 block_cyclic grid=1x{P}"
    dst = f"24x20 tile=4x7 random seed=9 ranks={P}"
    a = redist.fromfunction(value, src)
    with redist.make_plan(src, dst, strategy="auto", auto_trials=trials) as plan:
        assert plan.auto_trials == trials
        pred = plan.predictions()
        assert plan.auto_choice == ""
        decide = 2 * trials if trials else 1
        for e in range(1, decide + 2):
            b = redist.zeros(dst)
            plan.execute(a, b)
            check_tiles(b, value)
            if e < decide:
                assert plan.auto_choice == "", (e, plan.auto_choice)
            else:
                assert plan.auto_choice in redist.strategy_names()
                assert math.isfinite(pred[plan.auto_choice])
                assert same_everywhere(MPI.COMM_WORLD, plan.auto_choice)


def test_copy_threads(monkeypatch):
    """copy_threads=3, with parts of any size ($REDIST_COPY_PART_BYTES=1, read by
    make_plan): every element lands right for strategies that pack, copy locally
    and push; a count outside 0..1024 is the same Error on every rank."""
    monkeypatch.setenv("REDIST_COPY_PART_BYTES", "1")
    src = f"60x50 tile=7x3 block_cyclic grid=1x{P}"
    dst = f"60x50 tile=4x9 random seed=3 ranks={P}"
    a = redist.fromfunction(value, src)
    for strategy in ("p2p", "alltoallv", "shm"):
        with redist.make_plan(src, dst, strategy=strategy, copy_threads=3) as plan:
            assert plan.copy_threads == 3
            b = redist.zeros(dst)
            plan.execute(a, b)
            check_tiles(b, value)
    msg = agreed_error(lambda: redist.make_plan(src, dst, copy_threads=-1))
    assert "copy_threads must be from 0 to 1024" in msg and "-1" in msg


def test_error_auto_trials_negative():
    msg = agreed_error(lambda: redist.make_plan("8x8 tile=2x2", "8x8 tile=4x4", strategy="auto", auto_trials=-3))
    assert "auto_trials must be >= 0" in msg and "-3" in msg


def test_sub_communicator():
    sub = MPI.COMM_WORLD.Split(R % 2, R)
    q = sub.Get_size()
    a = redist.fromfunction(value, f"10x8 tile=2x2 block_cyclic grid=1x{q}", comm=sub)
    b = redist.redistribute(a, f"10x8 tile=3x3 random seed=4 ranks={q}")
    full = b.gather(root=q - 1)
    if sub.Get_rank() == q - 1:
        assert np.array_equal(full, expected((10, 8)))
    # their windows were made over sub: freed over sub, before it is
    assert (a.storage, b.storage, redist.shared_windows(sub)) == ("shared", "shared", 2)
    del a, b
    gc.collect()
    assert redist.reclaim_shared(sub) == 2 and redist.shared_windows(sub) == 0
    sub.Free()


@pytest.mark.parametrize("src", ["local_array", "tile_pointers", "random", "rank0"])
def test_storage_shared_and_heap_move_the_same_bits(src):
    """DistArray's storage: one shared window per node by default, or the heap;
    the same values either way, and redistribute between windows (shm, and auto
    choosing for windows) moves the same bits as p2p between heap arrays, there
    and back; zeros() in a window are zeros."""
    L = layouts_2d()
    dst = L["block_cyclic_col_src_super"]
    a = redist.fromfunction(value, L[src])
    h = redist.fromfunction(value, L[src], storage="heap")
    assert (a.storage, h.storage) == ("shared", "heap")
    check_tiles(a, value)
    hb = redist.redistribute(h, dst, storage="heap")  # p2p, both on the heap
    assert hb.storage == "heap"
    for strategy in (None, "shm", "auto"):  # None: redistribute's choice for two windows, shm
        b = redist.redistribute(a, dst, strategy=strategy)
        assert b.storage == "shared"
        assert [x.tobytes() for x in b.blocks] == [y.tobytes() for y in hb.blocks], strategy
        c = redist.redistribute(b, L[src], strategy=strategy)
        assert [x.tobytes() for x in c.blocks] == [y.tobytes() for y in h.blocks], strategy
    z = redist.zeros(dst)
    assert z.storage == "shared" and not any(blk.any() for blk in z.blocks)


def test_shared_storage_on_nodes_of_one_rank(monkeypatch):
    """Nodes forced to one rank each (REDIST_NODE_SIZE=1): every rank's window is
    its own, no rank maps another's, and shm's pairs are messages: the same bits
    as p2p between heap arrays."""
    monkeypatch.setenv("REDIST_NODE_SIZE", "1")
    L = layouts_2d()
    a = redist.fromfunction(value, L["local_array"])
    assert a.storage == "shared"
    b = redist.redistribute(a, L["tile_pointers"])
    hb = redist.redistribute(redist.fromfunction(value, L["local_array"], storage="heap"), L["tile_pointers"],
                             storage="heap")
    assert [x.tobytes() for x in b.blocks] == [y.tobytes() for y in hb.blocks]
    check_tiles(b, value)


def test_shared_windows_freed_once_no_rank_holds_them():
    """A DistArray's window is freed at the next allocation (or reclaim_shared)
    over its communicator once every rank let the array and its views go; a view
    kept on one rank keeps it on every rank, and its memory stays valid."""
    gc.collect()
    redist.reclaim_shared()
    n0 = redist.shared_windows()
    assert same_everywhere(MPI.COMM_WORLD, str(n0))
    a = redist.zeros(f"30x20 tile=4x4 block_cyclic grid=1x{P}")
    assert redist.shared_windows() == n0 + 1
    del a
    gc.collect()
    b = redist.zeros("30x20")  # a's window freed on the way
    assert redist.shared_windows() == n0 + 1
    keep = b.blocks[0] if R == 0 else None  # rank 0 stores the whole one-tile array
    del b
    gc.collect()
    assert redist.reclaim_shared() == 0 and redist.shared_windows() == n0 + 1
    if R == 0:
        keep[:] = 7.0
        assert keep.sum() == 7.0 * 600
    del keep
    gc.collect()
    assert redist.reclaim_shared() == 1 and redist.shared_windows() == n0
    assert redist.reclaim_shared() == 0


def test_storage_falls_back_to_the_heap_where_windows_do_not_fit(monkeypatch):
    """Where /dev/shm has not the room for the node's window (a 64 MB one, as
    Docker gives, hung Open MPI): the default storage is the heap on every rank,
    storage="shared" the same error on every rank. REDIST_SHM_FREE_BYTES stands
    for the free bytes."""
    monkeypatch.setenv("REDIST_SHM_FREE_BYTES", "1")
    a = redist.fromfunction(value, f"30x20 tile=4x4 block_cyclic grid=1x{P}")
    assert a.storage == "heap"
    check_tiles(a, value)
    msg = agreed_error(lambda: redist.zeros("30x20", storage="shared"))
    assert "bytes in /dev/shm, which has 1 free: give the job more shared memory" in msg


def osc_mappings():
    """This process's mappings of Open MPI's shared-window segments (osc sm)."""
    with open("/proc/self/maps") as f:
        return sum(1 for line in f if "osc_sm" in line)


def test_freeing_a_communicator_frees_its_windows():
    """MPI_Comm_free (collective) frees the windows of the communicator's arrays
    that no rank holds any more; they had been left to the process's end (200
    rounds of Dup, a 4 MB array, del, Free: 800 MB of /dev/shm). One still held on
    some rank stays valid."""
    gc.collect()
    before = osc_mappings()
    for k in range(20):
        sub = MPI.COMM_WORLD.Dup()
        a = redist.zeros(f"300x200 tile=30x20 block_cyclic grid=1x{P}", comm=sub)
        assert a.storage == "shared" and redist.shared_windows(sub) == 1
        if k == 0:  # a mapping per window (none where MPI keeps a window of one rank in its own memory)
            per_window = osc_mappings() - before
            assert per_window == (1 if P > 1 else per_window), per_window
        del a
        gc.collect()
        sub.Free()
    assert osc_mappings() == before
    sub = MPI.COMM_WORLD.Split(0, P - 1 - R)  # another numbering
    kept = redist.fromfunction(value, f"30x20 tile=4x4 block_cyclic grid=1x{P}", comm=sub).blocks[0]
    dropped = redist.zeros("30x20", comm=sub)
    del dropped
    gc.collect()
    sub.Free()
    assert osc_mappings() == before + per_window  # kept's window, left to the process's end
    kept[:] = 3.0
    assert kept.sum() == 3.0 * kept.size


def test_threads_on_communicators_of_their_own():
    """Two threads, each on a communicator of its own, make arrays at once, in
    windows and on the heap: the module's collectives leave the GIL (a thread in
    redist's agreement held it while the other needed it to reach its own: 3 runs
    in 4 hung), and windows made at once get serials of their own (shared_free
    crashed, 5 runs in 6)."""
    import faulthandler
    import os
    import threading
    if MPI.Query_thread() < MPI.THREAD_MULTIPLE:
        pytest.skip("needs MPI_THREAD_MULTIPLE")
    comms = [MPI.COMM_WORLD.Dup() for _ in range(2)]
    errors = []

    def work(t):
        try:
            for k in range(60):
                a = redist.fromfunction(value, f"30x20 tile=4x4 block_cyclic grid=1x{P}", comm=comms[t],
                                        storage="heap" if k % 2 else None)
                check_tiles(a, value)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(f"thread {t}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    if any(th.is_alive() for th in threads):  # hung: say where, and end the job (the threads cannot be stopped)
        faulthandler.dump_traceback()
        os._exit(3)
    gc.collect()
    for c in comms:
        c.Free()
    assert not errors, errors


def test_a_bad_node_size_is_an_error_not_the_heap(monkeypatch):
    """The default storage falls back to the heap only where MPI cannot make the
    window; a malformed REDIST_NODE_SIZE is the job's error, the same on every rank
    (it had silently given heap arrays)."""
    monkeypatch.setenv("REDIST_NODE_SIZE", "abc")
    msg = agreed_error(lambda: redist.zeros(f"30x20 tile=4x4 block_cyclic grid=1x{P}"))
    assert "REDIST_NODE_SIZE=abc: expected a number of ranks per node" in msg
    assert redist.zeros("30x20", storage="heap").storage == "heap"


def test_error_intercommunicator_named():
    """An intercommunicator: redist's error, naming make_group_plan (MPI's
    MPI_ERR_BUFFER from an Allreduce before)."""
    if P < 2:
        pytest.skip("needs two ranks")
    side = 0 if R < P // 2 else 1
    local = MPI.COMM_WORLD.Split(side, R)
    inter = local.Create_intercomm(0, MPI.COMM_WORLD, P // 2 if side == 0 else 0, 7)
    for call in (lambda: redist.zeros("4x4", comm=inter), lambda: redist.make_plan("4x4", "4x4", comm=inter)):
        with pytest.raises(redist.Error, match="comm is an intercommunicator.*make_group_plan"):
            call()
    inter.Free()
    local.Free()


def test_error_bad_storage_same_on_every_rank():
    msg = agreed_error(lambda: redist.zeros("4x4", storage="disk"))
    assert "storage must be 'shared', 'heap' or None (shared where MPI can make the window), got 'disk'" in msg
    msg = agreed_error(lambda: redist.empty("4x4", storage="gpu" if R == P - 1 else None))
    assert f"rank {P - 1}: storage must be" in msg
    if P > 1:  # valid, but not the same everywhere: the window is made collectively (a rank on the heap hung it)
        with pytest.raises(redist.MismatchError, match="same layout, dtype and storage.*storage=heap"):
            redist.zeros("4x4", storage="heap" if R == P - 1 else None)
        assert redist.zeros("4x4").storage == "shared"


def test_strategies_listed():
    names = [n for n, _ in redist.strategies()]
    assert names == redist.strategy_names() and "p2p" in names
    with pytest.raises(redist.Error, match="p2p"):
        redist.check_strategy("nope")


# ---------------------------------------------------------------- errors


def agreed_error(fn):
    """Runs fn on every rank; each must raise redist.Error (a ValueError) with one message."""
    with pytest.raises(ValueError) as e:
        fn()
    assert isinstance(e.value, redist.Error)
    assert same_everywhere(MPI.COMM_WORLD, str(e.value)), str(e.value)
    return str(e.value)


def test_errors_are_named_as_the_docs_name_them():
    """The exceptions are made in the extension (redist._core) but are redist's:
    a traceback said `redist._core.Error: ...` where docs/python.md says
    redist.Error. Local: no MPI call."""
    import pickle
    import traceback
    for cls, name in ((redist.Error, "Error"), (redist.MpiError, "MpiError"), (redist.MismatchError, "MismatchError")):
        assert cls.__module__ == "redist" and cls.__qualname__ == name, (cls.__module__, cls.__qualname__)
        assert repr(cls) == f"<class 'redist.{name}'>", repr(cls)
    with pytest.raises(redist.Error) as e:
        redist.check_strategy("nope")
    last = traceback.format_exception_only(e.type, e.value)[-1]
    assert last.startswith("redist.Error: unknown strategy 'nope'"), last
    again = pickle.loads(pickle.dumps(e.value))  # found again by its name
    assert type(again) is redist.Error and str(again) == str(e.value)


def test_error_bad_layout_same_on_every_rank():
    msg = agreed_error(lambda: redist.make_plan("8x8 tile=2x2", f"8x8 tile=2x2 block_cyclic grid={P + 1}x1"))
    assert "needs" in msg and "ranks" in msg


def test_error_layouts_that_differ_between_ranks_are_a_mismatch():
    """Ranks that disagree get redist.MismatchError (a redist.Error) on every rank;
    a bad argument, even one named like a disagreement, plain redist.Error."""
    if P > 1:
        other = "8x8 tile=4x4" if R == P - 1 else "8x8 tile=2x2"
        with pytest.raises(redist.MismatchError) as e:
            redist.make_plan("8x8 tile=2x2", other)
        assert "target layout differs between ranks" in str(e.value) and isinstance(e.value, redist.Error)
        assert same_everywhere(MPI.COMM_WORLD, str(e.value)), str(e.value)
        # the Python layer's own agreements too (DistArray's layout and dtype, scatter's root)
        with pytest.raises(redist.MismatchError, match="every rank must give the same layout, dtype and storage"):
            redist.zeros(f"8x8 tile={4 if R == P - 1 else 2}x2 block_cyclic grid=1x{P}")
        with pytest.raises(redist.MismatchError, match="every rank must give the same root"):
            redist.scatter(np.zeros((8, 8)) if R in (0, 1) else None, f"8x8 tile=2x2 block_cyclic grid=1x{P}",
                           root=1 if R == P - 1 else 0)
    with pytest.raises(redist.Error) as e:
        redist.make_plan("8x8 tile=2x2", "8x8 tile=2x2", strategy="fast between ranks")
    assert not isinstance(e.value, redist.MismatchError), str(e.value)


def test_error_spec_syntax_on_one_rank_only():
    spec = "8x8 grid=ax2" if R == P - 1 else "8x8 tile=2x2"
    msg = agreed_error(lambda: redist.make_plan(spec, "8x8 tile=4x4"))
    assert "column" in msg


def test_error_wrong_dtype_on_one_rank_only():
    src, dst = f"16x8 tile=4x4 block_cyclic grid=1x{P}", f"16x8 tile=8x2 random seed=1 ranks={P}"
    a, b = redist.zeros(src), redist.zeros(dst)
    # numpy arrays on the one rank (DistArrays of other dtypes on one rank are refused when made)
    b32 = np.zeros(b.blocks[0].size, np.float32) if R == P - 1 else b
    with redist.make_plan(src, dst) as plan:
        msg = agreed_error(lambda: plan.execute(a, b32))
        assert "bytes" in msg and "esize=8" in msg
        # int64 into float64: same size, other type
        c = b.blocks[0].view(np.int64) if R == 0 else b
        agreed_error(lambda: plan.execute(a, c))
        plan.execute(a, redist.zeros(dst))  # the plan still works


def test_error_non_contiguous_wrong_shape_readonly():
    src = redist.Layout(f"16x8 tile=16x8 storage=local_array block_cyclic grid=1x1")
    dst = redist.Layout(f"16x8 tile=4x4 storage=local_array block_cyclic grid=1x{P}")
    li = redist.LocalIndex(dst, R)
    good_src = np.zeros((16, 8), order="F") if R == 0 else np.zeros(0)
    good_dst = np.zeros(li.local_extent, order="F")
    with redist.make_plan(src, dst) as plan:
        plan.execute(good_src, good_dst)
        strided = np.zeros((32, 8), order="F")[::2] if R == 0 else np.zeros(0)
        msg = agreed_error(lambda: plan.execute(strided, good_dst))
        assert "not contiguous (a strided view such as a[::2]" in msg and "np.ascontiguousarray" in msg, msg
        c_order = np.zeros((16, 8)) if R == 0 else np.zeros(0)
        assert "column-major" in agreed_error(lambda: plan.execute(c_order, good_dst))
        wrong = np.zeros((li.local_extent[0] + 1, li.local_extent[1]), order="F")
        assert "local array" in agreed_error(lambda: plan.execute(good_src, wrong))
        three = np.zeros(tuple(li.local_extent) + (1,), order="F")
        assert "the layout's 2 dimensions" in agreed_error(lambda: plan.execute(good_src, three))
        # rank 0 always owns something: only its array is short
        small = np.zeros(li.local_extent[0] * li.local_extent[1] - 1) if R == 0 else good_dst
        agreed_error(lambda: plan.execute(good_src, small))
        ro = good_dst.copy(order="F")
        ro.flags.writeable = R != 0
        assert "read-only" in agreed_error(lambda: plan.execute(good_src, ro))
        agreed_error(lambda: plan.execute(good_src, "not an array"))


def test_error_scatter_wrong_shape_and_bad_strategy():
    g = np.zeros((5, 5)) if R == 0 else None
    assert "shape" in agreed_error(lambda: redist.scatter(g, "6x5 tile=2x2"))
    a = redist.zeros("8x8 tile=4x4")
    with redist.make_plan("8x8 tile=4x4", "8x8 tile=2x2") as plan:
        b = redist.zeros("8x8 tile=2x2")
        assert "strateg" in agreed_error(lambda: plan.execute(a, b, strategy="nope" if R == 0 else "p2p"))


def test_error_layout_too_large_for_comm():
    agreed_error(lambda: redist.zeros(f"8x8 tile=2x2 random seed=1 ranks={P + 1}"))


def test_element_type_must_match_the_arrays_kind():
    """element_type names the arithmetic: int64 arrays under 'f64' (their bits
    scaled as doubles) and int32 under 'f32' are an agreed error; the types of
    the arrays' own kind work."""
    src, dst = f"8x6 tile=2x3 block_cyclic grid=1x{P}", f"8x6 tile=4x2 random seed=4 ranks={P}"
    for etype, dtype, wrong, alpha in [("f64", np.float64, np.int64, 2), ("f32", np.float32, np.int32, 2),
                                       ("i64", np.int64, np.float64, 1), ("c128", np.complex128, np.float64, 2)]:
        a, b = redist.fromfunction(value, src, dtype), redist.zeros(dst, dtype)
        with redist.make_plan(a.layout, b.layout, element_type=etype, alpha=alpha) as plan:
            plan.execute(a, b)
            check_tiles(b, lambda *i: alpha * value(*i))
            if np.dtype(wrong).itemsize == np.dtype(dtype).itemsize:
                bad_a = a.blocks[0].view(wrong) if R == P - 1 else a
                bad_b = b.blocks[0].view(wrong) if R == P - 1 else b
                msg = agreed_error(lambda: plan.execute(bad_a, bad_b))
                assert f"element_type='{etype}'" in msg, msg


def test_type_error_on_one_rank_is_every_ranks_error():
    """A make_plan argument of the wrong type on one rank: TypeError there, the
    same message as redist.Error on the others (they used to wait in make_plan);
    scatter's root outside the communicator: an agreed error."""
    if R == P - 1:
        with pytest.raises(TypeError, match="dst must be a redist.Layout or a spec string"):
            redist.make_plan("8x8 tile=2x2", 42)
    else:
        with pytest.raises(redist.Error, match=f"rank {P - 1}: dst must be a redist.Layout or a spec string"):
            redist.make_plan("8x8 tile=2x2", "8x8 tile=4x4")
    g = np.zeros((4, 4)) if R == 0 else None
    assert "root=" in agreed_error(lambda: redist.scatter(g, "4x4 tile=2x2", root=P))
    # The keyword arguments too (nanobind converted them before make_plan ran, on
    # one rank only: the others waited).
    if R == P - 1:
        with pytest.raises(TypeError, match="strategy must be a str or None, got int"):
            redist.make_plan("8x8 tile=2x2", "8x8 tile=4x4", strategy=5)
    else:
        with pytest.raises(redist.Error, match="strategy must be a str or None, got int"):
            redist.make_plan("8x8 tile=2x2", "8x8 tile=4x4")
    # strategy=None is the default (p2p), as execute's None is the plan's own
    plan = redist.make_plan("8x8 tile=2x2", "8x8 tile=4x4", strategy=None)
    assert plan.strategy == "p2p", plan.strategy
    # a comm that is not a communicator on one rank, the others on the default
    # COMM_WORLD (they waited in make_plan: helper's trial)
    if R == P - 1:
        with pytest.raises(TypeError, match="comm must be an mpi4py communicator"):
            redist.make_plan("8x8 tile=2x2", "8x8 tile=4x4", None, 5)
    else:
        with pytest.raises(redist.Error, match=f"rank {P - 1}: comm must be an mpi4py communicator"):
            redist.make_plan("8x8 tile=2x2", "8x8 tile=4x4")
    big = 2 ** 64 if R == P - 1 else 1 << 30
    msg = agreed_error(lambda: redist.make_plan("8x8 tile=2x2", "8x8 tile=4x4", max_message_bytes=big))
    assert "max_message_bytes 18446744073709551616 does not fit in 64 bits" in msg, msg
    with redist.make_plan("8x8 tile=2x2", "8x8 tile=4x4", max_message_bytes=np.int64(4096), alpha=1, beta=0,
                          element_type="f64", auto_trials=np.int32(0)) as plan:
        assert plan.size == P  # numpy integers and Python numbers are taken as they were


def test_distarray_bad_argument_on_one_rank_is_every_ranks_error():
    """A DistArray (zeros, empty, fromfunction, scatter, redistribute) with a bad
    argument on one rank raised there and left the others waiting in the
    agreement: now every rank raises, TypeError where the type was wrong. Layouts
    or dtypes that differ between ranks are refused too (one rank's other tiles
    of as many elements moved its part to the wrong place)."""
    good = f"8x8 tile=2x2 block_cyclic grid=1x{P}"
    last = R == P - 1
    assert "column" in agreed_error(lambda: redist.zeros("8x8 tile=2x" if last else good))
    assert "not a fixed-size element type" in agreed_error(lambda: redist.empty(good, object if last else None))
    if last:
        with pytest.raises(TypeError, match="layout must be a redist.Layout or a spec string, got int"):
            redist.zeros(5)
    else:
        with pytest.raises(redist.Error, match=f"rank {P - 1}: layout must be a redist.Layout"):
            redist.zeros(good)
    # numpy raises SyntaxError for this dtype string: that rank raises it, the others redist.Error
    if last:
        with pytest.raises(SyntaxError):
            redist.zeros(good, "i4,(")
    else:
        with pytest.raises(redist.Error, match=f"rank {P - 1}: "):
            redist.zeros(good)
    if P > 1:
        other = f"8x8 tile=4x1 block_cyclic grid=1x{P}"  # as many elements per rank, other tiles
        msg = agreed_error(lambda: redist.zeros(other if last else good))
        assert f"rank {P - 1} gave '{redist.Layout(other).spec}' of dtype float64, storage=None, rank 0 '" in msg, msg
        msg = agreed_error(lambda: redist.fromfunction(value, good, np.float32 if last else np.float64))
        assert "every rank must give the same layout, dtype and storage" in msg and "of dtype float32" in msg, msg
    # each rank its own ld= (ScaLAPACK's LLD) is the same layout
    la = redist.zeros(f"8x8 tile=2x2 block_cyclic grid={P}x1 storage=local_array ld={8 + 2 * R}")
    assert la.local_array.shape[1] == 8
    # a rank with local rows but no local columns (the last of 1xP holds none of
    # 2(P - 1) columns in tiles of 2): its local_array is 7 x 0, as local_extent
    # says, and fill / fromfunction work (they raised a broadcast error there)
    n = max(1, 2 * (P - 1))
    f = redist.fromfunction(lambda i, j: i + 10.0 * j, f"7x{n} tile=2x2 storage=local_array block_cyclic grid=1x{P}")
    assert f.local_array.shape == tuple(f.local_index.local_extent), (f.local_array.shape, f.local_index.local_extent)
    whole = f.gather()
    if R == 0:
        assert np.array_equal(whole, np.fromfunction(lambda i, j: i + 10.0 * j, (7, n)))
    f3 = redist.zeros(f"7x6x{n} tile=2x5x2 storage=local_array block_cyclic grid=1x1x{P}")
    assert f3.local_array.shape == tuple(f3.local_index.local_extent)
    if P > 1:  # named without ld= (and without the space it took)
        msg = agreed_error(lambda: redist.zeros(f"8x8 tile={4 if last else 2}x2 block_cyclic grid={P}x1 "
                                                f"storage=local_array ld={8 + 2 * R}"))
        assert "'8x8 tile=2x2 storage=local_array block_cyclic grid=" in msg and "  " not in msg, msg
    g = np.zeros((8, 8)) if R == 0 else None
    assert "column" in agreed_error(lambda: redist.scatter(g, "8x8 tile=2x" if last else good))
    # a root outside the communicator on one rank only: every rank's error, and no
    # message left behind (rank 0's dtype broadcast once reached a later bcast)
    assert "root=" in agreed_error(lambda: redist.scatter(g, good, root=P if last else 0))
    assert MPI.COMM_WORLD.bcast(("after", 0) if R == 0 else None, root=0) == ("after", 0)
    a, o = redist.zeros(good), redist.zeros(good)
    if last:
        with pytest.raises(TypeError, match="out must be a redist.DistArray, got str"):
            redist.redistribute(a, out="nope")
    else:
        with pytest.raises(redist.Error, match="out must be a redist.DistArray, got str"):
            redist.redistribute(a, out=o)
    assert "root=" in agreed_error(lambda: a.gather(root=P if last else 0))
    assert redist.fromfunction(value, good).gather() is not None or R != 0  # still works


def test_execute_refuses_a_distarray_of_another_layout():
    """A DistArray made for another layout than the plan's, of as many elements
    per rank (the arrays swapped, or other tiles), was read or written as the
    plan's: a wrong result and no error. Now an agreed error, nothing written."""
    src, dst = f"20x10 tile=5x5 block_cyclic grid=1x{P}", f"20x10 tile=5x5 block_cyclic grid={P}x1"
    a, b = redist.fromfunction(value, src), redist.zeros(dst)
    c = redist.zeros(f"20x10 tile=2x2 block_cyclic grid={P}x1")
    with redist.make_plan(src, dst) as plan:
        if P > 1:  # one rank: both layouts are the same
            msg = agreed_error(lambda: plan.execute(b, a))
            assert "source: the DistArray's layout" in msg and "is not the plan's source layout" in msg, msg
            check_tiles(a, value)  # the source, given as the target, untouched
        msg = agreed_error(lambda: plan.execute(a, c))
        assert "target: the DistArray's layout '20x10 tile=2x2" in msg, msg
        assert all(not t.any() for t in c.tiles)
        plan.execute(a, b)
        check_tiles(b, value)
    # ld= as each side resolves it: a plan's ld=0 (each rank's own rows) takes an
    # array made with its rows written out, and refuses one with more
    la = f"20x10 tile=5x5 block_cyclic grid={P}x1 storage=local_array"
    rows = redist.LocalIndex(redist.Layout(la), R).local_extent[0]
    written, wider = redist.zeros(f"{la} ld={max(1, rows)}"), redist.zeros(f"{la} ld={max(1, rows) + 3}")
    with redist.make_plan(src, la) as plan:
        plan.execute(a, written)
        assert np.array_equal(written.gather(), redist.fromfunction(value, la).gather()) or R != 0
        if rows > 0:
            assert "is not the plan's target layout" in agreed_error(lambda: plan.execute(a, wider))
    # a plan made with the default element size takes float32 arrays only through the element checks
    f = redist.zeros(dst, np.float32)
    with redist.make_plan(src, dst) as plan:
        assert "esize=8" in agreed_error(lambda: plan.execute(a, f))


def test_bad_integers_are_clear():
    """An extent beyond 64 bits, an owner function returning a str or a number
    beyond 64 bits, a negative rank: clear errors (they were std::bad_cast, or 0
    elements for rank -1)."""
    with pytest.raises(redist.Error, match="shape 18446744073709551616 does not fit in 64 bits"):
        redist.Layout((2 ** 64, 2), (2, 2))
    with pytest.raises(redist.Error, match="rank must be >= 0, got -1"):
        redist.LocalIndex(redist.Layout("8x8 tile=2x2"), -1)
    redist.register_owner_function("returns_str", lambda t: "0")
    redist.register_owner_function("returns_huge", lambda t: 2 ** 70)
    msg = agreed_error(lambda: redist.make_plan(f"8x8 tile=4x4 function name=returns_str ranks={P}", "8x8"))
    assert "owner function 'returns_str' threw for tile 0x0: its result must be an int, got str" in msg, msg
    msg = agreed_error(lambda: redist.make_plan(f"8x8 tile=4x4 function name=returns_huge ranks={P}", "8x8"))
    assert "its result 1180591620717411303424 does not fit in 64 bits" in msg, msg
    # numpy's integers stand for ints (as they did before 64-bit checks were added)
    assert redist.Layout(np.array([8, 8]), (np.int64(2), 2)).spec == "8x8 tile=2x2 block_cyclic grid=1x1"
    assert redist.Layout((np.int32(9),), [[0, np.int64(3), 9]]).spec == "9 tile=[0,3,9] block_cyclic grid=1"
    assert str(redist.Region.whole(np.array([8, 8]))) == "8x8 from=0x0 to=0x0"
    redist.register_owner_function("returns_np", lambda t: np.int64((t[0] + t[1]) % P))
    a = redist.fromfunction(value, f"8x8 tile=4x4 function name=returns_np ranks={P}")
    check_tiles(redist.redistribute(a, "8x8 tile=2x2"), value)
    with pytest.raises(TypeError, match="shape must be an int, got float"):
        redist.Layout((8.0, 8), (2, 2))
    # a str tile was iterated character by character ('tile has 3 items'), a float
    # tile size raised "'float' object is not iterable"
    with pytest.raises(TypeError, match=r"tile must be an int, a sequence of them .* got str \(a spec string goes "
                                        r"whole to Layout: Layout\('8x8 tile=...'\)\)"):
        redist.Layout((8, 8), "4x4")
    with pytest.raises(TypeError, match="each item of tile must be an int, .* got float"):
        redist.Layout((8, 8), (4.5, 4))
    with pytest.raises(TypeError, match="tile must be an int, .* got float"):
        redist.Layout((8,), 4.0)
    with pytest.raises(redist.Error, match="offset has 1 items, one per dimension of the shape 8x8 needs 2"):
        redist.Layout((8, 8), (4, 4), offset=(1,))


def test_type_errors_are_local_and_clear():
    with pytest.raises(TypeError, match="mpi4py"):
        redist.make_plan("8x8", "8x8", comm=42)
    with pytest.raises(TypeError):
        redist.redistribute(np.zeros(3), "8x8")


def one_rank_raises(fn_bad, fn_good, exc, match):
    """fn_bad on the last rank raises `exc` there; fn_good elsewhere raises
    redist.Error naming the same (no rank waits)."""
    if R == P - 1:
        with pytest.raises(exc, match=match):
            fn_bad()
    else:
        with pytest.raises(redist.Error, match=match):
            fn_good()


def test_what_a_new_user_trial_found():
    """Hangs and silent wrong results a new user's trial found (2026-11-30), each
    now the same error on every rank, nothing written, or a right result."""
    last = R == P - 1
    G = np.asfortranarray(np.arange(24.0).reshape(6, 4))
    one = "6x4"                                          # one tile, on rank 0
    dst = f"6x4 tile=3x4 block_cyclic grid={min(P, 2)}x1"
    # None where a rank stores nothing moves; None where it stores elements is an
    # agreed error (nanobind refused None on that rank alone: the others waited)
    with redist.make_plan(one, dst) as plan:
        mine = redist.LocalIndex(redist.Layout(dst), R).block_elements(0)
        out = np.zeros(mine)
        plan.execute(G.reshape(-1, order="F") if R == 0 else None, out)
        tiles = [G[3 * t: 3 * t + 3].reshape(-1, order="F") for t in (0, 1) if t % min(P, 2) == R]
        assert np.array_equal(out, np.concatenate(tiles or [np.zeros(0)]))
        if P > 1:  # rank 1 stores rows 3-5
            msg = agreed_error(lambda: plan.execute(G.reshape(-1, order="F") if R == 0 else None,
                                                    None if R == 1 else np.zeros(mine)))
            assert "target: None, but this rank stores 12 elements" in msg, msg
        # a strategy of the wrong type on one rank
        src = G.reshape(-1, order="F") if R == 0 else None
        one_rank_raises(lambda: plan.execute(src, np.zeros(mine), strategy=1),
                        lambda: plan.execute(src, np.zeros(mine)), TypeError, "strategy must be a str or None")
        # a shaped array for tile storage is one tile, shaped as it: a padded or
        # transposed array was read in memory order (a scrambled result)
        if R == 0:
            for bad in (np.asfortranarray(np.zeros((7, 4))), np.ascontiguousarray(G).T):
                with pytest.raises(redist.Error, match="a multi-dimensional array for this rank's tile is 6x4"):
                    plan.execute(bad, np.zeros(mine))
        else:
            for _ in range(2):
                with pytest.raises(redist.Error, match="multi-dimensional array for this rank's tile"):
                    plan.execute(None, np.zeros(mine))
    with redist.make_plan(dst, one) as back:
        a = redist.fromfunction(value, dst)
        msg = agreed_error(lambda: back.execute(a, np.asfortranarray(np.zeros((4, 6))) if R == 0 else None))
        assert "is 6x4, got 4x6" in msg, msg
        whole = np.asfortranarray(np.zeros((6, 4))) if R == 0 else None
        back.execute(a, whole)
        assert R != 0 or np.array_equal(whole, np.fromfunction(value, (6, 4)))
    # make_plan: a conversion that raises something else than TypeError on one rank
    one_rank_raises(lambda: redist.make_plan(one, dst, max_message_bytes=np.array([4, 5])),
                    lambda: redist.make_plan(one, dst), TypeError, "only integer scalar arrays")
    # scatter's root: of a wrong type, or another valid rank, on one rank only
    g = G if R == 0 else None
    one_rank_raises(lambda: redist.scatter(g, dst, root="0"), lambda: redist.scatter(g, dst), TypeError,
                    "'str' object cannot be interpreted as an integer")
    if P > 1:
        msg = agreed_error(lambda: redist.scatter(G if R in (0, 1) else None, dst, root=1 if last else 0))
        assert f"every rank must give the same root: rank {P - 1} gave 1, rank 0 0" in msg, msg
        assert MPI.COMM_WORLD.bcast(("after", 1) if R == 0 else None, root=0) == ("after", 1)  # nothing left behind
    # tile_pointers: every tile's dtype, and no two target tiles in one array
    tp = f"8x8 tile=2x2 storage=tile_pointers block_cyclic grid=1x{P}"
    n = redist.LocalIndex(redist.Layout(tp), R).nblocks
    with redist.make_plan(f"8x8 tile=4x4 block_cyclic grid={P}x1", tp) as plan:
        s = redist.fromfunction(value, f"8x8 tile=4x4 block_cyclic grid={P}x1")
        mixed = [np.zeros(4) if b % 2 == 0 else np.zeros(4, dtype=np.int64) for b in range(n)]
        assert "are not of local tile 0's type" in agreed_error(lambda: plan.execute(s, mixed if n > 1 else
                                                                                      [np.zeros(4, np.int64)] * n))
        shared = np.zeros(4)
        msg = agreed_error(lambda: plan.execute(s, [shared] * n if n > 1 else [np.zeros(4, np.int32)] * n))
        assert "share memory" in msg or "elements are 4 bytes" in msg, msg
    # a DistArray made on a sub-communicator, a plan on COMM_WORLD
    if P > 1:
        sub = MPI.COMM_WORLD.Split(R % 2, R)
        a = redist.fromfunction(value, "8x8 tile=2x2", comm=sub)
        b = redist.zeros("8x8 tile=4x4", comm=sub)
        with redist.make_plan(a.layout, b.layout) as plan:
            assert "made on another communicator than the plan's" in agreed_error(lambda: plan.execute(a, b))
        with redist.make_plan(a.layout, b.layout, comm=sub) as plan:
            plan.execute(a, b)
        whole = b.gather()
        assert sub.Get_rank() != 0 or np.array_equal(whole, np.fromfunction(value, (8, 8)))
        sub.Free()
        # records of one size but other fields on one rank
        rec = np.dtype([("x", "<f8")]) if last else np.dtype([("a", "<i4"), ("b", "<f4")])
        assert "every rank must give the same layout, dtype and storage" in agreed_error(lambda: redist.zeros("4x4", rec))
    # a subarray dtype (numpy gives arrays one dimension more) and datetime64: agreed errors
    assert "subarray dtype" in agreed_error(lambda: redist.zeros(f"4x4 tile=2x2 block_cyclic grid=1x{P}",
                                                                 np.dtype(("f8", (2,)))))
    assert "datetime64" in agreed_error(lambda: redist.zeros("4x4", "M8[s]"))
    # numpy's two names of int64 ('l' and 'q') are one element type
    with redist.make_plan("4x4", f"4x4 tile=2x2 block_cyclic grid=1x{P}") as plan:
        t = np.zeros(redist.LocalIndex(redist.Layout(f"4x4 tile=2x2 block_cyclic grid=1x{P}"), R).block_elements(0),
                     dtype=np.int64)
        plan.execute(np.arange(16, dtype=np.longlong) if R == 0 else np.zeros(0, np.longlong), t)
    # equal regions compare and hash equal; fromfunction's fn raising on one rank is every rank's error
    assert redist.Region("4x4") == redist.Region("4x4") and redist.Region("4x4") != redist.Region("4x4 from=1x0")
    assert redist.Region("4x4 axes=0,1") == redist.Region("4x4") and len({redist.Region("4x4"), redist.Region("4x4")}) == 1
    assert redist.Region("4x4 transpose") != redist.Region("4x4")

    def boom(i, j):
        if last:
            raise ValueError("fn failed here")
        return i + j
    assert "fn failed here" in agreed_error(lambda: redist.fromfunction(boom, f"4x4 tile=1x1 block_cyclic grid=1x{P}"))
