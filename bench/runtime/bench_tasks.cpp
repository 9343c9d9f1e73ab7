// Empty-task throughput: how many tasks per second one rank's workers run when the
// bodies do nothing, independent tasks and a fan-out released by one task.
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "redist/runtime/runtime.hpp"
#include "runtime_benches.hpp"

namespace redist::runtime_bench {
namespace rt = redist::runtime;
namespace {

const char* kUsage =
    "redist-bench-tasks: empty-task throughput per worker thread\n"
    "  --tasks N        tasks per rank per run (default 1000000)\n"
    "  --threads a,b    worker thread counts to measure (default 1,2)\n"
    "  --reps R         repetitions, median reported (default 5)\n";

}  // namespace

int run_tasks(int argc, char** argv) {
  const int rank = world_rank(), ranks = world_size();
  Args args(argc, argv, kUsage);
  if (args.help()) return 0;
  const std::int64_t n = args.get("--tasks", 1000000, 1);
  const int reps = args.count("--reps", 5, 1, 1000000);
  const std::vector<std::int64_t> thread_counts = args.list("--threads", {1, 2}, 1);
  if (rank == 0)
    std::printf("# ranks=%d tasks/rank=%lld reps=%d (medians)\n%12s %8s %14s %16s %12s\n", ranks,
                static_cast<long long>(n), reps, "shape", "threads", "tasks/s/rank", "tasks/s/thread",
                "us/task");
  for (std::int64_t threads : thread_counts) {
    for (const char* shape : {"independent", "fan-out"}) {
      const bool fan = std::string(shape) == "fan-out";
      rt::TaskGraph g;
      auto& root = g.task_class("Root");
      auto& t = g.task_class("Empty");
      root.param("r", 0, ranks - 1).affinity([](auto r) { return r; });
      root.body([](rt::TaskContext&) {});
      t.param("r", 0, ranks - 1).param("i", 0, n - 1).affinity([](auto r) { return r; });
      t.body([](rt::TaskContext&) {});
      if (fan) {  // one task releases all others: the epilogue and queues are measured
        root.control("go").out(rt::to(t, "go", [n](auto r) { return rt::Targets{r, {0, n - 1}}; }));
        t.control("go").in(rt::from(root, "go", [](auto r) { return rt::Targets{r}; }));
      }
      rt::Options o;
      o.threads = static_cast<int>(threads);
      std::vector<double> times;
      for (int r = 0; r < reps; ++r) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        rt::run(g, MPI_COMM_WORLD, o);
        times.push_back(max_over_ranks(MPI_Wtime() - t0));
      }
      double rate = static_cast<double>(n) / median(times);
      if (rank == 0)
        std::printf("%12s %8lld %14.3e %16.3e %12.3f\n", shape, static_cast<long long>(threads), rate,
                    rate / static_cast<double>(threads), 1e6 / rate);
    }
  }
  return 0;
}

}  // namespace redist::runtime_bench
