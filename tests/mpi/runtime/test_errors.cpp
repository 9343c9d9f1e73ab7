// Errors end the run with the same message on every rank, never a hang (issue 4,
// item 5): an exception in a body, invalid graphs; the runtime stays usable after.
#include <atomic>
#include <stdexcept>

#include "redist/error.hpp"
#include "test_util.hpp"

using rt::P;
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
  t.param("i", 0, n - 1).affinity([=](P p) { return static_cast<int>(p[0] % ranks); });
  t.flow("x")
      .in([](P p) { return p[0] > 0; }, rt::from(t, "x", [](P p) { return Targets{p[0] - 1}; }))
      .out([=](P p) { return p[0] < n - 1; }, rt::to(t, "x", [](P p) { return Targets{p[0] + 1}; }));
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
  chain(g, n).body([](rt::TaskContext& c) {
    if (c[0] == 0) c.allocate("x", 8);
    if (c[0] == 5) throw std::runtime_error("boom");
  });
  std::string msg = run_expecting_error(g, options_of(GetParam()));
  expect_same_error(msg, "task T(5) on rank " + std::to_string(5 % world_size()) + " failed: boom");
}

TEST_P(Errors, InputNobodyProduces) {
  rt::TaskGraph g;
  auto& a = g.task_class("A");
  auto& b = g.task_class("B");
  a.param("i", 0, 3).affinity([](P p) { return static_cast<int>(p[0] % world_size()); });
  a.flow("x").out(rt::to(b, "x", [](P p) { return Targets{p[0]}; }));
  a.body([](rt::TaskContext&) {});
  b.param("i", 0, 4).affinity([](P p) { return static_cast<int>(p[0] % world_size()); });
  b.flow("x").in(rt::from(a, "x", [](P p) { return Targets{p[0]}; }));  // A(4) does not exist
  b.body([](rt::TaskContext&) {});
  std::string msg = run_expecting_error(g, options_of(GetParam()));
  expect_same_error(msg, "invalid task graph: input B(4).x comes from A(4), which is outside");
}

TEST_P(Errors, OutputNobodyExpects) {
  rt::TaskGraph g;
  auto& a = g.task_class("A");
  auto& b = g.task_class("B");
  a.affinity([](P) { return 0; });
  a.flow("x").out(rt::to(b, "x", [](P) { return Targets{}; }));
  a.body([](rt::TaskContext&) {});
  b.affinity([](P) { return world_size() - 1; });
  b.flow("x");  // no IN: B would never count A's output
  b.body([](rt::TaskContext&) {});
  std::string msg = run_expecting_error(g, options_of(GetParam()));
  expect_same_error(msg, "output A().x goes to B().x, whose input does not come from it");
}

TEST_P(Errors, AffinityOutsideCommunicator) {
  rt::TaskGraph g;
  auto& a = g.task_class("A");
  a.param("i", 0, 3).affinity([](P p) { return static_cast<int>(p[0] == 2 ? world_size() : 0); });
  a.body([](rt::TaskContext&) {});
  std::string msg = run_expecting_error(g, options_of(GetParam()));
  expect_same_error(msg, "affinity of A(2) is rank " + std::to_string(world_size()) +
                             ", outside the communicator");
}

TEST_P(Errors, UnknownFlowName) {
  rt::TaskGraph g;
  auto& a = g.task_class("A");
  a.affinity([](P) { return 0; });
  a.flow("x").out(rt::to(a, "y", [](P) { return Targets{}; }));
  a.body([](rt::TaskContext&) {});
  std::string msg = run_expecting_error(g, options_of(GetParam()));
  expect_same_error(msg, "has no such flow");
}

// After failed runs the runtime is usable again (private communicator per run).
TEST_P(Errors, UsableAfterError) {
  const int n = 10;
  std::atomic<int> ran{0};
  rt::TaskGraph g;
  chain(g, n).body([&](rt::TaskContext& c) {
    if (c[0] == 0) c.allocate("x", 100000);  // rendezvous transfers in flight
    ++ran;
  });
  rt::run(g, MPI_COMM_WORLD, options_of(GetParam()));
  EXPECT_EQ(sum_all(ran), n);
}

INSTANTIATE_TEST_SUITE_P(Runtime, Errors, RUNTIME_CONFIGS);
