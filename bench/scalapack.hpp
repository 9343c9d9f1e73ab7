// ScaLAPACK/BLACS as a peer and an oracle for 2-D block_cyclic layouts (Debian's
// libscalapack-openmpi, which ships no C header, so the few entry points we call
// are declared here). Used by bench/compare_pdgemr2d.cpp and tests/mpi/test_scalapack.cpp.
//
// The correspondence (docs/spec.md): dimension 0 = rows, `tile=MBxNB`, `grid=PxQ`,
// `src=RSRCxCSRC`, storage local_array = ScaLAPACK's local array with LLD = ld.
// `order=row` is a BLACS "R" grid (rank = prow*Q + pcol), `order=col` a "C" grid;
// `first=` needs an explicit process map (Cblacs_gridmap).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "redist/layout.hpp"
#include "redist/plan.hpp"

#include "redist/blacs.h"
#include "redist/scalapack.h"  // pdgemr2d_, pdtran_ (ScaLAPACK's, or the drop-in's where it is linked first)

namespace redist::scalapack {

// Empty when ScaLAPACK can hold `l` (2-D, regular tiles without first-tile offset,
// block_cyclic without super-tiles, 8-byte elements), else why not.
inline std::string unsupported(const Layout& l) {
  if (l.ndim() != 2) return "ScaLAPACK needs a 2-D layout";
  if (l.elem_size() != 8) return "pdgemr2d moves doubles: esize must be 8";
  for (int d = 0; d < 2; ++d)
    if (!l.partition(d).is_regular() || l.partition(d).offset() != 0)
      return "ScaLAPACK needs regular tiles without offset=";
  if (l.ownership().kind() != Ownership::Kind::block_cyclic) return "ScaLAPACK needs block_cyclic";
  const auto& p = l.ownership().bc();
  if (p.super.ndim() == 2 && (p.super[0] != 1 || p.super[1] != 1)) return "ScaLAPACK has no super=";
  return "";
}

// BLACS grid of `l` (precondition: unsupported(l) is empty). Collective over all
// processes (BLACS builds a communicator); returns -1 on ranks outside the grid.
inline int make_grid(const Layout& l) {
  const auto& p = l.ownership().bc();
  const int rows = static_cast<int>(p.grid[0]), cols = static_cast<int>(p.grid[1]);
  int ctxt = 0;
  Cblacs_get(0, 0, &ctxt);  // the system context: all of MPI_COMM_WORLD
  if (p.first_rank == 0 && !p.map) {
    Cblacs_gridinit(&ctxt, p.order == GridOrder::row ? "R" : "C", rows, cols);
  } else {
    std::vector<int> map(static_cast<size_t>(rows) * cols);  // map[i + j*rows] = rank of (i, j)
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j) map[i + static_cast<size_t>(j) * rows] = l.ownership().rank_at({i, j});
    Cblacs_gridmap(&ctxt, map.data(), rows, rows, cols);
  }
  return ctxt;  // BLACS gives -1 to processes not in the grid
}

// Releases a BLACS context (none where ctxt < 0). BLACS sends asynchronously and
// completes its sends lazily, in a later BLACS call: a send still in flight when
// its context is released keeps the context's communicator alive for good (the
// MPI request holds it), which LeakSanitizer reports when timing has it so
// (test_scalapack on 4 ranks). So wait for every send of this process first.
inline void grid_exit(int ctxt) {
  if (ctxt < 0) return;
  Cblacs_freebuff(ctxt, 1);
  Cblacs_gridexit(ctxt);
}

// The 1 x nprocs context pdgemr2d needs (it spans every process of both grids).
inline int line_grid() {
  int me = 0, n = 0, ctxt = 0;
  Cblacs_pinfo(&me, &n);
  Cblacs_get(0, 0, &ctxt);
  Cblacs_gridinit(&ctxt, "R", 1, n);
  return ctxt;
}

// Descriptor of this rank's local array of `l` in grid `ctxt` (CTXT = -1 outside
// the grid, as pdgemr2d requires). `ld` is LocalIndex::ld(); it is 0 where the
// rank stores nothing, and LLD must still be >= max(1, local rows) then. `info` is
// descinit's (0: valid).
inline std::array<int, 9> descriptor(const Layout& l, int ctxt, index_t ld, int& info) {
  std::array<int, 9> desc{};
  desc[1] = -1;
  info = 0;
  if (ctxt < 0) return desc;
  const auto& p = l.ownership().bc();
  const int m = static_cast<int>(l.shape()[0]), n = static_cast<int>(l.shape()[1]);
  const int mb = static_cast<int>(l.partition(0).tile()), nb = static_cast<int>(l.partition(1).tile());
  const int rsrc = p.source.ndim() ? static_cast<int>(p.source[0]) : 0;
  const int csrc = p.source.ndim() ? static_cast<int>(p.source[1]) : 0;
  // Local rows of the grid row that owns the most (the source row) bound every rank's.
  const int prow_count = static_cast<int>(p.grid[0]);
  const int most = numroc_(&m, &mb, &rsrc, &rsrc, &prow_count);
  const int lld = ld > 0 ? static_cast<int>(ld) : std::max(1, most);
  descinit_(desc.data(), &m, &n, &mb, &nb, &rsrc, &csrc, &ctxt, &lld, &info);
  return desc;
}

// Can pdtran (PBLAS: A and C in one context) transpose `region` from `src` to
// `dst`? Empty when it can (a transposing 2-D region, one grid for both), else why not.
inline std::string tran_unsupported(const Layout& src, const Layout& dst, const Region& region) {
  if (!region.permutes()) return "not a transpose";
  if (!(src.ownership() == dst.ownership())) return "pdtran needs A and C on one grid";
  return "";
}

// One pdgemr2d call moving `region` from `src` to `dst` (both local_array, and
// unsupported() empty for both), or one pdtran call (C := A^T) when the region
// transposes (tran_unsupported() empty): the grids and descriptors are built once
// (collective) and released on destruction. `ok` is false on every rank when
// descinit rejected a descriptor on any rank.
struct Redistribution {
  int ctxt_a = -1, ctxt_b = -1, line = -1, m = 0, n = 0, ia = 1, ja = 1, ib = 1, jb = 1;
  std::array<int, 9> desc_a{}, desc_b{};
  bool ok = false, transpose = false;

  Redistribution(const Layout& src, index_t ld_src, const Layout& dst, index_t ld_dst, const Region& region) {
    // The grid of every rank first: BLACS allocates its request and status
    // arrays again, and loses them, on each grid made before its first context
    // that this rank belongs to.
    transpose = region.permutes();
    line = line_grid();
    ctxt_a = make_grid(src);
    ctxt_b = transpose ? -1 : make_grid(dst);  // a transpose: C in A's context (PBLAS's rule)
    int info_a = 0, info_b = 0;
    desc_a = descriptor(src, ctxt_a, ld_src, info_a);
    desc_b = descriptor(dst, transpose ? ctxt_a : ctxt_b, ld_dst, info_b);
    int bad = info_a || info_b, any_bad = 0;
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    ok = !any_bad;
    m = static_cast<int>(region.size[0]), n = static_cast<int>(region.size[1]);
    ia = static_cast<int>(region.src_offset[0]) + 1, ja = static_cast<int>(region.src_offset[1]) + 1;
    ib = static_cast<int>(region.dst_offset[0]) + 1, jb = static_cast<int>(region.dst_offset[1]) + 1;
  }
  Redistribution(const Redistribution&) = delete;
  Redistribution& operator=(const Redistribution&) = delete;
  ~Redistribution() {
    grid_exit(ctxt_a);
    grid_exit(ctxt_b);
    grid_exit(line);
  }
  void run(double* a, double* b) const {
    if (transpose) {
      if (ctxt_a < 0) return;  // PBLAS: processes outside the grid do not call
      const double one = 1.0, zero = 0.0;
      return pdtran_(&m, &n, &one, a, &ia, &ja, desc_a.data(), &zero, b, &ib, &jb, desc_b.data());
    }
    pdgemr2d_(&m, &n, a, &ia, &ja, desc_a.data(), b, &ib, &jb, desc_b.data(), &line);
  }
  const char* name() const { return transpose ? "pdtran" : "pdgemr2d"; }
};

}  // namespace redist::scalapack
