// Tile QR factorization A = Q R as a parameterized task graph on the redist task
// runtime: PLASMA's tile algorithm (Buttari et al.; DPLASMA's dgeqrf), with the
// LAPACK kernels DGEQRT, DTPQRT, DGEMQRT and DTPMQRT, single-threaded per task.
#pragma once

#include <cstdint>

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

}  // namespace redist::qr
