// `aggregate` (exec/strategies/aggregate.cpp, plan/nodes.hpp): between two nodes
// one message per lane of the node pair, counted at MPI's door (point-to-point calls wrapped
// through PMPI), on nodes of 1, 2 and 3 ranks forced by Options::node_size; the
// data against the serial oracle. The whole conformance suite runs on it too
// (ctest test_conformance_aggregate_nodes2, REDIST_NODE_SIZE=2).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>

#include "../common/mpi_util.hpp"
#include "harness/pattern.hpp"
#include "harness/storage.hpp"
#include "redist/redist.hpp"

using namespace redist;
using namespace redist::testing;

namespace {
std::atomic<bool> counting{false};
std::atomic<long> sent{0}, sent_off_node{0};
int node_size_now = 1;
void count(int to) {
  if (!counting) return;
  ++sent;
  int me = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &me);  // the plan's communicator duplicates the world
  if (me / node_size_now != to / node_size_now) ++sent_off_node;
}
}  // namespace
extern "C" {
int MPI_Send(const void* b, int n, MPI_Datatype t, int to, int tag, MPI_Comm c) {
  count(to);
  return PMPI_Send(b, n, t, to, tag, c);
}
int MPI_Isend(const void* b, int n, MPI_Datatype t, int to, int tag, MPI_Comm c, MPI_Request* r) {
  count(to);
  return PMPI_Isend(b, n, t, to, tag, c, r);
}
}

namespace {

// Every rank sends to every other (columns of tiles -> rows of tiles): without
// aggregation p*(p-1) messages; with it, within a node rank pairs directly and
// between two nodes one message per lane each way, plus the hops to and from the
// lanes.
TEST(Aggregate, MessagesPerNodePair) {
  const int p = world_size(), rank = world_rank();
  const Layout src = block_cyclic_layout({53, 47}, {5, 3}, {1, p});
  const Layout dst = block_cyclic_layout({53, 47}, {4, 7}, {p, 1}, 8, StorageKind::local_array);
  const Region r = Region::parse("50x40 from=2x3 to=1x5");
  for (int k : {1, 2, 3}) {
    Options opt;
    opt.node_size = k;
    node_size_now = k;
    harness::LocalStorage s(src, rank), d(dst, rank);
    fill_pattern(src, rank, s.blocks(), 5);
    Plan plan = make_plan(src, dst, r, MPI_COMM_WORLD, opt);
    long totals[2][2];  // [p2p, aggregate][all, off node]
    const char* names[2] = {"p2p", "aggregate"};
    for (int e = 0; e < 2; ++e) {
      fill_pattern(dst, rank, d.blocks(), 6);
      plan.execute(s.const_blocks(), d.blocks(), names[e]);  // the first run gathers the routes
      fill_pattern(dst, rank, d.blocks(), 6);
      sent = 0, sent_off_node = 0;
      counting = true;
      plan.execute(s.const_blocks(), d.blocks(), names[e]);
      counting = false;
      const CheckResult c = check_redistributed(dst, rank, d.blocks(), r, src, 5, 6);
      EXPECT_TRUE(all_ok(c.ok())) << names[e] << " node size " << k << ": " << c.first_error;
      long v[2] = {sent.load(), sent_off_node.load()};
      MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
      totals[e][0] = v[0], totals[e][1] = v[1];
    }
    // Between two nodes, min(K_a / P_a, K_b / P_b) lanes (K: ranks of the node, P:
    // its peer nodes, here every other node), at least one: a message each. (The
    // lanes follow the node pairs' volumes, plan/nodes.hpp set_flows; with one
    // peer node, 1 rank per node or equal volumes as here, that is this count.)
    const int nodes = (p + k - 1) / k;
    long lanes = 0;
    for (int a = 0; a < nodes; ++a)
      for (int b = 0; b < nodes; ++b)
        if (a != b) {
          const int ka = std::min(k, p - a * k), kb = std::min(k, p - b * k);
          lanes += std::max(1, std::min(ka / (nodes - 1), kb / (nodes - 1)));
        }
    long within = 0;  // ordered rank pairs on one node
    for (int a = 0; a < p; ++a)
      for (int b = 0; b < p; ++b) within += a != b && a / k == b / k;
    if (rank == 0)
      std::printf("    %d ranks, nodes of %d: p2p %ld messages (%ld between nodes), aggregate %ld (%ld between nodes)\n",
                  p, k, totals[0][0], totals[0][1], totals[1][0], totals[1][1]);
    EXPECT_EQ(totals[0][0], long{p} * (p - 1)) << "every rank pair exchanges data";
    EXPECT_EQ(totals[1][1], lanes) << "node size " << k;
    // The other messages stay on nodes, at most one per ordered pair of its ranks in
    // step 1 (to the lanes, and directly) and one in step 3 (from the lanes).
    EXPECT_LE(totals[1][0] - totals[1][1], 2 * within) << "node size " << k;
  }
}

}  // namespace
