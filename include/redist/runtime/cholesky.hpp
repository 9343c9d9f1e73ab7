// Tiled Cholesky factorization A = L L^T as a parameterized task graph, written to
// read like paper 004, Fig. 1.
#pragma once

#include <cstdint>

#include "redist/runtime/collection.hpp"
#include "redist/runtime/task_graph.hpp"

namespace redist::runtime {

// The task graph that overwrites the lower triangle of `a` with L (tiles above the
// diagonal are not touched). Kernels: OpenBLAS/LAPACKE, single-threaded per task.
// Preconditions: `a` is square with square tiles and outlives the graph.
TaskGraph cholesky_graph(const TiledMatrix& a);

// A symmetric positive definite test matrix: element (i, j) of an n x n matrix,
// a deterministic pseudo-random value in [-0.5, 0.5] plus n on the diagonal.
double spd_element(std::int64_t i, std::int64_t j, std::int64_t n);

// Fills the local tiles of `a` with spd_element.
void fill_spd(const TiledMatrix& a);

}  // namespace redist::runtime
