// redist-bench SUITE: every redist executor (and auto) beside ScaLAPACK's
// pdgemr2d on the cases of paper 000 sec. 8 and paper 001 sec. 3.3, verified,
// with JSON + CSV results for bench/plot.py (docs/benchmarks.md).
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "redist/cost.hpp"
#include "redist/pattern.hpp"
#include "redist/redist.hpp"
#include "report.hpp"
#include "scalapack.hpp"
#include "suites.hpp"
#include "timing.hpp"

using namespace redist;
using namespace redist::bench;

namespace {

const char* kUsage =
    "redist-bench SUITE [--out DIR] [--reps N] [--scale S] [--smoke] [--launches-note]\n"
    "  SUITE: categories volume scatter gather random blocksize submatrix all\n"
    "  Times every redist executor, auto and ScaLAPACK's pdgemr2d (2-D block-cyclic\n"
    "  local_array cases only) on each case, interleaved, after one verified warm-up\n"
    "  each; prints bandwidth (paper 000 Eq. 3), its ratio to the bound (Eq. 5) and\n"
    "  the speedup over pdgemr2d, and writes DIR/results.json and DIR/results.csv.\n"
    "  --out DIR        results folder (default results/SUITE)\n"
    "  --reps N         timed runs per method (default 5); the median is reported\n"
    "  --scale S        multiplies the array sizes (default 1)\n"
    "  --smoke          two small cases per suite, --reps 2, --scale 0.1 unless given\n"
    "  --launches-note  print how the ranks are placed (ranks per node vs cores)\n"
    "  --inject-error   testing only: corrupt one target element after the first\n"
    "                   warm-up, to show that a wrong result fails the run\n"
    "Exit code 1 when any verification fails, 2 on bad arguments.\n";

int rank_ = 0, nranks_ = 1;

[[noreturn]] void fail(const std::string& msg) {
  if (rank_ == 0) std::fprintf(stderr, "redist-bench: %s\n", msg.c_str());
  MPI_Finalize();
  std::exit(2);
}

long long max_over_ranks(long long v) {
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  return v;
}

// Runs one case on every rank; the result is the same on every rank.
CaseResult run_case(const Case& c, const Machine& machine, int reps, bool inject_error) {
  CaseResult res;
  res.c = c;
  Layout src, dst;
  Region region;
  Plan plan;
  try {
    src = Layout::parse(c.src);
    dst = Layout::parse(c.dst);
    region = c.region.empty() ? Region::whole(src.shape()) : Region::parse(c.region);
    plan = make_plan(src, dst, region, MPI_COMM_WORLD);
  } catch (const std::exception& e) {
    fail(c.name + ": " + e.what());
  }
  // One buffer per side serves tile and local_array storage; all methods share it.
  const LocalIndex lsrc(src, rank_), ldst(dst, rank_);
  std::vector<double> a(static_cast<size_t>(std::max<index_t>(1, lsrc.elements())));
  std::vector<double> b(static_cast<size_t>(std::max<index_t>(1, ldst.elements())));
  std::vector<void*> pa{a.data()}, pb{b.data()};
  fill_pattern(src, rank_, pa, 1);

  const PlanStats& st = plan.stats();
  res.remote_bytes = max_over_ranks(std::max(st.bytes_sent, st.bytes_received));
  res.local_bytes = max_over_ranks(st.bytes_local);
  res.message_bytes = max_over_ranks(st.messages_sent ? st.bytes_sent / st.messages_sent : 0);
  res.bound = res.remote_bytes ? bound_bandwidth(machine, res.remote_bytes, res.local_bytes,
                                                 res.message_bytes ? res.message_bytes : 1 << 20)
                               : 0;

  std::vector<Method> methods;
  for (Executor ex : all_executors())
    methods.push_back({to_string(ex), [&, ex] { plan.execute(a.data(), b.data(), ex); }, {}});
  methods.push_back({"auto", [&] { plan.execute(a.data(), b.data(), Executor::auto_); }, {}});
  std::unique_ptr<scalapack::Redistribution> pdg;
  const bool scalapack_ok = src.storage().kind == StorageKind::local_array &&
                            dst.storage().kind == StorageKind::local_array &&
                            scalapack::unsupported(src).empty() && scalapack::unsupported(dst).empty();
  if (scalapack_ok) {
    pdg = std::make_unique<scalapack::Redistribution>(src, lsrc.ld(), dst, ldst.ld(), region);
    if (!pdg->ok) fail(c.name + ": descinit rejected a descriptor");
    methods.push_back({"pdgemr2d", [&] { pdg->run(a.data(), b.data()); }, {}});
  }
  // Paper 001's yardstick: a plain MPI_Alltoall moving the busiest rank's remote
  // volume, spread evenly over its peers.
  std::vector<char> sa, sb;
  int per_peer = 0;
  if (c.alltoall && nranks_ > 1 && res.remote_bytes > 0) {
    per_peer = static_cast<int>((res.remote_bytes + nranks_ - 2) / (nranks_ - 1));
    sa.assign(static_cast<size_t>(per_peer) * nranks_, 1);
    sb.assign(sa.size(), 0);
  }

  // Warm-up (first touch, plan caches, auto's choice) doubles as the verification.
  bool first = true;
  for (Method& me : methods) {
    fill_pattern(dst, rank_, pb, 2);
    me.run();
    if (inject_error && first && rank_ == 0 && ldst.elements() > 0) b[0] = -b[0] + 0.5;
    first = false;
    CheckResult chk = check_redistributed(dst, rank_, pb, region, src, 1, 2);
    if (!chk.ok())
      std::fprintf(stderr, "rank %d: %s: %s wrong: %s\n", rank_, c.name.c_str(), me.name.c_str(),
                   chk.first_error.c_str());
    int ok = chk.ok();
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    me.verified = ok == 1;
  }
  if (!check_pattern(src, rank_, pa, 1).ok()) {
    std::fprintf(stderr, "rank %d: %s: the source changed\n", rank_, c.name.c_str());
    for (Method& me : methods) me.verified = false;
  }
  if (per_peer > 0) {
    methods.push_back({"alltoall", [&] {
                         MPI_Alltoall(sa.data(), per_peer, MPI_BYTE, sb.data(), per_peer, MPI_BYTE, MPI_COMM_WORLD);
                       }, {}});
    methods.back().run();  // warm-up; nothing to verify
    methods.back().verified = true;
  }
  time_interleaved(methods, reps, MPI_COMM_WORLD);

  // The model's view of each executor (max over ranks), beside what was measured.
  std::vector<double> predicted;
  choose_executor(plan.rank_plan(), machine, MPI_COMM_WORLD, &predicted);
  const std::vector<Executor> ex = all_executors();
  for (const Method& me : methods) {
    MethodResult m{me.name, me.median(), me.min(), me.verified, me.times, "", 0};
    for (size_t k = 0; k < ex.size(); ++k)
      if (me.name == to_string(ex[k])) m.predicted = predicted[k];
    if (me.name == "auto") m.chose = to_string(plan.auto_choice());
    res.methods.push_back(m);
  }
  return res;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks_);
  std::string suite, out;
  int reps = 5;
  double scale = 0;
  bool smoke = false, launches_note = false, inject_error = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--help" || a == "-h") {
      if (rank_ == 0) std::printf("%s", kUsage);
      MPI_Finalize();
      return 0;
    } else if (a == "--out" && has_value) {
      out = argv[++i];
    } else if (a == "--reps" && has_value) {
      reps = std::atoi(argv[++i]);
    } else if (a == "--scale" && has_value) {
      scale = std::atof(argv[++i]);
      if (!(scale > 0)) fail("--scale needs a positive number");
    } else if (a == "--smoke") {
      smoke = true;
    } else if (a == "--launches-note") {
      launches_note = true;
    } else if (a == "--inject-error") {
      inject_error = true;
    } else if (a.rfind("--", 0) == 0 || !suite.empty()) {
      fail("unexpected argument " + a + " (see --help)");
    } else {
      suite = a;
    }
  }
  if (smoke) {
    if (scale == 0) scale = 0.1;
    reps = std::min(reps, 2);
  }
  if (scale == 0) scale = 1;
  if (reps < 1) fail("--reps must be >= 1");
  const std::vector<Case> cases = make_suite(suite, nranks_, scale, smoke);
  if (cases.empty()) fail("unknown suite '" + suite + "' (see --help)");
  if (out.empty()) out = "results/" + suite;

  Report report(run_info(MPI_COMM_WORLD), suite, reps, scale);
  // Ranks sharing this node, to say whether timings ran oversubscribed.
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &report.ranks_per_node);
  MPI_Comm_free(&node);
  const Machine machine = machine_for(MPI_COMM_WORLD);  // calibration file, else quick (collective)
  report.set_machine(machine);
  if (rank_ == 0) {
    std::error_code ec;
    std::filesystem::create_directories(out, ec);
    report.print_header(stdout);
    if (launches_note || report.oversubscribed()) report.print_launches(stdout);
  }

  const double t0 = MPI_Wtime();
  bool all_ok = true;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (rank_ == 0) progress(stderr, i + 1, cases.size(), cases[i].name, MPI_Wtime() - t0);
    CaseResult r = run_case(cases[i], machine, reps, inject_error);
    for (const MethodResult& m : r.methods) all_ok = all_ok && m.verified;
    if (rank_ == 0) {
      progress_done(stderr);
      print_case(stdout, r, i + 1, cases.size());
    }
    report.cases.push_back(std::move(r));
    if (rank_ == 0 && !report.write(out)) std::fprintf(stderr, "redist-bench: cannot write to %s\n", out.c_str());
  }
  if (rank_ == 0) {
    report.print_summary(stdout);
    std::printf("results: %s/results.json, %s/results.csv (%.1f s)\n", out.c_str(), out.c_str(), MPI_Wtime() - t0);
    if (!all_ok) std::fprintf(stderr, "redist-bench: a verification FAILED\n");
  }
  MPI_Finalize();
  return all_ok ? 0 : 1;
}
