// `auto` executor: it delegates to the executor with the smallest predicted time
// (cost model, paper 000 Eq. 1-2), so it must give correct results everywhere the
// others do, and choose the same executor on every rank (different choices would
// pair different message schemes and hang).
#include <gtest/gtest.h>

#include <cstdlib>

#include "../common/mpi_util.hpp"
#include "../common/random_layout.hpp"
#include "redist/cost.hpp"
#include "redist/pattern.hpp"
#include "redist/redist.hpp"

using namespace redist;
using namespace redist::testing;

namespace {

// The same choice on every rank: compare with rank 0's.
bool same_everywhere(Executor e) {
  int mine = static_cast<int>(e), lo = 0, hi = 0;
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
    LocalStore s(src, rank), d(dst, rank);
    fill_pattern(src, rank, s.ptr, 101);
    Options opt;
    opt.executor = Executor::auto_;  // also the plan's default executor
    Plan plan = make_plan(src, dst, r, MPI_COMM_WORLD, opt);
    EXPECT_EQ(plan.auto_choice(), Executor::auto_);  // not decided before the first execute
    std::string err;
    for (int rep = 0; rep < 2; ++rep) {
      fill_pattern(dst, rank, d.ptr, 202);
      if (rep == 0)
        plan.execute(s.cptr, d.ptr, Executor::auto_);
      else
        plan.execute(s.cptr.data()[0], d.ptr.data()[0]);  // the default: auto_ again
      CheckResult k = check_redistributed(dst, rank, d.ptr, r, src, 101, 202);
      if (!k.ok() && err.empty()) err = "rep " + std::to_string(rep) + ": " + k.first_error;
      CheckResult ks = check_pattern(src, rank, s.ptr, 101);
      if (!ks.ok() && err.empty()) err = "source changed: " + ks.first_error;
      if (src.storage().kind == StorageKind::tile_pointers || dst.storage().kind == StorageKind::tile_pointers)
        break;  // the one-pointer form does not apply; rep 0 covered it
    }
    const Executor chose = plan.auto_choice();
    const std::vector<Executor> all = all_executors();
    EXPECT_NE(std::find(all.begin(), all.end(), chose), all.end()) << to_string(chose);
    EXPECT_TRUE(same_everywhere(chose)) << "rank " << rank << " chose " << to_string(chose);
    const bool ok = all_ok(err.empty());
    EXPECT_TRUE(err.empty()) << "rank " << rank << " case " << c << " auto chose " << to_string(chose)
                             << "\n  src " << src.spec() << "\n  dst " << dst.spec() << "\n  region " << r.str()
                             << "\n  " << err;
    if (!ok) return;
  }
}

// The machine figures are the same on every rank, so are the reduced predictions.
TEST_F(Auto, ChoiceFollowsTheReducedPredictions) {
  const int p = world_size();
  Layout src = block_cyclic_layout({120, 90}, {7, 5}, {p, 1});
  Layout dst = block_cyclic_layout({120, 90}, {4, 9}, {1, p});
  Plan plan = make_plan(src, dst, Region::whole(src.shape()), MPI_COMM_WORLD);
  const Machine m = machine_for(MPI_COMM_WORLD);
  std::vector<double> t;
  const Executor e = choose_executor(plan.rank_plan(), m, MPI_COMM_WORLD, &t);
  ASSERT_EQ(t.size(), all_executors().size());
  for (double x : t) EXPECT_GE(x, 0);
  EXPECT_EQ(e, all_executors()[std::min_element(t.begin(), t.end()) - t.begin()]);
  EXPECT_TRUE(same_everywhere(e));
  EXPECT_EQ(m.source, "quick");
}

}  // namespace
