// Tiled matrix product C = alpha A B + beta C as a parameterized task graph on the
// redist task runtime (DPLASMA's SUMMA-like dgemm: the owner of C(m, n) runs the
// products into it, in k order), OpenBLAS DGEMM single-threaded per task.
#pragma once

#include <cstdint>
#include <functional>

#include "redist/runtime/collection.hpp"
#include "redist/runtime/task_graph.hpp"

namespace redist::gemm {

// How the tiles of A and B reach the tasks that multiply them.
enum class Reads {
  tasks,   // READ_A / READ_B tasks on their owners send them (DPLASMA's form)
  remote,  // GEMM reads A(m, k) and B(k, n) from the collections; the runtime's remote reads
};

// The task graph of C = alpha A B + beta C: GEMM(m, n, k) on the owner of C(m, n)
// adds A(m, k) B(k, n) in k order (beta applied at k = 0). With Reads::tasks,
// READ_A(m, k) and READ_B(k, n) on the owners of A(m, k) and B(k, n) send those
// tiles to the GEMM(m, n, k) that use them; with Reads::remote, GEMM reads them from
// the collections and their owners send them at the start of the run. Either way one
// transfer per tile and rank that needs it, and the same result bit for bit. Any
// ownerships. Preconditions: the collections outlive the graph. Throws redist::Error
// unless all three are 2-D matrices of doubles with A m x k, B k x n, C m x n whose
// tile boundaries agree (A's rows with C's, B's columns with C's, A's columns with
// B's rows).
runtime::TaskGraph task_graph(double alpha, const runtime::LayoutCollection& a, const runtime::LayoutCollection& b,
                              double beta, const runtime::LayoutCollection& c, Reads reads = Reads::tasks);

// Fills `dst` (column-major, leading dimension its rows) with tile (i, j) of a matrix.
using Pack = std::function<void(std::int64_t i, std::int64_t j, double* dst)>;

// The same product with A and B never held whole on the tiles: READ_A(m, k) on
// the owner of C(m, 0) packs A's tile (m, k) with pack_a into a runtime buffer
// (rows of C's tile row m x columns of k's tile k), READ_B(k, n) on the owner of
// C(0, n) packs B's tile (k, n) with pack_b, each when the GEMMs of step k come
// (priority -k, the GEMMs'), and the buffers go back to the runtime's pool once
// their GEMMs ran: fresh memory only for the tiles alive at once, not for whole
// copies of A and B (the round trip's move in was mostly page faults, docs/apps.md).
// `k`: the tiles of the inner dimension. The result is bit for bit the one of the
// graph above on the same tiles. pack_a / pack_b run on worker threads, several at
// once; they must be able to reach those tiles on the ranks named (one rank: all).
// rank_a(m, k) / rank_b(k, n), when given, name those ranks instead (the rank that
// holds the caller's copy of the tile); the same function on every rank.
using Ranks = std::function<int(std::int64_t i, std::int64_t j)>;
runtime::TaskGraph task_graph(double alpha, const DimPartition& k, Pack pack_a, Pack pack_b, double beta,
                              const runtime::LayoutCollection& c, Ranks rank_a = {}, Ranks rank_b = {});

}  // namespace redist::gemm
