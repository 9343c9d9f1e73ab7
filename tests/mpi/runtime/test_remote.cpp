// Remote collection reads and writes (paper 004, sec. III-A): tasks placed on ranks
// that own none of the tiles they read or write, on random and table ownerships
// with ragged edges, with payloads eager and by rendezvous. The results are
// gathered by the core's redistribution and compared bit for bit with values
// computed serially from the layouts' tile boxes; the transfers are counted
// against a serial count. Bad graphs fail with one message on every rank, before
// anything is written.
#include <cstring>
#include <set>

#include "test_util.hpp"

using rt::Tile;

class Remote : public ::testing::TestWithParam<Config> {};

namespace {

double x_value(std::int64_t i, std::int64_t j) { return static_cast<double>((i * 13 + j * 7) % 17) - 8.5; }
double z_value(std::int64_t i, std::int64_t j) { return static_cast<double>((i * 5 + j * 11) % 19) * 0.75; }

// Sets every local element of `a` to f(global row, global column).
template <class F>
void fill(const rt::LayoutCollection& a, F f) {
  for (redist::index_t o = 0; o < a.local().ntiles(); ++o) {
    const redist::Coord c = a.local().tile(o);
    const Tile t{c[0], c[1]};
    const redist::Box b = a.box(t);
    double* p = a.tile<double>(t);
    for (std::int64_t j = 0; j < b.size[1]; ++j)
      for (std::int64_t i = 0; i < b.size[0]; ++i) p[i + j * b.size[0]] = f(b.lo[0] + i, b.lo[1] + j);
  }
}

redist::Box box_of(const redist::Layout& l, std::int64_t m, std::int64_t n) { return l.tile_box(redist::Coord{m, n}); }

}  // namespace

// F(m, n), n < NT-1, on rank (3m + 5n + 1) mod P, reads X(m, n) and its neighbour
// X(m, n+1) (a tile read by two tasks, often on two ranks) and writes
// Y(m, n) = 2 X(m, n) + sum(X(m, n+1)) into a Y whose owners are unrelated to X's;
// Y's last tile column is not written. H(m, n) on rank (m + 2n) mod P reads Z(m, n)
// and adds 1: for m + n even it writes it back (a tile read and written remotely),
// for m + n odd it writes V(m, n) while L(m, n) on Z's owner triples Z(m, n) in
// place: H must see the tile as it was when the run started (the owner sends a copy).
TEST_P(Remote, ReadsAndWritesTilesOfOtherRanks) {
  const int ranks = world_size();
  const std::string r = std::to_string(ranks);
  const std::string owners = owner_list(6 * 5, [=](int t) { return (t * 7 / 3 + 1) % ranks; });
  struct Case {
    std::string x, y, z, v;
  };
  for (const Case& k : {Case{"37x29 tile=6x5 random seed=3 ranks=" + r, "37x29 tile=6x5 random seed=8 ranks=" + r,
                             "29x31 tile=[0,1,6,13,14,20,29]x[0,9,10,25,30,31] table owners=" + owners,
                             "29x31 tile=[0,1,6,13,14,20,29]x[0,9,10,25,30,31] random seed=5 ranks=" + r},
                        Case{"20x43 tile=7x4 offset=3x1 block_cyclic grid=1x" + r,
                             "20x43 tile=7x4 offset=3x1 random seed=1 ranks=" + r,
                             "50x11 tile=9x4 random seed=6 ranks=" + r,
                             "50x11 tile=9x4 block_cyclic grid=" + r + "x1"}}) {
    SCOPED_TRACE(k.x + " / " + k.y + " / " + k.z);
    const redist::Layout lx = redist::Layout::parse(k.x), ly = redist::Layout::parse(k.y),
                         lz = redist::Layout::parse(k.z), lv = redist::Layout::parse(k.v);
    for (int variant : {0, 1, 2}) {  // eager; by rendezvous with GET; by rendezvous pushed
      const std::size_t eager = variant == 0 ? 16384 : 64;
      const bool push = variant == 2;
      SCOPED_TRACE("eager_limit " + std::to_string(eager) + (push ? " push" : ""));
      rt::LayoutCollection X(lx, MPI_COMM_WORLD), Y(ly, MPI_COMM_WORLD), Z(lz, MPI_COMM_WORLD),
          V(lv, MPI_COMM_WORLD);
      fill(X, x_value);
      fill(Y, [](auto, auto) { return -1.0; });
      fill(V, [](auto, auto) { return -1.0; });
      fill(Z, z_value);
      const std::int64_t mt = X.tiles_m(), nt = X.tiles_n();
      auto f_rank = [=](std::int64_t m, std::int64_t n) { return static_cast<int>((3 * m + 5 * n + 1) % ranks); };
      auto h_rank = [=](std::int64_t m, std::int64_t n) { return static_cast<int>((m + 2 * n) % ranks); };

      rt::TaskGraph g;
      auto& f = g.task_class("F");
      f.param("m", 0, mt - 1).param("n", 0, nt - 2).affinity(f_rank);
      f.flow("X", rt::Access::read).in(rt::from(X, [](auto m, auto n) { return Tile{m, n}; }));
      f.flow("N", rt::Access::read).in(rt::from(X, [](auto m, auto n) { return Tile{m, n + 1}; }));
      f.flow("Y").out(rt::to(Y, [](auto m, auto n) { return Tile{m, n}; }));
      f.body([&X](rt::TaskContext& c, auto m, auto n) {
        const std::size_t size = X.rows_of(m) * X.cols_of(n), next = X.rows_of(m) * X.cols_of(n + 1);
        if (c.data("X").size() != size * 8 || c.data("N").size() != next * 8) throw std::runtime_error("wrong sizes");
        double sum = 0;
        for (std::size_t i = 0; i < next; ++i) sum += c.as<double>("N")[i];
        double* y = c.allocate("Y", size * 8).as<double>();
        for (std::size_t i = 0; i < size; ++i) y[i] = 2 * c.as<double>("X")[i] + sum;
      });
      auto& h = g.task_class("H");
      h.param("m", 0, Z.tiles_m() - 1).param("n", 0, Z.tiles_n() - 1).affinity(h_rank);
      auto even = [](auto m, auto n) { return (m + n) % 2 == 0; };
      h.flow("Z")
          .in(rt::from(Z, [](auto m, auto n) { return Tile{m, n}; }))
          .out_if(even, rt::to(Z, [](auto m, auto n) { return Tile{m, n}; }))
          .otherwise(rt::to(V, [](auto m, auto n) { return Tile{m, n}; }));
      h.body([](rt::TaskContext& c, auto, auto) {  // into a fresh buffer: Z itself is not changed in place
        const rt::Data in = c.data("Z");
        double* out = c.allocate("Z", in.size()).as<double>();
        for (std::size_t i = 0; i < in.size() / 8; ++i) out[i] = in.as<double>()[i] + 1;
      });
      // L(m, n) on the owner of an odd tile Z(m, n) that H reads from another rank
      // triples it in place, while H is still to read it.
      auto& l = g.task_class("L");
      l.param("m", 0, Z.tiles_m() - 1).param("n", 0, Z.tiles_n() - 1).affinity(Z, [](auto m, auto n) {
        return Tile{m, n};
      });
      auto tripled = [=, &lz](auto m, auto n) { return !even(m, n) && lz.owner(redist::Coord{m, n}) != h_rank(m, n); };
      l.flow("Z").in_if(tripled, rt::from(Z, [](auto m, auto n) { return Tile{m, n}; }));
      l.body([](rt::TaskContext& c, auto, auto) {
        for (std::size_t i = 0; i < c.data("Z").size() / 8; ++i) c.as<double>("Z")[i] *= 3;
      });
      rt::Options o = options_of(GetParam());
      o.eager_limit = eager;
      o.push = push;
      rt::Stats s = rt::run(g, MPI_COMM_WORLD, o);

      // Serial counts: tiles travel once per (tile, reading rank other than the owner).
      std::set<std::tuple<std::int64_t, std::int64_t, int>> reads;
      std::int64_t writes = 0, tasks = 0;
      for (std::int64_t m = 0; m < mt; ++m)
        for (std::int64_t n = 0; n + 1 < nt; ++n) {
          const int at = f_rank(m, n);
          for (std::int64_t q : {n, n + 1})
            if (lx.owner(redist::Coord{m, q}) != at) reads.emplace(m, q, at);
          writes += ly.owner(redist::Coord{m, n}) != at;
          tasks += at == world_rank();
        }
      std::int64_t z_reads = 0;
      for (std::int64_t m = 0; m < Z.tiles_m(); ++m)
        for (std::int64_t n = 0; n < Z.tiles_n(); ++n) {
          const bool away = lz.owner(redist::Coord{m, n}) != h_rank(m, n);
          z_reads += away;
          writes += (m + n) % 2 == 0 ? away : lv.owner(redist::Coord{m, n}) != h_rank(m, n);
          tasks += h_rank(m, n) == world_rank();
          tasks += lz.owner(redist::Coord{m, n}) == world_rank();
        }
      EXPECT_EQ(s.tasks, tasks);
      EXPECT_EQ(sum_all(s.tiles_read), static_cast<std::int64_t>(reads.size()) + z_reads);
      EXPECT_EQ(sum_all(s.tiles_written), writes);
      const std::int64_t gets = sum_all(s.gets_sent);
      if (push) {
        EXPECT_EQ(gets, 0);  // pushed tiles need no GET
      } else if (variant == 1 && world_size() > 1) {
        EXPECT_GT(gets, 0);
      }

      const std::vector<double> x = gather_on_root<double>(X), y = gather_on_root<double>(Y),
                                z = gather_on_root<double>(Z), v = gather_on_root<double>(V);
      std::int64_t wrong = 0;
      if (world_rank() == 0) {
        const std::int64_t rows = lx.shape()[0], cols = lx.shape()[1];
        for (std::int64_t j = 0; j < cols; ++j)
          for (std::int64_t i = 0; i < rows; ++i) wrong += x[i + j * rows] != x_value(i, j);  // reads change nothing
        for (std::int64_t m = 0; m < mt; ++m)
          for (std::int64_t n = 0; n < nt; ++n) {
            const redist::Box b = box_of(lx, m, n);
            double sum = 0;
            if (n + 1 < nt) {
              const redist::Box nb = box_of(lx, m, n + 1);
              for (std::int64_t j = 0; j < nb.size[1]; ++j)  // column-major, as the task sums it
                for (std::int64_t i = 0; i < nb.size[0]; ++i) sum += x_value(nb.lo[0] + i, nb.lo[1] + j);
            }
            for (std::int64_t j = b.lo[1]; j < b.lo[1] + b.size[1]; ++j)
              for (std::int64_t i = b.lo[0]; i < b.lo[0] + b.size[0]; ++i)
                wrong += y[i + j * rows] != (n + 1 < nt ? 2 * x_value(i, j) + sum : -1.0);
          }
        const std::int64_t zr = lz.shape()[0];
        for (std::int64_t m = 0; m < Z.tiles_m(); ++m)
          for (std::int64_t n = 0; n < Z.tiles_n(); ++n) {
            const redist::Box b = box_of(lz, m, n);
            const bool ev = (m + n) % 2 == 0;
            for (std::int64_t j = b.lo[1]; j < b.lo[1] + b.size[1]; ++j)
              for (std::int64_t i = b.lo[0]; i < b.lo[0] + b.size[0]; ++i) {
                wrong += z[i + j * zr] != (ev ? z_value(i, j) + 1 : tripled(m, n) ? 3 * z_value(i, j) : z_value(i, j));
                wrong += v[i + j * zr] != (ev ? -1.0 : z_value(i, j) + 1);  // H saw Z as it was at the start
              }
          }
      }
      EXPECT_EQ(wrong, 0);
      ASSERT_TRUE(all_ranks(wrong == 0));
    }
  }
}

// A tile written by two tasks (on different ranks when there are several), and a
// read of a tile outside the collection: one message on every rank, and the
// collections untouched; a valid run afterwards works.
TEST_P(Remote, Errors) {
  const int ranks = world_size();
  const std::string spec = "9x10 tile=4x3 random seed=4 ranks=" + std::to_string(ranks);
  rt::LayoutCollection Y(redist::Layout::parse(spec), MPI_COMM_WORLD);
  {
    rt::TaskGraph g;
    auto& w = g.task_class("W");
    w.param("i", 0, 1).affinity([=](auto i) { return static_cast<int>(i % ranks); });
    w.flow("out").out(rt::to(Y, [](auto) { return Tile{2, 1}; }));
    w.body([](rt::TaskContext& c, auto) { std::memset(c.allocate("out", 96).bytes(), 1, 96); });
    const std::string err = error_of([&] { rt::run(g, MPI_COMM_WORLD, options_of(GetParam())); });
    EXPECT_EQ(err, "redist: rank " + std::to_string(Y.rank_of(Tile{2, 1})) +
                       ": invalid task graph: tile (2, 1) of the collection '" + spec +
                       "' is written by W(0).out and by W(1).out; a run writes a tile at most once");
    EXPECT_TRUE(same_on_all(err));
  }
  {
    rt::TaskGraph g;
    auto& rd = g.task_class("R");
    rd.param("n", 0, 4).affinity([=](auto n) { return static_cast<int>((n + 1) % ranks); });
    rd.flow("in", rt::Access::read).in(rt::from(Y, [](auto n) { return Tile{0, n}; }));
    rd.body([](rt::TaskContext&, auto) {});
    const std::string err = error_of([&] { rt::run(g, MPI_COMM_WORLD, options_of(GetParam())); });
    EXPECT_NE(err.find("invalid task graph: evaluating it threw: tile (0, 4) is outside the 3x4 tiles of "
                       "the collection '" + spec + "'"),
              std::string::npos)
        << err;
    EXPECT_TRUE(same_on_all(err));
  }
  bool untouched = true;
  for (double v : Y.elements<double>()) untouched = untouched && v == 0;
  EXPECT_TRUE(all_ranks(untouched));
  // A valid graph on the same collection still runs: every tile of row 0 copied to row 2.
  fill(Y, [](auto i, auto j) { return static_cast<double>(i * 10 + j); });
  rt::TaskGraph g;
  auto& c = g.task_class("C");
  c.param("n", 0, Y.tiles_n() - 1).affinity([=](auto n) { return static_cast<int>((n * 2 + 1) % ranks); });
  c.flow("t", rt::Access::read).in(rt::from(Y, [](auto n) { return Tile{0, n}; })).out(rt::to(Y, [](auto n) {
    return Tile{1, n};
  }));
  c.body([](rt::TaskContext&, auto) {});
  rt::run(g, MPI_COMM_WORLD, options_of(GetParam()));
  const std::vector<double> y = gather_on_root<double>(Y);
  std::int64_t wrong = 0;
  if (world_rank() == 0)
    for (std::int64_t j = 0; j < 10; ++j)
      for (std::int64_t i = 0; i < 9; ++i)
        wrong += y[i + j * 9] != static_cast<double>(((i >= 4 && i < 8) ? i - 4 : i) * 10 + j);
  EXPECT_EQ(wrong, 0);
}

INSTANTIATE_TEST_SUITE_P(Runtime, Remote, RUNTIME_CONFIGS);
