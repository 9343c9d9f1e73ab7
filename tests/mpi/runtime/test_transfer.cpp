// Remote data: payloads on both sides of the eager threshold, sizes decided at run
// time, coalesced activations, one transfer shared by several local consumers, the
// bound on concurrent rendezvous transfers.
#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "test_util.hpp"

using rt::Targets;

class Transfer : public ::testing::TestWithParam<Config> {};

namespace {
constexpr std::size_t kEager = 4096;

unsigned char pattern(std::int64_t hop, std::size_t j) {
  return static_cast<unsigned char>((j * 7 + static_cast<std::size_t>(hop) * 13) & 0xff);
}
void fill(rt::Data& d, std::int64_t hop) {
  for (std::size_t j = 0; j < d.size(); ++j) d.as<unsigned char>()[j] = pattern(hop, j);
}
bool check(const rt::Data& d, std::int64_t hop) {
  for (std::size_t j = 0; j < d.size(); ++j)
    if (d.as<unsigned char>()[j] != pattern(hop, j)) return false;
  return true;
}
}  // namespace

// Hop(i) -> Hop(i+1) around the ranks with payloads from 0 B to 200 KB.
TEST_P(Transfer, PayloadsAroundEagerLimit) {
  const int ranks = world_size(), n = 6;
  for (bool push : {false, true}) {
    for (std::size_t size : {std::size_t{0}, std::size_t{8}, std::size_t{1000}, kEager, kEager + 1,
                             std::size_t{200000}}) {
      std::atomic<int> bad{0};
      rt::TaskGraph g;
      auto& hop = g.task_class("Hop");
      hop.param("i", 0, n - 1).affinity([=](auto i) { return i % ranks; });
      hop.flow("x")
          .in_if([](auto i) { return i > 0; }, rt::from(hop, "x", [](auto i) { return Targets{i - 1}; }))
          .out_if([=](auto i) { return i < n - 1; }, rt::to(hop, "x", [](auto i) { return Targets{i + 1}; }));
      hop.body([&](rt::TaskContext& c, auto i) {
        if (i == 0) c.allocate("x", size);
        rt::Data& d = c.data("x");
        if (d.size() != size || (i > 0 && !check(d, i - 1))) ++bad;
        fill(d, i);
      });
      rt::Options o = options_of(GetParam());
      o.eager_limit = kEager;
      o.push = push;
      rt::Stats s = rt::run(g, MPI_COMM_WORLD, o);
      EXPECT_EQ(sum_all(bad), 0) << "payload of " << size << " bytes" << (push ? ", pushed" : "");
      if (ranks > 1) {
        std::int64_t eager = sum_all(s.eager_bytes), rdv = sum_all(s.rendezvous_bytes);
        EXPECT_EQ(eager, size <= kEager ? static_cast<std::int64_t>(size * (n - 1)) : 0);
        EXPECT_EQ(rdv, size > kEager ? static_cast<std::int64_t>(size * (n - 1)) : 0);
        // Pushed: the producer sends unasked, nobody sends GET.
        EXPECT_EQ(sum_all(s.gets_sent), size > kEager && !push ? n - 1 : 0);
      }
    }
  }
}

// Activations of 3.8-4.1 KB (payloads piggybacked) between every pair of
// neighbouring ranks at once, both ways: around Open MPI's shared-memory eager
// limit, which counts its headers. A control message sent with a blocking
// MPI_Send that MPI takes by rendezvous left two ranks each waiting in MPI_Send
// for a receive the other would never post (hung with the 4,096-byte threshold).
TEST_P(Transfer, ActivationsAtMpisEagerLimitBothWays) {
  const int ranks = world_size(), n = 64 * ranks;
  for (std::size_t size = 3736; size <= 4040; size += 8) {
    std::atomic<int> bad{0};
    rt::TaskGraph g;
    auto& prod = g.task_class("Producer");
    auto& cons = g.task_class("Consumer");
    prod.param("i", 0, n - 1).affinity([=](auto i) { return i % ranks; });
    prod.flow("out").out(rt::to(cons, "in", [](auto i) { return Targets{i}; }));
    prod.body([&](rt::TaskContext& c, auto i) { fill(c.allocate("out", size), i); });
    cons.param("i", 0, n - 1).affinity([=](auto i) { return (i + 1) % ranks; });
    cons.flow("in", rt::Access::read).in(rt::from(prod, "out", [](auto i) { return Targets{i}; }));
    cons.body([&](rt::TaskContext& c, auto i) {
      if (c.data("in").size() != size || !check(c.data("in"), i)) ++bad;
    });
    rt::Options o = options_of(GetParam());
    o.eager_limit = 8192;  // piggybacked: the activation carries the payload
    rt::run(g, MPI_COMM_WORLD, o);
    EXPECT_EQ(sum_all(bad), 0) << "payload of " << size << " bytes";
  }
}

// Producer(i) decides its output size at run time (allocate, or shrink with set_size).
TEST_P(Transfer, DynamicSizes) {
  const int ranks = world_size(), n = 12;
  std::atomic<int> bad{0}, seen{0};
  auto size_of = [](std::int64_t i) { return static_cast<std::size_t>(i * i * 97 + 3); };
  rt::TaskGraph g;
  auto& prod = g.task_class("Producer");
  auto& cons = g.task_class("Consumer");
  prod.param("i", 0, n - 1).affinity([=](auto i) { return i % ranks; });
  prod.flow("out").out(rt::to(cons, "in", [](auto i) { return Targets{i}; }));
  prod.body([&](rt::TaskContext& c, auto i) {
    if (i % 2) {
      c.allocate("out", size_of(i) + 5000).set_size(size_of(i));  // shrink
    } else {
      c.allocate("out", size_of(i));
    }
    fill(c.data("out"), i);
  });
  cons.param("i", 0, n - 1).affinity([=](auto i) { return (i + 1) % ranks; });
  cons.flow("in", rt::Access::read).in(rt::from(prod, "out", [](auto i) { return Targets{i}; }));
  cons.body([&](rt::TaskContext& c, auto i) {
    ++seen;
    if (c.data("in").size() != size_of(i) || !check(c.data("in"), i)) ++bad;
  });
  rt::Options o = options_of(GetParam());
  o.eager_limit = kEager;
  rt::run(g, MPI_COMM_WORLD, o);
  EXPECT_EQ(sum_all(seen), n);
  EXPECT_EQ(sum_all(bad), 0);
}

// Two flows of one producer to one remote rank travel in one activation; a payload
// needed by many tasks of one rank is transferred once.
TEST_P(Transfer, CoalescedAndShared) {
  const int ranks = world_size(), n = 5, consumers = 6;
  const std::size_t big = 3 * kEager;
  for (bool push : {false, true}) {
    std::atomic<int> bad{0};
    rt::TaskGraph g;
    auto& prod = g.task_class("Prod");
    auto& cons = g.task_class("Cons");
    prod.param("i", 0, n - 1).affinity([] { return 0; });
    prod.flow("a").out(rt::to(cons, "a", [=](auto i) { return Targets{i, {0, consumers - 1}}; }));
    prod.flow("b").out(rt::to(cons, "b", [=](auto i) { return Targets{i, {0, consumers - 1}}; }));
    prod.body([&](rt::TaskContext& c, auto i) {
      fill(c.allocate("a", 16), i);
      fill(c.allocate("b", big), i + 1);
    });
    cons.param("i", 0, n - 1).param("j", 0, consumers - 1).affinity([=] { return ranks - 1; });
    cons.flow("a", rt::Access::read).in(rt::from(prod, "a", [](auto i) { return Targets{i}; }));
    cons.flow("b", rt::Access::read).in(rt::from(prod, "b", [](auto i) { return Targets{i}; }));
    cons.body([&](rt::TaskContext& c, auto i) {
      if (!check(c.data("a"), i) || c.data("b").size() != big || !check(c.data("b"), i + 1)) ++bad;
    });
    rt::Options o = options_of(GetParam());
    o.eager_limit = kEager;
    o.push = push;
    rt::Stats s = rt::run(g, MPI_COMM_WORLD, o);
    EXPECT_EQ(sum_all(bad), 0) << (push ? "pushed" : "");
    if (ranks > 1 && world_rank() == 0) {
      EXPECT_EQ(s.activations_sent, n);
      EXPECT_EQ(s.rendezvous_bytes, static_cast<std::int64_t>(n * big));
      EXPECT_EQ(s.eager_bytes, 16 * n);
    }
    if (ranks > 1 && world_rank() == ranks - 1) {
      EXPECT_EQ(s.gets_sent, push ? 0 : n);  // one transfer each
    }
  }
}

// Many large payloads at once: P(i) sends 8 rendezvous flows in one activation to
// C(i) on the next rank. At most max_rendezvous receives are in flight per rank
// (counted by the comm layer); without a bound the 8 flows of one activation are all
// posted at once. Every payload arrives intact.
TEST_P(Transfer, BoundedRendezvous) {
  const int ranks = world_size(), n = 6, flows = 8;
  auto size_of = [](std::int64_t i, int f) { return static_cast<std::size_t>(20000 + 37 * i + f); };
  std::vector<std::string> names;
  for (int f = 0; f < flows; ++f) names.push_back(std::string(1, 'f') += static_cast<char>('0' + f));
  for (bool push : {false, true}) {
    for (int bound : {1, 3, 0}) {
      std::atomic<int> bad{0}, seen{0};
      rt::TaskGraph g;
      auto& prod = g.task_class("P");
      auto& cons = g.task_class("C");
      prod.param("i", 0, n - 1).affinity([=](auto i) { return i % ranks; });
      cons.param("i", 0, n - 1).affinity([=](auto i) { return (i + 1) % ranks; });
      for (const std::string& name : names) {
        prod.flow(name).out(rt::to(cons, name, [](auto i) { return Targets{i}; }));
        cons.flow(name, rt::Access::read).in(rt::from(prod, name, [](auto i) { return Targets{i}; }));
      }
      prod.body([&](rt::TaskContext& c, auto i) {
        for (int f = 0; f < flows; ++f) fill(c.allocate(names[f], size_of(i, f)), i * flows + f);
      });
      cons.body([&](rt::TaskContext& c, auto i) {
        ++seen;
        for (int f = 0; f < flows; ++f) {
          const rt::Data& d = c.data(names[f]);
          if (d.size() != size_of(i, f) || !check(d, i * flows + f)) ++bad;
        }
      });
      rt::Options o = options_of(GetParam());
      o.eager_limit = kEager;
      o.max_rendezvous = bound;
      o.push = push;
      rt::Stats s = rt::run(g, MPI_COMM_WORLD, o);
      EXPECT_EQ(sum_all(seen), n);
      EXPECT_EQ(sum_all(bad), 0) << "bound " << bound << (push ? ", pushed" : "");
      std::int64_t peak = 0;
      MPI_Allreduce(&s.rendezvous_peak, &peak, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
      if (ranks == 1) {
        EXPECT_EQ(peak, 0);
      } else if (bound > 0) {
        EXPECT_EQ(peak, bound);  // one activation brings 8: the first `bound` start at once
      } else {
        EXPECT_GE(peak, flows);
      }
    }
  }
}

TEST(TransferOptions, NegativeBoundRejectedOnEveryRank) {
  rt::TaskGraph g;
  g.task_class("T").affinity([] { return 0; }).body([](rt::TaskContext&) {});
  rt::Options o;
  o.max_rendezvous = -1;
  std::string msg;
  try {
    rt::run(g, MPI_COMM_WORLD, o);
  } catch (const redist::Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("options.max_rendezvous must be >= 0, got -1"), std::string::npos) << msg;
  EXPECT_TRUE(same_on_all(msg));
}

INSTANTIATE_TEST_SUITE_P(Runtime, Transfer, RUNTIME_CONFIGS);
