// The task graph unrolled into Graphviz DOT, for pictures of small cases (paper 000
// Fig. 4). The engine never does this: it is the one place that unrolls a graph.
#pragma once

#include <string>

#include "redist/runtime/task_graph.hpp"

namespace redist::runtime {

// Every task of `graph` (a node "Class(p, ...)" labelled with the rank that runs it,
// filled by rank) and every dependency that holds (an edge per OUT endpoint: solid
// for data, dashed for control; red when both tasks run on one rank, blue across
// ranks, as in paper 000 Fig. 4). `ranks`: the communicator size the affinities
// assume. No MPI. Resolves the graph; throws redist::Error when it is invalid.
std::string to_dot(TaskGraph& graph, int ranks);

}  // namespace redist::runtime
