// The `taskgraph` strategy with each of its switches (TaskgraphOptions, paper 000
// sec. 6.2): the conformance suite's random layouts of every kind and 1-4
// dimensions, checked element by element against the serial oracle, under every
// optimization on and off, segments as datatypes (the default) and packed, with
// 1 and 2 worker threads, both communication modes, with and without the
// communication thread, and grouped tasks (grain 2-4), the graph's edges
// validated both ways by the runtime. Labelled
// `runtime`: ThreadSanitizer runs it (scripts/check_sanitize.sh tsan).
#include <gtest/gtest.h>

#include "../common/mpi_util.hpp"
#include "../common/oracle_case.hpp"
#include "../common/random_cases.hpp"
#include "redist/redist.hpp"

using namespace redist;
using namespace redist::testing;

namespace {

struct Variant {
  const char* name;
  TaskgraphOptions opt;
};

TaskgraphOptions with(void (*f)(TaskgraphOptions&)) {
  TaskgraphOptions o;
  o.validate = true;
  f(o);
  return o;
}

const Variant kVariants[] = {
    {"defaults", with([](TaskgraphOptions&) {})},
    {"threads2", with([](TaskgraphOptions& o) { o.threads = 2; })},
    {"threads2_funneled", with([](TaskgraphOptions& o) { o.threads = 2, o.multiple_send = false; })},
    {"comm_thread", with([](TaskgraphOptions& o) { o.comm_thread = true; })},
    {"comm_thread_threads2", with([](TaskgraphOptions& o) { o.comm_thread = true, o.threads = 2; })},
    {"no_batch", with([](TaskgraphOptions& o) { o.batch = 0; })},
    {"batch1_threads2", with([](TaskgraphOptions& o) { o.batch = 1, o.threads = 2; })},
    {"chained_segments", with([](TaskgraphOptions& o) { o.isolate_segments = false; })},
    {"chained_threads2", with([](TaskgraphOptions& o) { o.isolate_segments = false, o.threads = 2; })},
    {"whole_tiles", with([](TaskgraphOptions& o) { o.dynamic_volume = false; })},
    {"no_eager", with([](TaskgraphOptions& o) { o.eager_limit = 0; })},
    {"packed", with([](TaskgraphOptions& o) { o.datatypes = false; })},
    {"packed_no_eager_threads2",
     with([](TaskgraphOptions& o) { o.datatypes = false, o.eager_limit = 0, o.threads = 2; })},
    {"grain3", with([](TaskgraphOptions& o) { o.grain = 3; })},
    {"grain2_threads2_batch1", with([](TaskgraphOptions& o) { o.grain = 2, o.threads = 2, o.batch = 1; })},
    {"grain4_chained_whole_funneled", with([](TaskgraphOptions& o) {
       o.grain = 4, o.isolate_segments = o.dynamic_volume = o.multiple_send = false, o.eager_limit = 0;
     })},
    {"all_off", with([](TaskgraphOptions& o) {
       o.isolate_segments = o.dynamic_volume = o.multiple_send = false, o.eager_limit = 0, o.batch = 2;
     })},
};

class TaskgraphVariants : public ::testing::TestWithParam<Variant> {};

TEST_P(TaskgraphVariants, RandomLayouts) {
  const int nranks = world_size();
  const CaseRange range = case_range(40, 909);
  Options opt;
  opt.taskgraph = GetParam().opt;
  for (int c = range.first; c < range.end; ++c) {
    Rng rng = case_rng(range.seed, c);
    const auto [src, dst, r] = random_case(rng, nranks);
    OracleCase data(src, dst, r, world_rank());
    Plan plan = make_plan(src, dst, r, MPI_COMM_WORLD, opt);
    std::string err;
    for (int rep = 0; rep < 2; ++rep) {
      plan.execute(data.src_blocks(), data.dst_blocks(), "taskgraph");
      if (err.empty()) err = data.check(detail::cat("rep ", rep));
      if (rep == 0) data.reset_target();
    }
    const bool ok = all_ok(err.empty());
    EXPECT_TRUE(err.empty()) << "rank " << world_rank() << " case " << c << " variant " << GetParam().name
                             << "\n  src " << src.spec() << "\n  dst " << dst.spec() << "\n  region " << r.str()
                             << "\n  " << err << "\n  replay: " << replay_command(range, c);
    if (!ok) return;
  }
}

// Paper 000 Fig. 1 in small: a submatrix at an offset, ragged edges, many columns
// (the batch control gates several rows of tiles).
TEST_P(TaskgraphVariants, PaperCaseSubmatrix) {
  const int p = world_size();
  Options opt;
  opt.taskgraph = GetParam().opt;
  Layout src = block_cyclic_layout({103, 97}, {7, 5}, {p, 1});
  Layout dst = block_cyclic_layout({88, 120}, {4, 9}, {1, p}, 8, StorageKind::local_array);
  Region r{{80, 90}, {20, 3}, {5, 29}};
  OracleCase data(src, dst, r, world_rank());
  Plan plan = make_plan(src, dst, r, MPI_COMM_WORLD, opt);
  plan.execute(data.src_blocks(), data.dst_blocks(), "taskgraph");
  const std::string err = data.check("paper case");
  EXPECT_TRUE(all_ok(err.empty())) << err;
}

INSTANTIATE_TEST_SUITE_P(Options, TaskgraphVariants, ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

// Bad switches: the same clear error on every rank, before anything moves.
TEST(TaskgraphOptionsCheck, BadValuesRefusedEverywhere) {
  const int p = world_size();
  Layout l = block_cyclic_layout({10, 10}, {3, 3}, {p, 1});
  for (int which = 0; which < 4; ++which) {
    Options opt;
    if (which == 0) opt.taskgraph.threads = 0;
    if (which == 1) opt.taskgraph.batch = -2;
    if (which == 2) opt.taskgraph.eager_limit = -1;
    if (which == 3) opt.taskgraph.grain = 0;
    try {
      make_plan(l, l, Region::whole(l.shape()), MPI_COMM_WORLD, opt);
      ADD_FAILURE() << "bad taskgraph option " << which << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("options.taskgraph."), std::string::npos) << e.what();
    }
  }
}

}  // namespace
