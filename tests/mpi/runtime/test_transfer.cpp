// Remote data: payloads on both sides of the eager threshold, sizes decided at run
// time, coalesced activations, one transfer shared by several local consumers, the
// bound on concurrent rendezvous transfers, large payloads in pooled receive
// buffers and the buffer pool itself.
#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "test_util.hpp"

using rt::Targets;

class Transfer : public ::testing::TestWithParam<Config> {};

namespace {
constexpr std::size_t kEager = 4096;

// Byte j of a payload: (7 j + 13 hop) mod 256, which repeats every 256 bytes, so
// payloads are written and compared a period at a time (byte by byte, the large
// payloads took most of this test's minute under ThreadSanitizer).
constexpr std::size_t kPeriod = 256;
std::array<unsigned char, kPeriod> period(std::int64_t hop) {
  std::array<unsigned char, kPeriod> p{};
  for (std::size_t j = 0; j < kPeriod; ++j)
    p[j] = static_cast<unsigned char>((j * 7 + static_cast<std::size_t>(hop) * 13) & 0xff);
  return p;
}
void fill(rt::Data& d, std::int64_t hop) {
  const auto p = period(hop);
  for (std::size_t j = 0; j < d.size(); j += kPeriod)
    std::memcpy(d.as<unsigned char>() + j, p.data(), std::min(kPeriod, d.size() - j));
}
bool check(const rt::Data& d, std::int64_t hop) {
  const auto p = period(hop);
  for (std::size_t j = 0; j < d.size(); j += kPeriod)
    if (std::memcmp(d.as<unsigned char>() + j, p.data(), std::min(kPeriod, d.size() - j)) != 0) return false;
  return true;
}

// Flows "f0", "f1", ... (count < 10).
std::vector<std::string> flow_names(std::size_t count) {
  std::vector<std::string> names;
  for (std::size_t f = 0; f < count; ++f) names.push_back(std::string(1, 'f') += static_cast<char>('0' + f));
  return names;
}

// P(i) on rank i % ranks sends every flow of `names` to C(i) on the next rank,
// i in [0, n); the bodies are the caller's.
std::pair<rt::TaskClass&, rt::TaskClass&> to_next_rank(rt::TaskGraph& g, const std::vector<std::string>& names,
                                                       std::int64_t n, int ranks) {
  auto& prod = g.task_class("P");
  auto& cons = g.task_class("C");
  prod.param("i", 0, n - 1).affinity([=](auto i) { return i % ranks; });
  cons.param("i", 0, n - 1).affinity([=](auto i) { return (i + 1) % ranks; });
  for (const std::string& name : names) {
    prod.flow(name).out(rt::to(cons, name, [](auto i) { return Targets{i}; }));
    cons.flow(name, rt::Access::read).in(rt::from(prod, name, [](auto i) { return Targets{i}; }));
  }
  return {prod, cons};
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
    auto [prod, cons] = to_next_rank(g, {"f0"}, n, ranks);
    prod.body([&](rt::TaskContext& c, auto i) { fill(c.allocate("f0", size), i); });
    cons.body([&](rt::TaskContext& c, auto i) {
      if (c.data("f0").size() != size || !check(c.data("f0"), i)) ++bad;
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
  const std::vector<std::string> names = flow_names(flows);
  for (bool push : {false, true}) {
    for (int bound : {1, 3, 0}) {
      std::atomic<int> bad{0}, seen{0};
      rt::TaskGraph g;
      auto [prod, cons] = to_next_rank(g, names, n, ranks);
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

// Rendezvous payloads of 128 KB to 4 MB in eight of the buffer pool's power-of-two
// size classes (just below, at and above a class boundary), eight alive at once per
// consumer, each graph run twice in one process: the second run receives into
// buffers the first released to the pool (stale bytes of the first run's tags
// would fail the check).
TEST_P(Transfer, LargePayloadsInPooledBuffers) {
  const int ranks = world_size(), n = 4;
  constexpr std::size_t K = 1024;
  const std::vector<std::size_t> sizes = {128 * K + 1, 256 * K - 1, 256 * K, 256 * K + 1,
                                          1024 * K + 3, 2048 * K - 1, 2048 * K + 1, 4096 * K + 5};
  const std::vector<std::string> names = flow_names(sizes.size());
  for (bool push : {false, true}) {
    for (int round = 0; round < 2; ++round) {
      std::atomic<int> bad{0}, seen{0};
      rt::TaskGraph g;
      auto [prod, cons] = to_next_rank(g, names, n, ranks);
      const auto tag = [&](std::int64_t i, std::size_t f) {
        return static_cast<std::int64_t>(((round * 2 + push) * n + i) * 16 + static_cast<std::int64_t>(f));
      };
      prod.body([&](rt::TaskContext& c, auto i) {
        for (std::size_t f = 0; f < sizes.size(); ++f) fill(c.allocate(names[f], sizes[f]), tag(i, f));
      });
      cons.body([&](rt::TaskContext& c, auto i) {
        ++seen;
        for (std::size_t f = 0; f < sizes.size(); ++f) {
          const rt::Data& d = c.data(names[f]);
          if (d.size() != sizes[f] || d.capacity() < sizes[f] || !check(d, tag(i, f))) ++bad;
        }
      });
      rt::Options o = options_of(GetParam());
      o.push = push;
      rt::run(g, MPI_COMM_WORLD, o);
      EXPECT_EQ(sum_all(seen), n);
      EXPECT_EQ(sum_all(bad), 0) << "round " << round << (push ? ", pushed" : "");
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

namespace {
// 8-byte words from a hash of (tag, word index), so that every buffer's bytes
// differ from every other's; the last size % 8 bytes from the last word's hash.
std::uint64_t word_of(std::int64_t tag, std::size_t w) {
  std::uint64_t z = (static_cast<std::uint64_t>(tag) << 32) + w + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
void fill_words(rt::Data& d, std::int64_t tag) {
  const std::size_t words = d.size() / 8;
  for (std::size_t w = 0; w < words; ++w) {
    std::uint64_t v = word_of(tag, w);
    std::memcpy(d.bytes() + 8 * w, &v, 8);
  }
  std::uint64_t v = word_of(tag, words);
  std::memcpy(d.bytes() + 8 * words, &v, d.size() % 8);
}
bool check_words(const rt::Data& d, std::int64_t tag) {
  const std::size_t words = d.size() / 8;
  for (std::size_t w = 0; w < words; ++w) {
    std::uint64_t v = word_of(tag, w), got = 0;
    std::memcpy(&got, d.bytes() + 8 * w, 8);
    if (got != v) return false;
  }
  std::uint64_t v = word_of(tag, words);
  return std::memcmp(d.bytes() + 8 * words, &v, d.size() % 8) == 0;
}
}  // namespace

// The pool behind Data::allocate itself: buffers of every size class from 4 KB to
// 8 MiB, 2^c - 1, 2^c and 2^c + 1 bytes, several alive at once: each has the
// power-of-two capacity (below 4,096 bytes: its size, not pooled), none overlaps
// another, each holds its own bytes after all were written, also after every second
// one was released and taken again; three rounds (the later ones from reused
// buffers), from two threads at once.
TEST(BufferPool, EveryClassReusedAndDisjoint) {
  auto work = [](int seed, int& failures) {
    for (int round = 0; round < 3; ++round) {
      std::vector<rt::Data> live;
      std::vector<std::int64_t> tags;
      for (int c = 12; c <= 23; ++c) {
        const std::size_t p = std::size_t{1} << c;
        for (std::size_t bytes : {p - 1, p, p + 1}) {
          for (int k = 0; k < 3; ++k) {
            rt::Data d = rt::Data::allocate(bytes);
            const std::size_t cap = bytes < 4096 ? bytes : std::size_t{1} << std::bit_width(bytes - 1);
            if (d.size() != bytes || d.capacity() != cap) ++failures;
            std::int64_t tag = static_cast<std::int64_t>((((seed * 3 + round) * 64 + c) * 4 + (bytes - p + 1)) * 4) + k;
            fill_words(d, tag);
            live.push_back(d);
            tags.push_back(tag);
          }
        }
      }
      // Every second one released and taken again at once (a reused buffer, while
      // the others stay alive), written with a new tag.
      for (std::size_t j = 0; j < live.size(); j += 2) {
        const std::size_t bytes = live[j].size();
        live[j] = rt::Data();
        live[j] = rt::Data::allocate(bytes);
        tags[j] += std::int64_t{1} << 24;
        fill_words(live[j], tags[j]);
      }
      for (std::size_t j = 0; j < live.size(); ++j)
        if (!check_words(live[j], tags[j])) ++failures;
      std::vector<std::pair<std::uintptr_t, std::uintptr_t>> spans;
      for (const rt::Data& d : live) {
        auto a = reinterpret_cast<std::uintptr_t>(d.bytes());
        spans.emplace_back(a, a + d.capacity());
      }
      std::sort(spans.begin(), spans.end());
      for (std::size_t j = 1; j < spans.size(); ++j)
        if (spans[j].first < spans[j - 1].second) ++failures;
    }
  };
  int f0 = 0, f1 = 0;
  std::thread other(work, 1, std::ref(f1));
  work(0, f0);
  other.join();
  EXPECT_EQ(f0, 0);
  EXPECT_EQ(f1, 0);
}

INSTANTIATE_TEST_SUITE_P(Runtime, Transfer, RUNTIME_CONFIGS);
