// NUMA-aware stealing on a faked topology (this machine has one NUMA node): hwloc
// reads HWLOC_SYNTHETIC="numa:2 core:2 pu:1" (two nodes of two cores), set before
// the runtime first reads the topology (once per process).
#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "runtime/scheduler.hpp"
#include "runtime/topology.hpp"
#include "test_util.hpp"

using rt::Targets;
namespace d = redist::runtime::detail;

namespace {
void fake_topology() { setenv("HWLOC_SYNTHETIC", "numa:2 core:2 pu:1", 1); }

d::ReadyTask task(int priority) {
  d::ReadyTask t;
  t.priority = priority;
  return t;
}
}  // namespace

TEST(Numa, StealOrderSameNodeFirst) {
  const std::vector<std::vector<int>> numa{{1, 2, 3}, {0, 2, 3}, {3, 0, 1}, {2, 0, 1}};
  EXPECT_EQ(d::steal_order(4, {0, 0, 1, 1}), numa);
  const std::vector<std::vector<int>> ring{{1, 2, 3}, {2, 3, 0}, {3, 0, 1}, {0, 1, 2}};
  EXPECT_EQ(d::steal_order(4, {}), ring);
  // Nodes interleaved: 0 -> 2, then 1, 3 in ring order.
  const std::vector<std::vector<int>> mixed{{2, 1, 3}, {3, 2, 0}, {0, 3, 1}, {1, 0, 2}};
  EXPECT_EQ(d::steal_order(4, {0, 1, 0, 1}), mixed);
  EXPECT_EQ(d::steal_order(1, {0}), std::vector<std::vector<int>>{{}});
}

TEST(Numa, FakedTopologyGivesNodesOfWorkers) {
  fake_topology();
  const std::vector<int> nodes = d::numa_node_of_workers(6);
#ifdef REDIST_HAVE_HWLOC
  EXPECT_EQ(nodes, (std::vector<int>{0, 0, 1, 1, 0, 0}));  // 4 PUs, then around again
#else
  EXPECT_TRUE(nodes.empty());  // no hwloc: ring order
#endif
}

// Worker 1 (node 0) finds tasks on queue 2 (node 1, priority 9) and queue 0 (node 0,
// priority 1): it steals from its own node first, where ring order takes queue 2.
TEST(Numa, SchedulerStealsFromOwnNodeFirst) {
  for (bool numa : {true, false}) {
    d::Scheduler s(4, numa ? std::vector<int>{0, 0, 1, 1} : std::vector<int>{});
    s.push(2, task(9));
    s.push(0, task(1));
    d::ReadyTask t;
    bool stolen = false;
    ASSERT_TRUE(s.pop(1, t, stolen));
    EXPECT_TRUE(stolen);
    EXPECT_EQ(t.priority, numa ? 1 : 9);
    ASSERT_TRUE(s.pop(1, t, stolen));
    EXPECT_EQ(t.priority, numa ? 9 : 1);
  }
}

// A run with 4 workers on the faked topology: every task once, on its rank.
TEST(Numa, RunOnFakedTopology) {
  fake_topology();
  const int ranks = world_size(), n = 200;
  std::mutex m;
  std::vector<int> count(n, 0);
  rt::TaskGraph g;
  auto& src = g.task_class("Src");
  auto& work = g.task_class("Work");
  src.affinity([] { return 0; });
  src.control("go").out(rt::to(work, "go", [=] { return Targets{{0, n - 1}}; }));
  src.body([](rt::TaskContext&) {});
  work.param("i", 0, n - 1).affinity([=](auto i) { return i % ranks; });
  work.control("go").in(rt::from(src, "go", [] { return Targets{}; }));
  work.body([&](rt::TaskContext& c, auto i) {
    std::lock_guard lock(m);
    ++count[static_cast<std::size_t>(i)];
    EXPECT_EQ(c.rank(), i % ranks);
  });
  for (bool numa : {true, false}) {
    std::fill(count.begin(), count.end(), 0);
    rt::Options o;
    o.threads = 4;
    o.numa_steal = numa;
    rt::run(g, MPI_COMM_WORLD, o);
    for (int i = 0; i < n; ++i) {
      if (i % ranks == world_rank()) {
        EXPECT_EQ(count[static_cast<std::size_t>(i)], 1) << "Work(" << i << ")";
      }
    }
  }
}
