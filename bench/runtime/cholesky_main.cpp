// redist-cholesky: tiled Cholesky on the task runtime (paper 004, sec. IV-C) beside
// single-node LAPACK dpotrf, ScaLAPACK pdpotrf and the DGEMM peak, in one run.
#include <cblas.h>
#include <lapacke.h>

#include <chrono>
#include <cmath>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.hpp"
#include "cholesky/cholesky.hpp"
#include "redist/redist.hpp"
#include "redist/runtime/runtime.hpp"
#include "runtime_benches.hpp"
#include "scalapack.hpp"

namespace redist::runtime_bench {
namespace rt = redist::runtime;
using cholesky::spd_element;
namespace {

const char* kUsage =
    "redist-cholesky: tiled Cholesky (paper 004, Fig. 1) vs LAPACK dpotrf and ScaLAPACK pdpotrf\n"
    "  --n N            matrix size (default 8000)\n"
    "  --nb a,b,..      tile sizes to try (default 200,256,320,400)\n"
    "  --threads T      worker threads per rank (default 2 on 1 rank, else 1)\n"
    "  --grid PxQ       process grid (default: closest to square, P <= Q)\n"
    "  --reps R         runs per tile size, median reported (default 1)\n"
    "  --no-lapack, --no-scalapack   skip a peer\n"
    "  --check          compare L with LAPACK on rank 0 (small N only)\n"
    "  --variants a,b,..  runtime settings to compare, interleaved (the order rotated rep\n"
    "                   by rep; rep r starts with variant r mod count); default\n"
    "                   multiple): a communication mode (multiple, funneled, workers),\n"
    "                   then optionally -noslot (no placeholder slot), -nobound (no\n"
    "                   bound on rendezvous transfers) and -push (runtime::Options::push:\n"
    "                   rendezvous data sent unasked, no GET), e.g. workers,workers-push\n"
    "GFLOP/s count N^3/3 flops. DGEMM peak: one core's DGEMM rate while every core\n"
    "runs the same DGEMM, times the number of cores (paper 004, sec. IV-C); %alone_nb\n"
    "uses one core's rate with every other core idle instead (stricter).\n"
    "One rank with several threads: launch with mpirun --bind-to none (mpirun binds a\n"
    "rank to one core when it starts at most 2 ranks).\n";

int g_rank = 0, g_ranks = 1;

// A --variants item: "multiple", "funneled" or "workers", then optionally "-noslot"
// (no placeholder slot), "-nobound" (no bound on rendezvous transfers) and "-push"
// (rendezvous data sent with the activation, no GET), in this order.
bool parse_variant(std::string v, rt::Options& o) {
  auto strip = [&v](const std::string& suffix) {
    const bool has = v.size() > suffix.size() && v.compare(v.size() - suffix.size(), suffix.size(), suffix) == 0;
    if (has) v.resize(v.size() - suffix.size());
    return has;
  };
  if (strip("-push")) o.push = true;
  if (strip("-nobound")) o.max_rendezvous = 0;
  if (strip("-noslot")) o.placeholder = false;
  if (v == "multiple")
    o.comm_mode = rt::CommMode::multiple;
  else if (v == "funneled")
    o.comm_mode = rt::CommMode::funneled;
  else if (v == "workers")
    o.comm_mode = rt::CommMode::workers;
  else
    return false;
  return true;
}

// Waits for the other ranks without spinning, so that a peer measured on rank 0
// alone gets every core (Open MPI's blocking barrier busy-polls).
void quiet_barrier() {
  MPI_Request r;
  MPI_Ibarrier(MPI_COMM_WORLD, &r);
  for (int done = 0; !done;) {
    MPI_Test(&r, &done, MPI_STATUS_IGNORE);
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// GFLOP/s of the calling thread running size x size DGEMMs (as the Cholesky's
// DGEMM tasks call it) for 0.5 s.
double dgemm_core_rate_local(int size) {
  std::vector<double> m(3 * static_cast<std::size_t>(size) * size, 0.001);
  auto gemm = [&] {
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, size, size, size, -1.0, m.data(), size,
                m.data() + size * size, size, 1.0, m.data() + 2 * size * size, size);
  };
  gemm();
  int calls = 0;
  auto t0 = std::chrono::steady_clock::now();
  double secs = 0;
  while (secs < 0.5) {
    gemm();
    ++calls;
    secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return 2.0 * size * size * static_cast<double>(size) * calls / secs / 1e9;
}

// GFLOP/s of one core running size x size DGEMMs while `threads` threads on every
// rank do the same; returns the median per-core rate. With `alone`, one thread of
// rank 0 measures while every other core is idle (the upper bound of one core).
double dgemm_core_rate(int size, int threads, bool alone = false) {
  std::vector<double> rates(threads);
  MPI_Barrier(MPI_COMM_WORLD);
  if (alone) {
    double rate = 0;
    if (g_rank == 0) rate = dgemm_core_rate_local(size);
    quiet_barrier();
    MPI_Bcast(&rate, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return rate;
  }
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] { rates[t] = dgemm_core_rate_local(size); });
  for (auto& t : pool) t.join();
  std::vector<double> all(static_cast<std::size_t>(threads) * g_ranks);
  MPI_Allgather(rates.data(), threads, MPI_DOUBLE, all.data(), threads, MPI_DOUBLE, MPI_COMM_WORLD);
  return median(all);
}

double lapack_seconds(int n, int cores) {
  double secs = 0;
  if (g_rank == 0) {
    std::vector<double> a(static_cast<std::size_t>(n) * n);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) a[i + static_cast<std::size_t>(j) * n] = spd_element(i, j, n);
    openblas_set_num_threads(cores);  // single node: all cores for one dpotrf
    auto t0 = std::chrono::steady_clock::now();
    int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', n, a.data(), n);
    secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    openblas_set_num_threads(1);
    if (info != 0) std::fprintf(stderr, "dpotrf failed: info %d\n", info);
  }
  settle_blas();
  quiet_barrier();
  MPI_Bcast(&secs, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return secs;
}

double scalapack_seconds(int n, int nb, int p, int q, int threads) {
  int ctx = 0, myrow = 0, mycol = 0, pr = 0, pc = 0, zero = 0, info = 0, desc[9];
  Cblacs_get(-1, 0, &ctx);
  Cblacs_gridinit(&ctx, "Row", p, q);  // rank = row * Q + col, as block_cyclic grid=PxQ
  Cblacs_gridinfo(ctx, &pr, &pc, &myrow, &mycol);
  // ScaLAPACK's local array is the core's storage=local_array of the same layout.
  const Layout layout = block_cyclic_layout({n, n}, {nb, nb}, {p, q}, sizeof(double), StorageKind::local_array);
  const LocalIndex local(layout, g_rank);
  // ScaLAPACK wants lld >= this process row's local rows, also on a rank that
  // holds no column (its local.ld() is 0 then): count them.
  index_t rows = 0;
  for (index_t i0 = static_cast<index_t>(myrow) * nb; i0 < n; i0 += static_cast<index_t>(p) * nb)
    rows += std::min<index_t>(nb, n - i0);
  const int lld = static_cast<int>(std::max<index_t>({1, local.ld(), rows}));
  descinit_(desc, &n, &n, &nb, &nb, &zero, &zero, &ctx, &lld, &info);
  if (info != 0) throw redist::Error("DESCINIT failed: info " + std::to_string(info));
  std::vector<double> a(static_cast<std::size_t>(std::max<index_t>(1, local.elements())));
  for (index_t o = 0; o < local.ntiles(); ++o) {
    const Coord t = local.tile(o);
    const Box b = layout.tile_box(t);
    const Address at = local.address(t, b.lo);
    for (index_t j = 0; j < b.size[1]; ++j)
      for (index_t i = 0; i < b.size[0]; ++i)
        a[at.offset + i + j * at.strides[1]] = spd_element(b.lo[0] + i, b.lo[1] + j, n);
  }
  openblas_set_num_threads(threads);  // the same cores as the task runtime uses
  MPI_Barrier(MPI_COMM_WORLD);
  const int one = 1;
  double t0 = MPI_Wtime();
  pdpotrf_("L", &n, a.data(), &one, &one, desc, &info);
  double secs = max_over_ranks(MPI_Wtime() - t0);
  openblas_set_num_threads(1);
  if (threads > 1) settle_blas();
  if (info != 0 && g_rank == 0) std::fprintf(stderr, "pdpotrf failed: info %d\n", info);
  Cblacs_gridexit(ctx);
  return secs;
}

// The factor gathered on rank 0 by the core's redistribution (a plan to one tile
// on rank 0), compared there with LAPACK dpotrf.
bool check(const rt::LayoutCollection& a, int n) {
  const Layout whole = block_cyclic_layout({n, n}, {n, n}, {1, 1});
  Plan plan = make_plan(a.layout(), whole, Region::whole(whole.shape()), MPI_COMM_WORLD);
  std::vector<double> l(g_rank == 0 ? static_cast<std::size_t>(n) * n : 0);
  plan.execute(a.storage(), g_rank == 0 ? static_cast<void*>(l.data()) : nullptr);
  int ok = 1;
  if (g_rank == 0) {
    std::vector<double> ref(static_cast<std::size_t>(n) * n);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) ref[i + static_cast<std::size_t>(j) * n] = spd_element(i, j, n);
    LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', n, ref.data(), n);
    double diff = 0, norm = 0;
    for (int j = 0; j < n; ++j)
      for (int i = j; i < n; ++i) {
        diff = std::max(diff, std::abs(l[i + std::size_t(j) * n] - ref[i + std::size_t(j) * n]));
        norm = std::max(norm, std::abs(ref[i + std::size_t(j) * n]));
      }
    ok = diff / norm < 1e-12;
    std::printf("# check vs LAPACK: max |L - L_lapack| / max |L_lapack| = %.3e (%s)\n", diff / norm,
                ok ? "ok" : "FAILED");
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return ok;
}
}  // namespace

int run_cholesky(int argc, char** argv) {
  g_rank = world_rank();
  g_ranks = world_size();
  Args args(argc, argv, kUsage);
  if (args.help()) return 0;
  openblas_set_num_threads(1);  // single-threaded kernels per task
  const int n = args.count("--n", 8000, 1, std::numeric_limits<int>::max());
  const int threads = args.count("--threads", g_ranks == 1 ? 2 : 1, 1, 1024);
  const int reps = args.count("--reps", 1, 1, 1000000);
  const auto [p, q] = args.grid("--grid", g_ranks);
  const int cores = g_ranks * threads;
  // Every option before anything is printed (--nb 0 failed after the cpus line).
  std::vector<std::int64_t> nbs = args.list("--nb", {200, 256, 320, 400}, 1);
  std::vector<std::string> variants;
  std::vector<rt::Options> variant_options;
  {
    std::stringstream ss(args.str("--variants", "multiple"));
    for (std::string v; std::getline(ss, v, ',');) {
      rt::Options o;
      o.threads = threads;
      // the same arguments, so the same error, on every rank (it printed the whole
      // usage and exited 1, where the other options' errors exit 2)
      if (!parse_variant(v, o)) throw redist::Error("unknown variant '" + v + "' (--help lists the variants)");
      variants.push_back(v);
      variant_options.push_back(o);
    }
  }
  report_cpus(threads);
  settle_blas();
  int big = std::min(n, 1024);
  double peak_big = dgemm_core_rate(big, threads);
  double lapack = args.flag("--no-lapack") ? 0 : lapack_seconds(n, cores);
  const double flops = static_cast<double>(n) * n * n / 3.0;
  if (g_rank == 0) {
    std::printf("# N=%d ranks=%d grid=%dx%d threads/rank=%d cores=%d\n", n, g_ranks, p, q, threads, cores);
    std::printf("# DGEMM peak (%dx%d, every core busy): %.2f GFLOP/s per core, x %d cores = %.2f GFLOP/s\n",
                big, big, peak_big, cores, peak_big * cores);
    if (lapack > 0)
      std::printf("# LAPACK dpotrf (rank 0, %d OpenBLAS threads): %.3f s, %.2f GFLOP/s\n", cores, lapack,
                  flops / lapack / 1e9);
    std::printf("%6s %10s %10s %14s %10s %11s %12s %10s %10s  %s\n", "NB", "rt_s", "rt_GF/s", "gemm_nb_peak",
                "%peak_nb", "%alone_nb", "%peak_1024", "pd_GF/s", "rt/pd", "variant");
  }
  bool ok = true;
  for (std::int64_t nb : nbs) {
    double peak_nb = dgemm_core_rate(static_cast<int>(nb), threads) * cores;
    double alone_nb = dgemm_core_rate(static_cast<int>(nb), threads, true) * cores;
    std::vector<std::vector<double>> times(variants.size());
    for (int r = 0; r < reps; ++r) {
      // Interleaved, and rotated rep by rep: the first run of a round is often slower.
      for (std::size_t i = 0; i < variants.size(); ++i) {
        const std::size_t v = (i + static_cast<std::size_t>(r)) % variants.size();
        rt::LayoutCollection a(block_cyclic_layout({n, n}, {nb, nb}, {p, q}), MPI_COMM_WORLD);
        cholesky::fill_spd(a);
        rt::TaskGraph g = cholesky::task_graph(a);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        rt::run(g, MPI_COMM_WORLD, variant_options[v]);
        times[v].push_back(max_over_ranks(MPI_Wtime() - t0));
        if (args.flag("--check") && r == 0) ok = check(a, n) && ok;
      }
    }
    double pd = args.flag("--no-scalapack") ? 0 : scalapack_seconds(n, static_cast<int>(nb), p, q, threads);
    double pd_gf = pd > 0 ? flops / pd / 1e9 : 0;
    for (std::size_t v = 0; v < variants.size(); ++v) {
      double t = median(times[v]);
      double gf = flops / t / 1e9;
      if (g_rank == 0)
        std::printf("%6lld %10.3f %10.2f %14.2f %10.1f %11.1f %12.1f %10.2f %10.2f  %s\n",
                    static_cast<long long>(nb), t, gf, peak_nb, 100 * gf / peak_nb, 100 * gf / alone_nb,
                    100 * gf / (peak_big * cores), pd_gf, pd > 0 ? gf / pd_gf : 0.0, variants[v].c_str());
    }
  }
  return ok ? 0 : 1;
}

}  // namespace redist::runtime_bench
