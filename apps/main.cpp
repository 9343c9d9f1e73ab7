// `redist`: run or plan a redistribution from the command line.
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "cli.hpp"
#include "redist/exec.hpp"

namespace {

const char* kHelp = R"(redist - move distributed arrays between data distributions over MPI

usage:
  mpirun -np P redist run  SRC DST [REGION] [options]   redistribute, verify, time
  redist plan SRC DST [REGION] --ranks P [options]      plan only (no MPI): statistics
  mpirun -np 2 redist calibrate [--out FILE] [--force]  measure the machine for the
                                                        cost model (--strategy auto)
  mpirun -np 2 redist bench SUITE [options]             the paper's benchmark suites
                                                        beside pdgemr2d; compare SRC DST;
                                                        pingpong|sched|tasks|cholesky|gemm;
                                                        taskgraph (its optimizations)
  mpirun -np P redist repartition [options]             paper 003: a 3-D volume onto a
                                                        patch grid, greedy/balanced,
                                                        per-patch/per-rank
  redist help [run|plan|calibrate|repartition|bench|spec|strategies]
  redist --version                                      this build's version and MPI

SRC and DST are layout spec strings (docs/spec.md), quoted, e.g.
  "8000x8000 tile=400x400 block_cyclic grid=1x2"
  "8000x8000 tile=300x300 random seed=7 ranks=2 storage=tile"
REGION (default, or empty: the whole source) is "SIZE [from=SRC_OFFSET] [to=DST_OFFSET] [axes=A,B,..]",
e.g. "7000x7000 from=500x300 to=1000x0"; axes= permutes dimensions (target
dimension d reads source dimension A_d; SIZE and to= in the target's order, from=
in the source's), `transpose` is axes=1,0 after the size ("400x600 transpose"; docs/transforms.md)

Run 'redist help run' or 'redist run --help' for the options of a subcommand.
)";

const char* kSpecHelp = R"(layout spec strings (full grammar: docs/spec.md)

  SHAPE [tile=T0xT1..] [offset=O0xO1..] [esize=BYTES] [storage=tile|local_array|tile_pointers]
        [ld=N] [OWNERSHIP]
  SHAPE      extents joined by 'x', 1 to 4 dimensions: 8000x8000, 64x64x64
  tile=      regular tile size per dimension, or explicit boundaries [0,100,250,400]
  offset=    size cut from the first tile (ScaLAPACK-style first-block offset)
  OWNERSHIP  block_cyclic grid=PxQ [order=row|col] [src=AxB] [super=KxL] [first=R]
                          [map=R00,R10,..]  (rank at each grid coordinate, column-major)
             random [seed=S] [ranks=R] [first=F]   (defaults: seed 0, 1 rank)
             band width=W near=(OWNERSHIP) far=(OWNERSHIP)
             table owners=0,1,1,0,...        (one owner per tile, column-major)
             function name=NAME ranks=R      (registered in C++)
             greedy of=(SPEC)                (paper 003: the tiles are patches placed over the
             balanced of=(SPEC)               source layout SPEC: largest part / balanced counts)
)";

void print_strategies() {
  std::printf("strategies (--strategy NAME; `all` is every one and auto):\n");
  for (const redist::StrategyInfo& s : redist::strategies()) std::printf("  %-10s %s\n", s.name.c_str(), s.summary.c_str());
  std::printf("  %-10s the strategy the cost model predicts fastest (needs `redist calibrate`, else measures quickly)\n",
              "auto");
  std::printf("How each works and its cost model: docs/strategies.md.\n");
}

// `redist bench ...` is another program: redist-bench (it links ScaLAPACK, which
// redist itself does not need) or, for the task runtime's, redist-bench-pingpong,
// -sched, -tasks, -gemm and redist-cholesky. Replace this process by it, before any MPI
// call, so that under mpirun each rank becomes one of its ranks. `argv` is
// main's (null-terminated), argv[1] == "bench".
int exec_bench(char** argv) {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  self[n > 0 ? n : 0] = '\0';
  std::string dir = n > 0 ? std::string(self, static_cast<size_t>(n)) : std::string(argv[0]);
  dir = dir.substr(0, dir.find_last_of('/') + 1);
  std::string program = "redist-bench", sub = "";
  const std::string what = argv[2] ? argv[2] : "";
  if (what == "pingpong" || what == "sched" || what == "tasks" || what == "gemm") program = "redist-bench-" + what, sub = "runtime/";
  if (what == "cholesky") program = "redist-cholesky", sub = "runtime/";
  if (!sub.empty()) ++argv;  // the runtime's programs take their options only
  for (const std::string& path : {dir + program, dir + "../bench/" + sub + program}) {
    if (access(path.c_str(), X_OK) != 0) continue;
    argv[1] = const_cast<char*>(path.c_str());  // PROGRAM [SUITE] [options]
    execv(path.c_str(), argv + 1);
    std::perror(("redist bench: cannot start " + path).c_str());
    return 2;
  }
  std::fprintf(stderr, "redist bench: %s not found beside %s (looked in %s and %s../bench/%s); "
                       "it is built in build/bench/\n", program.c_str(), self, dir.c_str(), dir.c_str(), sub.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {  // no command: the usage, as an error (a script that lost its arguments fails)
    if (!redist::cli::launch_rank_zero()) return 0;  // rank 0 fails the job (see the end)
    std::fprintf(stderr, "redist: no command given\n\n%s", kHelp);
    return 2;
  }
  const char* cmd = argv[1];
  if (!std::strcmp(cmd, "--version") || !std::strcmp(cmd, "version")) {
    char mpi[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(mpi, &len);  // allowed before MPI_Init
    std::string first(mpi, static_cast<size_t>(len));
    first = first.substr(0, first.find_first_of("\n,"));
    if (redist::cli::launch_rank_zero()) std::printf("redist %s (built with %s)\n", REDIST_VERSION, first.c_str());
    return 0;
  }
  if (!std::strcmp(cmd, "run")) return redist::cli::cmd_run(argc, argv);
  if (!std::strcmp(cmd, "plan")) return redist::cli::cmd_plan(argc, argv);
  if (!std::strcmp(cmd, "calibrate")) return redist::cli::cmd_calibrate(argc, argv);
  if (!std::strcmp(cmd, "repartition")) return redist::cli::cmd_repartition(argc, argv);
  if (!std::strcmp(cmd, "bench")) return exec_bench(argv);
  if (!std::strcmp(cmd, "help") || !std::strcmp(cmd, "--help") || !std::strcmp(cmd, "-h")) {
    const bool speak = redist::cli::launch_rank_zero();  // under mpirun: once, not once per rank
    if (argc > 2 && !std::strcmp(argv[2], "spec")) {
      if (speak) std::fputs(kSpecHelp, stdout);
      return 0;
    }
    if (argc > 2 && !std::strcmp(argv[2], "strategies")) {
      if (speak) print_strategies();
      return 0;
    }
    if (argc > 2) {
      char help[] = "--help";
      char* args[] = {argv[0], argv[2], help, nullptr};  // an argv: execv needs the null
      if (!std::strcmp(argv[2], "run")) return redist::cli::cmd_run(3, args);
      if (!std::strcmp(argv[2], "plan")) return redist::cli::cmd_plan(3, args);
      if (!std::strcmp(argv[2], "calibrate")) return redist::cli::cmd_calibrate(3, args);
      if (!std::strcmp(argv[2], "repartition")) return redist::cli::cmd_repartition(3, args);
      if (!std::strcmp(argv[2], "bench")) return exec_bench(args);
      if (!speak) return 0;  // rank 0 says it and fails the job (see below)
      std::fprintf(stderr,
                   "redist help: no topic '%s': the topics are run, plan, calibrate, repartition, bench, spec and "
                   "strategies\n",
                   argv[2]);
      return 2;
    }
    if (speak) std::fputs(kHelp, stdout);
    return 0;
  }
  // Under mpirun the other ranks end quietly with 0 and rank 0 fails the job: had
  // they failed first, mpirun would have killed rank 0 before it said why.
  if (!redist::cli::launch_rank_zero()) return 0;
  std::fprintf(stderr, "redist: unknown command '%s'\n\n%s", cmd, kHelp);
  return 2;
}
