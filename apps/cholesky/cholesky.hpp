// Tiled Cholesky factorization A = L L^T as a parameterized task graph on the
// redist task runtime, written to read beside paper 004, Fig. 1.
#pragma once

#include <atomic>
#include <cstdint>

#include "redist/runtime/collection.hpp"
#include "redist/runtime/task_graph.hpp"

namespace redist::cholesky {

// The task graph that overwrites the lower triangle of `a` with L (tiles above the
// diagonal are not touched). Kernels: OpenBLAS/LAPACKE, single-threaded per task.
// Any ownership and any tile boundaries, the same for rows and columns (square
// diagonal tiles; the last ones may be smaller).
// Preconditions: `a` outlives the graph. Throws redist::Error unless `a` is a
// square matrix of doubles with the same tile boundaries in both dimensions.
// Where `not_definite` is given (it must outlive the run), a DPOTRF task that finds
// the matrix not positive definite lowers it to LAPACK's info for the whole matrix
// (the order of the first leading minor that is not) before the task throws.
runtime::TaskGraph task_graph(const runtime::LayoutCollection& a,
                              std::atomic<std::int64_t>* not_definite = nullptr);

// A symmetric positive definite test matrix: element (i, j) of an n x n matrix,
// a deterministic pseudo-random value in [-0.5, 0.5] plus n on the diagonal.
double spd_element(std::int64_t i, std::int64_t j, std::int64_t n);

// Fills this rank's tiles of the n x n matrix `a` with spd_element.
void fill_spd(const runtime::LayoutCollection& a);

}  // namespace redist::cholesky
