// Errors end the run with the same message on every rank, never a hang (issue 4,
// item 5): an exception in a body, invalid graphs; the runtime stays usable after.
#include <atomic>
#include <stdexcept>
#include <vector>

#include "redist/error.hpp"
#include "test_util.hpp"

using rt::Targets;

class Errors : public ::testing::TestWithParam<Config> {};

namespace {
// Runs `g` expecting redist::Error; returns its message ("" if none was thrown).
std::string run_expecting_error(rt::TaskGraph& g, const rt::Options& o) {
  try {
    rt::run(g, MPI_COMM_WORLD, o);
  } catch (const redist::Error& e) {
    return e.what();
  }
  return {};
}

// A chain across ranks, so that ranks wait on each other when one fails.
rt::TaskClass& chain(rt::TaskGraph& g, int n) {
  const int ranks = world_size();
  auto& t = g.task_class("T");
  t.param("i", 0, n - 1).affinity([=](auto i) { return i % ranks; });
  t.flow("x")
      .in_if([](auto i) { return i > 0; }, rt::from(t, "x", [](auto i) { return Targets{i - 1}; }))
      .out_if([=](auto i) { return i < n - 1; }, rt::to(t, "x", [](auto i) { return Targets{i + 1}; }));
  return t;
}

void expect_same_error(const std::string& msg, const std::string& part) {
  EXPECT_NE(msg.find(part), std::string::npos) << "message: " << msg;
  EXPECT_TRUE(same_on_all(msg)) << "message differs between ranks: " << msg;
}
}  // namespace

TEST_P(Errors, ExceptionInBody) {
  const int n = 12;
  rt::TaskGraph g;
  chain(g, n).body([](rt::TaskContext& c, auto i) {
    if (i == 0) c.allocate("x", 8);
    if (i == 5) throw std::runtime_error("boom");
  });
  std::string msg = run_expecting_error(g, options_of(GetParam()));
  expect_same_error(msg, "redist: rank " + std::to_string(5 % world_size()) + ": task T(5) failed: boom");
}

TEST_P(Errors, InputNobodyProduces) {
  rt::TaskGraph g;
  auto& a = g.task_class("A");
  auto& b = g.task_class("B");
  a.param("i", 0, 3).affinity([](auto i) { return i % world_size(); });
  a.flow("x").out(rt::to(b, "x", [](auto i) { return Targets{i}; }));
  a.body([](rt::TaskContext&) {});
  b.param("i", 0, 4).affinity([](auto i) { return i % world_size(); });
  b.flow("x").in(rt::from(a, "x", [](auto i) { return Targets{i}; }));  // A(4) does not exist
  b.body([](rt::TaskContext&) {});
  std::string msg = run_expecting_error(g, options_of(GetParam()));
  expect_same_error(msg, "invalid task graph: input B(4).x comes from A(4), which is outside");
}

TEST_P(Errors, OutputNobodyExpects) {
  rt::TaskGraph g;
  auto& a = g.task_class("A");
  auto& b = g.task_class("B");
  a.affinity([] { return 0; });
  a.flow("x").out(rt::to(b, "x", [] { return Targets{}; }));
  a.body([](rt::TaskContext&) {});
  b.affinity([] { return world_size() - 1; });
  b.flow("x");  // no IN: B would never count A's output
  b.body([](rt::TaskContext&) {});
  std::string msg = run_expecting_error(g, options_of(GetParam()));
  expect_same_error(msg, "output A().x goes to B().x, whose input does not come from it");
}

// A cycle: every edge consistent both ways, but T(k) waits on T(k+1), ..., on
// itself: no task could ever run (it used to wait forever). Named task by task,
// producer first, across ranks; a second class hanging off the cycle is counted.
TEST_P(Errors, CycleOfDependencies) {
  const int n = 7, ranks = world_size();
  rt::TaskGraph g;
  auto& t = g.task_class("T");
  auto& u = g.task_class("U");
  t.param("k", 0, n - 1).affinity([=](auto k) { return k % ranks; });
  t.flow("x")
      .in(rt::from(t, "x", [=](auto k) { return Targets{(k + 1) % n}; }))
      .out(rt::to(t, "x", [=](auto k) { return Targets{(k - 1 + n) % n}; }));
  t.flow("y").out_if([](auto k) { return k == 3; }, rt::to(u, "y", [](auto) { return Targets{}; }));
  t.body([](rt::TaskContext&, auto) {});
  u.affinity([=] { return ranks - 1; });
  u.flow("y").in(rt::from(t, "y", [] { return Targets{3}; }));
  u.body([](rt::TaskContext&) {});
  std::string msg = run_expecting_error(g, options_of(GetParam()));
  expect_same_error(msg, "invalid task graph: its dependencies form a cycle (T(0) -> T(6) -> T(5) -> T(4) -> T(3) -> "
                         "T(2) -> T(1) -> T(0)): 8 of its 8 tasks would wait forever");
  // Without validation the graph is not walked: nothing to check here (it would hang).
}

TEST_P(Errors, AffinityOutsideCommunicator) {
  rt::TaskGraph g;
  auto& a = g.task_class("A");
  a.param("i", 0, 3).affinity([](auto i) { return i == 2 ? world_size() : 0; });
  a.body([](rt::TaskContext&) {});
  std::string msg = run_expecting_error(g, options_of(GetParam()));
  expect_same_error(msg, "affinity of A(2) is rank " + std::to_string(world_size()) +
                             ", outside the communicator");
}

TEST_P(Errors, UnknownFlowName) {
  rt::TaskGraph g;
  auto& a = g.task_class("A");
  a.affinity([] { return 0; });
  a.flow("x").out(rt::to(a, "y", [] { return Targets{}; }));
  a.body([](rt::TaskContext&) {});
  std::string msg = run_expecting_error(g, options_of(GetParam()));
  expect_same_error(msg, "has no such flow");
}

// A landing (Flow::lands) of another size than the data its producer sends, on
// the consumer's rank: the user's mistake named there, the same message on every
// rank (it said "internal error"), eager and rendezvous sizes both.
TEST_P(Errors, LandingOfAnotherSize) {
  if (world_size() < 2) GTEST_SKIP() << "a landing receives from another rank";
  const int last = world_size() - 1;
  for (const std::size_t sent : {std::size_t{500}, std::size_t{50000}}) {
    SCOPED_TRACE(sent);
    static std::vector<std::byte> land(100);
    rt::TaskGraph g;
    auto& a = g.task_class("A");
    auto& b = g.task_class("B");
    a.affinity([] { return 0; });
    a.flow("x").out(rt::to(b, "x", [] { return Targets{}; })).lands([] { return rt::Data::wrap(land.data(), 100); });
    a.body([sent](rt::TaskContext& c) { c.allocate("x", sent); });
    b.affinity([last] { return last; });
    b.flow("x", rt::Access::read).in(rt::from(a, "x", [] { return Targets{}; }));
    b.body([](rt::TaskContext&) {});
    std::string msg = run_expecting_error(g, options_of(GetParam()));
    expect_same_error(msg, "A().x sends " + std::to_string(sent) + " bytes, its landing (.lands(), on the "
                           "receiving rank) holds 100: a landing must have the size of the data its producer sends");
    EXPECT_EQ(msg.find("internal error"), std::string::npos) << msg;
  }
}

// A function of more parameters than its task has (it would read unused slots).
TEST_P(Errors, TooManyParameters) {
  {
    rt::TaskGraph g;
    auto& a = g.task_class("A");
    a.param("i", 0, 3).affinity([](auto i, auto j) { return (i + j) % world_size(); });
    a.body([](rt::TaskContext&) {});
    expect_same_error(run_expecting_error(g, options_of(GetParam())),
                      "invalid task graph: the affinity of A takes 2 parameters, but A has 1");
  }
  {
    rt::TaskGraph g;
    auto& a = g.task_class("A");
    a.param("i", 0, 3).param("j", 0, [](auto /*i*/, auto j) { return j; }).affinity([] { return 0; });
    a.body([](rt::TaskContext&) {});
    expect_same_error(run_expecting_error(g, options_of(GetParam())),
                      "the upper bound of A.j takes 2 parameters, but only the 1 before it are known");
  }
  {
    rt::TaskGraph g;
    auto& a = g.task_class("A");
    a.param("i", 0, 3).affinity([] { return 0; });
    a.control("c").in_if([](auto i, auto /*j*/) { return i > 0; },
                         rt::from(a, "c", [](auto i) { return Targets{i - 1}; }));
    a.body([](rt::TaskContext&) {});
    expect_same_error(run_expecting_error(g, options_of(GetParam())),
                      "the condition of an input of A.c takes 2 parameters, but A has 1");
  }
  {
    rt::TaskGraph g;
    auto& a = g.task_class("A");
    a.param("i", 0, 3).affinity([] { return 0; });
    a.body([](rt::TaskContext&, auto, auto) {});
    expect_same_error(run_expecting_error(g, options_of(GetParam())),
                      "the body of A takes 2 parameters, but A has 1");
  }
}

// After failed runs the runtime is usable again (private communicator per run).
TEST_P(Errors, UsableAfterError) {
  const int n = 10;
  std::atomic<int> ran{0};
  rt::TaskGraph g;
  chain(g, n).body([&](rt::TaskContext& c, auto i) {
    if (i == 0) c.allocate("x", 100000);  // rendezvous transfers in flight
    ++ran;
  });
  rt::run(g, MPI_COMM_WORLD, options_of(GetParam()));
  EXPECT_EQ(sum_all(ran), n);
}

INSTANTIATE_TEST_SUITE_P(Runtime, Errors, RUNTIME_CONFIGS);
