// `auto`: it delegates to the strategy with the smallest predicted time (cost
// model, paper 000 Eq. 1-2), so it must give correct results everywhere the
// others do, and choose the same strategy on every rank (different choices would
// pair different message schemes and hang).
#include <gtest/gtest.h>

#include <cmath>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "../common/mpi_util.hpp"
#include "../common/random_layout.hpp"
#include "redist/cost.hpp"
#include "harness/pattern.hpp"
#include "harness/storage.hpp"
#include "redist/redist.hpp"

using namespace redist;
using namespace redist::testing;

namespace {

// The same choice on every rank: compare with rank 0's.
bool same_everywhere(const std::string& name) {
  const std::vector<std::string> all = strategy_names();
  int mine = static_cast<int>(std::find(all.begin(), all.end(), name) - all.begin()), lo = 0, hi = 0;
  MPI_Allreduce(&mine, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&mine, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return lo == hi;
}

class Auto : public ::testing::Test {
 protected:
  // No calibration file: auto measures quickly in the run (once per process).
  static void SetUpTestSuite() { setenv("REDIST_CALIBRATION", "/nonexistent/redist-test/calibration.json", 1); }
};

TEST_F(Auto, RandomLayoutsCorrectAndSameChoice) {
  const int nranks = world_size(), rank = world_rank();
  Rng rng(4242);  // same seed everywhere: same cases
  for (int c = 0; c < 60; ++c) {
    const auto [src, dst, r] = random_case(rng, nranks);
    harness::LocalStorage s(src, rank), d(dst, rank);
    fill_pattern(src, rank, s.blocks(), 101);
    Options opt;
    opt.strategy = "auto";  // the plan's default strategy; fixes the machine model now
    Plan plan = make_plan(src, dst, r, MPI_COMM_WORLD, opt);
    ASSERT_NE(plan.machine(), nullptr);
    EXPECT_EQ(plan.auto_choice(), "");  // not decided before the first execute
    std::string err;
    for (int rep = 0; rep < 2; ++rep) {
      fill_pattern(dst, rank, d.blocks(), 202);
      if (rep == 0)
        plan.execute(s.const_blocks(), d.blocks(), "auto");
      else
        plan.execute(s.const_blocks().data()[0], d.blocks().data()[0]);  // the default: auto again
      CheckResult k = check_redistributed(dst, rank, d.blocks(), r, src, 101, 202);
      if (!k.ok() && err.empty()) err = "rep " + std::to_string(rep) + ": " + k.first_error;
      CheckResult ks = check_pattern(src, rank, s.blocks(), 101);
      if (!ks.ok() && err.empty()) err = "source changed: " + ks.first_error;
      if (src.storage().kind == StorageKind::tile_pointers || dst.storage().kind == StorageKind::tile_pointers)
        break;  // the one-pointer form does not apply; rep 0 covered it
    }
    const std::string chose = plan.auto_choice();
    const std::vector<std::string> all = strategy_names();
    EXPECT_NE(std::find(all.begin(), all.end(), chose), all.end()) << chose;
    EXPECT_TRUE(same_everywhere(chose)) << "rank " << rank << " chose " << chose;
    const bool ok = all_ok(err.empty());
    EXPECT_TRUE(err.empty()) << "rank " << rank << " case " << c << " auto chose " << chose
                             << "\n  src " << src.spec() << "\n  dst " << dst.spec() << "\n  region " << r.str()
                             << "\n  " << err;
    if (!ok) return;
  }
}

// The machine figures are the same on every rank, so are the reduced predictions,
// and auto runs the strategy with the smallest.
TEST_F(Auto, ChoiceFollowsTheReducedPredictions) {
  const int p = world_size(), rank = world_rank();
  Layout src = block_cyclic_layout({120, 90}, {7, 5}, {p, 1});
  Layout dst = block_cyclic_layout({120, 90}, {4, 9}, {1, p});
  Options opt;
  opt.strategy = "auto";
  Plan plan = make_plan(src, dst, Region::whole(src.shape()), MPI_COMM_WORLD, opt);
  const std::vector<double> t = plan.predictions();
  const std::vector<std::string> all = strategy_names();
  ASSERT_EQ(t.size(), all.size());
  for (double x : t) EXPECT_GE(x, 0);
  harness::LocalStorage s(src, rank), d(dst, rank);
  fill_pattern(src, rank, s.blocks(), 1);
  // What auto compares: the predictions for these buffers (heap: shm's model of
  // reading through shared windows does not hold; it predicts its heap model,
  // cross-memory attach as direct: the max over ranks of predict(..., heap)).
  const std::vector<double> tb = plan.predictions(s.const_blocks());
  const size_t shm = static_cast<size_t>(std::find(all.begin(), all.end(), "shm") - all.begin());
  ASSERT_LT(shm, all.size());
  double heap = predict(plan.rank_plan(), "shm", *plan.machine(), true).total();
  MPI_Allreduce(MPI_IN_PLACE, &heap, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_TRUE(std::isfinite(tb[shm]) && std::isfinite(t[shm]));
  EXPECT_EQ(tb[shm], heap);
  if (p > 1) {
    EXPECT_NE(tb[shm], t[shm]);  // not the model of shared windows
  }
  for (size_t k = 0; k < all.size(); ++k) {
    if (k != shm) {
      EXPECT_EQ(tb[k], t[k]) << all[k];
    }
  }
  plan.execute(s.const_blocks(), d.blocks());
  EXPECT_EQ(plan.auto_choice(), all[static_cast<size_t>(std::min_element(tb.begin(), tb.end()) - tb.begin())]);
  EXPECT_TRUE(same_everywhere(plan.auto_choice()));
  EXPECT_EQ(plan.machine()->source, "quick");
  // Each rank's own prediction is at most the reduced one (Eq. 2: the max over ranks).
  // Not for the forwarding strategies (paper 002's, docs/groups.md, and aggregate): their model in
  // Plan::predictions follows their routes (collective); predict() is their model
  // without MPI, from this rank's plan alone.
  for (size_t k = 0; k < all.size(); ++k) {
    if (all[k] != "centralized" && all[k] != "staged" && all[k] != "multistage" && all[k] != "hybrid" &&
        all[k] != "aggregate") {
      EXPECT_LE(predict(plan.rank_plan(), all[k], *plan.machine()).total(), t[k]) << all[k];
    }
  }
}

// The plan's options rule strategies out: over the memory budget (extra_memory,
// max over ranks) or, with arithmetic, those that do not unpack. Their
// predictions are infinity, the others' those of the same plan without the
// option (but for the pieces a budget cuts phased's and p2p_pipelined's
// messages into), and auto takes the smallest of what is left (before, `redist
// run --memory` said "model picks shm", a strategy over the budget).
TEST_F(Auto, PredictionsLeaveOutWhatTheOptionsRuleOut) {
  const int p = world_size(), rank = world_rank();
  Layout src = block_cyclic_layout({300, 200}, {10, 10}, {1, p});
  Layout dst = block_cyclic_layout({300, 200}, {20, 20}, {p, 1});
  const Region r = Region::whole(src.shape());
  const std::vector<std::string> all = strategy_names();
  Options free_opt;
  free_opt.strategy = "auto";
  Plan unbounded = make_plan(src, dst, r, MPI_COMM_WORLD, free_opt);
  const std::vector<double> t0 = unbounded.predictions();
  for (int k = 0; k < 2; ++k) {
    Options opt = free_opt;
    if (k == 0) opt.max_buffer_bytes = 4096;
    else opt.arithmetic.type = ElementType::f64, opt.arithmetic.alpha = 2.0;
    Plan plan = make_plan(src, dst, r, MPI_COMM_WORLD, opt);
    const std::vector<double> t = plan.predictions();
    ASSERT_EQ(t.size(), all.size());
    int ruled_out = 0;
    for (size_t i = 0; i < all.size(); ++i) {
      bool out = false;
      if (k == 0) {
        long long need = extra_memory(plan.rank_plan(), all[i], opt.max_buffer_bytes);
        MPI_Allreduce(MPI_IN_PLACE, &need, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
        out = need > opt.max_buffer_bytes;
      } else {
        for (const StrategyInfo& info : strategies())
          if (info.name == all[i]) out = !info.arithmetic;
      }
      ruled_out += out;
      // Under the budget the strategies that cut their messages into pieces
      // predict those pieces (StrategyEntry::predict_budget): more than without.
      const bool pieces = k == 0 && (all[i] == "phased" || all[i] == "phased_sendrecv" || all[i] == "p2p_pipelined");
      if (out) {
        EXPECT_TRUE(std::isinf(t[i])) << "case " << k << ": " << all[i] << " predicts " << t[i];
      } else if (pieces && p > 1) {
        EXPECT_GT(t[i], t0[i]) << "case " << k << ": " << all[i];
      } else {
        EXPECT_EQ(t[i], t0[i]) << "case " << k << ": " << all[i];
      }
    }
    if (p > 1) {
      EXPECT_GT(ruled_out, 0) << "case " << k;
    }
    harness::LocalStorage s(src, rank), d(dst, rank);
    fill_pattern(src, rank, s.blocks(), 3);
    fill_pattern(dst, rank, d.blocks(), 4);
    const std::vector<double> tb = plan.predictions(s.const_blocks());
    plan.execute(s.const_blocks(), d.blocks());
    EXPECT_EQ(plan.auto_choice(), all[static_cast<size_t>(std::min_element(tb.begin(), tb.end()) - tb.begin())]);
    EXPECT_TRUE(std::isfinite(*std::min_element(tb.begin(), tb.end())));
  }
}

// Forced nodes of 2 ranks (Options::node_size): Plan::predictions gives shm the
// model with its peers on other nodes as messages (issue 14), windows and heap:
// the max over ranks of predict(..., node_of) with nodes {0,1},{2,3}; with 3 or
// more ranks it differs from the one-node model the same plan has on whole nodes.
TEST_F(Auto, ShmPredictionsFollowTheForcedNodes) {
  const int p = world_size(), rank = world_rank();
  Layout src = block_cyclic_layout({300, 200}, {7, 50}, {1, p});
  Layout dst = block_cyclic_layout({300, 200}, {40, 9}, {p, 1});
  const std::vector<std::string> all = strategy_names();
  const size_t shm = static_cast<size_t>(std::find(all.begin(), all.end(), "shm") - all.begin());
  std::vector<int> nodes;
  for (int r = 0; r < p; ++r) nodes.push_back(r / 2);
  std::vector<double> split, whole;
  bool vm = true;  // calibrate read with process_vm_readv (else the heap model is p2p's, nodes or not)
  for (int k : {2, 0}) {
    Options opt;
    opt.strategy = "auto";
    opt.node_size = k;
    Plan plan = make_plan(src, dst, Region::whole(src.shape()), MPI_COMM_WORLD, opt);
    harness::LocalStorage s(src, rank);
    const std::vector<double> t = plan.predictions(), tb = plan.predictions(s.const_blocks());
    double want[2] = {predict(plan.rank_plan(), "shm", *plan.machine(), false, k ? nodes : std::vector<int>{}).total(),
                      predict(plan.rank_plan(), "shm", *plan.machine(), true, k ? nodes : std::vector<int>{}).total()};
    MPI_Allreduce(MPI_IN_PLACE, want, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    EXPECT_EQ(t[shm], want[0]) << "node size " << k;
    EXPECT_EQ(tb[shm], want[1]) << "node size " << k;
    (k ? split : whole) = {t[shm], tb[shm]};
    vm = !plan.machine()->vm_read.empty();
  }
  if (p >= 3) {
    EXPECT_GT(split[0], whole[0]);  // messages across cost more than one copy
    if (vm) {
      EXPECT_NE(split[1], whole[1]);
    }
  } else {
    EXPECT_EQ(split, whole);  // one node either way
  }
}

// Options::auto_trials = 2: the first 4 executes under auto alternate between the
// two strategies with the smallest predictions (every one of them correct), then
// auto keeps one of those two, the same on every rank; a negative count is refused.
TEST_F(Auto, TrialsTimeTheTwoBestAndKeepOne) {
  const int p = world_size(), rank = world_rank();
  Layout src = block_cyclic_layout({203, 91}, {7, 5}, {p, 1});
  Layout dst = block_cyclic_layout({203, 91}, {4, 9}, {1, p});
  const Region r = Region::parse("200x88 from=2x3 to=1x0");
  Options opt;
  opt.strategy = "auto";
  opt.auto_trials = 2;
  Plan plan = make_plan(src, dst, r, MPI_COMM_WORLD, opt);
  harness::LocalStorage s(src, rank), d(dst, rank);
  fill_pattern(src, rank, s.blocks(), 1);
  std::vector<double> t = plan.predictions(s.const_blocks());
  const std::vector<std::string> all = strategy_names();
  std::vector<size_t> order(all.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return t[a] < t[b]; });
  for (int rep = 0; rep < 6; ++rep) {
    fill_pattern(dst, rank, d.blocks(), 2);
    plan.execute(s.const_blocks(), d.blocks());
    const CheckResult k = check_redistributed(dst, rank, d.blocks(), r, src, 1, 2);
    EXPECT_TRUE(all_ok(k.ok())) << "execute " << rep << ": " << k.first_error;
    EXPECT_EQ(plan.auto_choice().empty(), rep < 3) << "execute " << rep;  // decided by the 4th
  }
  const std::string chose = plan.auto_choice();
  EXPECT_TRUE(chose == all[order[0]] || chose == all[order[1]]) << chose;
  EXPECT_TRUE(same_everywhere(chose));
  opt.auto_trials = -1;
  try {
    make_plan(src, dst, r, MPI_COMM_WORLD, opt);
    ADD_FAILURE() << "a negative auto_trials was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("options.auto_trials must be >= 0"), std::string::npos) << e.what();
  }
}

// Options::calibration names a file: the plan keeps its figures; a file that
// cannot be read is an error on every rank, never replaced by a measurement.
TEST_F(Auto, CalibrationFileOption) {
  const int p = world_size();
  Layout l = block_cyclic_layout({40, 40}, {7, 5}, {p, 1});
  Options opt;
  opt.calibration = "/nonexistent/redist-test/other.json";
  try {
    make_plan(l, l, Region::whole(l.shape()), MPI_COMM_WORLD, opt);
    ADD_FAILURE() << "a missing calibration file was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot read the calibration file '" + opt.calibration + "'"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("run `mpirun -np 2 redist calibrate --out " + opt.calibration + "` first"),
              std::string::npos)
        << e.what();
  }
  // A file that is no calibration (a folder here): no advice to calibrate into
  // it (calibrate refuses it); rank 0 decides the advice and says it to all.
  opt.calibration = "/tmp";
  try {
    make_plan(l, l, Region::whole(l.shape()), MPI_COMM_WORLD, opt);
    ADD_FAILURE() << "a folder was accepted as a calibration file";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("/tmp is a folder, not a calibration file; give a file that `redist calibrate --out FILE` "
                        "wrote"),
              std::string::npos)
        << what;
  }
  // A file written from a quick measurement, named the same on every rank.
  long long id = static_cast<long long>(getpid());
  MPI_Bcast(&id, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  opt.calibration = "/tmp/redist-test-calibration-" + std::to_string(id) + ".json";
  const Machine quick = machine_for(MPI_COMM_WORLD);
  if (world_rank() == 0) save_machine(opt.calibration, quick);
  MPI_Barrier(MPI_COMM_WORLD);
  Plan plan = make_plan(l, l, Region::whole(l.shape()), MPI_COMM_WORLD, opt);
  ASSERT_NE(plan.machine(), nullptr);
  EXPECT_EQ(plan.machine()->source, opt.calibration);
  EXPECT_NEAR(plan.machine()->bnet, quick.bnet, 1e-5 * quick.bnet);  // through the JSON file
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) std::remove(opt.calibration.c_str());
}

// A plan made without a model cannot run auto: a clear error on every rank.
TEST_F(Auto, WithoutAModelIsAClearError) {
  const int p = world_size(), rank = world_rank();
  Layout l = block_cyclic_layout({40, 40}, {7, 5}, {p, 1});
  Plan plan = make_plan(l, l, Region::whole(l.shape()), MPI_COMM_WORLD);
  EXPECT_EQ(plan.machine(), nullptr);
  harness::LocalStorage s(l, rank), d(l, rank);
  try {
    plan.execute(s.const_blocks(), d.blocks(), "auto");
    ADD_FAILURE() << "auto ran without a machine model";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs the machine model"), std::string::npos) << e.what();
  }
}

// Options::model: a model for a plan whose strategy is not auto (redist run's
// predictions and bounds), fixed only once make_plan has checked its arguments,
// so that bad input fails at once. Seen through machine_for's cache (per
// process and file): had the failing call measured, the next call would be served
// from the cache (seconds 0), not measure (seconds > 0).
TEST_F(Auto, ModelIsMeasuredOnlyAfterTheArgumentsPass) {
  setenv("REDIST_CALIBRATION", "/nonexistent/redist-test/model-after-checks.json", 1);  // a file of its own
  const int p = world_size();
  Layout src = block_cyclic_layout({40, 40}, {7, 5}, {p, 1}), narrow = block_cyclic_layout({40, 30}, {7, 5}, {1, p});
  Options opt;
  opt.model = true;  // the strategy stays p2p
  EXPECT_THROW(make_plan(src, narrow, Region::whole(src.shape()), MPI_COMM_WORLD, opt), Error);  // leaves the target
  Plan plan = make_plan(src, src, Region::whole(src.shape()), MPI_COMM_WORLD, opt);
  ASSERT_NE(plan.machine(), nullptr);
  EXPECT_EQ(plan.machine()->source, "quick");
  EXPECT_GT(plan.machine()->seconds, 0) << "the failing make_plan measured the machine";
  Plan again = make_plan(src, src, Region::whole(src.shape()), MPI_COMM_WORLD, opt);
  ASSERT_NE(again.machine(), nullptr);
  EXPECT_EQ(again.machine()->seconds, 0);  // from the cache: the same process and file
  EXPECT_DOUBLE_EQ(again.machine()->bnet, plan.machine()->bnet);
  opt.model = false;
  EXPECT_EQ(make_plan(src, src, Region::whole(src.shape()), MPI_COMM_WORLD, opt).machine(), nullptr);
  setenv("REDIST_CALIBRATION", "/nonexistent/redist-test/calibration.json", 1);  // the suite's
}

}  // namespace
