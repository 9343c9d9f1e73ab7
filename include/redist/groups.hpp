// Transfers between two process groups (paper 002, CDT: communicating
// data-parallel tasks). A sender group holds an array in its layout, a receiver
// group wants it in its own; each side knows only its own layout.
//
//   // senders: the first 3 ranks of MPI_COMM_WORLD, receivers: the rest (disjoint)
//   MPI_Comm s = MPI_COMM_NULL, r = MPI_COMM_NULL;
//   MPI_Comm_split(MPI_COMM_WORLD, me < 3 ? 0 : MPI_UNDEFINED, me, &s);
//   MPI_Comm_split(MPI_COMM_WORLD, me >= 3 ? 0 : MPI_UNDEFINED, me, &r);
//   redist::GroupLayouts mine;
//   if (me < 3) mine.send = redist::Layout::parse("1000x1000 tile=100x100 block_cyclic grid=3x1");
//   else        mine.receive = redist::Layout::parse("1000x1000 tile=64x64 block_cyclic grid=1x2");
//   redist::Plan plan = redist::make_group_plan({.parent = MPI_COMM_WORLD, .senders = s, .receivers = r}, mine);
//   for (...) plan.execute(me < 3 ? my_tiles : nullptr, me < 3 ? nullptr : my_tiles);  // plan once, run many
//
// The plan is an ordinary Plan on the union of the two groups (its comm()):
// union ranks 0 .. S-1 are the senders in their group's order, then the
// receivers that do not send, in theirs; the receiver layout is translated to
// union ranks. Every strategy runs it; `centralized`, `staged` and `multistage`
// are paper 002's algorithms (all-to-all is `p2p`), `hybrid` combines them
// (docs/groups.md).
#pragma once

#include <mpi.h>

#include <optional>
#include <vector>

#include "redist/exec.hpp"

namespace redist {

// The two groups, as this rank sees them. Either
//  - `parent` (every rank of it calls make_group_plan, also ranks in neither
//    group) and this rank's communicator of each group it belongs to
//    (MPI_COMM_NULL for a group it is not in): disjoint, overlapping or
//    identical groups; or
//  - `inter`, an intercommunicator whose two sides are the groups (disjoint);
//    a rank's side is the one whose layout it passes.
struct Groups {
  MPI_Comm parent = MPI_COMM_NULL;
  MPI_Comm senders = MPI_COMM_NULL;
  MPI_Comm receivers = MPI_COMM_NULL;
  MPI_Comm inter = MPI_COMM_NULL;
};

// What this rank knows: the layout of each group it belongs to, its ranks
// numbered in that group (CDT's SENDDIST, RECVDIST). `region`: the same on every
// rank that passes one, or on none: then the whole array, and both layouts must
// have the same shape.
struct GroupLayouts {
  std::optional<Layout> send{};
  std::optional<Layout> receive{};
  std::optional<Region> region{};
};

// Collective over `groups.parent` (or both sides of `groups.inter`). Checks the
// groups (each numbered 0 .. size-1 exactly once, both non-empty, every rank of
// a group passing that group's layout, each layout valid for its group's size)
// and agrees on the outcome: bad input gives the same redist::Error on every
// rank of the union, never a hang. Then the group leaders exchange the layouts
// and each leader broadcasts the other side's layout to the ranks of its group
// that lack it (a binomial tree): no rank sends more than
// 1 + max(ceil(log2 S), ceil(log2 R)) messages or receives more than one for
// the exchange. Returns the plan (an empty Plan on a rank in neither group).
// The plan has its own communicator, so transfers of several plans between the
// same groups never mix (Options::duplicate_comm is not used here: the union
// make_group_plan builds is freed when it returns, the plan keeps a duplicate).
Plan make_group_plan(const Groups& groups, const GroupLayouts& layouts, const Options& options = {});

// The union ranks of each group in a plan (make_group_plan), in group order; for
// a plan of one group (make_plan) both are every rank of its communicator.
struct GroupRanks {
  std::vector<int> senders{}, receivers{};
};
GroupRanks group_ranks(const Plan& plan);

}  // namespace redist
