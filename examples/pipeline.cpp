// A producer group feeds a consumer group (paper 002, Fig. 3): the producers
// hold an N x N array of doubles by blocks of rows, (BLOCK,*), the consumers
// want it by blocks of columns, (*,BLOCK). Each side knows only its own layout;
// the plan is made once and runs 10 times, and the consumers check every element
// of every iteration. The first half of the ranks produce, the others consume
// (one rank: it does both).
//
//   scripts/mpirun.sh -np 4 build/examples/pipeline [N] [--strategy NAME]
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <redist/groups.hpp>
#include <redist/redist.hpp>

namespace {

double value(int iteration, long i, long j) { return iteration * 1e6 + static_cast<double>(i) * 1e3 + j; }

int run(long n, const std::string& strategy) {
  int me = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int producers = size == 1 ? 1 : (size + 1) / 2, consumers = size == 1 ? 1 : size - producers;
  const bool produce = me < producers, consume = size == 1 || me >= producers;
  MPI_Comm pc = MPI_COMM_NULL, cc = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, produce ? 0 : MPI_UNDEFINED, me, &pc);
  MPI_Comm_split(MPI_COMM_WORLD, consume ? 0 : MPI_UNDEFINED, me, &cc);
  const int p = produce ? me : -1, c = consume ? (size == 1 ? 0 : me - producers) : -1;

  // Each side's own layout: local arrays, column-major, as HPF or ScaLAPACK keep them.
  const long rows = (n + producers - 1) / producers, cols = (n + consumers - 1) / consumers;
  auto spec = [n](long tile_rows, long tile_cols, const std::string& grid) {
    return std::to_string(n) + "x" + std::to_string(n) + " tile=" + std::to_string(tile_rows) + "x" +
           std::to_string(tile_cols) + " block_cyclic grid=" + grid + " storage=local_array";
  };
  redist::GroupLayouts mine;
  if (produce) mine.send = redist::Layout::parse(spec(rows, n, std::to_string(producers) + "x1"));
  if (consume) mine.receive = redist::Layout::parse(spec(n, cols, "1x" + std::to_string(consumers)));
  redist::Options options;
  options.strategy = strategy;
  redist::Plan plan = redist::make_group_plan({.parent = MPI_COMM_WORLD, .senders = pc, .receivers = cc}, mine, options);

  // My rows [r0, r1) x all columns (producer); all rows x my columns [c0, c1) (consumer).
  const long r0 = p * rows, r1 = produce ? std::min(n, r0 + rows) : r0;
  const long c0 = c * cols, c1 = consume ? std::min(n, c0 + cols) : c0;
  std::vector<double> out(static_cast<size_t>((r1 - r0) * n)), in(static_cast<size_t>(n * (c1 - c0)));
  long wrong = 0;
  for (int it = 0; it < 10; ++it) {
    for (long j = 0; j < n; ++j)
      for (long i = r0; i < r1; ++i) out[static_cast<size_t>(j * (r1 - r0) + (i - r0))] = value(it, i, j);
    plan.execute(produce ? out.data() : nullptr, consume ? in.data() : nullptr);
    for (long j = c0; j < c1; ++j)
      for (long i = 0; i < n; ++i) wrong += in[static_cast<size_t>((j - c0) * n + i)] != value(it, i, j);
  }
  long total = 0;
  MPI_Allreduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (me == 0)
    std::printf("pipeline: %d producers -> %d consumers, %ldx%ld doubles, 10 iterations with %s: %s\n", producers,
                consumers, n, n, strategy.c_str(), total == 0 ? "every element right" : "WRONG ELEMENTS");
  if (pc != MPI_COMM_NULL) MPI_Comm_free(&pc);
  if (cc != MPI_COMM_NULL) MPI_Comm_free(&cc);
  return total == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  long n = 128;
  std::string strategy = "p2p";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--strategy") && i + 1 < argc) strategy = argv[++i];
    else n = std::atol(argv[i]);
  }
  int rc = 1;
  try {
    rc = run(n, strategy);
  } catch (const redist::Error& e) {  // the same message on every rank
    std::fprintf(stderr, "pipeline: %s\n", e.what());
    rc = 2;
  }
  MPI_Finalize();
  return rc;
}
