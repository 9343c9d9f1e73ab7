// What every program of a launch (redist, redist-bench) checks first: that its
// ranks were started alike.
#pragma once

#include <mpi.h>

namespace redist::harness {

// Collective over `comm`, before anything is parsed: every rank must read the
// same command line (argv[1..]; argv[0], a path, may differ) and the same REDIST_*
// environment (REDIST_SHOW_ERRORS aside), or ranks would take different paths
// (another --reps: a different number of collectives, a hang) or fail alone.
// Throws redist::MismatchError on every rank naming the first difference. Two
// programs of one launch (`mpirun -np 1 redist run .. : -np 1 redist bench ..`)
// compare their command lines the same way and fail alike.
void agree_launch(MPI_Comm comm, int argc, char** argv);

}  // namespace redist::harness
