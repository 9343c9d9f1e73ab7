// ScaLAPACK as a second oracle (STYLE.md, "Tests"): for 2-D block-cyclic local
// arrays, every redist strategy must leave the target local arrays bit for bit as
// Debian ScaLAPACK's pdgemr2d leaves them, on the same inputs. Random cases: shapes
// up to 150x150, tiles from 1 to larger than the matrix, grids P x Q <= ranks (maybe
// fewer than the communicator, in row or column order, at first= > 0), RSRC/CSRC,
// padded leading dimensions, submatrices (empty, one element, whole, at the edges).
// The pattern oracle (check_redistributed) also checks both, so a failure says
// which side is wrong.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

#include "../../bench/scalapack.hpp"
#include "../common/mpi_util.hpp"
#include "../common/random_cases.hpp"
#include "harness/pattern.hpp"
#include "harness/storage.hpp"
#include "redist/redist.hpp"

using namespace redist;
using namespace redist::testing;

namespace {

constexpr std::uint64_t kSrcId = 11, kDstId = 22;

// A layout ScaLAPACK can hold: regular tiles without offset, block_cyclic, local_array.
Layout random_scalapack_layout(Rng& rng, const Coord& shape, int nranks) {
  BlockCyclicParams p;
  const index_t prow = uniform(rng, 1, nranks);
  p.grid = Coord{prow, uniform(rng, 1, nranks / prow)};
  p.source = Coord{uniform(rng, 0, p.grid[0] - 1), uniform(rng, 0, p.grid[1] - 1)};
  p.super = Coord{1, 1};
  p.order = uniform(rng, 0, 1) ? GridOrder::row : GridOrder::col;
  p.first_rank = uniform(rng, 0, 2) ? 0 : static_cast<int>(uniform(rng, 0, nranks - p.grid.volume()));
  std::vector<DimPartition> parts;
  for (int d = 0; d < 2; ++d) {  // mostly small tiles (many blocks), sometimes larger than the extent
    const index_t t = uniform(rng, 0, 4) ? uniform(rng, 1, 12) : uniform(rng, 1, shape[d] + 5);
    parts.push_back(DimPartition::regular(shape[d], t));
  }
  Storage st{StorageKind::local_array, 0};
  if (uniform(rng, 0, 2) == 0) st.ld = shape[0] + uniform(rng, 0, 3);  // padded: ld > local rows
  return Layout(shape, std::move(parts), Ownership::block_cyclic(p), st, 8);
}

// One case: every redist strategy and pdgemr2d on copies of the same target;
// returns an empty string when all agree bytewise and with the pattern oracle.
// Every rank makes the same collective calls whatever it finds.
std::string run_case(const Layout& src, const Layout& dst, const Region& r, int line_ctxt) {
  const int rank = world_rank();
  harness::LocalStorage s(src, rank), d0(dst, rank);
  fill_pattern(src, rank, s.blocks(), kSrcId);
  fill_pattern(dst, rank, d0.blocks(), kDstId);
  auto bytes = [](const harness::LocalStorage& st) {
    const std::span<std::byte> b = st.block_bytes(0);
    std::vector<std::byte> v(b.size());
    if (!b.empty()) std::memcpy(v.data(), b.data(), b.size());
    return v;
  };
  const std::vector<std::byte> src_before = bytes(s), dst_before = bytes(d0);
  std::string err;
  auto note = [&](const std::string& what) {
    if (err.empty()) err = what;
  };

  // The oracle: pdgemr2d (1-based submatrix corner, CTXT -1 outside a grid).
  const int ctxt_a = scalapack::make_grid(src), ctxt_b = scalapack::make_grid(dst);
  const LocalIndex lsrc(src, rank), ldst(dst, rank);
  int info_a = 0, info_b = 0;
  const auto desc_a = scalapack::descriptor(src, ctxt_a, lsrc.ld(), info_a);
  const auto desc_b = scalapack::descriptor(dst, ctxt_b, ldst.ld(), info_b);
  if (info_a || info_b) note(detail::cat("descinit info ", info_a, " / ", info_b));
  std::vector<std::byte> sca = dst_before;
  std::vector<std::byte> sca_src = src_before;
  double dummy[1] = {0};  // a valid pointer where a rank stores nothing
  auto data = [&](std::vector<std::byte>& v) { return v.empty() ? dummy : reinterpret_cast<double*>(v.data()); };
  const int m = static_cast<int>(r.size[0]), n = static_cast<int>(r.size[1]);
  const int ia = static_cast<int>(r.src_offset[0]) + 1, ja = static_cast<int>(r.src_offset[1]) + 1;
  const int ib = static_cast<int>(r.dst_offset[0]) + 1, jb = static_cast<int>(r.dst_offset[1]) + 1;
  if (all_ok(err.empty()))  // a bad descriptor would make pdgemr2d exit(1)
    pdgemr2d_(&m, &n, data(sca_src), &ia, &ja, desc_a.data(), data(sca), &ib, &jb, desc_b.data(), &line_ctxt);
  scalapack::grid_exit(ctxt_a);
  scalapack::grid_exit(ctxt_b);
  std::vector<void*> sca_ptr{sca.empty() ? nullptr : sca.data()};
  CheckResult cs = check_redistributed(dst, rank, sca_ptr, r, src, kSrcId, kDstId);
  if (!cs.ok()) note("pdgemr2d disagrees with the pattern oracle (test bug?): " + cs.first_error);

  // redist, every strategy, each on a fresh copy of the target.
  try {
    Plan plan = make_plan(src, dst, r, MPI_COMM_WORLD);
    for (const std::string& ex : strategy_names()) {
      harness::LocalStorage d(dst, rank);
      std::copy(dst_before.begin(), dst_before.end(), d.block_bytes(0).begin());
      plan.execute(s.const_blocks(), d.blocks(), ex);
      const std::string tag = ex + ": ";
      CheckResult c = check_redistributed(dst, rank, d.blocks(), r, src, kSrcId, kDstId);
      if (!c.ok()) note(detail::cat(tag, c.wrong, " of ", c.checked, " wrong; first: ", c.first_error));
      if (const std::vector<std::byte> got = bytes(d); got != sca) {
        size_t i = 0;
        while (got[i] == sca[i]) ++i;
        note(detail::cat(tag, "local array differs from pdgemr2d's at byte ", i, " (element ", i / 8,
                         " of ", sca.size() / 8, ", ld ", ldst.ld(), ")"));
      }
      if (bytes(s) != src_before) note(tag + "source changed");
    }
  } catch (const std::exception& e) {  // redist errors are agreed on by every rank
    note(std::string("redist threw: ") + e.what());
  }
  return err;
}

// Fails the test on every rank; a rank that found the error prints it itself
// (gtest prints only on rank 0, see tests/common/mpi_main.cpp).
void report(const std::string& err, const std::string& what) {
  if (!err.empty()) std::fprintf(stderr, "rank %d: %s\n  %s\n", world_rank(), what.c_str(), err.c_str());
  ADD_FAILURE() << what << "\n  " << (err.empty() ? "(failed on another rank, see its message)" : err);
}

// Random cases [first, end) of tests/common/random_cases.hpp (REDIST_CASES,
// REDIST_SEED, REDIST_CASE); a failure prints the command that replays it.
void random_cases(int ncases, std::uint64_t seed) {
  const int nranks = world_size();
  const int line_ctxt = scalapack::line_grid();
  const CaseRange range = case_range(ncases, seed);
  for (int c = range.first; c < range.end; ++c) {
    Rng rng = case_rng(range.seed, c);  // same seed on every rank: every rank builds the same case
    auto extent = [&] { return uniform(rng, 0, 5) ? uniform(rng, 1, 150) : uniform(rng, 1, 4); };
    const Coord a{extent(), extent()};
    const Coord b = uniform(rng, 0, 3) ? Coord{extent(), extent()} : a;  // same shape: "whole" cases
    const Layout src = random_scalapack_layout(rng, a, nranks);
    const Layout dst = random_scalapack_layout(rng, b, nranks);
    const Region r = random_region(rng, a, b);
    const std::string err = run_case(src, dst, r, line_ctxt);
    if (!all_ok(err.empty())) {
      report(err, detail::cat("case ", c, "\n  src ", src.spec(), "\n  dst ", dst.spec(), "\n  region ", r.str(),
                              "\n  replay: ", replay_command(range, c)));
      break;
    }
  }
  scalapack::grid_exit(line_ctxt);
}

TEST(ScaLAPACK, RandomCasesMatchPdgemr2d) { random_cases(1000, 4242); }

// Paper 000 Fig. 1 in small: a submatrix at an offset between two grids, ragged
// edges on both sides, source row/column not at 0.
TEST(ScaLAPACK, PaperCaseSubmatrix) {
  const int p = world_size();
  const Layout src = Layout::parse(detail::cat("103x97 tile=7x5 storage=local_array block_cyclic grid=",
                                               p, "x1 src=", p - 1, "x0"));
  const Layout dst = Layout::parse(detail::cat("88x120 tile=4x9 storage=local_array ld=90 block_cyclic grid=1x",
                                               p, " order=col src=0x", p / 2));
  const int line_ctxt = scalapack::line_grid();
  const std::string err = run_case(src, dst, Region{{80, 90}, {20, 3}, {5, 29}}, line_ctxt);
  scalapack::grid_exit(line_ctxt);
  if (!all_ok(err.empty())) report(err, "paper case");
}

}  // namespace
