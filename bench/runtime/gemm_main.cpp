// redist-bench-gemm: the tiled GEMM (apps/gemm) with its tiles of A and B brought by
// READ tasks (gemm::Reads::tasks, DPLASMA's form) vs the runtime's remote collection
// reads (gemm::Reads::remote), interleaved in one run; checks both give C bit for bit.
#include <cblas.h>

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "gemm/gemm.hpp"
#include "redist/layout.hpp"
#include "redist/runtime/runtime.hpp"
#include "runtime_benches.hpp"

namespace redist::runtime_bench {
namespace rt = redist::runtime;
namespace {

const char* kUsage =
    "redist-bench-gemm: tiled GEMM C = A B + C on the runtime, A and B read through READ\n"
    "tasks (tasks) or as remote collection tiles (remote), interleaved\n"
    "  --n N            matrix size, A B C all N x N (default 4000)\n"
    "  --nb a,b,..      tile sizes (default 400)\n"
    "  --threads T      worker threads per rank (default 2 on 1 rank, else 1)\n"
    "  --grid PxQ       process grid of A, B and C (default: closest to square, P <= Q)\n"
    "  --reps R         runs per form, the order alternated rep by rep (default 4: each\n"
    "                   form first in half of them)\n"
    "  --warmup W       untimed runs before each tile size (default 1)\n"
    "  --reads a,b      the forms to compare (default tasks,remote)\n"
    "Prints per form the median time and GFLOP/s (2 N^3 flops), and per rep the ratio\n"
    "time(remote) / time(tasks) of the two runs of that rep; exits 1 if the forms'\n"
    "C differ in any bit.\n";

// A deterministic value per global element, so every run starts from the same matrices.
void fill(const rt::LayoutCollection& x, double scale) {
  for (index_t o = 0; o < x.local().ntiles(); ++o) {
    const Coord c = x.local().tile(o);
    const Box b = x.layout().tile_box(c);
    double* p = x.tile<double>(rt::Tile{c[0], c[1]});
    for (index_t j = 0; j < b.size[1]; ++j)
      for (index_t i = 0; i < b.size[0]; ++i)
        p[i + j * b.size[0]] = scale * static_cast<double>(((b.lo[0] + i) * 7 + (b.lo[1] + j) * 3) % 23 - 11);
  }
}

std::int64_t sum_over_ranks(std::int64_t v) {
  std::int64_t s = 0;
  MPI_Allreduce(&v, &s, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return s;
}

}  // namespace

int run_gemm(int argc, char** argv) {
  const int rank = world_rank(), ranks = world_size();
  Args args(argc, argv, kUsage);
  if (args.help()) return 0;
  openblas_set_num_threads(1);  // single-threaded kernels per task
  const std::int64_t n = args.get("--n", 4000, 1);
  const int threads = args.count("--threads", ranks == 1 ? 2 : 1, 1, 1024);
  const int reps = args.count("--reps", 4, 1, 1000000);
  const int warmup = args.count("--warmup", 1, 0, 1000000);
  const auto [p, q] = args.grid("--grid", ranks);
  std::vector<std::string> forms;
  {
    std::stringstream ss(args.str("--reads", "tasks,remote"));
    for (std::string f; std::getline(ss, f, ',');) forms.push_back(f);
  }
  for (const std::string& f : forms)
    if (f != "tasks" && f != "remote")
      throw redist::Error("--reads: unknown form '" + f + "': tasks or remote, comma-separated");
  if (forms.empty()) throw redist::Error("--reads needs tasks, remote or both, comma-separated");
  report_cpus(threads);
  settle_blas();
  const double flops = 2.0 * static_cast<double>(n) * n * n;
  if (rank == 0) {
    std::printf("# N=%lld ranks=%d grid=%dx%d threads/rank=%d\n", static_cast<long long>(n), ranks, p, q, threads);
    std::printf("%6s %8s %10s %10s %12s %14s %14s  %s\n", "NB", "form", "median_s", "GF/s", "tiles_read",
                "activations", "rdv_bytes", "time / first form's, per rep");
  }
  bool same = true;
  for (std::int64_t nb : args.list("--nb", {400}, 1)) {
    const Layout l = block_cyclic_layout({n, n}, {nb, nb}, {p, q});
    std::vector<std::vector<double>> times(forms.size());
    std::vector<std::int64_t> tiles_read(forms.size()), activations(forms.size()), rdv(forms.size());
    std::vector<std::vector<double>> results(forms.size());
    for (int r = -warmup; r < reps; ++r) {
      for (std::size_t i = 0; i < forms.size(); ++i) {
        const std::size_t f = (i + static_cast<std::size_t>(r + warmup)) % forms.size();  // alternate who goes first
        rt::LayoutCollection a(l, MPI_COMM_WORLD), b(l, MPI_COMM_WORLD), c(l, MPI_COMM_WORLD);
        fill(a, 0.5), fill(b, 0.25), fill(c, 1.0);
        rt::TaskGraph g = gemm::task_graph(1.0, a, b, 1.0, c,
                                           forms[f] == "remote" ? gemm::Reads::remote : gemm::Reads::tasks);
        rt::Options o;
        o.threads = threads;
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        const rt::Stats s = rt::run(g, MPI_COMM_WORLD, o);
        const double t = max_over_ranks(MPI_Wtime() - t0);
        if (r < 0) continue;
        times[f].push_back(t);
        tiles_read[f] = sum_over_ranks(s.tiles_read);
        activations[f] = sum_over_ranks(s.activations_sent);
        rdv[f] = sum_over_ranks(s.rendezvous_bytes);
        if (results[f].empty()) results[f].assign(c.elements<double>().begin(), c.elements<double>().end());
      }
    }
    for (std::size_t f = 1; f < forms.size(); ++f)
      same = same && std::memcmp(results[f].data(), results[0].data(), results[0].size() * sizeof(double)) == 0;
    for (std::size_t f = 0; f < forms.size(); ++f) {
      const double t = median(times[f]);
      std::string ratios;
      for (int r = 0; r < reps; ++r) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%s%.3f", r ? " " : "", times[f][r] / times[0][r]);
        ratios += buf;
      }
      if (rank == 0)
        std::printf("%6lld %8s %10.3f %10.2f %12lld %14lld %14lld  %s\n", static_cast<long long>(nb), forms[f].c_str(),
                    t, flops / t / 1e9, static_cast<long long>(tiles_read[f]), static_cast<long long>(activations[f]),
                    static_cast<long long>(rdv[f]), ratios.c_str());
    }
  }
  int ok = same ? 1 : 0, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (rank == 0) std::printf("# C bit for bit the same in every form: %s\n", all ? "yes" : "NO");
  return all ? 0 : 1;
}

}  // namespace redist::runtime_bench
