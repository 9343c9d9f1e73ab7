// Several plans in flight on one communicator, and threads (docs/strategies.md,
// "Threads"). Each plan has a duplicate of the user's communicator of its own,
// so plans made on one communicator may execute interleaved, or at the same
// time from threads of their own (MPI_THREAD_MULTIPLE: this test's main asks
// for it and skips every test, with the reason, when MPI does not provide it).
// One plan executed from two threads at once is refused, on the rank that sees
// it, without communicating; the plan runs again afterwards. Every execute is
// checked bit for bit against the serial oracle (tests/common/oracle_case.hpp).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "../common/mpi_util.hpp"
#include "../common/oracle_case.hpp"
#include "../common/random_cases.hpp"
#include "redist/redist.hpp"
#include "redist/shm.hpp"

using namespace redist;
using namespace redist::testing;

namespace {

// Every strategy of the registry, then auto.
std::vector<std::string> every_strategy() {
  std::vector<std::string> v = strategy_names();
  v.emplace_back(kAuto);
  return v;
}

// Four cases of different shapes, kinds and sizes (large enough that executes
// from different threads overlap): 2-D block-cyclic to ScaLAPACK storage at an
// offset, a cyclic(1) vector to blocks (compressed plans), and two random cases
// of the conformance generator (any layout kind, element size, 1-3 dimensions).
std::vector<RandomCase> thread_cases(int p) {
  std::vector<RandomCase> v;
  v.push_back({block_cyclic_layout({300, 200}, {16, 11}, {1, p}),
               block_cyclic_layout({260, 230}, {9, 20}, {p, 1}, 8, StorageKind::local_array),
               Region{{250, 190}, {40, 5}, {3, 17}}});
  const Layout vec1 = block_cyclic_layout({200000}, {1}, {p}, 4);
  v.push_back({vec1, block_cyclic_layout({200000}, {1000}, {p}, 4), Region::whole(vec1.shape())});
  for (int c = 0; c < 2; ++c) {
    Rng rng = case_rng(4242, c);  // the same on every rank
    v.push_back(random_case(rng, p, 3));
  }
  return v;
}

// The model of auto, shared by the plans (one quick measurement, or the file).
std::shared_ptr<const Machine> machine() {
  static const auto m = std::make_shared<const Machine>(machine_for(MPI_COMM_WORLD));
  return m;
}

std::string describe(const RandomCase& c) {
  return "\n  src " + c.src.spec() + "\n  dst " + c.dst.spec() + "\n  region " + c.region.str();
}

// One plan per case, made by this thread on MPI_COMM_WORLD (in the same order
// on every rank), each with its storage.
struct PlansOnWorld {
  std::vector<std::unique_ptr<OracleCase>> data;
  std::vector<Plan> plans;
  explicit PlansOnWorld(const std::vector<RandomCase>& cases) {
    Options opt;
    opt.machine = machine();
    for (const RandomCase& c : cases) {
      data.push_back(std::make_unique<OracleCase>(c.src, c.dst, c.region, world_rank()));
      plans.push_back(make_plan(c.src, c.dst, c.region, MPI_COMM_WORLD, opt));
    }
  }
};

// The plans, executed A, B, C, D, A, B, ... with each strategy in turn: no plan
// disturbs another's messages or state.
TEST(Threads, PlansInterleavedOnOneCommunicator) {
  const std::vector<RandomCase> cases = thread_cases(world_size());
  PlansOnWorld w(cases);
  std::string err;
  const int rounds = scaled_count(2);
  for (int round = 0; round < rounds; ++round)
    for (const std::string& ex : every_strategy())
      for (size_t k = 0; k < w.plans.size(); ++k) {
        w.data[k]->reset_target();
        w.plans[k].execute(w.data[k]->src_blocks(), w.data[k]->dst_blocks(), ex);
        if (!err.empty()) continue;
        err = w.data[k]->check(detail::cat("plan ", k, " ", ex, " round ", round));
        if (!err.empty()) err += describe(cases[k]);
      }
  EXPECT_TRUE(all_ok(err.empty())) << "rank " << world_rank() << ": " << err;
}

// Runs every strategy `rounds` times on one plan from the calling thread, each
// execute checked; returns the first error.
std::string run_every_strategy(Plan& plan, OracleCase& data, int rounds, const std::string& name) {
  for (int round = 0; round < rounds; ++round)
    for (const std::string& ex : every_strategy()) {
      data.reset_target();
      plan.execute(data.src_blocks(), data.dst_blocks(), ex);
      if (std::string e = data.check(detail::cat(name, " ", ex, " round ", round)); !e.empty()) return e;
    }
  return {};
}

// Runs body(k) for each case k on a thread of its own, all at once; returns the
// first error one returned or threw, with its case.
template <class Body>
std::string on_threads(const std::vector<RandomCase>& cases, Body body) {
  std::vector<std::string> errors(cases.size());
  std::vector<std::thread> threads;
  for (size_t k = 0; k < cases.size(); ++k)
    threads.emplace_back([&, k] {
      try {
        errors[k] = body(k);
      } catch (const std::exception& e) {
        errors[k] = detail::cat("plan ", k, " threw: ", e.what());
      }
    });
  for (std::thread& t : threads) t.join();
  for (size_t k = 0; k < cases.size(); ++k)
    if (!errors[k].empty()) return errors[k] + describe(cases[k]);
  return {};
}

// The same plans, each executed from a thread of its own at the same time.
// Every rank's thread k runs the same sequence on plan k (its collectives are
// matched on plan k's communicator), so the threads need no synchronisation.
TEST(Threads, OnePlanPerThreadAtOnce) {
  const std::vector<RandomCase> cases = thread_cases(world_size());
  PlansOnWorld w(cases);
  const std::string err = on_threads(
      cases, [&](size_t k) {
        return run_every_strategy(w.plans[k], *w.data[k], scaled_count(3), detail::cat("plan ", k));
      });
  EXPECT_TRUE(all_ok(err.empty())) << "rank " << world_rank() << ": " << err;
}

// make_plan from several threads at once: each on a communicator of its own
// (duplicated in order by one thread first). On ONE communicator the threads
// would have to order their make_plan calls themselves: collective calls on a
// communicator match in the order each process issues them (MPI 4.1, "MPI and
// Threads", collective calls), and make_plan starts with MPI_Comm_dup.
TEST(Threads, PlansMadeFromThreadsOnTheirOwnCommunicators) {
  const std::vector<RandomCase> cases = thread_cases(world_size());
  std::vector<MPI_Comm> comms(cases.size());
  for (MPI_Comm& c : comms) MPI_Comm_dup(MPI_COMM_WORLD, &c);
  Options opt;
  opt.machine = machine();
  const std::string err = on_threads(cases, [&](size_t k) {
    const RandomCase& c = cases[k];
    OracleCase data(c.src, c.dst, c.region, world_rank());
    Plan plan = make_plan(c.src, c.dst, c.region, comms[k], opt);
    return run_every_strategy(plan, data, 1, detail::cat("plan ", k));
  });
  for (MPI_Comm& c : comms) MPI_Comm_free(&c);
  EXPECT_TRUE(all_ok(err.empty())) << "rank " << world_rank() << ": " << err;
}

// Shared windows made and freed by two threads at once, each over a communicator
// of its own, keeping the last three: every window holds what its rank wrote and
// frees cleanly. Two threads once got one serial for their windows (an agreed
// maximum of counters) and shared_free crashed on the window the registry had
// dropped (5 runs in 6 from Python, docs/shm.md).
TEST(Threads, SharedWindowsFromThreadsOnTheirOwnCommunicators) {
  constexpr int kThreads = 2, kRounds = 150;
  std::vector<MPI_Comm> comms(kThreads);
  for (MPI_Comm& c : comms) MPI_Comm_dup(MPI_COMM_WORLD, &c);
  std::atomic<int> checked{0};  // windows whose contents were checked, then freed
  auto work = [&](int t) {
    try {
      std::vector<unsigned char*> kept;
      for (int i = 0; i < kRounds; ++i) {
        const index_t n = 4096 + 64 * ((i + t + world_rank()) % 5);
        auto* p = static_cast<unsigned char*>(shared_allocate(comms[t], n, 0, false));
        std::memset(p, (i + t) & 0xff, static_cast<size_t>(n));
        kept.push_back(p);
        if (kept.size() > 3) {
          const int j = i - 3;  // the round that made kept.front()
          for (index_t b = 0; b < 4096; ++b)
            if (kept.front()[b] != static_cast<unsigned char>((j + t) & 0xff))
              throw Error(detail::cat("window of round ", j, " changed"));
          shared_free(kept.front());
          ++checked;
          kept.erase(kept.begin());
        }
      }
      for (unsigned char* p : kept) shared_free(p);
    } catch (const std::exception& e) {
      // The other ranks wait in this thread's next window: end the job, not a hang.
      std::fprintf(stderr, "rank %d thread %d: %s\n", world_rank(), t, e.what());
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(work, t);
  for (std::thread& th : threads) th.join();
  for (MPI_Comm& c : comms) MPI_Comm_free(&c);
  EXPECT_EQ(checked.load(), kThreads * (kRounds - 3));
}

// One plan, two threads of rank 0 executing it at once: one of them is refused
// with a clear error, on rank 0 alone and before it communicates; the other
// runs, right. The overlap is certain, not a matter of timing: whichever thread
// gets in first waits inside the execute for the other ranks, and they join
// only once rank 0 has seen the refusal. Then the plan runs again (the refusal
// left nothing held), on every rank, with every strategy.
TEST(Threads, OnePlanFromTwoThreadsIsRefused) {
  const int p = world_size(), rank = world_rank();
  if (p < 2) GTEST_SKIP() << "needs a second rank to keep the first execute waiting";
  const RandomCase c = thread_cases(p)[0];
  Options opt;
  opt.machine = machine();
  OracleCase data(c.src, c.dst, c.region, rank);
  Plan plan = make_plan(c.src, c.dst, c.region, MPI_COMM_WORLD, opt);
  for (const std::string& ex : every_strategy()) {
    data.reset_target();
    std::string err;
    if (rank == 0) {
      std::mutex m;
      std::condition_variable cv;
      int finished = 0, refused = 0;
      std::string refusal, other;
      auto attempt = [&] {
        std::string what;
        bool was_refused = false;
        try {
          plan.execute(data.src_blocks(), data.dst_blocks(), ex);
        } catch (const Error& e) {
          what = e.what();
          was_refused = what.find("two threads at once") != std::string::npos;
        }
        std::lock_guard<std::mutex> lock(m);
        ++finished;
        if (was_refused) ++refused, refusal = what;
        else if (!what.empty()) other = what;
        cv.notify_all();
      };
      std::thread a(attempt), b(attempt);
      {
        std::unique_lock<std::mutex> lock(m);
        const bool seen = cv.wait_for(lock, std::chrono::seconds(60), [&] { return refused > 0 || !other.empty(); });
        if (!seen) err = "no thread was refused within 60 s";
      }
      MPI_Send(nullptr, 0, MPI_BYTE, 1, 99, MPI_COMM_WORLD);  // the others may join the execute now
      for (int r = 2; r < p; ++r) MPI_Send(nullptr, 0, MPI_BYTE, r, 99, MPI_COMM_WORLD);
      a.join();
      b.join();
      if (err.empty() && refused != 1) err = detail::cat(refused, " threads refused, expected 1; other error: ", other);
      if (err.empty() && !other.empty()) err = "the execute that was let in threw: " + other;
      if (err.empty()) {
        for (const char* w : {"redist: rank 0: plan executed from two threads at once",
                              "a Plan is executed by one thread at a time", "make one plan per thread"})
          if (refusal.find(w) == std::string::npos) err = detail::cat("'", w, "' missing in: ", refusal);
      }
    } else {
      MPI_Recv(nullptr, 0, MPI_BYTE, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      plan.execute(data.src_blocks(), data.dst_blocks(), ex);
    }
    if (err.empty()) err = data.check("the execute let in, " + ex);
    // Again, one thread per rank: the refusal left the plan usable.
    data.reset_target();
    plan.execute(data.src_blocks(), data.dst_blocks(), ex);
    if (err.empty()) err = data.check("the execute after the refusal, " + ex);
    ASSERT_TRUE(all_ok(err.empty())) << "rank " << rank << ": " << err << describe(c);
  }
}

}  // namespace
