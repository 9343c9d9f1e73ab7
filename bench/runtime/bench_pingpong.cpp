// Ping-pong (paper 004, sec. IV-B2, Figs. 5 and 6): a PING/PONG task chain between
// ranks 0 and 1 vs a raw MPI ping-pong in the same run. Latency t / (2 NT) and
// bandwidth 2 NT S / t, each as a ratio runtime / raw MPI.
#include <cstring>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "redist/runtime/runtime.hpp"
#include "runtime_benches.hpp"

namespace redist::runtime_bench {
namespace rt = redist::runtime;
namespace {

const char* kUsage =
    "redist-bench-pingpong: PING/PONG task chain vs raw MPI ping-pong (paper 004, Fig. 6)\n"
    "  run on 2 ranks: scripts/mpirun.sh -np 2 redist bench pingpong\n"
    "  --min B, --max B   message sizes, powers of 4 from min to max (default 8 .. 16 MiB)\n"
    "  --iters NT         round trips per measure for small sizes (default 4000)\n"
    "  --reps R           interleaved repetitions, medians reported (default 7)\n"
    "  --eager B          eager limit of the runtime (default 16384)\n"
    "  --mode multiple|funneled|workers   who calls MPI (default multiple; workers: no\n"
    "                   communication thread, the worker progresses MPI itself)\n"
    "  --push 0|1         runtime::Options::push: payloads above the eager limit sent with\n"
    "                   their activation, no GET (default 0)\n";

double raw_pingpong(int rank, std::vector<std::byte>& buf, int iters) {
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  const int n = static_cast<int>(buf.size());
  for (int k = 0; k < iters; ++k) {
    if (rank == 0) {
      MPI_Send(buf.data(), n, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(buf.data(), n, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Recv(buf.data(), n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf.data(), n, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    }
  }
  return max_over_ranks(MPI_Wtime() - t0);
}
}  // namespace

int run_pingpong(int argc, char** argv) {
  const int rank = world_rank(), ranks = world_size();
  Args args(argc, argv, kUsage);
  if (args.help()) return 0;
  // Ranks 0 and 1 ping-pong; a third rank would idle while the header said ranks=2.
  if (ranks != 2) throw redist::Error("runs on 2 ranks (ranks 0 and 1 ping-pong), got " + std::to_string(ranks));
  const std::int64_t min_size = args.get("--min", 8, 1), max_size = args.get("--max", 16 << 20, 1);
  const int reps = args.count("--reps", 7, 1, 1000000);
  const int iters_small = args.count("--iters", 4000, 1, 1000000000);
  rt::Options o;
  o.threads = 1;
  o.eager_limit = static_cast<std::size_t>(args.get("--eager", 16384, 0));
  o.push = args.get("--push", 0, 0, 1) != 0;  // --push 2 was read as 1
  const std::string mode = args.str("--mode", "multiple");
  if (mode != "multiple" && mode != "funneled" && mode != "workers")
    throw redist::Error("--mode must be multiple, funneled or workers, got '" + mode + "'");
  if (max_size < min_size)
    throw redist::Error("--max " + std::to_string(max_size) + " is below --min " + std::to_string(min_size));
  o.comm_mode = mode == "funneled" ? rt::CommMode::funneled
                : mode == "workers"  ? rt::CommMode::workers
                                     : rt::CommMode::multiple;
  if (rank == 0)
    std::printf("# ranks=2 threads=1 mode=%s eager=%zu push=%d reps=%d (medians)\n"
                "%10s %7s %12s %12s %8s %12s %12s %8s\n",
                mode == "funneled" || mode == "workers" ? mode.c_str() : "multiple", o.eager_limit,
                static_cast<int>(o.push), reps,
                "bytes", "NT", "mpi_lat_us", "rt_lat_us", "lat_x", "mpi_GB/s", "rt_GB/s", "bw_ratio");
  for (std::int64_t s = min_size; s <= max_size; s *= 4) {
    // About 2 GB moved per measure for large sizes, at least 20 round trips.
    const int nt = static_cast<int>(std::max<std::int64_t>(20, std::min<std::int64_t>(iters_small, (1LL << 30) / s)));
    // A(0) of Fig. 5: one tile of s bytes on rank 0 (a 1-D layout, one tile).
    rt::LayoutCollection a(Layout::parse(std::to_string(std::max<std::int64_t>(s, 1)) + " esize=1"),
                           MPI_COMM_WORLD);
    std::vector<std::byte> raw(static_cast<std::size_t>(s ? s : 1));
    rt::TaskGraph g;
    auto& ping = g.task_class("PING");
    auto& pong = g.task_class("PONG");
    // PING(k)  k = 0 .. NT : rank 0
    //   T <- (k == 0) ? A(0) : I PONG(k-1)
    //     -> (k == NT) ? A(0) : I PONG(k)
    ping.param("k", 0, nt).affinity([] { return 0; });
    ping.flow("T")
        .in_if([](auto k) { return k == 0; }, rt::from(a, [] { return rt::Tile{0, 0}; }))
        .otherwise(rt::from(pong, "I", [](auto k) { return rt::Targets{k - 1}; }))
        .out_if([nt](auto k) { return k == nt; }, rt::to(a, [] { return rt::Tile{0, 0}; }))
        .otherwise(rt::to(pong, "I", [](auto k) { return rt::Targets{k}; }));
    ping.body([](rt::TaskContext&) {});
    // PONG(k)  k = 0 .. NT-1 : rank 1
    //   I <- T PING(k)  -> T PING(k+1)
    pong.param("k", 0, nt - 1).affinity([] { return 1; });
    pong.flow("I")
        .in(rt::from(ping, "T", [](auto k) { return rt::Targets{k}; }))
        .out(rt::to(ping, "T", [](auto k) { return rt::Targets{k + 1}; }));
    pong.body([](rt::TaskContext&) {});
    raw_pingpong(rank, raw, std::min(nt, 50));  // warm up both paths
    rt::run(g, MPI_COMM_WORLD, o);
    std::vector<double> t_raw, t_rt;
    for (int r = 0; r < reps; ++r) {
      t_raw.push_back(raw_pingpong(rank, raw, nt));
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      rt::run(g, MPI_COMM_WORLD, o);
      t_rt.push_back(max_over_ranks(MPI_Wtime() - t0));
    }
    double raw_t = median(t_raw), rt_t = median(t_rt);
    double lat_raw = raw_t / (2.0 * nt) * 1e6, lat_rt = rt_t / (2.0 * nt) * 1e6;
    double bw_raw = 2.0 * nt * s / raw_t / 1e9, bw_rt = 2.0 * nt * s / rt_t / 1e9;
    if (rank == 0)
      std::printf("%10lld %7d %12.3f %12.3f %8.2f %12.3f %12.3f %8.3f\n", static_cast<long long>(s), nt,
                  lat_raw, lat_rt, lat_rt / lat_raw, bw_raw, bw_rt, bw_rt / bw_raw);
  }
  return 0;
}

}  // namespace redist::runtime_bench
