// Tile QR factorization A = Q R as a parameterized task graph on the redist task
// runtime: PLASMA's tile algorithm (Buttari et al.; DPLASMA's dgeqrf), with the
// LAPACK kernels DGEQRT, DTPQRT, DGEMQRT and DTPMQRT, single-threaded per task.
#pragma once

#include <cstdint>
#include <vector>

#include "redist/layout.hpp"
#include "redist/runtime/collection.hpp"
#include "redist/runtime/task_graph.hpp"

namespace redist::qr {

// The layout of the T factors of a matrix on `a`: one inner x cols(n) block per
// tile (m, n) of `a`, owned by the owner of that tile (same ownership, same tile
// counts), tile storage. Throws redist::Error for a placement ownership (its owners
// come from the geometry, not from the tile indices) or inner < 1.
Layout t_layout(const Layout& a, index_t inner);

// The task graph that overwrites `a` (m x n, any m and n) with R in its upper
// triangle and the tile Householder vectors below, and `t` (on t_layout(a, inner))
// with the T factors. Tasks: GEQRT(k) on tile (k, k); UNMQR(k, n) applies its
// reflectors to tile (k, n); TSQRT(k, m) eliminates tile (m, k) against R(k, k);
// TSMQR(k, m, n) applies those to tiles (k, n) and (m, n); STORE(k, n) puts the
// final row k back on its owner (a task reads and writes only its own rank's tiles).
// Q^T A = R where Q^T applies, for k = 0, 1, ...: DGEMQRT of (V, T)(k, k) to tile
// row k, then for m = k+1, ... DTPMQRT of (V, T)(m, k) to tile rows k and m.
// Preconditions: `a` and `t` outlive the graph. Throws redist::Error unless `a` is
// a 2-D matrix of doubles whose diagonal tiles above the last tile row have at
// least as many rows as columns (square tiles do), and `t` is on t_layout(a, inner).
runtime::TaskGraph task_graph(const runtime::LayoutCollection& a, const runtime::LayoutCollection& t,
                              index_t inner);

// Flops of the QR of an m x n matrix (LAPACK's count, m >= n: 2mn^2 - 2n^3/3).
double flops(double m, double n);

// Owners of the tile columns (column j's tiles all on rank result[j]) of the tile
// QR of a matrix with `a`'s tiles (its ownership is not read) on a 1 x `ranks`
// grid, one worker per rank. Block-cyclic columns load the ranks unevenly where
// the tile columns are few: column n's work grows with n, and 9 columns on 2
// ranks (N = 2000, tiles of 224) leave the second rank idle 13-16% of the run
// (docs/apps.md). Starting from j mod ranks, a column (or, on 2 ranks, two) moves
// to another rank wherever a list schedule of the task graph (its priorities,
// flops as costs, no communication: schedule_length) ends earlier, until no move
// does. j mod ranks as it is for one rank, one column, or more than 30000 tasks
// (many columns balance already). Deterministic (the same on every rank), and
// remembered per tile shape and ranks.
std::vector<int> column_owners(const Layout& a, int ranks);
// The length, in flops, of that list schedule of the tile QR of `a`'s tiles with
// column j on rank column_owner[j]. Throws redist::Error for an owner outside
// [0, ranks), one owner per tile column missing, or more than 1e7 tasks.
double schedule_length(const Layout& a, const std::vector<int>& column_owner, int ranks);

}  // namespace redist::qr
