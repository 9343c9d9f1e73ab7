// The runtime's benchmarks as functions, so that one program can offer them all
// (`redist bench pingpong|sched|tasks|cholesky`); each also has its own program
// (main.cpp). argv[0] is the program name, the options follow (--help lists them).
// Preconditions: MPI is initialized, with MPI_THREAD_MULTIPLE for the runtime's
// default CommMode::multiple, and all ranks of MPI_COMM_WORLD call. MPI is not
// finalized. Returns 0 on success (1 on a failed --check or bad arguments);
// throws redist::Error (the same on every rank) when a run fails.
#pragma once

namespace redist::runtime_bench {

int run_pingpong(int argc, char** argv);  // PING/PONG task chain vs raw MPI (paper 004, Fig. 6)
int run_sched(int argc, char** argv);     // scheduling overhead of DGEMM tasks (paper 004, Fig. 4)
int run_tasks(int argc, char** argv);     // empty-task throughput
int run_cholesky(int argc, char** argv);  // tiled Cholesky vs LAPACK and ScaLAPACK (paper 004, sec. IV-C)
int run_gemm(int argc, char** argv);      // tiled GEMM: READ tasks vs remote collection reads

}  // namespace redist::runtime_bench
