// Graph shapes on 1-4 ranks: chains, fan-out and fan-in, nested ranges, guards,
// control dependencies, priorities, ranks without tasks.
#include <atomic>
#include <chrono>
#include <mutex>
#include <vector>

#include "test_util.hpp"

using rt::P;
using rt::Targets;

class Graph : public ::testing::TestWithParam<Config> {};

// T(i) -> T(i+1), consecutive tasks on consecutive ranks: every edge is remote.
TEST_P(Graph, ChainAcrossRanks) {
  const int ranks = world_size(), n = 24;
  std::atomic<std::int64_t> ran{0}, last{0};
  rt::TaskGraph g;
  auto& t = g.task_class("T");
  t.param("i", 0, n - 1).affinity([=](P p) { return static_cast<int>(p[0] % ranks); });
  t.flow("x")
      .in([](P p) { return p[0] > 0; }, rt::from(t, "x", [](P p) { return Targets{p[0] - 1}; }))
      .out([=](P p) { return p[0] < n - 1; }, rt::to(t, "x", [](P p) { return Targets{p[0] + 1}; }));
  t.body([&](rt::TaskContext& c) {
    if (c[0] == 0) *static_cast<std::int64_t*>(static_cast<void*>(c.allocate("x", 8).bytes())) = 0;
    auto* v = c.as<std::int64_t>("x");
    EXPECT_EQ(*v, c[0]);
    *v += 1;
    ++ran;
    if (c[0] == n - 1) last = *v;
  });
  rt::Stats s = rt::run(g, MPI_COMM_WORLD, options_of(GetParam()));
  EXPECT_EQ(sum_all(ran), n);
  EXPECT_EQ(sum_all(last), n);
  EXPECT_EQ(s.tasks, ran.load());
}

// Source -> Work(0..n-1) (an OUT range), Work(i) -> Sink (one flow per producer).
TEST_P(Graph, FanOutFanIn) {
  const int ranks = world_size(), n = 6;
  std::atomic<std::int64_t> sink{0};
  rt::TaskGraph g;
  auto& source = g.task_class("Source");
  auto& work = g.task_class("Work");
  auto& sinkc = g.task_class("Sink");
  source.affinity([](P) { return 0; });
  source.flow("v").out(rt::to(work, "v", [=](P) { return Targets{{0, n - 1}}; }));
  source.body([](rt::TaskContext& c) { *c.allocate("v", 8).as<std::int64_t>() = 42; });
  work.param("i", 0, n - 1).affinity([=](P p) { return static_cast<int>(p[0] % ranks); });
  work.flow("v", rt::Access::read).in(rt::from(source, "v", [](P) { return Targets{}; }));
  auto r = work.flow("r");
  for (int i = 0; i < n; ++i) {
    std::string in = "in" + std::to_string(i);
    r.out([=](P p) { return p[0] == i; }, rt::to(sinkc, in, [](P) { return Targets{}; }));
    sinkc.flow(in, rt::Access::read).in(rt::from(work, "r", [=](P) { return Targets{i}; }));
  }
  work.body([](rt::TaskContext& c) {
    *c.allocate("r", 8).as<std::int64_t>() = *c.as<std::int64_t>("v") + c[0];
  });
  sinkc.affinity([=](P) { return ranks - 1; });
  sinkc.body([&](rt::TaskContext& c) {
    for (int i = 0; i < n; ++i) sink += *c.as<std::int64_t>("in" + std::to_string(i));
  });
  rt::run(g, MPI_COMM_WORLD, options_of(GetParam()));
  EXPECT_EQ(sum_all(sink), n * 42 + n * (n - 1) / 2);
}

// Nested ranges whose inner bounds depend on outer parameters, each row a chain of
// control dependencies: Tri(i, j), i = 0..n-1, j = 0..i, and Box(i, j, k), k = j..i.
TEST_P(Graph, DependentRanges) {
  const int ranks = world_size(), n = 7;
  std::atomic<std::int64_t> count{0}, checksum{0};
  rt::TaskGraph g;
  auto& tri = g.task_class("Tri");
  tri.param("i", 0, n - 1)
      .param("j", 0, [](P p) { return p[0]; })
      .affinity([=](P p) { return static_cast<int>((p[0] + p[1]) % ranks); });
  tri.control("row")
      .in([](P p) { return p[1] > 0; }, rt::from(tri, "row", [](P p) { return Targets{p[0], p[1] - 1}; }))
      .out([](P p) { return p[1] < p[0]; }, rt::to(tri, "row", [](P p) { return Targets{p[0], p[1] + 1}; }));
  tri.body([&](rt::TaskContext& c) {
    ++count;
    checksum += c[0] * 100 + c[1];
  });
  auto& box = g.task_class("Box");
  box.param("i", 0, n - 1)
      .param("j", 0, [](P p) { return p[0]; })
      .param("k", [](P p) { return p[1]; }, [](P p) { return p[0]; })
      .affinity([=](P p) { return static_cast<int>((p[0] * 3 + p[2]) % ranks); });
  box.body([&](rt::TaskContext&) { ++count; });
  rt::run(g, MPI_COMM_WORLD, options_of(GetParam()));
  std::int64_t expect_sum = 0, expect_box = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j <= i; ++j) {
      expect_sum += i * 100 + j;
      expect_box += i - j + 1;
    }
  EXPECT_EQ(sum_all(count), n * (n + 1) / 2 + expect_box);
  EXPECT_EQ(sum_all(checksum), expect_sum);
}

// Guards choose between producers and successors: A(i) -> (i even) ? B(i/2) : A(i+1);
// B(j) -> A(2j+1). A adds 1, B adds 10.
TEST_P(Graph, Guards) {
  const int ranks = world_size(), n = 9;
  std::atomic<std::int64_t> last{0};
  rt::TaskGraph g;
  auto& a = g.task_class("A");
  auto& b = g.task_class("B");
  a.param("i", 0, n - 1).affinity([=](P p) { return static_cast<int>(p[0] % ranks); });
  a.flow("v")
      .in([](P p) { return p[0] > 0 && (p[0] - 1) % 2 == 0; },
          rt::from(b, "v", [](P p) { return Targets{(p[0] - 1) / 2}; }))
      .in([](P p) { return p[0] > 0; }, rt::from(a, "v", [](P p) { return Targets{p[0] - 1}; }))
      .out([=](P p) { return p[0] % 2 == 0 && p[0] < n - 1; },
           rt::to(b, "v", [](P p) { return Targets{p[0] / 2}; }))
      .out([=](P p) { return p[0] % 2 == 1 && p[0] < n - 1; },
           rt::to(a, "v", [](P p) { return Targets{p[0] + 1}; }));
  a.body([&](rt::TaskContext& c) {
    if (c[0] == 0) *c.allocate("v", 8).as<std::int64_t>() = 0;
    *c.as<std::int64_t>("v") += 1;
    if (c[0] == n - 1) last = *c.as<std::int64_t>("v");
  });
  b.param("j", 0, (n - 2) / 2).affinity([=](P p) { return static_cast<int>((p[0] + 1) % ranks); });
  b.flow("v")
      .in(rt::from(a, "v", [](P p) { return Targets{2 * p[0]}; }))
      .out(rt::to(a, "v", [](P p) { return Targets{2 * p[0] + 1}; }));
  b.body([](rt::TaskContext& c) { *c.as<std::int64_t>("v") += 10; });
  rt::run(g, MPI_COMM_WORLD, options_of(GetParam()));
  EXPECT_EQ(sum_all(last), n + 10 * ((n - 2) / 2 + 1));
}

// Control dependencies order tasks without data: S(i) after S(i-1) on other ranks,
// and Final after all S (a control IN from a range of producers).
TEST_P(Graph, ControlDependencies) {
  const int ranks = world_size(), n = 10;
  auto now = [] {
    return static_cast<double>(std::chrono::steady_clock::now().time_since_epoch().count());
  };
  std::vector<double> stamp(n + 1, 0.0), all(n + 1, 0.0);
  rt::TaskGraph g;
  auto& s = g.task_class("S");
  auto& fin = g.task_class("Final");
  s.param("i", 0, n - 1).affinity([=](P p) { return static_cast<int>((n - p[0]) % ranks); });
  s.control("order")
      .in([](P p) { return p[0] > 0; }, rt::from(s, "order", [](P p) { return Targets{p[0] - 1}; }))
      .out([=](P p) { return p[0] < n - 1; }, rt::to(s, "order", [](P p) { return Targets{p[0] + 1}; }));
  s.control("done").out(rt::to(fin, "all", [](P) { return Targets{}; }));
  s.body([&](rt::TaskContext& c) { stamp[c[0]] = now(); });
  fin.affinity([](P) { return 0; });
  fin.control("all").in(rt::from(s, "done", [=](P) { return Targets{{0, n - 1}}; }));
  fin.body([&](rt::TaskContext&) { stamp[n] = now(); });
  rt::run(g, MPI_COMM_WORLD, options_of(GetParam()));
  MPI_Allreduce(stamp.data(), all.data(), n + 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  for (int i = 1; i < n; ++i) EXPECT_LT(all[i - 1], all[i]) << "S(" << i << ") ran too early";
  for (int i = 0; i < n; ++i) EXPECT_LT(all[i], all[n]) << "Final ran before S(" << i << ")";
}

// Ready tasks run by priority (strictly with one worker thread).
TEST_P(Graph, Priorities) {
  const int n = 40;
  std::mutex m;
  std::vector<int> order;
  rt::TaskGraph g;
  auto& start = g.task_class("Start");
  auto& work = g.task_class("Work");
  start.affinity([](P) { return 0; });
  start.control("go").out(rt::to(work, "go", [=](P) { return Targets{{0, n - 1}}; }));
  start.body([](rt::TaskContext&) {});
  work.param("i", 0, n - 1).affinity([](P) { return 0; }).priority([](P p) {
    return static_cast<int>((p[0] * 17) % 23);
  });
  work.control("go").in(rt::from(start, "go", [](P) { return Targets{}; }));
  work.body([&](rt::TaskContext& c) {
    std::lock_guard lock(m);
    order.push_back(static_cast<int>((c[0] * 17) % 23));
  });
  rt::run(g, MPI_COMM_WORLD, options_of(GetParam()));
  if (world_rank() == 0) {
    ASSERT_EQ(order.size(), static_cast<std::size_t>(n));
    if (std::get<0>(GetParam()) == 1) {
      for (int i = 1; i < n; ++i) EXPECT_GE(order[i - 1], order[i]);
    }
  }
}

// Every task on the last rank: the other ranks have nothing to run and must not hang;
// with 3+ ranks a chain between ranks 0 and 1 leaves rank 2.. idle.
TEST_P(Graph, RanksWithoutTasks) {
  const int ranks = world_size(), n = 8;
  std::atomic<std::int64_t> ran{0};
  rt::TaskGraph g;
  auto& t = g.task_class("T");
  t.param("i", 0, n - 1).affinity([=](P p) { return ranks >= 3 ? static_cast<int>(p[0] % 2) : ranks - 1; });
  t.control("c")
      .in([](P p) { return p[0] > 0; }, rt::from(t, "c", [](P p) { return Targets{p[0] - 1}; }))
      .out([=](P p) { return p[0] < n - 1; }, rt::to(t, "c", [](P p) { return Targets{p[0] + 1}; }));
  t.body([&](rt::TaskContext&) { ++ran; });
  rt::Stats s = rt::run(g, MPI_COMM_WORLD, options_of(GetParam()));
  EXPECT_EQ(sum_all(ran), n);
  if (ranks >= 3 && world_rank() >= 2) {
    EXPECT_EQ(s.tasks, 0);
  }
  // An empty graph is a valid graph.
  rt::TaskGraph empty;
  EXPECT_EQ(rt::run(empty, MPI_COMM_WORLD, options_of(GetParam())).tasks, 0);
}

// Tasks without task inputs, enumerated by the workers together (chunks of a
// shared walk): every point of dependent, partly empty ranges runs exactly once on
// its rank, with a parameterless class and classes with and without priorities.
// With one worker, startup tasks run strictly by priority (no priority = 0).
TEST_P(Graph, StartupTasks) {
  const int ranks = world_size(), n = 40;
  std::vector<std::atomic<int>> runs(n * n * n + 200);
  std::mutex m;
  std::vector<int> order;  // priorities in run order on rank 0
  auto record = [&](int prio) {
    std::lock_guard lock(m);
    order.push_back(prio);
  };
  rt::TaskGraph g;
  auto& a = g.task_class("A");  // i = 0..n-1, j = 0..i-1 (empty for i = 0), k = j..j+i%3
  a.param("i", 0, n - 1)
      .param("j", 0, [](P p) { return p[0] - 1; })
      .param("k", [](P p) { return p[1]; }, [](P p) { return p[1] + p[0] % 3; })
      .affinity([=](P p) { return static_cast<int>((p[0] + p[1] + p[2]) % ranks); });
  a.body([&](rt::TaskContext& c) {
    ++runs[(c[0] * n + c[1]) * n + c[2]];
    record(0);
  });
  auto& b = g.task_class("B");  // no parameters: one task
  b.affinity([=](P) { return ranks - 1; });
  b.body([&](rt::TaskContext&) {
    ++runs[n * n * n];
    record(0);
  });
  auto& c = g.task_class("C");  // priorities -3..3 around the 0 of A and B
  c.param("i", 0, 99).affinity([=](P p) { return static_cast<int>(p[0] % ranks); }).priority([](P p) {
    return static_cast<int>(p[0] * 5 % 7) - 3;
  });
  c.body([&](rt::TaskContext& ctx) {
    ++runs[n * n * n + 1 + ctx[0]];
    record(static_cast<int>(ctx[0] * 5 % 7) - 3);
  });
  auto& d = g.task_class("D");  // every row empty: no task
  d.param("i", 0, 9).param("j", [](P p) { return p[0] + 1; }, [](P p) { return p[0]; });
  d.affinity([](P) { return 0; }).body([](rt::TaskContext&) { ADD_FAILURE() << "D has no task"; });

  rt::Stats s = rt::run(g, MPI_COMM_WORLD, options_of(GetParam()));
  std::int64_t expected = 0, wrong = 0;
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < i; ++j)
      for (std::int64_t k = j; k <= j + i % 3; ++k) {
        bool mine = (i + j + k) % ranks == world_rank();
        expected += mine;
        wrong += runs[(i * n + j) * n + k] != (mine ? 1 : 0);
      }
  expected += world_rank() == ranks - 1;
  wrong += runs[n * n * n] != (world_rank() == ranks - 1 ? 1 : 0);
  for (int i = 0; i < 100; ++i) {
    bool mine = i % ranks == world_rank();
    expected += mine;
    wrong += runs[n * n * n + 1 + i] != (mine ? 1 : 0);
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(s.tasks, expected);
  if (std::get<0>(GetParam()) == 1) {
    for (std::size_t i = 1; i < order.size(); ++i) EXPECT_GE(order[i - 1], order[i]) << "at " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Runtime, Graph, RUNTIME_CONFIGS);
