// Tasks lent across the ranks of a node (Options::lend; docs/runtime.md, "Lending
// tasks"). A rank whose storage another rank maps (DataCollection::storage_of: MPI
// shared windows on a node) can hand it a ready task: the task's flows travel as
// places in the storage of the two ranks, the borrower runs the body on that
// memory and returns the task, and the owner finishes it as its own (epilogue,
// termination count). This file holds what the protocol carries: who may lend to
// whom, and the flows of a lent task as places.
//
// Protocol (Comm messages, control tag, all small):
//   STEAL    borrower -> owner   "I have nothing to run": at most one in flight
//   LEND     owner -> borrower   tasks: per task its number, class, parameters, flows
//   NOLEND   owner -> borrower   nothing to lend now (the borrower waits a little)
//   RETURN   borrower -> owner   the task ran: number, the flows' sizes, and the
//                                bytes of any output the body made anew
//   FINISHED owner -> its peers  every task of the owner ran (lent ones returned):
//            nothing more to lend. A rank leaves the run only when it has sent
//            FINISHED, received one from every peer and no request is open, so
//            no LEND can reach a rank that left. A STEAL that crossed a
//            FINISHED stays unanswered; the run's end receives it (Comm::drain).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "graph_walk.hpp"

namespace redist::runtime::detail {

// Who maps whose storage, per collection (bit c; collections from 64 on are not
// counted): mine[r], the collections whose storage of rank r this rank maps;
// theirs[r], those whose storage of this rank r maps (exchanged, collectively, so a
// rank of zero bytes that maps the others counts too). Peers: the ranks either
// way, the same pairs on both sides, in ring order from rank + 1.
struct LendMaps {
  std::vector<std::uint64_t> mine, theirs;
  std::vector<int> peers;
};
LendMaps lend_maps(const TaskGraph& graph, MPI_Comm comm, int rank, int ranks);

// Appends the flows of `t` as places for `borrower` to `msg` (per flow: size, then
// -1 for no data, or the collection, the rank whose storage holds it, the offset)
// and returns true; false (msg unchanged) when a flow lies elsewhere: a received
// buffer, a typed view, a third rank's storage, storage the borrower does not map.
bool append_lent_flows(const TaskGraph& graph, const LendMaps& maps, int rank, int borrower, const ReadyTask& t,
                       std::vector<std::int64_t>& msg);

// The flows of a lent task from `lender`, as `append_lent_flows` wrote them from
// `msg[at]` on, mapped in this process; `at` moves past them.
std::vector<Data> lent_flows(const TaskGraph& graph, const TaskClass& cls, const Params& p, int rank, int lender,
                             const std::vector<std::int64_t>& msg, std::size_t& at);

// After a borrowed task ran: appends, per flow, its size and either 0 (its data
// is where it was lent: `at`, the flows' places before the body) or 1 and the
// bytes of a buffer the body made (TaskContext::allocate), which the owner copies.
void append_returned_flows(const TaskClass& cls, const Params& p, const std::vector<const std::byte*>& at,
                           const std::vector<Data>& flows, std::vector<std::int64_t>& msg);

// The owner's side of append_returned_flows: sizes set, made buffers copied into
// fresh ones; `at` moves past them.
void returned_flows(const std::vector<std::int64_t>& msg, std::size_t& at, std::vector<Data>& flows);

}  // namespace redist::runtime::detail
