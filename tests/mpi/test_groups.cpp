// Transfers between two process groups (paper 002, CDT; include/redist/groups.hpp):
// every strategy on random layouts of each group's own size, in every group
// configuration the world size allows ((1,1), (1,3), (3,1), (2,2) disjoint, (2,2)
// overlapping, (4,4) identical, groups numbered against the world order),
// checked bit for bit against the serial oracle (harness/pattern.hpp); the
// layout exchange's message count (counted here through MPI's profiling
// interface); two plans between the same groups in flight at once from two
// threads; an intercommunicator; bad input failing the same way on every rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <thread>

#include "../common/mpi_util.hpp"
#include "../common/random_cases.hpp"
#include "exec/relay.hpp"
#include "harness/pattern.hpp"
#include "harness/storage.hpp"
#include "redist/groups.hpp"
#include "redist/redist.hpp"
#include "redist/shm.hpp"

using namespace redist;
using namespace redist::testing;

// ---- point-to-point messages, counted while `counting` (the exchange's only
// messages: communicator creation and make_plan's agreements are collectives)
namespace {
std::atomic<bool> counting{false};
std::atomic<long> sent{0}, received{0}, sent_bytes{0};
void count_bytes(int n, MPI_Datatype t) {
  int size = 0;
  PMPI_Type_size(t, &size);
  sent_bytes += static_cast<long>(n) * size;
}
}  // namespace
extern "C" {
int MPI_Send(const void* b, int n, MPI_Datatype t, int to, int tag, MPI_Comm c) {
  if (counting) ++sent, count_bytes(n, t);
  return PMPI_Send(b, n, t, to, tag, c);
}
int MPI_Ssend(const void* b, int n, MPI_Datatype t, int to, int tag, MPI_Comm c) {
  if (counting) ++sent, count_bytes(n, t);
  return PMPI_Ssend(b, n, t, to, tag, c);
}
int MPI_Isend(const void* b, int n, MPI_Datatype t, int to, int tag, MPI_Comm c, MPI_Request* r) {
  if (counting) ++sent, count_bytes(n, t);
  return PMPI_Isend(b, n, t, to, tag, c, r);
}
int MPI_Recv(void* b, int n, MPI_Datatype t, int from, int tag, MPI_Comm c, MPI_Status* s) {
  if (counting) ++received;
  return PMPI_Recv(b, n, t, from, tag, c, s);
}
int MPI_Irecv(void* b, int n, MPI_Datatype t, int from, int tag, MPI_Comm c, MPI_Request* r) {
  if (counting) ++received;
  return PMPI_Irecv(b, n, t, from, tag, c, r);
}
int MPI_Sendrecv(const void* sb, int sn, MPI_Datatype st, int to, int stag, void* rb, int rn, MPI_Datatype rt,
                 int from, int rtag, MPI_Comm c, MPI_Status* s) {
  if (counting) ++sent, ++received;
  return PMPI_Sendrecv(sb, sn, st, to, stag, rb, rn, rt, from, rtag, c, s);
}
}

namespace {

constexpr std::uint64_t kSource = 101, kTarget = 202;

// Two groups named by world ranks, in group order.
struct Config {
  std::string name;
  std::vector<int> senders, receivers;
};

std::vector<int> range(int lo, int hi) {
  std::vector<int> v;
  for (int i = lo; i < hi; ++i) v.push_back(i);
  return v;
}

std::vector<Config> configs(int n) {
  std::vector<Config> c;
  c.push_back({"identical", range(0, n), range(0, n)});
  if (n == 1) return c;
  if (n == 2) {
    c.push_back({"1_1_disjoint", {0}, {1}});
    c.push_back({"1_1_reversed", {1}, {0}});
    c.push_back({"2_1_overlapping", {0, 1}, {1}});
  }
  if (n == 3) {
    c.push_back({"1_2_disjoint", {0}, {1, 2}});
    c.push_back({"2_1_disjoint", {1, 2}, {0}});
    c.push_back({"2_2_overlapping", {0, 1}, {1, 2}});
  }
  if (n == 4) {
    c.push_back({"1_3_disjoint", {0}, {1, 2, 3}});
    c.push_back({"3_1_disjoint", {0, 1, 2}, {3}});
    c.push_back({"2_2_disjoint", {0, 1}, {2, 3}});
    c.push_back({"2_2_interleaved_reversed", {3, 1}, {2, 0}});
    c.push_back({"2_2_overlapping_bystander", {0, 1}, {1, 2}});  // rank 3 in neither group
  }
  return c;
}

// This rank's communicator of a group (MPI_COMM_NULL outside it) and its rank there.
struct Member {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = -1;
  Member(const Member&) = delete;
  Member& operator=(const Member&) = delete;
  explicit Member(const std::vector<int>& world_ranks) {
    const auto it = std::find(world_ranks.begin(), world_ranks.end(), world_rank());
    const int at = static_cast<int>(it - world_ranks.begin());
    MPI_Comm_split(MPI_COMM_WORLD, it != world_ranks.end() ? 0 : MPI_UNDEFINED, at, &comm);
    if (comm != MPI_COMM_NULL) rank = at;
  }
  ~Member() {
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }
};

struct Sides {
  Member s, r;
  explicit Sides(const Config& c) : s(c.senders), r(c.receivers) {}
  Groups groups() const { return {.parent = MPI_COMM_WORLD, .senders = s.comm, .receivers = r.comm}; }
};

// Owner functions cross between the groups by name: the random generator's
// "sum_mod" (over the whole world) becomes one registered per group size.
Layout registered(const Layout& l, int ranks) {
  if (l.ownership().kind() != Ownership::Kind::function) return l;
  const std::string name = "group_sum_mod_" + std::to_string(ranks);
  OwnerFunction fn = [ranks](const Coord& t) {
    index_t s = 0;
    for (index_t x : t) s += x * (x + 1);
    return static_cast<int>(s % ranks);
  };
  register_owner_function(name, fn);
  return Layout(l.shape(), l.partitions(), Ownership::function(name, ranks, fn), l.storage(), l.elem_size());
}

// One side's storage on this rank: the group's layout at this rank's group rank,
// or nothing (one null buffer, none for tile_pointers) outside the group.
struct SideData {
  std::optional<harness::LocalStorage> st;
  std::vector<void*> none;
  SideData(const Layout& l, int rank) {
    if (rank >= 0)
      st.emplace(l, rank);
    else if (l.storage().kind != StorageKind::tile_pointers)
      none.push_back(nullptr);
  }
  std::span<void* const> blocks() const { return st ? st->blocks() : std::span<void* const>(none); }
  std::span<const void* const> const_blocks() const {
    return st ? st->const_blocks() : std::span<const void* const>(reinterpret_cast<const void* const*>(none.data()), none.size());
  }
};

// Makes the group plan, runs `strategy` twice (the target reset between: the
// second run writes it all again), checks every rank's part; "" when right.
std::string run_group_case(const Sides& sd, const Layout& src0, const Layout& dst0, const Region& region,
                           const std::string& strategy, const Options& opt = {}) {
  const Layout src = sd.s.rank >= 0 ? with_rank_ld(src0, sd.s.rank) : src0;
  const Layout dst = sd.r.rank >= 0 ? with_rank_ld(dst0, sd.r.rank) : dst0;
  GroupLayouts gl;
  if (sd.s.rank >= 0) gl.send = src;
  if (sd.r.rank >= 0) gl.receive = dst;
  gl.region = region;
  Plan plan = make_group_plan(sd.groups(), gl, opt);
  if (sd.s.rank < 0 && sd.r.rank < 0) return {};
  SideData s(src, sd.s.rank), d(dst, sd.r.rank);
  if (s.st) fill_pattern(src, sd.s.rank, s.blocks(), kSource);
  std::string err;
  for (int rep = 0; rep < 2; ++rep) {
    if (d.st) fill_pattern(dst, sd.r.rank, d.blocks(), kTarget);
    plan.execute(s.const_blocks(), d.blocks(), strategy);
    if (!err.empty()) continue;
    if (d.st) {
      const CheckResult c = check_redistributed(dst, sd.r.rank, d.blocks(), region, src, kSource, kTarget);
      if (!c.ok()) err = detail::cat("rep ", rep, ": ", c.wrong, " of ", c.checked, " wrong; first: ", c.first_error);
    }
    if (err.empty() && s.st) {
      const CheckResult c = check_pattern(src, sd.s.rank, s.blocks(), kSource);
      if (!c.ok()) err = "source changed: " + c.first_error;
    }
  }
  return err;
}

// Random cases: per group configuration, a layout for its S ranks, one for its
// R ranks, a region fitting both; f(config, sides, src, dst, region, case, range)
// returns false to stop.
template <class F>
void for_group_cases(int ncases, std::uint64_t seed, F&& f) {
  const CaseRange range = case_range(ncases, seed);
  for (const Config& cfg : configs(world_size())) {
    Sides sd(cfg);
    const int S = static_cast<int>(cfg.senders.size()), R = static_cast<int>(cfg.receivers.size());
    for (int c = range.first; c < range.end; ++c) {
      Rng rng = case_rng(range.seed, c);
      const RandomCase a = random_case(rng, S, 3);
      // the receiver layout: R ranks over the case's target shape
      const Layout src = registered(a.src, S);
      const Layout dst = registered(random_layout(rng, a.dst.shape(), R, a.src.elem_size()), R);
      if (!f(cfg, sd, src, dst, a.region, c, range)) return;
    }
  }
}

void random_group_cases(const std::string& strategy, int ncases, std::uint64_t seed) {
  for_group_cases(ncases, seed, [&](const Config& cfg, const Sides& sd, const Layout& src, const Layout& dst,
                                    const Region& region, int c, const CaseRange& range) {
    const std::string err = run_group_case(sd, src, dst, region, strategy);
    const bool ok = all_ok(err.empty());
    EXPECT_TRUE(err.empty()) << "rank " << world_rank() << " groups " << cfg.name << " case " << c << " strategy "
                             << strategy << "\n  src " << src.spec() << "\n  dst " << dst.spec() << "\n  region "
                             << region.str() << "\n  " << err << "\n  replay: " << replay_command(range, c);
    return ok;
  });
}

class GroupConformance : public ::testing::TestWithParam<std::string> {};

TEST_P(GroupConformance, RandomLayouts) { random_group_cases(GetParam(), 8, 4242); }

INSTANTIATE_TEST_SUITE_P(AllStrategies, GroupConformance, ::testing::ValuesIn(strategy_names()),
                         [](const auto& info) { return info.param; });

// Paper 002 Fig. 3 in small: (BLOCK,*) on the senders -> (*,BLOCK) on the
// receivers, whole array, every configuration and every strategy.
TEST(Groups, PaperFigure3) {
  for (const Config& cfg : configs(world_size())) {
    Sides sd(cfg);
    const int S = static_cast<int>(cfg.senders.size()), R = static_cast<int>(cfg.receivers.size());
    const Layout src = Layout::parse(detail::cat("64x48 tile=", (64 + S - 1) / S, "x48 block_cyclic grid=", S, "x1"));
    const Layout dst = Layout::parse(detail::cat("64x48 tile=64x", (48 + R - 1) / R, " block_cyclic grid=1x", R,
                                                 " storage=local_array"));
    for (const std::string& ex : strategy_names()) {
      const std::string err = run_group_case(sd, src, dst, Region::whole(src.shape()), ex);
      EXPECT_TRUE(all_ok(err.empty())) << cfg.name << " " << ex << ": " << err;
    }
  }
}

// Options::duplicate_comm false: the plan still works on a communicator of its
// own (the union make_group_plan makes is freed when it returns; the plan once
// kept it and crashed in its first execute).
TEST(Groups, WithoutDuplicateComm) {
  Options o;
  o.duplicate_comm = false;
  for (const Config& cfg : configs(world_size())) {
    Sides sd(cfg);
    const Layout src = block_cyclic_layout({40, 30}, {7, 5}, {static_cast<int>(cfg.senders.size()), 1});
    const Layout dst = block_cyclic_layout({40, 30}, {9, 4}, {1, static_cast<int>(cfg.receivers.size())});
    for (const char* ex : {"p2p", "alltoallw", "centralized"}) {
      const std::string err = run_group_case(sd, src, dst, Region::whole(src.shape()), ex, o);
      EXPECT_TRUE(all_ok(err.empty())) << cfg.name << " " << ex << ": " << err;
    }
  }
}

// CDT sec. 2.3: the leaders exchange the layouts, each broadcasts the other
// side's in its group: no rank sends more than 1 + max(ceil log2 S, ceil log2 R)
// messages or receives more than one; identical groups exchange nothing.
TEST(Groups, LayoutExchangeMessageCount) {
  for (const Config& cfg : configs(world_size())) {
    Sides sd(cfg);
    const int S = static_cast<int>(cfg.senders.size()), R = static_cast<int>(cfg.receivers.size());
    GroupLayouts gl;
    if (sd.s.rank >= 0) gl.send = block_cyclic_layout({40, 30}, {7, 5}, {S, 1});
    if (sd.r.rank >= 0) gl.receive = block_cyclic_layout({40, 30}, {4, 9}, {1, R});
    sent = 0, received = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    counting = true;
    Plan plan = make_group_plan(sd.groups(), gl);
    counting = false;
    const long bound = 1 + static_cast<long>(std::ceil(std::log2(std::max(S, R))));
    long most[2] = {sent.load(), received.load()};
    MPI_Allreduce(MPI_IN_PLACE, most, 2, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (world_rank() == 0)
      std::printf("    %s (S=%d, R=%d): at most %ld sent, %ld received on a rank (bound %ld)\n", cfg.name.c_str(), S,
                  R, most[0], most[1], bound);
    EXPECT_LE(most[0], bound) << cfg.name;
    EXPECT_LE(most[1], 1) << cfg.name;
    if (cfg.senders == cfg.receivers) {
      EXPECT_EQ(most[0] + most[1], 0) << cfg.name;
    } else {
      EXPECT_GE(most[0], 1) << cfg.name;
    }
  }
}

// Paper 002 sec. 2.2's message counts, counted during one execute (after the
// first, which gathers the block list): (BLOCK,*) -> (*,BLOCK) between disjoint
// groups, where every sender has data for every receiver.
TEST(Groups, AlgorithmMessageCounts) {
  for (const Config& cfg : configs(world_size())) {
    if (cfg.name.find("_disjoint") == std::string::npos) continue;
    Sides sd(cfg);
    const long S = static_cast<long>(cfg.senders.size()), R = static_cast<long>(cfg.receivers.size());
    const long C = std::min(S, R);
    const Layout src = Layout::parse(detail::cat("60x60 tile=", (60 + S - 1) / S, "x60 block_cyclic grid=", S, "x1"));
    const Layout dst = Layout::parse(detail::cat("60x60 tile=60x", (60 + R - 1) / R, " block_cyclic grid=1x", R));
    GroupLayouts gl;
    if (sd.s.rank >= 0) gl.send = src;
    if (sd.r.rank >= 0) gl.receive = dst;
    Plan plan = make_group_plan(sd.groups(), gl);
    SideData s(src, sd.s.rank), d(dst, sd.r.rank);
    struct Expect {
      const char* name;
      long total, per_receiver;  // messages sent by all ranks; received by the busiest receiver
    };
    const Expect expect[] = {{"p2p", S * R, S},
                             {"centralized", S - 1 + R, 1},
                             {"staged", S * C - C + R, 1},
                             {"hybrid", S * R, S > R ? R + 1 : S}};
    for (const Expect& e : expect) {
      plan.execute(s.const_blocks(), d.blocks(), e.name);
      sent = 0, received = 0;
      counting = true;
      plan.execute(s.const_blocks(), d.blocks(), e.name);
      counting = false;
      long v[2] = {sent.load(), sd.r.rank >= 0 ? received.load() : 0};
      MPI_Allreduce(MPI_IN_PLACE, &v[0], 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
      MPI_Allreduce(MPI_IN_PLACE, &v[1], 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
      if (world_rank() == 0)
        std::printf("    %s (S=%ld, R=%ld) %s: %ld messages, a receiver gets %ld\n", cfg.name.c_str(), S, R, e.name,
                    v[0], v[1]);
      EXPECT_EQ(v[0], e.total) << cfg.name << " " << e.name;
      EXPECT_EQ(v[1], e.per_receiver) << cfg.name << " " << e.name;
    }
    // multistage: one message per rank and step at most, ceil(log2 P) steps
    plan.execute(s.const_blocks(), d.blocks(), "multistage");
    sent = 0;
    counting = true;
    plan.execute(s.const_blocks(), d.blocks(), "multistage");
    counting = false;
    long most = sent.load();
    MPI_Allreduce(MPI_IN_PLACE, &most, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    EXPECT_LE(most, static_cast<long>(std::ceil(std::log2(static_cast<double>(S + R))))) << cfg.name;
  }
}

// `redist plan --senders` computes paper 002's algorithms without MPI
// (detail::relay_counts, from the block list of every rank planned alone):
// here against the real run, per rank, on random layouts in every group
// configuration: the messages and bytes it sent in one execute (counted through
// MPI's profiling interface) and its buffers (Plan::buffer_bytes after the runs;
// p2p's: extra_memory, at most relay_counts' whole volume).
TEST(Groups, PlannedCountsMatchTheRun) {
  for_group_cases(3, 777, [](const Config& cfg, const Sides& sd, const Layout& src, const Layout& dst,
                             const Region& region, int c, const CaseRange&) {
    GroupLayouts gl;
    if (sd.s.rank >= 0) gl.send = with_rank_ld(src, sd.s.rank);
    if (sd.r.rank >= 0) gl.receive = with_rank_ld(dst, sd.r.rank);
    gl.region = region;
    SideData s(gl.send ? *gl.send : src, sd.s.rank), d(gl.receive ? *gl.receive : dst, sd.r.rank);
    std::vector<detail::RouteCounts> expect;
    for (const char* name : {"p2p", "centralized", "staged", "multistage", "hybrid"}) {
      Plan plan = make_group_plan(sd.groups(), gl);
      if (plan.comm() == MPI_COMM_NULL) continue;  // in neither group
      int me = 0, P = 1;
      MPI_Comm_rank(plan.comm(), &me), MPI_Comm_size(plan.comm(), &P);
      if (expect.empty()) {  // the planner's view: every union rank planned alone
        // (without this rank's own ld=, which another rank's storage may not fit)
        auto any_ld = [](const Layout& l) {
          return Layout(l.shape(), l.partitions(), l.ownership(), Storage{l.storage().kind, 0}, l.elem_size());
        };
        const Layout usrc = any_ld(plan.source()), udst = any_ld(plan.target());
        std::vector<detail::RelayBlock> blocks;
        for (int r = 0; r < P; ++r)
          for (const PeerPlan& q : plan_rank(usrc, udst, plan.region(), r, P).sends) blocks.push_back({r, q.peer, q.bytes});
        const GroupRanks g = group_ranks(plan);
        expect = detail::relay_counts(blocks, {P, g.senders, g.receivers});
      }
      const auto it = std::find_if(expect.begin(), expect.end(), [&](const auto& e) { return e.strategy == name; });
      EXPECT_NE(it, expect.end()) << name;
      if (it == expect.end()) continue;
      const detail::RelayCounts& want = it->ranks[static_cast<size_t>(me)];
      plan.execute(s.const_blocks(), d.blocks(), name);  // the first run gathers the block list
      sent = 0, sent_bytes = 0;
      counting = true;
      plan.execute(s.const_blocks(), d.blocks(), name);
      counting = false;
      const std::string where = detail::cat(cfg.name, " case ", c, " ", name, " union rank ", me);
      EXPECT_EQ(sent.load(), want.messages_sent) << where;
      EXPECT_EQ(sent_bytes.load(), want.bytes_sent) << where;
      if (std::string_view(name) == "p2p") {  // its messages that are one run of storage take no buffer,
        // which the block list does not show: relay_counts gives the most
        EXPECT_EQ(plan.buffer_bytes(), extra_memory(plan.rank_plan(), name)) << where;
        EXPECT_LE(plan.buffer_bytes(), want.buffer_bytes) << where;
      } else {
        EXPECT_EQ(plan.buffer_bytes(), want.buffer_bytes) << where;
      }
    }
    return true;
  });
}

// A pipeline's transfers in flight at once between the same groups: two plans
// (iteration i and i + 1, other layouts and data), executed at the same time
// from two threads on every rank. Each plan has a communicator of its own, so
// their messages (same peers, same tags) never mix.
TEST(Groups, TwoTransfersInFlight) {
  int level = 0;
  MPI_Query_thread(&level);
  if (level < MPI_THREAD_MULTIPLE) GTEST_SKIP() << "needs MPI_THREAD_MULTIPLE";
  for (const Config& cfg : configs(world_size())) {
    Sides sd(cfg);
    const int S = static_cast<int>(cfg.senders.size()), R = static_cast<int>(cfg.receivers.size());
    const Layout src[2] = {block_cyclic_layout({300, 200}, {17, 13}, {S, 1}),
                           block_cyclic_layout({300, 200}, {300, 7}, {1, S})};
    const Layout dst[2] = {block_cyclic_layout({300, 200}, {9, 31}, {1, R}),
                           block_cyclic_layout({300, 200}, {5, 200}, {R, 1})};
    for (const char* ex : {"p2p", "centralized", "staged", "multistage", "alltoallw"}) {
      std::optional<Plan> plan[2];
      std::optional<SideData> s[2], d[2];
      for (int i = 0; i < 2; ++i) {
        GroupLayouts gl;
        if (sd.s.rank >= 0) gl.send = src[i];
        if (sd.r.rank >= 0) gl.receive = dst[i];
        plan[i] = make_group_plan(sd.groups(), gl);
        s[i].emplace(src[i], sd.s.rank);
        d[i].emplace(dst[i], sd.r.rank);
        if (s[i]->st) fill_pattern(src[i], sd.s.rank, s[i]->blocks(), kSource + i);
        if (d[i]->st) fill_pattern(dst[i], sd.r.rank, d[i]->blocks(), kTarget);
      }
      std::string err[2];
      auto work = [&](int i) {
        if (sd.s.rank < 0 && sd.r.rank < 0) return;  // in neither group: an empty plan
        try {
          for (int rep = 0; rep < 5; ++rep) plan[i]->execute(s[i]->const_blocks(), d[i]->blocks(), ex);
        } catch (const std::exception& e) {
          err[i] = e.what();
        }
      };
      std::thread t(work, 1);
      work(0);
      t.join();
      for (int i = 0; i < 2; ++i)
        if (err[i].empty() && d[i]->st) {
          const CheckResult c = check_redistributed(dst[i], sd.r.rank, d[i]->blocks(), Region::whole(dst[i].shape()),
                                                    src[i], kSource + i, kTarget);
          if (!c.ok()) err[i] = c.first_error;
        }
      EXPECT_TRUE(all_ok(err[0].empty() && err[1].empty())) << cfg.name << " " << ex << ": " << err[0] << " | " << err[1];
    }
  }
}

// An intercommunicator between the two halves of the world (disjoint groups):
// each side passes its own layout only.
TEST(Groups, Intercommunicator) {
  const int n = world_size(), me = world_rank();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  const int half = n / 2, side = me < half ? 0 : 1;
  MPI_Comm local = MPI_COMM_NULL, inter = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, side, me, &local);
  MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, side == 0 ? half : 0, 5, &inter);
  const int S = half, R = n - half;
  const Layout src = block_cyclic_layout({50, 41}, {6, 7}, {1, S});
  const Layout dst = block_cyclic_layout({50, 41}, {11, 3}, {R, 1}, 8, StorageKind::local_array);
  int lr = 0;
  MPI_Comm_rank(local, &lr);
  for (const char* ex : {"p2p", "centralized", "staged", "multistage"}) {
    GroupLayouts gl;
    if (side == 0) gl.send = src;
    else gl.receive = dst;
    Plan plan = make_group_plan({.inter = inter}, gl);
    SideData s(src, side == 0 ? lr : -1), d(dst, side == 1 ? lr : -1);
    if (s.st) fill_pattern(src, lr, s.blocks(), kSource);
    if (d.st) fill_pattern(dst, lr, d.blocks(), kTarget);
    plan.execute(s.const_blocks(), d.blocks(), ex);
    std::string err;
    if (d.st) err = check_redistributed(dst, lr, d.blocks(), Region::whole(dst.shape()), src, kSource, kTarget).first_error;
    EXPECT_TRUE(all_ok(err.empty())) << ex << ": " << err;
    EXPECT_EQ(group_ranks(plan).senders.size(), static_cast<size_t>(S));
  }
  // make_plan and shared_allocate over the intercommunicator: a clear error on every
  // rank, naming make_group_plan (MPI's own refusal, "MPI_ERR_BUFFER: invalid buffer
  // pointer" from an Allreduce, said nothing of it).
  for (int call = 0; call < 2; ++call) {
    std::string what;
    try {
      if (call == 0) make_plan(src, src, Region::whole(src.shape()), inter);
      else shared_allocate(inter, 64);
    } catch (const Error& e) {
      what = e.what();
    }
    EXPECT_NE(what.find(call == 0 ? "redist: make_plan: comm is an intercommunicator"
                                  : "redist: shared_allocate: comm is an intercommunicator"),
              std::string::npos) << what;
    EXPECT_NE(what.find("make_group_plan"), std::string::npos) << what;
  }
  MPI_Comm_free(&inter);
  MPI_Comm_free(&local);
}

// Bad input: the same redist::Error on every rank of the union, never a hang.
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}
void expect_same_error(const std::string& e, const std::string& contains) {
  EXPECT_NE(e.find(contains), std::string::npos) << "rank " << world_rank() << ": '" << e << "'";
  const std::size_t h = std::hash<std::string>{}(e);
  std::size_t lo = h, hi = h;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UNSIGNED_LONG, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UNSIGNED_LONG, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_EQ(lo, hi) << "rank " << world_rank() << " got another message: " << e;
}

TEST(Groups, BadInputSameErrorEverywhere) {
  const int n = world_size();
  const Config cfg = n == 1 ? configs(1)[0] : Config{"split", range(0, (n + 1) / 2), range((n + 1) / 2, n)};
  Sides sd(cfg);
  const int S = static_cast<int>(cfg.senders.size()), R = static_cast<int>(cfg.receivers.size());
  const Layout good_s = block_cyclic_layout({20, 20}, {3, 3}, {S, 1}), good_r = block_cyclic_layout({20, 20}, {4, 4}, {1, R});
  auto make = [&](std::optional<Layout> s, std::optional<Layout> r, std::optional<Region> region = {}) {
    return [&sd, s, r, region] {
      GroupLayouts gl;
      if (sd.s.rank >= 0) gl.send = s;
      if (sd.r.rank >= 0) gl.receive = r;
      gl.region = region;
      make_group_plan(sd.groups(), gl);
    };
  };
  // A sender layout for more ranks than the sender group has.
  expect_same_error(error_of(make(block_cyclic_layout({20, 20}, {3, 3}, {S + 1, 1}), good_r)), "sender layout (a group of");
  // A receiver layout for more ranks than the receiver group has.
  expect_same_error(error_of(make(good_s, block_cyclic_layout({20, 20}, {4, 4}, {1, R + 2}))), "receiver layout (a group of");
  // Different shapes and no region.
  expect_same_error(error_of(make(good_s, block_cyclic_layout({20, 21}, {4, 4}, {1, R}))), "give layouts.region");
  // A region that does not fit the receiver's array (make_plan's own check).
  expect_same_error(error_of(make(good_s, good_r, Region{{5, 5}, {0, 0}, {18, 0}})), "region");
  // A member of the sender group that passes no sender layout.
  expect_same_error(error_of(make(std::nullopt, good_r)), "passed no sender layout");
  if (n >= 3) {
    // Groups that do not fit together: ranks 0 and 1 form a sender group, the
    // last rank claims to be a sender group of its own (two sender ranks 0).
    MPI_Comm s = MPI_COMM_NULL;
    const int me = world_rank();
    MPI_Comm_split(MPI_COMM_WORLD, me <= 1 ? 0 : me == n - 1 ? 1 : MPI_UNDEFINED, me, &s);
    MPI_Comm r = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, me >= 2 ? 0 : MPI_UNDEFINED, me, &r);
    GroupLayouts gl;
    if (s != MPI_COMM_NULL) gl.send = block_cyclic_layout({20, 20}, {3, 3}, {1, 1});
    if (r != MPI_COMM_NULL) gl.receive = block_cyclic_layout({20, 20}, {3, 3}, {1, 1});
    expect_same_error(error_of([&] { make_group_plan({.parent = MPI_COMM_WORLD, .senders = s, .receivers = r}, gl); }),
                      "every member must pass the same group");
    if (s != MPI_COMM_NULL) MPI_Comm_free(&s);
    if (r != MPI_COMM_NULL) MPI_Comm_free(&r);
  }
}

}  // namespace

// A memory budget counts the forwarding strategies' slots: the hub of
// `centralized` holds every block it forwards, more than p2p needs anywhere.
TEST(Groups, BudgetCountsForwardingBuffers) {
  // On 4 ranks, 2 -> 2: p2p holds half the array D on a rank; the hub all of it
  // in its slots, and in step 2 both its messages (each its own block and the
  // other sender's, not adjacent in the slots) assembled in its send area: 2 D.
  if (world_size() != 4) GTEST_SKIP() << "2 + 2 ranks";
  const Config cfg{"2_2_disjoint", {0, 1}, {2, 3}};
  Sides sd(cfg);
  const int S = static_cast<int>(cfg.senders.size()), R = static_cast<int>(cfg.receivers.size());
  const Layout src = block_cyclic_layout({40, 40}, {(40 + S - 1) / S, 40}, {S, 1});
  const Layout dst = block_cyclic_layout({40, 40}, {40, (40 + R - 1) / R}, {1, R});
  GroupLayouts gl;
  if (sd.s.rank >= 0) gl.send = src;
  if (sd.r.rank >= 0) gl.receive = dst;
  const index_t D = 40 * 40 * 8;
  Options opt;
  opt.max_buffer_bytes = D;  // p2p: D / 2 on every rank, fits; the hub: 2 D

  Plan plan = make_group_plan(sd.groups(), gl, opt);
  SideData s(src, sd.s.rank), d(dst, sd.r.rank);
  plan.execute(s.const_blocks(), d.blocks(), "p2p");
  expect_same_error(error_of([&] { plan.execute(s.const_blocks(), d.blocks(), "centralized"); }),
                    "strategy centralized needs");
  Options roomy;
  roomy.max_buffer_bytes = 2 * D;
  Plan ok = make_group_plan(sd.groups(), gl, roomy);
  ok.execute(s.const_blocks(), d.blocks(), "centralized");
  EXPECT_EQ(ok.buffer_bytes(), sd.s.rank == 0 ? 2 * D : D / 2) << "rank " << world_rank();
}
