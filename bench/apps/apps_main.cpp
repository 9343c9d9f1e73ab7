// redist-apps: paper 000, sec. 8.7 (Figs. 14, 15, 18) at this machine's scale. For
// each N and algorithm (potrf, geqrf, gemm), on a poor source, a ScaLAPACK local
// array on a 1xP grid with big tiles (--src-tile, default 1280), interleaved:
//   pd         ScaLAPACK pdpotrf / pdgeqrf / pdgemm on the source itself
//   poor       the tiled algorithm on the runtime directly on the source's
//              distribution (tile storage, same tiles and grid)
//   good       the tiled algorithm alone on the working layout (tile, grid)
//   roundtrip  redist::apps::<alg> from the source: to, compute, back
//   repeat     (--repeat) the round trip again with the first one's Workspace
//              (apps::Options::workspace): a repeated call, no fresh working copy
// Prints GFLOP/s (total time of each method), the round trip's overhead (to + back)
// in % of its compute time, and roundtrip / pd; --csv FILE appends the rows.
#include <cblas.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <new>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench_util.hpp"
#include "cholesky/cholesky.hpp"
#include "harness/case.hpp"
#include "harness/storage.hpp"
#include "qr/qr.hpp"
#include "redist/apps.hpp"
#include "redist/redist.hpp"
#include "scalapack.hpp"

extern "C" {
void pdgeqrf_(const int* m, const int* n, double* a, const int* ia, const int* ja, const int* desc, double* tau,
              double* work, const int* lwork, int* info);
void pdgemm_(const char* ta, const char* tb, const int* m, const int* n, const int* k, const double* alpha,
             const double* a, const int* ia, const int* ja, const int* desca, const double* b, const int* ib,
             const int* jb, const int* descb, const double* beta, double* c, const int* ic, const int* jc,
             const int* descc);
}

namespace rb = redist::runtime_bench;
using redist::index_t;
using redist::Layout;

namespace {
const char* kUsage =
    "redist-apps: dense algorithms on the runtime with a redistribution round trip (paper 000, sec. 8.7)\n"
    "  --n a,b,..       matrix sizes (default 2000,4000,6000)\n"
    "  --alg a,b        potrf, geqrf, gemm (default potrf,geqrf,gemm)\n"
    "  --src-tile T     the source's tile size (default 1280); its grid is 1xP, ScaLAPACK storage\n"
    "  --at R           the source is (N+R)x(N+R) and the calls work on its N x N submatrix at\n"
    "                   row and column R (ScaLAPACK's IA = JA = R+1; apps::Submatrix; default 0)\n"
    "  --tile T         the working tile (default or 0: redist::apps::model_tile; one larger\n"
    "                   than N is N)\n"
    "  --grid PxQ       the working layout's grid, block-cyclic (apps::Options::grid; default:\n"
    "                   the library's, the closest to square, where geqrf on 1xQ chooses its\n"
    "                   columns' owners: apps::qr_work_layout)\n"
    "  --threads T      worker threads per rank (default 2 on 1 rank, else 1)\n"
    "  --reps R         interleaved repetitions, medians reported (default 1)\n"
    "  --strategy S     the redistribution strategy of the round trip (default shm)\n"
    "  --comm-mode M    multiple, funneled or workers: how the runtime's workers reach MPI\n"
    "                   (apps::Options::comm_mode, default workers: no communication thread)\n"
    "  --push 0|1       runtime::Options::push: tiles above the eager limit sent with their\n"
    "                   activation, no GET (apps::Options::push, default 1)\n"
    "  --storage S      heap (default) or shared: the caller's matrices in MPI shared windows\n"
    "                   (redist::shared_allocate), where tasks read the tiles of other ranks\n"
    "                   on their node in place (poor and good; the round trip's working copy\n"
    "                   as --work-storage says)\n"
    "  --work-storage S heap (default) or shared: where the round trip's moved working copy\n"
    "                   lives (apps::Options::shared_work): in shared windows its tasks read\n"
    "                   the tiles of other ranks in place whatever --storage is\n"
    "  --huge-pages H   auto (default), on or off: the round trip's fresh working copy on the\n"
    "                   heap in transparent huge pages (apps::Options::huge_pages: automatic,\n"
    "                   always, never; auto: not where a virtio balloon reports free memory)\n"
    "  --in-place 0|1   apps::Options::read_in_place (default 1; matters with --storage shared)\n"
    "  --lend 0|1       apps::Options::lend (default 0; with --storage shared: an idle rank runs\n"
    "                   ready tasks of another rank of its node on that rank's tiles)\n"
    "  --repeat         also time a second round trip reusing the first one's workspace\n"
    "  --csv FILE       append one line per N and algorithm, after a comment line with the\n"
    "                   launch's settings (a new file starts with one naming the columns)\n"
    "Columns: GFLOP/s of pdpotrf/pdgeqrf/pdgemm (pd), the tiled algorithm on the poor\n"
    "source (poor) and on the working layout alone (good), the round trip (rt); its\n"
    "phases in seconds; busy%: in the good runs, the least and the most busy rank's time\n"
    "in task bodies over (the factorization's time x threads), medians over --reps\n"
    "(a rank far below the other waited for it).\n"
    "One rank with several threads: launch with mpirun --bind-to none.\n";

// The CSV's first line (a comment: readers skip lines starting with '#'); each
// launch appends a comment line with its settings, then one row per N and algorithm.
const char* kCsvColumns =
    "# ranks,threads,alg,n,source_tile,work_tile,pd_gflops,poor_gflops,good_gflops,roundtrip_gflops,to_s,"
    "compute_s,back_s,repeat_gflops,repeat_to_s (0 without --repeat)\n";

double element(index_t i, index_t j, index_t n) { return redist::cholesky::spd_element(i, j, n); }

std::vector<double> make_local(const Layout& layout, int rank, index_t n, int salt) {
  const redist::LocalIndex local(layout, rank);
  std::vector<double> a(static_cast<std::size_t>(std::max<index_t>(1, local.elements())));
  for (index_t o = 0; o < local.ntiles(); ++o) {
    const redist::Coord t = local.tile(o);
    const redist::Box b = layout.tile_box(t);
    const redist::Address at = local.address(t, b.lo);
    for (index_t j = 0; j < b.size[1]; ++j)
      for (index_t i = 0; i < b.size[0]; ++i)
        a[static_cast<std::size_t>(at.offset + i + j * at.strides[1])] =
            salt == 0 ? element(b.lo[0] + i, b.lo[1] + j, n) : element(b.lo[0] + i + salt, b.lo[1] + j, 0);
  }
  return a;
}

double flops_of(const std::string& alg, double n) {
  if (alg == "potrf") return n * n * n / 3;
  if (alg == "geqrf") return redist::qr::flops(n, n);
  return 2 * n * n * n;
}

// One ScaLAPACK call on the n x n submatrix at (at, at) of the source layout (a
// local array, grid 1xP); seconds.
double run_pd(const std::string& alg, const Layout& src, int n, int at, int nb, int rank, int ranks, int threads) {
  int ctx = 0, pr = 0, pc = 0, myr = 0, myc = 0, zero = 0, info = 0, desc[9];
  Cblacs_get(-1, 0, &ctx);
  Cblacs_gridinit(&ctx, "Row", 1, ranks);
  Cblacs_gridinfo(ctx, &pr, &pc, &myr, &myc);
  const redist::LocalIndex local(src, rank);
  // Grid 1xP: every rank holds all the rows (a rank without columns too: ScaLAPACK
  // wants lld >= its local rows even then, else DESCINIT warns).
  const int rows = n + at, lld = static_cast<int>(std::max<index_t>({1, local.ld(), rows}));
  descinit_(desc, &rows, &rows, &nb, &nb, &zero, &zero, &ctx, &lld, &info);
  if (info != 0) throw redist::Error("DESCINIT failed: info " + std::to_string(info));
  std::vector<double> a = make_local(src, rank, rows, alg == "potrf" ? 0 : 7), b, c, tau, work;
  if (alg == "gemm") b = make_local(src, rank, rows, 11), c = make_local(src, rank, rows, 13);
  const int one = at + 1;  // IA = JA (= IB = ... = JC)
  if (alg == "geqrf") {
    tau.resize(static_cast<std::size_t>(rows));
    int lwork = -1;
    double q = 0;
    pdgeqrf_(&n, &n, a.data(), &one, &one, desc, tau.data(), &q, &lwork, &info);
    work.resize(static_cast<std::size_t>(q) + 1);
  }
  openblas_set_num_threads(threads);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  if (alg == "potrf") {
    pdpotrf_("L", &n, a.data(), &one, &one, desc, &info);
  } else if (alg == "geqrf") {
    const int lwork = static_cast<int>(work.size());
    pdgeqrf_(&n, &n, a.data(), &one, &one, desc, tau.data(), work.data(), &lwork, &info);
  } else {
    const double alpha = 1.0, beta = 1.0;
    pdgemm_("N", "N", &n, &n, &n, &alpha, a.data(), &one, &one, desc, b.data(), &one, &one, desc, &beta, c.data(),
            &one, &one, desc);
  }
  const double secs = rb::max_over_ranks(MPI_Wtime() - t0);
  openblas_set_num_threads(1);
  if (threads > 1) rb::settle_blas();
  if (info != 0 && rank == 0) std::fprintf(stderr, "ScaLAPACK %s failed: info %d\n", alg.c_str(), info);
  Cblacs_gridexit(ctx);
  return secs;
}

// A caller's matrix: the vector itself, or (shared) a copy of it in the harness's
// storage in shared windows (collective; freed collectively with this object).
class UserMatrix {
 public:
  UserMatrix(const Layout& layout, int rank, std::vector<double> v, bool shared) : heap_(std::move(v)) {
    if (!shared) return;
    window_.emplace(layout, redist::LocalIndex(layout, rank), MPI_COMM_WORLD);
    if (window_->data()) std::copy_n(heap_.begin(), window_->bytes() / sizeof(double), static_cast<double*>(window_->data()));
    heap_ = {};
  }
  // Null on a rank of the shared storage that holds no element (allowed there).
  double* data() { return window_ ? static_cast<double*>(window_->data()) : heap_.data(); }

 private:
  std::vector<double> heap_;
  std::optional<redist::harness::LocalStorage> window_;
};

// One redist::apps call from `user` with `o`; the report's times reduced over ranks.
// busy (if given): the least and the most busy rank's busy_seconds / (compute
// seconds x threads), in %.
// `at`: the call works on the submatrix at (at, at) of the rest of `user`'s matrix
// (SPD for potrf: a principal submatrix of an SPD matrix).
redist::apps::Report run_app(const std::string& alg, const Layout& user, index_t at, int rank,
                             const redist::apps::Options& o, bool shared, std::pair<double, double>* busy = nullptr,
                             double* lent_share = nullptr) {
  const index_t rows = user.shape()[0];
  UserMatrix a(user, rank, make_local(user, rank, rows, alg == "potrf" ? 0 : 7), shared);
  std::optional<UserMatrix> b, c;
  if (alg == "gemm")
    b.emplace(user, rank, make_local(user, rank, rows, 11), shared),
        c.emplace(user, rank, make_local(user, rank, rows, 13), shared);
  const redist::apps::Submatrix sub{{at, at}, {}};
  MPI_Barrier(MPI_COMM_WORLD);
  redist::apps::Report r;
  if (alg == "potrf")
    r = redist::apps::potrf(user, a.data(), sub, MPI_COMM_WORLD, o);
  else if (alg == "geqrf")
    r = redist::apps::geqrf(user, a.data(), sub, MPI_COMM_WORLD, o).report;
  else
    r = redist::apps::gemm(1.0, user, a.data(), sub, user, b->data(), sub, 1.0, user, c->data(), sub, MPI_COMM_WORLD, o);
  if (busy) {
    const double mine = r.compute_seconds > 0 ? 100 * r.busy_seconds / (r.compute_seconds * std::max(o.threads, 1)) : 0;
    busy->first = -rb::max_over_ranks(-mine);
    busy->second = rb::max_over_ranks(mine);
  }
  if (lent_share) {  // of all the tasks, those run by another rank than their owner (Options::lend)
    std::int64_t mine[2] = {r.lent, r.tasks + r.lent}, all[2] = {0, 0};
    MPI_Allreduce(mine, all, 2, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    *lent_share = all[1] > 0 ? 100.0 * static_cast<double>(all[0]) / static_cast<double>(all[1]) : 0;
  }
  r.to_seconds = rb::max_over_ranks(r.to_seconds);
  r.compute_seconds = rb::max_over_ranks(r.compute_seconds);
  r.back_seconds = rb::max_over_ranks(r.back_seconds);
  return r;
}
}  // namespace

int main(int argc, char** argv) {
  rb::choose_blas_kernels(argv);  // before MPI starts (may start this program again)
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rc = 0;
  try {
    const int rank = rb::world_rank(), ranks = rb::world_size();
    rb::Args args(argc, argv, kUsage);
    if (args.help()) {
      MPI_Finalize();
      return 0;
    }
    openblas_set_num_threads(1);
    const int threads = args.count("--threads", ranks == 1 ? 2 : 1, 1, 1024);
    const int reps = args.count("--reps", 1, 1, 1000000);
    const index_t src_tile = args.get("--src-tile", 1280, 1);
    const index_t at = args.get("--at", 0, 0);
    const std::vector<std::int64_t> sizes = args.list("--n", {2000, 4000, 6000}, 1);
    const index_t tile = args.get("--tile", 0, 0);
    const std::int64_t push = args.get("--push", 1, 0);
    if (push > 1) throw redist::Error("--push must be 0 or 1, got " + std::to_string(push));
    const std::int64_t in_place = args.get("--in-place", 1, 0);
    if (in_place > 1) throw redist::Error("--in-place must be 0 or 1, got " + std::to_string(in_place));
    const std::int64_t lend = args.get("--lend", 0, 0);
    if (lend > 1) throw redist::Error("--lend must be 0 or 1, got " + std::to_string(lend));
    const std::string storage = args.str("--storage", "heap");
    if (storage != "heap" && storage != "shared")
      throw redist::Error("--storage must be heap or shared, got '" + storage + "'");
    const bool shared = storage == "shared";
    const std::string work_storage = args.str("--work-storage", "heap");
    if (work_storage != "heap" && work_storage != "shared")
      throw redist::Error("--work-storage must be heap or shared, got '" + work_storage + "'");
    const std::string huge_arg = args.str("--huge-pages", "auto");
    redist::apps::HugePages huge = redist::apps::HugePages::automatic;
    if (huge_arg == "on")
      huge = redist::apps::HugePages::always;
    else if (huge_arg == "off")
      huge = redist::apps::HugePages::never;
    else if (huge_arg != "auto")
      throw redist::Error("--huge-pages must be auto, on or off, got '" + huge_arg + "'");
    if (lend && !shared)
      throw redist::Error("--lend 1 needs --storage shared: a rank lends only tasks whose tiles lie in shared windows");
    const std::string csv = args.str("--csv", "");
    const bool repeat = args.flag("--repeat");
    std::vector<std::string> algs;
    const std::string alg_list = args.str("--alg", "potrf,geqrf,gemm");
    for (std::size_t at = 0;;) {  // every item, an empty one too ('potrf,': as --n refuses '2000,')
      const auto comma = alg_list.find(',', at);
      algs.push_back(alg_list.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
      if (algs.back() != "potrf" && algs.back() != "geqrf" && algs.back() != "gemm")
        throw redist::Error("--alg: unknown algorithm '" + algs.back() + "': potrf, geqrf or gemm, comma-separated");
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
    // The matrices before anything is printed or allocated: --n 10000000 ended in
    // "rank 0: std::bad_alloc" (a helper's trial). Each N x N matrix (three for
    // gemm) is held by the caller and by the working copy, on the job's nodes.
    {
      const redist::harness::JobMemory job = redist::harness::job_memory(MPI_COMM_WORLD);
      const bool gemm = std::find(algs.begin(), algs.end(), "gemm") != algs.end();
      for (const std::int64_t n : sizes) {
        const double m = double(n + at), need = 2.0 * 8.0 * m * m * (gemm ? 3 : 1);
        if (need > job.bytes) {
          char msg[300];
          std::snprintf(msg, sizeof msg,
                        "--n %lld: the matrices need %.1f GB (%s(N+at)^2 doubles, held by the caller and by the "
                        "working copy), the job's %d node(s) have %.1f GB; give a smaller --n",
                        static_cast<long long>(n), need / 1e9, gemm ? "three " : "", job.nodes, job.bytes / 1e9);
          throw redist::Error(msg);
        }
      }
    }
    const std::string mode = args.str("--comm-mode", "workers");
    redist::runtime::CommMode comm_mode = redist::runtime::CommMode::workers;
    if (mode == "multiple")
      comm_mode = redist::runtime::CommMode::multiple;
    else if (mode == "funneled")
      comm_mode = redist::runtime::CommMode::funneled;
    else if (mode != "workers")
      throw redist::Error("--comm-mode must be multiple, funneled or workers, got '" + mode + "'");
    const std::string strategy = args.str("--strategy", "shm");
    redist::check_strategy(strategy);  // an unknown name fails here, before any run
    const std::string grid_arg = args.str("--grid", "");
    redist::Coord grid{};  // empty: the library's choice
    if (!grid_arg.empty()) {
      const auto [p, q] = args.grid("--grid", ranks);
      grid = redist::Coord{p, q};
    }
    // The launch's settings: the first line printed and, in the CSV, a comment line
    // before the launch's rows (the rows do not repeat them).
    char settings_line[400];
    std::snprintf(settings_line, sizeof settings_line,
                  "# ranks=%d threads/rank=%d comm_mode=%s push=%d storage=%s in_place=%d lend=%d strategy=%s "
                  "reps=%d work_storage=%s huge_pages=%s work_grid=%s source: tile=%lld grid=1x%d storage=local_array%s\n",
                  ranks, threads, mode.c_str(), static_cast<int>(push), storage.c_str(), static_cast<int>(in_place),
                  static_cast<int>(lend), strategy.c_str(), reps, work_storage.c_str(), huge_arg.c_str(),
                  grid_arg.empty() ? "default" : grid_arg.c_str(),
                  static_cast<long long>(src_tile), ranks,
                  at > 0 ? (" submatrix at " + std::to_string(at) + "x" + std::to_string(at)).c_str() : "");
    const std::string settings = settings_line;
    // Rank 0 writes the CSV: a file it cannot open fails on every rank before anything
    // runs. A new (empty) file starts with a comment line naming the columns.
    int csv_ok = 1;
    if (rank == 0 && !csv.empty()) {
      if (FILE* out = std::fopen(csv.c_str(), "a")) {
        std::fseek(out, 0, SEEK_END);
        if (std::ftell(out) == 0) std::fputs(kCsvColumns, out);
        std::fputs(settings.c_str(), out);
        csv_ok = std::fclose(out) == 0;
      } else {
        csv_ok = 0;
      }
    }
    MPI_Bcast(&csv_ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!csv_ok) throw redist::Error("--csv " + csv + ": cannot open it for appending");
    rb::report_cpus(threads);
    if (rank == 0)
      std::printf("%s%6s %5s %5s %9s %9s %9s %9s %8s %8s %8s %9s %8s %9s %8s %9s\n", settings.c_str(), "alg", "N",
                  "tile", "pd_GF", "poor_GF", "good_GF", "rt_GF", "to_s", "comp_s", "back_s", "overhd%", "rt/pd",
                  "rep_GF", "rep_to_s", "busy%");
    for (std::int64_t n : sizes)
      for (const std::string& alg : algs) {
        const std::string shape = std::to_string(n + at) + "x" + std::to_string(n + at);
        const index_t nb = std::min<index_t>(src_tile, n + at);  // the source's tile (ScaLAPACK's MB = NB)
        const std::string st = std::to_string(nb);
        const Layout src = Layout::parse(shape + " tile=" + st + "x" + st + " block_cyclic grid=1x" +
                                         std::to_string(ranks) + " storage=local_array");
        redist::apps::Options good;
        good.threads = threads;
        good.tile = tile;
        good.grid = grid;
        // gemm chooses its tile as gemm_model_tile: `good` must run on its working layout
        if (good.tile == 0 && alg == "gemm") good.tile = redist::apps::gemm_model_tile(n, ranks * threads);
        good.strategy = strategy;
        good.comm_mode = comm_mode;
        good.push = push != 0;
        good.read_in_place = in_place != 0;
        good.lend = lend != 0;
        good.huge_pages = huge;
        const Layout work = alg == "geqrf" ? redist::apps::qr_work_layout(n, n, ranks, good)
                                           : redist::apps::work_layout(n, n, ranks, good);
        redist::apps::Options poor = good;
        poor.tile = std::min<index_t>(src_tile, n);
        poor.grid = redist::Coord{1, ranks};
        const Layout poor_layout = redist::apps::work_layout(n, n, ranks, poor);
        // pdpotrf refuses a submatrix whose first row is not on a block boundary
        // ((IA - 1) mod MB_A = 0: its info -4); the round trip takes any offset.
        const bool pd_runs = alg != "potrf" || at % nb == 0;
        if (!pd_runs && rank == 0)
          std::printf("#   pdpotrf not run at N = %lld: ScaLAPACK needs (IA - 1) mod MB_A = 0, here %lld mod %lld\n",
                      static_cast<long long>(n), static_cast<long long>(at), static_cast<long long>(nb));
        std::vector<double> pd, poor_t, good_t, rt_t, to, comp, back, rep_t{0}, rep_to{0}, busy_lo, busy_hi, lent_pct;
        if (repeat) rep_t.clear(), rep_to.clear();
        for (int r = 0; r < reps; ++r) {
          pd.push_back(pd_runs ? run_pd(alg, src, static_cast<int>(n), static_cast<int>(at), static_cast<int>(nb), rank,
                                        ranks, threads)
                               : std::nan(""));
          poor_t.push_back(run_app(alg, poor_layout, 0, rank, poor, shared).compute_seconds);
          std::pair<double, double> busy;
          double lent = 0;
          good_t.push_back(run_app(alg, work, 0, rank, good, shared, &busy, &lent).compute_seconds);
          busy_lo.push_back(busy.first), busy_hi.push_back(busy.second), lent_pct.push_back(lent);
          redist::apps::Workspace workspace;  // empty: the first call allocates as without one
          redist::apps::Options first = good;
          first.shared_work = work_storage == "shared";
          if (repeat) first.workspace = &workspace;
          const redist::apps::Report rt = run_app(alg, src, at, rank, first, shared);
          rt_t.push_back(rt.seconds()), to.push_back(rt.to_seconds), comp.push_back(rt.compute_seconds),
              back.push_back(rt.back_seconds);
          if (repeat) {
            const redist::apps::Report again = run_app(alg, src, at, rank, first, shared);
            rep_t.push_back(again.seconds()), rep_to.push_back(again.to_seconds);
          }
        }
        const double rep_gf = repeat ? flops_of(alg, static_cast<double>(n)) / 1e9 / rb::median(rep_t) : 0;
        const double f = flops_of(alg, static_cast<double>(n)) / 1e9;
        const double pdm = rb::median(pd), rtm = rb::median(rt_t), over = rb::median(to) + rb::median(back);
        if (rank == 0) {
          char rep_cols[48] = "        -        -";  // no repeated call without --repeat (0 in the CSV)
          // Seconds to 3 significant digits (fixed 3 decimals printed 0.000 at small N beside overhd% of 400).
          if (repeat) std::snprintf(rep_cols, sizeof rep_cols, "%9.2f %8.3g", rep_gf, rb::median(rep_to));
          std::printf("%6s %5lld %5lld %9.2f %9.2f %9.2f %9.2f %8.3g %8.3g %8.3g %9.1f %8.2f %s %4.0f-%-4.0f\n",
                      alg.c_str(), static_cast<long long>(n), static_cast<long long>(work.partition(0).tile()),
                      f / pdm, f / rb::median(poor_t), f / rb::median(good_t), f / rtm, rb::median(to),
                      rb::median(comp), rb::median(back), 100 * over / rb::median(comp), pdm / rtm, rep_cols,
                      rb::median(busy_lo), rb::median(busy_hi));
          if (lend) std::printf("#   good: %.1f%% of the tasks lent to another rank (median)\n", rb::median(lent_pct));
          std::fflush(stdout);
          if (!csv.empty())
            if (FILE* out = std::fopen(csv.c_str(), "a")) {
              // Seconds to 6 significant digits: plot_apps.py recomputes overhd% from them.
              std::fprintf(out, "%d,%d,%s,%lld,%lld,%lld,%.4f,%.4f,%.4f,%.4f,%.6g,%.6g,%.6g,%.4f,%.6g\n", ranks,
                           threads, alg.c_str(), static_cast<long long>(n), static_cast<long long>(src_tile),
                           static_cast<long long>(work.partition(0).tile()), f / pdm, f / rb::median(poor_t),
                           f / rb::median(good_t), f / rtm, rb::median(to), rb::median(comp), rb::median(back),
                           rep_gf, rb::median(rep_to));
              std::fclose(out);
            }
        }
      }
  } catch (const redist::Error& e) {
    // Bad arguments and the library's errors are the same on every rank: rank 0 speaks for all.
    // (every rank with REDIST_SHOW_ERRORS=1, as the other programs)
    if (rb::world_rank() == 0 || std::getenv("REDIST_SHOW_ERRORS")) std::fprintf(stderr, "redist-apps: %s\n", e.what());
    rc = 1;
  } catch (const std::exception& e) {
    const bool oom = dynamic_cast<const std::bad_alloc*>(&e) != nullptr;
    std::fprintf(stderr, "redist-apps: rank %d: %s\n", rb::world_rank(),
                 oom ? "out of memory (std::bad_alloc): give a smaller --n, or more nodes" : e.what());
    rc = 1;
  }
  MPI_Finalize();
  return rc;
}
