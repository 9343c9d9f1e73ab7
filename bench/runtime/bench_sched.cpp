// Scheduling overhead (paper 004, sec. IV-B1, Fig. 4): Nb independent N x N DGEMM
// tasks on the runtime vs the same DGEMMs run sequentially, divided by the number of
// workers (ideal parallelization). Prints ideal / runtime (1.0 = no overhead).
#include <cblas.h>

#include <thread>
#include <vector>

#include "bench_util.hpp"
#include "redist/runtime/runtime.hpp"
#include "runtime_benches.hpp"

namespace redist::runtime_bench {
namespace rt = redist::runtime;
namespace {

const char* kUsage =
    "redist-bench-sched: scheduling overhead of independent DGEMM tasks (paper 004, Fig. 4)\n"
    "  --threads T      worker threads per rank (default 2)\n"
    "  --sizes a,b,..   matrix sizes N (default 10,20,30,50,100,200)\n"
    "  --work W         flops per run, sets Nb = W / (2 N^3), at least 64 tasks\n"
    "                   (default 2e9; large N with small W still runs 64 DGEMMs)\n"
    "  --reps R         repetitions, median reported (default 5)\n"
    "ratio_seq = (sequential time / (threads * ranks)) / runtime time (paper 004's ideal);\n"
    "ratio_thr = time of plain threads running Nb/threads DGEMMs each (static split, no\n"
    "runtime) / runtime time: the ideal this machine can reach when its cores do not\n"
    "scale (the paper's \"simple Posix threads parallelization\").\n"
    "One rank with several threads: launch with mpirun --bind-to none (mpirun binds a\n"
    "rank to one core when it starts at most 2 ranks).\n";

}  // namespace

int run_sched(int argc, char** argv) {
  const int rank = world_rank(), ranks = world_size();
  Args args(argc, argv, kUsage);
  if (args.help()) return 0;
  openblas_set_num_threads(1);  // one core per task (paper 004, sec. IV-C)
  const int threads = args.count("--threads", 2, 1, 1024);
  const int reps = args.count("--reps", 5, 1, 1000000);
  const double work = static_cast<double>(args.get("--work", 2000000000, 1));
  const std::vector<std::int64_t> sizes = args.list("--sizes", {10, 20, 30, 50, 100, 200}, 1);
  report_cpus(threads);
  settle_blas();
  if (rank == 0)
    std::printf("# ranks=%d threads=%d reps=%d (runtime and threads: medians; seq: fastest)\n"
                "%6s %9s %10s %10s %10s %10s %10s %10s\n", ranks, threads, reps, "N", "Nb", "seq_s",
                "ideal_s", "threads_s", "runtime_s", "ratio_seq", "ratio_thr");
  for (std::int64_t n : sizes) {
    const std::int64_t nb_tasks = std::max<std::int64_t>(64, static_cast<std::int64_t>(work / (2.0 * n * n * n)));
    // One set of operands per worker thread, so threads do not share cache lines.
    std::vector<std::vector<double>> mats(threads + 1, std::vector<double>(3 * n * n, 1.0 / n));
    auto gemm = [n](std::vector<double>& m) {
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, m.data(), n,
                  m.data() + n * n, n, 0.5, m.data() + 2 * n * n, n);
    };
    rt::TaskGraph g;
    auto& t = g.task_class("GEMM");
    t.param("i", 0, nb_tasks - 1).affinity([ranks](auto i) { return i % ranks; });
    t.body([&](rt::TaskContext& c) { gemm(mats[c.thread()]); });
    rt::Options o;
    o.threads = threads;
    auto plain_threads = [&] {  // static split over plain threads, no runtime
      std::vector<std::thread> pool;
      for (int w = 0; w < threads; ++w)
        pool.emplace_back([&, w] {
          for (std::int64_t i = w; i < nb_tasks; i += threads) gemm(mats[w]);
        });
      for (auto& th : pool) th.join();
    };
    std::vector<double> seq, par, thr;
    for (int r = 0; r < reps; ++r) {  // interleaved: the machine's speed drifts
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      for (std::int64_t i = 0; i < nb_tasks; ++i) gemm(mats[threads]);
      seq.push_back(max_over_ranks(MPI_Wtime() - t0));
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = MPI_Wtime();
      plain_threads();
      thr.push_back(max_over_ranks(MPI_Wtime() - t0));
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = MPI_Wtime();
      rt::run(g, MPI_COMM_WORLD, o);
      par.push_back(max_over_ranks(MPI_Wtime() - t0));
    }
    // Fastest sequential run, as the paper divides by it.
    double best_seq = *std::min_element(seq.begin(), seq.end());
    double ideal = best_seq / (threads * ranks);
    double t_rt = median(par), t_thr = median(thr) / ranks;  // each rank ran all Nb
    if (rank == 0)
      std::printf("%6lld %9lld %10.5f %10.5f %10.5f %10.5f %10.3f %10.3f\n", static_cast<long long>(n),
                  static_cast<long long>(nb_tasks), best_seq, ideal, t_thr, t_rt, ideal / t_rt, t_thr / t_rt);
  }
  return 0;
}

}  // namespace redist::runtime_bench
