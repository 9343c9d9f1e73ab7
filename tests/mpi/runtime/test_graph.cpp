// Graph shapes on 1-4 ranks: chains, fan-out and fan-in, nested ranges, guards,
// control dependencies, priorities, ranks without tasks, the placeholder slot.
#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "test_util.hpp"

using rt::Targets;

class Graph : public ::testing::TestWithParam<Config> {};

// T(i) -> T(i+1), consecutive tasks on consecutive ranks: every edge is remote.
TEST_P(Graph, ChainAcrossRanks) {
  const int ranks = world_size(), n = 24;
  std::atomic<std::int64_t> ran{0}, last{0};
  rt::TaskGraph g;
  auto& t = g.task_class("T");
  t.param("i", 0, n - 1).affinity([=](auto i) { return i % ranks; });
  t.flow("x")
      .in_if([](auto i) { return i > 0; }, rt::from(t, "x", [](auto i) { return Targets{i - 1}; }))
      .out_if([=](auto i) { return i < n - 1; }, rt::to(t, "x", [](auto i) { return Targets{i + 1}; }));
  t.body([&](rt::TaskContext& c, auto i) {
    if (i == 0) *static_cast<std::int64_t*>(static_cast<void*>(c.allocate("x", 8).bytes())) = 0;
    auto* v = c.as<std::int64_t>("x");
    EXPECT_EQ(*v, i);
    *v += 1;
    ++ran;
    if (i == n - 1) last = *v;
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
  source.affinity([] { return 0; });
  source.flow("v").out(rt::to(work, "v", [=] { return Targets{{0, n - 1}}; }));
  source.body([](rt::TaskContext& c) { *c.allocate("v", 8).as<std::int64_t>() = 42; });
  work.param("i", 0, n - 1).affinity([=](auto i) { return i % ranks; });
  work.flow("v", rt::Access::read).in(rt::from(source, "v", [] { return Targets{}; }));
  auto r = work.flow("r");
  for (int w = 0; w < n; ++w) {
    std::string in = "in" + std::to_string(w);
    r.out_if([=](auto i) { return i == w; }, rt::to(sinkc, in, [] { return Targets{}; }));
    sinkc.flow(in, rt::Access::read).in(rt::from(work, "r", [=] { return Targets{w}; }));
  }
  work.body([](rt::TaskContext& c, auto i) {
    *c.allocate("r", 8).as<std::int64_t>() = *c.as<std::int64_t>("v") + i;
  });
  sinkc.affinity([=] { return ranks - 1; });
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
      .param("j", 0, [](auto i) { return i; })
      .affinity([=](auto i, auto j) { return (i + j) % ranks; });
  tri.control("row")
      .in_if([](auto /*i*/, auto j) { return j > 0; }, rt::from(tri, "row", [](auto i, auto j) { return Targets{i, j - 1}; }))
      .out_if([](auto i, auto j) { return j < i; }, rt::to(tri, "row", [](auto i, auto j) { return Targets{i, j + 1}; }));
  tri.body([&](rt::TaskContext&, auto i, auto j) {
    ++count;
    checksum += i * 100 + j;
  });
  auto& box = g.task_class("Box");
  box.param("i", 0, n - 1)
      .param("j", 0, [](auto i) { return i; })
      .param("k", [](auto /*i*/, auto j) { return j; }, [](auto i) { return i; })
      .affinity([=](auto i, auto /*j*/, auto k) { return (i * 3 + k) % ranks; });
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

// Guards choose between producers and successors, written as the JDF's ternaries:
// A(i) <- (i odd) ? B((i-1)/2) : (i > 0) ? A(i-1) : nothing,
// A(i) -> (i odd) ? A(i+1) : B(i/2);  B(j) -> (2j+1 < n) ? A(2j+1) : Sink.
// A adds 1, B adds 10; the chain ends in Sink.
TEST_P(Graph, Guards) {
  const int ranks = world_size(), n = 9;  // odd: the chain ends A(n-1) -> B((n-1)/2) -> Sink
  std::atomic<std::int64_t> last{0};
  rt::TaskGraph g;
  auto& a = g.task_class("A");
  auto& b = g.task_class("B");
  auto& sink = g.task_class("Sink");
  a.param("i", 0, n - 1).affinity([=](auto i) { return i % ranks; });
  a.flow("v")
      .in_if([](auto i) { return i % 2 == 1; }, rt::from(b, "v", [](auto i) { return Targets{(i - 1) / 2}; }))
      .in_if([](auto i) { return i > 0; }, rt::from(a, "v", [](auto i) { return Targets{i - 1}; }))
      .out_if([](auto i) { return i % 2 == 1; }, rt::to(a, "v", [](auto i) { return Targets{i + 1}; }))
      .otherwise(rt::to(b, "v", [](auto i) { return Targets{i / 2}; }));
  a.body([](rt::TaskContext& c, auto i) {
    if (i == 0) *c.allocate("v", 8).as<std::int64_t>() = 0;
    *c.as<std::int64_t>("v") += 1;
  });
  b.param("j", 0, (n - 1) / 2).affinity([=](auto j) { return (j + 1) % ranks; });
  b.flow("v")
      .in(rt::from(a, "v", [](auto j) { return Targets{2 * j}; }))
      .out_if([=](auto j) { return 2 * j + 1 < n; }, rt::to(a, "v", [](auto j) { return Targets{2 * j + 1}; }))
      .otherwise(rt::to(sink, "v", [] { return Targets{}; }));
  b.body([](rt::TaskContext& c) { *c.as<std::int64_t>("v") += 10; });
  sink.affinity([=] { return ranks - 1; });
  sink.flow("v", rt::Access::read).in(rt::from(b, "v", [=] { return Targets{(n - 1) / 2}; }));
  sink.body([&](rt::TaskContext& c) { last = *c.as<std::int64_t>("v"); });
  rt::run(g, MPI_COMM_WORLD, options_of(GetParam()));
  EXPECT_EQ(sum_all(last), n + 10 * ((n - 1) / 2 + 1));
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
  s.param("i", 0, n - 1).affinity([=](auto i) { return (n - i) % ranks; });
  s.control("order")
      .in_if([](auto i) { return i > 0; }, rt::from(s, "order", [](auto i) { return Targets{i - 1}; }))
      .out_if([=](auto i) { return i < n - 1; }, rt::to(s, "order", [](auto i) { return Targets{i + 1}; }));
  s.control("done").out(rt::to(fin, "all", [] { return Targets{}; }));
  s.body([&](rt::TaskContext&, auto i) { stamp[i] = now(); });
  fin.affinity([] { return 0; });
  fin.control("all").in(rt::from(s, "done", [=] { return Targets{{0, n - 1}}; }));
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
  start.affinity([] { return 0; });
  start.control("go").out(rt::to(work, "go", [=] { return Targets{{0, n - 1}}; }));
  start.body([](rt::TaskContext&) {});
  work.param("i", 0, n - 1).affinity([] { return 0; }).priority([](auto i) { return (i * 17) % 23; });
  work.control("go").in(rt::from(start, "go", [] { return Targets{}; }));
  work.body([&](rt::TaskContext&, auto i) {
    std::lock_guard lock(m);
    order.push_back(static_cast<int>((i * 17) % 23));
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
  t.param("i", 0, n - 1).affinity([=](auto i) { return ranks >= 3 ? i % 2 : ranks - 1; });
  t.control("c")
      .in_if([](auto i) { return i > 0; }, rt::from(t, "c", [](auto i) { return Targets{i - 1}; }))
      .out_if([=](auto i) { return i < n - 1; }, rt::to(t, "c", [](auto i) { return Targets{i + 1}; }));
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
      .param("j", 0, [](auto i) { return i - 1; })
      .param("k", [](auto /*i*/, auto j) { return j; }, [](auto i, auto j) { return j + i % 3; })
      .affinity([=](auto i, auto j, auto k) { return (i + j + k) % ranks; });
  a.body([&](rt::TaskContext&, auto i, auto j, auto k) {
    ++runs[(i * n + j) * n + k];
    record(0);
  });
  auto& b = g.task_class("B");  // no parameters: one task
  b.affinity([=] { return ranks - 1; });
  b.body([&](rt::TaskContext&) {
    ++runs[n * n * n];
    record(0);
  });
  auto& c = g.task_class("C");  // priorities -3..3 around the 0 of A and B
  c.param("i", 0, 99).affinity([=](auto i) { return i % ranks; }).priority([](auto i) { return i * 5 % 7 - 3; });
  c.body([&](rt::TaskContext&, auto i) {
    ++runs[n * n * n + 1 + i];
    record(static_cast<int>(i * 5 % 7) - 3);
  });
  auto& d = g.task_class("D");  // every row empty: no task
  d.param("i", 0, 9).param("j", [](auto i) { return i + 1; }, [](auto i) { return i; });
  d.affinity([] { return 0; }).body([](rt::TaskContext&) { ADD_FAILURE() << "D has no task"; });

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

// The placeholder slot (paper 004, sec. III-B): C(r, k) -> C(r, k+1) on rank r, and
// C(r, k) -> S(r, k) (lower priority). The successor C(r, k+1) waits in the slot of
// the worker that ran C(r, k) and runs next on that thread, while the other worker
// may steal S; with one thread the C chain still runs before every S (priorities).
// With the slot off, no task is run from it.
TEST_P(Graph, PlaceholderKeepsChainOnItsThread) {
  const int ranks = world_size(), n = 60;
  for (bool slot : {true, false}) {
    std::mutex m;
    std::vector<int> thread_of(n, -1);
    std::vector<char> order;  // 'C' or 'S', in execution order on this rank
    rt::TaskGraph g;
    auto& c = g.task_class("C");
    auto& side = g.task_class("S");
    c.param("r", 0, ranks - 1).param("k", 0, n - 1).affinity([](auto r) { return r; });
    c.priority([](auto, auto) { return 1; });
    c.control("x")
        .in_if([](auto, auto k) { return k > 0; }, rt::from(c, "x", [](auto r, auto k) { return Targets{r, k - 1}; }))
        .out_if([=](auto, auto k) { return k < n - 1; }, rt::to(c, "x", [](auto r, auto k) { return Targets{r, k + 1}; }))
        .out(rt::to(side, "x", [](auto r, auto k) { return Targets{r, k}; }));
    c.body([&](rt::TaskContext& ctx, auto, auto k) {
      auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
      while (std::chrono::steady_clock::now() < until) {
      }
      std::lock_guard lock(m);
      thread_of[static_cast<std::size_t>(k)] = ctx.thread();
      order.push_back('C');
    });
    side.param("r", 0, ranks - 1).param("k", 0, n - 1).affinity([](auto r) { return r; });
    side.priority([](auto, auto) { return 0; });
    side.control("x").in(rt::from(c, "x", [](auto r, auto k) { return Targets{r, k}; }));
    side.body([&](rt::TaskContext&, auto, auto) {
      std::lock_guard lock(m);
      order.push_back('S');
    });
    rt::Options o = options_of(GetParam());
    o.placeholder = slot;
    rt::Stats s = rt::run(g, MPI_COMM_WORLD, o);
    ASSERT_EQ(order.size(), static_cast<std::size_t>(2 * n));
    if (slot) {
      // Every C(r, k > 0) from its predecessor's slot, and S(r, n-1), the one task
      // that C(r, n-1) enables.
      EXPECT_EQ(s.placeholder_hits, n);
      for (int k = 1; k < n; ++k) EXPECT_EQ(thread_of[k], thread_of[k - 1]) << "C(" << k << ")";
    } else {
      EXPECT_EQ(s.placeholder_hits, 0);
    }
    if (std::get<0>(GetParam()) == 1) {
      for (int i = 0; i < 2 * n; ++i) EXPECT_EQ(order[i], i < n ? 'C' : 'S') << "task " << i;
    }
  }
}

// Stats::busy_seconds: the time in task bodies, summed over the workers. Each
// rank runs n independent tasks of at least 1 ms (a spin): busy is at least n ms
// and at most the run's time x threads.
TEST_P(Graph, BusySecondsCountTaskBodies) {
  const int ranks = world_size(), n = 12;
  rt::TaskGraph g;
  auto& t = g.task_class("T");
  t.param("r", 0, ranks - 1).param("k", 0, n - 1).affinity([](auto r) { return r; });
  t.body([](rt::TaskContext&, auto, auto) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1);
    while (std::chrono::steady_clock::now() < until) {
    }
  });
  const rt::Options o = options_of(GetParam());
  const rt::Stats s = rt::run(g, MPI_COMM_WORLD, o);
  EXPECT_EQ(s.tasks, n);
  EXPECT_GE(s.busy_seconds, n * 1e-3);
  EXPECT_LE(s.busy_seconds, s.seconds * o.threads + 1e-6);
}

// A task waiting in the placeholder yields to a queued task of higher priority
// (one thread: strict order). X (priority 10) enables Y (priority 1); Z(0..2)
// (priority 5) are queued from the start: X, Z, Z, Z, Y.
TEST_P(Graph, PlaceholderYieldsToHigherPriority) {
  std::vector<char> order;
  std::mutex m;
  rt::TaskGraph g;
  auto& x = g.task_class("X");
  auto& y = g.task_class("Y");
  auto& z = g.task_class("Z");
  auto record = [&](char what) {
    std::lock_guard lock(m);
    order.push_back(what);
  };
  x.affinity([] { return 0; }).priority([] { return 10; });
  x.control("go").out(rt::to(y, "go", [] { return Targets{}; }));
  x.body([&](rt::TaskContext&) { record('X'); });
  y.affinity([] { return 0; }).priority([] { return 1; });
  y.control("go").in(rt::from(x, "go", [] { return Targets{}; }));
  y.body([&](rt::TaskContext&) { record('Y'); });
  z.param("i", 0, 2).affinity([](auto) { return 0; }).priority([](auto) { return 5; });
  z.body([&](rt::TaskContext&, auto) { record('Z'); });
  rt::run(g, MPI_COMM_WORLD, options_of(GetParam()));
  if (world_rank() == 0) {
    ASSERT_EQ(order.size(), 5u);
    if (std::get<0>(GetParam()) == 1) {
      EXPECT_EQ(std::string(order.begin(), order.end()), "XZZZY");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Runtime, Graph, RUNTIME_CONFIGS);
