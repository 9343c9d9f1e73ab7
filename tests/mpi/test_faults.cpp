// Faults inside an execute (docs/strategies.md, "Faults"): an MPI call that
// fails on the plan's communicator (errors returned, not fatal) becomes a
// redist::MpiError on that rank whose message names the rank, the call, the
// peer and MPI's text; the plan then refuses to run again instead of reusing
// requests and buffers MPI may still hold. (A rank killed outright is tested
// through the command line: tests/python/test_cli.py.)
//
// A truncated message is made the way a peer running another plan would make
// it: rank 0 sends a message larger than the plan's on the plan's communicator
// with the tag the message strategies use, before executing. MPI matches it to
// rank 1's first receive (messages between a pair do not overtake), which is
// too small for it: MPI_ERR_TRUNCATE.
#include <gtest/gtest.h>

#include <vector>

#include "../common/mpi_util.hpp"
#include "../common/oracle_case.hpp"
#include "redist/redist.hpp"

using namespace redist;
using namespace redist::testing;

namespace {

// The tag p2p and segment send their data with (private to
// src/exec/strategies/p2p.cpp and segment.cpp).
constexpr int kDataTag = 7;

class Truncation : public ::testing::TestWithParam<std::string> {};

TEST_P(Truncation, IsAnMpiErrorNamingRankCallAndPeer) {
  const int rank = world_rank();
  if (world_size() < 2) GTEST_SKIP() << "needs a sender and a receiver";  // the same on every rank
  // One 16x16 tile of doubles (2048 bytes), owned by rank 0 in the source and by
  // rank 1 in the target: one message from 0 to 1, under the eager limit, so
  // rank 0's execute completes whatever rank 1 does with it.
  const Layout src = Layout::parse("16x16 tile=16x16 table owners=0");
  const Layout dst = Layout::parse("16x16 tile=16x16 table owners=1");
  const Region region = Region::whole(src.shape());
  OracleCase data(src, dst, region, rank);
  Plan plan = make_plan(src, dst, region, MPI_COMM_WORLD);
  std::vector<char> rogue(3000, 'x');  // larger than the 2048 bytes rank 1 expects
  MPI_Request rogue_req = MPI_REQUEST_NULL;
  if (rank == 0) {
    ASSERT_EQ(MPI_Isend(rogue.data(), static_cast<int>(rogue.size()), MPI_BYTE, 1, kDataTag, plan.comm(), &rogue_req),
              MPI_SUCCESS);
  }
  std::string message;
  int error_class = MPI_SUCCESS;
  bool other = false;
  try {
    plan.execute(data.src_blocks(), data.dst_blocks(), GetParam());
  } catch (const MpiError& e) {
    message = e.what();
    error_class = e.error_class();
  } catch (const std::exception& e) {
    message = e.what();
    other = true;
  }
  if (rank == 1) {
    EXPECT_FALSE(other) << "not an MpiError: " << message;
    EXPECT_EQ(error_class, MPI_ERR_TRUNCATE) << message;
    for (const char* word : {"redist: rank 1: ", "MPI_Waitsome failed", "(receive from rank 0)", "MPI_ERR_TRUNCATE"})
      EXPECT_NE(message.find(word), std::string::npos) << "'" << word << "' missing in: " << message;
    // The plan's own message is still waiting: take it, so the communicator is clean.
    std::vector<char> buf(2048);
    MPI_Status st;
    EXPECT_EQ(MPI_Recv(buf.data(), 2048, MPI_BYTE, 0, kDataTag, plan.comm(), &st), MPI_SUCCESS);
    // Local refusal, no communication (the other ranks do not call it again).
    try {
      plan.execute(data.src_blocks(), data.dst_blocks(), GetParam());
      ADD_FAILURE() << "a plan that had an MPI error ran again";
    } catch (const MpiError& e) {
      EXPECT_NE(std::string(e.what()).find("cannot run again"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("MPI_ERR_TRUNCATE"), std::string::npos) << e.what();
    }
  } else {
    EXPECT_TRUE(message.empty()) << "rank " << rank << " threw: " << message;  // the error is local to rank 1
  }
  if (rank == 0) {
    EXPECT_EQ(MPI_Wait(&rogue_req, MPI_STATUS_IGNORE), MPI_SUCCESS);
  }
  EXPECT_TRUE(all_ok(!::testing::Test::HasFailure()));
}

INSTANTIATE_TEST_SUITE_P(MessageStrategies, Truncation, ::testing::Values("p2p", "segment"),
                         [](const auto& info) { return info.param; });

// A failed plan does not take the others down: another plan made on the same
// communicator (each has a duplicate of its own) still runs, and is right.
TEST(Faults, AnotherPlanRunsAfterAFailedOne) {
  const int rank = world_rank();
  if (world_size() < 2) GTEST_SKIP() << "needs a sender and a receiver";
  const Layout src = Layout::parse("16x16 tile=16x16 table owners=0");
  const Layout dst = Layout::parse("16x16 tile=16x16 table owners=1");
  const Region region = Region::whole(src.shape());
  OracleCase data(src, dst, region, rank);
  Plan good = make_plan(src, dst, region, MPI_COMM_WORLD);
  {
    Plan bad = make_plan(src, dst, region, MPI_COMM_WORLD);
    std::vector<char> rogue(3000, 'x');
    MPI_Request req = MPI_REQUEST_NULL;
    if (rank == 0) MPI_Isend(rogue.data(), 3000, MPI_BYTE, 1, kDataTag, bad.comm(), &req);
    try {
      bad.execute(data.src_blocks(), data.dst_blocks(), "p2p");
    } catch (const MpiError&) {
      std::vector<char> buf(2048);
      MPI_Recv(buf.data(), 2048, MPI_BYTE, 0, kDataTag, bad.comm(), MPI_STATUS_IGNORE);
    }
    if (rank == 0) MPI_Wait(&req, MPI_STATUS_IGNORE);
  }  // rank 1 keeps the failed plan's buffers and communicator (a leak by design)
  data.reset_target();
  good.execute(data.src_blocks(), data.dst_blocks(), "p2p");
  const std::string err = data.check("the good plan");
  EXPECT_TRUE(all_ok(err.empty())) << err;
}

}  // namespace
