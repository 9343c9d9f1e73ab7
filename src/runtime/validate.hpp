// Checking a task graph before it runs, so that an invalid graph fails on every
// rank with one message instead of hanging (issue 4, item 5).
#pragma once

#include <cstdint>
#include <string>

#include "remote_io.hpp"

namespace redist::runtime::detail {

// Graphs of up to this many tasks (all ranks') are checked for cycles with the
// edges (Options::validate): a cycle would wait forever.
inline constexpr std::int64_t kCycleCheckMax = 200000;

// Walks every execution space: checks affinities are in [0, ranks) and counts the
// tasks of `rank` into local_tasks. With check_edges, also checks every edge of the
// local tasks both ways (each input is sent by exactly one OUT dependency of its
// producer; each output goes to a task whose IN names this task) and, up to
// kCycleCheckMax tasks in all, that no task waits on itself through its inputs. Always records
// the remote collection reads and writes that concern `rank` into `io` (it checks
// that no tile is written twice). Returns "" or the first problem found.
std::string validate_graph(const TaskGraph& graph, int rank, int ranks, bool check_edges,
                           std::int64_t& local_tasks, RemoteIo& io);

}  // namespace redist::runtime::detail
