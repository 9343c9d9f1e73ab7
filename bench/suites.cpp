#include "suites.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

namespace redist::bench {
namespace {

const std::vector<long> kTiles = {10, 25, 50, 100, 200, 400};  // Figs. 9-12

std::string s(long v) { return std::to_string(v); }
long scaled(double n, double scale) { return std::max(16L, std::lround(n * scale)); }
std::string square(long n) { return s(n) + "x" + s(n); }

// Source grid 1xP, target grid Px1, ScaLAPACK storage so pdgemr2d applies.
std::string bc2(long n, long mb, long nb, const std::string& grid) {
  return square(n) + " tile=" + s(mb) + "x" + s(nb) + " block_cyclic grid=" + grid + " storage=local_array";
}

std::vector<Case> categories(int p, double scale) {
  std::vector<Case> out;
  for (long mbs : kTiles) {
    // Smaller arrays for small tiles keep the per-segment strategies fast enough.
    const long n = scaled(mbs <= 50 ? 2000 : mbs <= 200 ? 3000 : 4000, scale);
    for (int cid = 0; cid < 9; ++cid) {
      const long mbt = mbs * (cid / 3 + 1), nbt = mbs * (cid % 3 + 1);
      out.push_back({"categories", "category " + s(cid), "MBs=" + s(mbs) + " cat=" + s(cid), double(mbs),
                     "source tile MBs", bc2(n, mbs, mbs, "1x" + s(p)), bc2(n, mbt, nbt, s(p) + "x1"), "", false});
    }
  }
  return out;
}

std::vector<Case> volume(int p, double scale) {
  std::vector<Case> out;
  const long n = scaled(4000, scale);
  // Tiles scale with the array here: the figure is about their ratio to it.
  const long mbt = std::max(1L, std::lround(400 * scale));
  for (long mbs = 400; mbs <= 2000; mbs += 400) {
    const long t = std::max(1L, std::lround(mbs * scale));
    out.push_back({"volume", "MBt=400", "MBs=" + s(mbs), double(mbs), "source tile MBs (at scale 1)",
                   bc2(n, t, t, "1x" + s(p)), bc2(n, mbt, mbt, s(p) + "x1"), "", false});
  }
  return out;
}

// 1 x P, one column strip per rank <-> 2-D block-cyclic on a near-square grid.
std::vector<Case> scatter_gather(int p, double scale, bool gather) {
  std::vector<Case> out;
  const long n = scaled(2000, scale);
  int pr = static_cast<int>(std::sqrt(double(p)));
  while (p % pr) --pr;
  const std::string grid2 = s(p / pr) + "x" + s(pr);
  const std::string strip = bc2(n, n, (n + p - 1) / p, "1x" + s(p));
  const std::string suite = gather ? "gather" : "scatter";
  for (long t : kTiles) {
    const std::string cyc = bc2(n, t, t, grid2);
    out.push_back({suite, suite, "tile=" + s(t), double(t), "block-cyclic tile", gather ? cyc : strip,
                   gather ? strip : cyc, "", false});
  }
  return out;
}

std::vector<Case> random_suite(int p, double scale) {
  std::vector<Case> out;
  const long n = scaled(2000, scale);
  for (long t : kTiles) {
    const std::string tile = square(n) + " tile=" + s(t) + "x" + s(t);
    out.push_back({"random", "random", "random tile=" + s(t), double(t), "tile", tile + " random seed=1 ranks=" + s(p),
                   tile + " random seed=2 ranks=" + s(p), "", false});
    out.push_back({"random", "block_cyclic", "block_cyclic tile=" + s(t), double(t), "tile",
                   bc2(n, t, t, "1x" + s(p)), bc2(n, t, t, s(p) + "x1"), "", false});
  }
  return out;
}

// Paper 001 Fig. 13 and Table 2: 1-D block-cyclic r -> K*r, K = 2..20, the
// synchronized simple / random / optimal schedules (bench/paper001.hpp) beside
// the strategies (phased: optimal, phased_unsync, phased_sendrecv, ...) and
// MPI_Alltoall moving the same volume.
std::vector<Case> blocksize(int p, double scale) {
  std::vector<Case> out;
  const long n = scaled(4000000, scale), r = 256;
  for (long k = 2; k <= 20; ++k) {
    Case c{"blocksize", "r -> K*r", "K=" + s(k), double(k), "K", s(n) + " tile=" + s(r) + " block_cyclic grid=" + s(p),
           s(n) + " tile=" + s(k * r) + " block_cyclic grid=" + s(p), "", true};
    c.paper_k = static_cast<int>(k);
    out.push_back(c);
  }
  return out;
}

// Issue 10: time against the memory budget. 8000^2 doubles, every element moving
// (one column block per rank, shifted by one rank: 256 MB a rank on 2 ranks),
// and compare's 200 -> 300 case (1xP -> Px1); budgets from 1/2 to 1/64 of the
// busiest rank's moved volume for the strategies that honour them, beside the
// unbudgeted ones.
std::vector<Case> memory(int p, double scale) {
  std::vector<Case> out;
  const long n = scaled(8000, scale), w = (n + p - 1) / p;
  const std::vector<double> budgets = {1.0 / 2, 1.0 / 8, 1.0 / 64};
  const std::vector<std::string> base = {"p2p", "alltoallv", "alltoallw", "phased", "phased_sendrecv", "phased_dt"};
  // phased_dt packs nothing (0 bytes under any budget): the budget's fastest here.
  const std::vector<std::string> budgeted = {"phased", "phased_sendrecv", "phased_dt"};
  Case shift{"memory", "all moves", s(n) + "^2 shift", 0, "case",
             bc2(n, n, w, "1x" + s(p)), square(n) + " tile=" + s(n) + "x" + s(w) +
                 " block_cyclic grid=1x" + s(p) + " src=0x" + s(p > 1 ? 1 : 0) + " storage=local_array",
             "", false, base};
  Case cmp{"memory", "compare", s(n) + "^2 200->300", 1, "case", bc2(n, 200, 200, "1x" + s(p)),
           bc2(n, 300, 300, s(p) + "x1"), "", false, base};
  for (Case* c : {&shift, &cmp}) {
    c->budgets = budgets;
    c->budget_strategies = budgeted;
    out.push_back(*c);
  }
  return out;
}

// Transposes (Region::axes; issue 17): ScaLAPACK's pdtran beside the strategies
// (PBLAS's rule: A and C on one grid), square and ragged tiles, 1xP and a 2-D grid.
std::vector<Case> tran(int p, double scale) {
  std::vector<Case> out;
  const long n = scaled(8000, scale);
  int pr = static_cast<int>(std::sqrt(double(p)));
  while (p % pr) --pr;
  const std::string grid2 = s(p / pr) + "x" + s(pr);
  std::vector<std::string> grids{"1x" + s(p)};
  if (grid2 != grids[0]) grids.push_back(grid2);  // one grid where they are the same (1 rank: both once dropped)
  for (long t : {32L, 100L, 400L})
    for (const std::string& grid : grids) {
      out.push_back({"tran", "grid " + grid, "transpose tile=" + s(t) + " grid=" + grid, double(t), "tile",
                     bc2(n, t, t, grid), bc2(n, t, t, grid), square(n) + " transpose", false,
                     {"p2p", "alltoallv", "segment", "direct", "shm", "auto"}});
    }
  return out;
}

// Issue 14's cases (docs/shm.md), ScaLAPACK storage on both sides, each with the
// arrays in shared windows and on the heap: the node-aware `shm` beside the
// message strategies (p2p, p2p_pipelined), `direct`, auto and pdgemr2d, and the
// single-copy limit.
std::vector<Case> shm(int p, double scale) {
  std::vector<Case> out;
  const long n = scaled(8000, scale), nd = scaled(2000, scale), ne = scaled(5000, scale);
  const std::string rows = "1x" + s(p), cols = s(p) + "x1";
  struct Shape {
    std::string name, src, dst, region;
  };
  const std::vector<Shape> shapes = {
      {"a 200->200 1xP->Px1", bc2(n, 200, 200, rows), bc2(n, 200, 200, cols), ""},
      {"b 400->200 1xP->1xP", bc2(n, 400, 400, rows), bc2(n, 200, 200, rows), ""},
      {"c 100->300 1xP->Px1", bc2(n, 100, 100, rows), bc2(n, 300, 300, cols), ""},
      {"d " + s(nd) + "^2 10->10", bc2(nd, 10, 10, rows), bc2(nd, 10, 10, cols), ""},
      {"e submatrix 128->300", bc2(n, 128, 128, rows), bc2(n, 300, 300, cols),
       square(ne) + " from=" + s(std::lround(123 * scale)) + "x" + s(std::lround(457 * scale)) + " to=" +
           s(std::lround(1001 * scale)) + "x" + s(std::lround(17 * scale))}};
  for (bool shared : {true, false})
    for (const Shape& sh : shapes) {
      Case c{"shm", shared ? "shared window" : "heap", sh.name + (shared ? " (shared)" : " (heap)"),
             double(out.size() % shapes.size()), "case a-e", sh.src, sh.dst, sh.region, false,
             {"shm", "direct", "alltoallw", "p2p", "p2p_pipelined", "auto"}};
      c.shared_storage = shared;
      c.single_copy = true;
      out.push_back(c);
    }
  return out;
}

// Copy threads per rank (Options::copy_threads, docs/strategies.md "Copy
// threads"): moves where one rank copies while the others wait (rank 0's 4000^2
// array to rank 1, the tiles 100 -> 70x90: one run of 128 MB in shared windows,
// into tile storage on the heap; rank 0 re-tiling its own 6000^2 array), and
// issue 14's case a, where every rank copies. Each with the single-copy limit
// beside it.
std::vector<Case> copy_threads(int p, double scale) {
  std::vector<Case> out;
  const long n = scaled(4000, scale), nl = scaled(6000, scale), na = scaled(8000, scale);
  const std::string one = square(n) + " tile=100x100 block_cyclic grid=1x1 storage=local_array";
  const std::string other = square(n) + " tile=70x90 block_cyclic grid=1x1 first=" + s(p > 1 ? 1 : 0) +
                            " storage=local_array";
  auto add = [&](const std::string& name, const std::string& src, const std::string& dst, bool shared,
                 std::vector<std::string> strategies, std::vector<std::string> threaded) {
    Case c{"threads", shared ? "shared window" : "heap", name + (shared ? " (shared)" : " (heap)"),
           double(out.size()), "case", src, dst, "", false, std::move(strategies)};
    c.shared_storage = shared;
    c.single_copy = true;
    c.thread_strategies = std::move(threaded);
    out.push_back(c);
  };
  // Into tile storage on the heap the message is no longer one run: p2p packs
  // and unpacks it, each side on its copy threads while the other waits.
  const std::string tiles = square(n) + " tile=70x90 block_cyclic grid=1x1 first=" + s(p > 1 ? 1 : 0);
  const std::string move = p > 1 ? "rank 0 -> 1, 100 -> 70x90" : "rank 0 re-tiles 100 -> 70x90";
  add(move, one, other, true, {"shm", "p2p", "alltoallw"}, {"shm", "p2p"});
  add(move + " tiles", one, tiles, false, {"shm", "p2p", "alltoallw"}, {"p2p"});
  add("rank 0 re-tiles 200 -> 300", bc2(nl, 200, 200, "1x1"), bc2(nl, 300, 300, "1x1"), false, {"p2p", "shm"},
      {"p2p", "shm"});
  add("a 200->200 1xP->Px1", bc2(na, 200, 200, "1x" + s(p)), bc2(na, 200, 200, s(p) + "x1"), true, {"shm", "p2p"},
      {"shm", "p2p"});
  return out;
}

// The ScaLAPACK drop-in (libredist_scalapack, docs/scalapack.md): compare's cases
// (docs/strategies.md, "Speed") and the 1-D one called through pdgemr2d_,
// plus many calls on a 100x100 matrix. bench_main times each call the drop-in
// way (plans cached), as a first call (plans freed before each), and natively.
std::vector<Case> dropin(int p, double scale) {
  const std::string row = "1x" + s(p), col = s(p) + "x1";
  const long n1 = scaled(8000, scale), n2 = scaled(2000, scale), n3 = scaled(4000000, scale);
  const std::string la = " storage=local_array";
  std::vector<Case> out = {
      {"dropin", "compare", "8000^2 200->300", 200, "tile", bc2(n1, 200, 200, row), bc2(n1, 300, 300, col), "",
       false, {"p2p"}},
      {"dropin", "compare", "2000^2 10->10", 10, "tile", bc2(n2, 10, 10, row), bc2(n2, 10, 10, col), "", false,
       {"p2p"}},
      {"dropin", "compare", "4000000x1 1->1000", 1, "tile", s(n3) + "x1 tile=1x1 block_cyclic grid=" + col + la,
       s(n3) + "x1 tile=1000x1 block_cyclic grid=" + col + la, "", false, {"p2p"}},
      {"dropin", "small", "100^2 32->25, 100 calls", 32, "tile", bc2(100, 32, 32, row), bc2(100, 25, 25, col), "",
       false, {"p2p"}}};
  for (Case& c : out) c.dropin_calls = c.series == "small" ? 100 : 1;
  return out;
}

// Regions at displacements that the tile sizes do not divide.
std::vector<Case> submatrix(int p, double scale) {
  std::vector<Case> out;
  const long n = scaled(4000, scale);
  const long size = n - std::lround(n * 0.16);
  const std::string region = square(size) + " from=" + s(std::lround(n * 0.083)) + "x" + s(std::lround(n * 0.129)) +
                             " to=" + s(std::lround(n * 0.153)) + "x" + s(std::lround(n * 0.024));
  for (auto [ts, td] : {std::pair{97L, 131L}, {250L, 173L}, {401L, 333L}, {1000L, 300L}})
    out.push_back({"submatrix", "submatrix", "tiles " + s(ts) + "->" + s(td), double(ts), "source tile",
                   bc2(n, ts, ts, "1x" + s(p)), bc2(n, td, td, s(p) + "x1"), region, false});
  return out;
}

// Fine-grained cyclic layouts (compressed plans): tiles of 1, 2, 4, 8 and 32
// elements on one side or both, 1-D (a column vector, grid Px1) and 2-D; the
// results give plan time and plan memory beside the execute times.
std::vector<Case> fine(int p, double scale) {
  std::vector<Case> out;
  const long n1 = scaled(2000000, scale), n2 = scaled(1000, scale);
  auto col = [&](long t) {
    return s(n1) + "x1 tile=" + s(t) + "x1 block_cyclic grid=" + s(p) + "x1 storage=local_array";
  };
  for (long t : {1L, 2L, 4L, 8L, 32L}) {
    out.push_back({"fine", "1-D cyclic(t) -> blocks of 1000", "1-D " + s(t) + "->1000", double(t), "fine tile t",
                   col(t), col(1000), "", false});
    out.push_back({"fine", "1-D cyclic(t) -> cyclic(3t)", "1-D " + s(t) + "->" + s(3 * t), double(t), "fine tile t",
                   col(t), col(3 * t), "", false});
    out.push_back({"fine", "2-D t x t -> 64x64", "2-D " + s(t) + "->64", double(t), "fine tile t",
                   bc2(n2, t, t, "1x" + s(p)), bc2(n2, 64, 64, s(p) + "x1"), "", false});
    out.push_back({"fine", "2-D t x t -> (t+1)x(t+1)", "2-D " + s(t) + "->" + s(t + 1), double(t), "fine tile t",
                   bc2(n2, t, t, "1x" + s(p)), bc2(n2, t + 1, t + 1, s(p) + "x1"), "", false});
  }
  return out;
}

// Paper 003: a 3-D volume of doubles in one block per rank (a near-cubic rank
// grid) onto a patch grid, greedy and balanced placement, per patch (`segment`:
// a message per patch piece) and per rank (`p2p`: a message per peer).
std::vector<Case> repartition(int p, double scale) {
  std::vector<long> f;  // P's prime factors, largest first, onto the smallest extent
  long m = p;
  for (long q = 2; q * q <= m; ++q)
    while (m % q == 0) f.push_back(q), m /= q;
  if (m > 1) f.push_back(m);
  std::sort(f.rbegin(), f.rend());
  long g[3] = {1, 1, 1};
  for (long x : f) *std::min_element(g, g + 3) *= x;
  std::sort(g, g + 3, std::greater<long>());
  std::vector<Case> out;
  // Block edges (n / grid) that the patch edges do not divide, as in the paper
  // (375 vs 32): 280 and 528 on 2-4 ranks.
  for (long base : {280L, 528L}) {
    const long n = scaled(double(base), scale);
    const std::string cube = s(n) + "x" + s(n) + "x" + s(n);
    std::string tile, grid;
    for (int d = 0; d < 3; ++d) {
      tile += (d ? "x" : "") + s((n + g[d] - 1) / g[d]);
      grid += (d ? "x" : "") + s(g[d]);
    }
    const std::string src = cube + " tile=" + tile + " block_cyclic grid=" + grid;
    for (long patch : {16L, 32L, 64L})
      for (const char* rule : {"greedy", "balanced"}) {
        const std::string pt = s(patch) + "x" + s(patch) + "x" + s(patch);
        out.push_back({"repartition", std::string(rule) + " " + s(n) + "^3", s(n) + "^3 " + rule + " patch " + s(patch),
                       double(patch), "patch edge", src, cube + " tile=" + pt + " " + rule + " of=(" + src + ")", "",
                       false, {"segment", "p2p"}});
      }
  }
  return out;
}

// ------------------------------------------------ taskgraph suites (paper 000 sec. 8.2)
// The optimization suites' base: no batch (as measured in docs/taskgraph.md) and
// paper 000's graph (grain 1, one Send per segment), so that each suite switches
// one thing.
TaskgraphOptions tg(int threads) {
  TaskgraphOptions o;
  o.threads = threads;
  o.batch = 0;
  o.grain = 1;
  o.datatypes = false;  // the paper's Send packs and its Receive unpacks
  return o;
}

std::string bct(long m, long n, long mb, long nb, const std::string& grid) {
  return s(m) + "x" + s(n) + " tile=" + s(mb) + "x" + s(nb) + " block_cyclic grid=" + grid;
}

// Fig. 6a: Ms = Mt = 2000, tiles 100x100, Ns growing; batch (control
// dependencies bounding the Send tasks exposed) against none.
std::vector<Case> ctl_batch(int p, double scale, int threads) {
  std::vector<Case> out;
  const long m = scaled(2000, scale), t = std::max(4L, std::lround(100 * scale));
  for (long ns : {2000L, 4000L, 8000L, 16000L}) {
    const long n = scaled(ns, scale);
    Case c{"ctl_batch", "taskgraph", "Ns=" + s(ns), double(ns), "Ns (at scale 1)", bct(m, n, t, t, "1x" + s(p)),
           bct(m, n, t, t, s(p) + "x1"), "", false};
    c.base = tg(threads);
    c.base.batch = 0;  // the base exposes every Send at once
    TaskgraphOptions b = c.base;
    b.batch = TaskgraphOptions::kBatchAuto;
    c.variants = {{"taskgraph batch=auto", b}};
    out.push_back(c);
  }
  return out;
}

// Fig. 6b: 10000^2 (scaled: 3000^2 at scale 1 here), MBs = 100, MBt growing:
// more segments per target tile; isolate_segments against a chain.
std::vector<Case> ctl_isolate(int p, double scale, int threads) {
  std::vector<Case> out;
  const long n = scaled(3000, scale), mbs = std::max(4L, std::lround(100 * scale));
  for (long mbt : {100L, 200L, 400L, 800L}) {
    const long t = std::max(4L, std::lround(mbt * scale));
    Case c{"ctl_isolate", "taskgraph", "MBt=" + s(mbt), double(mbt), "target tile MBt (at scale 1)",
           bct(n, n, mbs, mbs, "1x" + s(p)), bct(n, n, t, t, s(p) + "x1"), "", false};
    c.base = tg(threads);
    TaskgraphOptions b = c.base;
    b.isolate_segments = false;
    c.variants = {{"taskgraph chained", b}};
    out.push_back(c);
  }
  return out;
}

// Fig. 7: target tiles 100x100, source tiles larger: without dynamic volume each
// segment carries its whole source tile, (MBs/MBt)(NBs/NBt) times the bytes.
// Two series: grid 1xP -> Px1, where half the segments (2 ranks) are local and
// copied alike in both runs, and `all remote`, where target tile column j is on
// rank (j / k + 1) mod P (super=1xk src=0x1) and source column J on J mod P, so
// that every segment travels: the paper's theory (sec. 8.2.2: NUM * MBs * NBs /
// SIZE over the remote segments) is the speedup of the network part, which that
// series times alone.
std::vector<Case> dynamic_volume(int p, double scale, int threads) {
  std::vector<Case> out;
  const long n = scaled(2000, scale), mbt = std::max(4L, std::lround(100 * scale));
  for (bool all_remote : {false, true})
    for (long k : {1L, 2L, 4L}) {
      const long mbs = mbt * k;
      const std::string dst = all_remote ? bct(n, n, mbt, mbt, "1x" + s(p)) + " super=1x" + s(k) + " src=0x1"
                                         : bct(n, n, mbt, mbt, s(p) + "x1");
      Case c{"dynamic_volume", all_remote ? "taskgraph all remote" : "taskgraph",
             std::string(all_remote ? "all remote " : "") + "MBs/MBt=" + s(k), double(k * k), "MBs/MBt * NBs/NBt",
             bct(n, n, mbs, mbs, "1x" + s(p)), dst, "", false};
      c.base = tg(threads);
      c.base.dynamic_volume = false;  // the base here is the whole-tile transfer
      TaskgraphOptions b = c.base;
      b.dynamic_volume = true;
      c.variants = {{"taskgraph dynamic_volume", b}};
      c.theory = double(k * k);
      out.push_back(c);
    }
  return out;
}

// Fig. 8: 10x10 tiles: tens of thousands of small segments; multiple_send and
// eager payloads against the funneled, rendezvous-only runtime; and both with
// tasks grouped (grain auto: one Send per group of tiles and pair of ranks), and
// the defaults (grouped, no communication thread).
std::vector<Case> multiple_send(int p, double scale, int threads) {
  std::vector<Case> out;
  for (long n0 : {1000L, 2000L}) {
    const long n = scaled(n0, scale);
    Case c{"multiple_send", "taskgraph", s(n0) + "^2 tiles 10", double(n0), "N (at scale 1)",
           bct(n, n, 10, 10, "1x" + s(p)), bct(n, n, 10, 10, s(p) + "x1"), "", false};
    c.base = tg(threads);
    c.base.multiple_send = false;
    c.base.eager_limit = 0;
    TaskgraphOptions ms = c.base, eager = c.base, both = c.base;
    ms.multiple_send = true, ms.comm_thread = true;  // the paper's: workers post, a thread progresses
    eager.eager_limit = 16384;
    both.multiple_send = true, both.eager_limit = 16384, both.comm_thread = true;
    TaskgraphOptions grouped = both, workers = both;
    grouped.grain = TaskgraphOptions::kGrainAuto;
    workers.grain = TaskgraphOptions::kGrainAuto, workers.comm_thread = false;  // the defaults:
    workers.datatypes = true;                                                  // typed flows too
    c.variants = {{"taskgraph multiple_send", ms},
                  {"taskgraph eager", eager},
                  {"taskgraph both", both},
                  {"taskgraph both grain=auto", grouped},
                  {"taskgraph defaults", workers}};
    out.push_back(c);
  }
  return out;
}

}  // namespace

// Paper 002 Figs. 4-5 scaled to this machine: (BLOCK,*) on a sender group of
// S = P/2 ranks -> (*,BLOCK) on the R = P - S others, time per transfer against
// the array size for every strategy (the paper's algorithms among them) and auto
// (one rank: both groups are that rank). Not part of `all`.
std::vector<Case> groups(int p, double scale) {
  std::vector<Case> out;
  const int S = std::max(1, p / 2), R = p == 1 ? 1 : p - S;
  for (long n0 : {256L, 512L, 1024L, 2048L}) {
    const long n = scaled(double(n0), scale);
    Case c{"groups", "S=" + s(S) + " R=" + s(R), "N=" + s(n), double(n), "array N x N doubles",
           bc2(n, (n + S - 1) / S, n, s(S) + "x1"), bc2(n, n, (n + R - 1) / R, "1x" + s(R)), "", false};
    c.senders = S;
    c.overlap = p == 1;
    out.push_back(c);
  }
  return out;
}

const std::vector<std::string>& taskgraph_suite_names() {
  static const std::vector<std::string> names = {"ctl_batch", "ctl_isolate", "dynamic_volume", "multiple_send"};
  return names;
}

const std::vector<std::string>& suite_names() {
  static const std::vector<std::string> names = {"categories", "volume", "scatter",  "gather",
                                                 "random",     "blocksize", "submatrix"};
  return names;
}

std::vector<Case> make_suite(const std::string& suite, int p, double scale, bool smoke, int threads) {
  std::vector<Case> out;
  if (suite == "all" || suite == "taskgraph") {
    for (const std::string& name : suite == "all" ? suite_names() : taskgraph_suite_names()) {
      auto part = make_suite(name, p, scale, smoke, threads);
      out.insert(out.end(), part.begin(), part.end());
    }
    return out;
  }
  if (suite == "categories") out = categories(p, scale);
  else if (suite == "volume") out = volume(p, scale);
  else if (suite == "scatter" || suite == "gather") out = scatter_gather(p, scale, suite == "gather");
  else if (suite == "random") out = random_suite(p, scale);
  else if (suite == "blocksize") out = blocksize(p, scale);
  else if (suite == "memory") out = memory(p, scale);
  else if (suite == "submatrix") out = submatrix(p, scale);
  else if (suite == "groups") out = groups(p, scale);
  else if (suite == "fine") out = fine(p, scale);
  else if (suite == "tran") out = tran(p, scale);
  else if (suite == "shm") out = shm(p, scale);
  else if (suite == "threads") out = copy_threads(p, scale);
  else if (suite == "dropin") out = dropin(p, scale);
  else if (suite == "repartition") out = repartition(p, scale);
  else if (suite == "ctl_batch") out = ctl_batch(p, scale, threads);
  else if (suite == "ctl_isolate") out = ctl_isolate(p, scale, threads);
  else if (suite == "dynamic_volume") out = dynamic_volume(p, scale, threads);
  else if (suite == "multiple_send") out = multiple_send(p, scale, threads);
  for (Case& c : out)
    if (c.variants.empty()) c.base.threads = threads;  // taskgraph beside the others
  if (smoke && out.size() > 2) out = {out.front(), out.back()};
  return out;
}

}  // namespace redist::bench
