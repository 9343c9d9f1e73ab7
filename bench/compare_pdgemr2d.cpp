// redist-compare: every redist executor against ScaLAPACK's pdgemr2d on the same
// 2-D block-cyclic local arrays, in one run (STYLE.md, "Benchmarks": peers beside ours).
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "redist/pattern.hpp"
#include "redist/redist.hpp"
#include "scalapack.hpp"
#include "timing.hpp"

using namespace redist;

namespace {

const char* kUsage =
    "redist-compare SRC DST [REGION] [--reps N] [--json FILE]\n"
    "  Times every redist executor and ScaLAPACK's pdgemr2d moving REGION of a 2-D\n"
    "  block_cyclic array from layout SRC to layout DST (spec strings, docs/spec.md;\n"
    "  storage is forced to local_array, ScaLAPACK's local array; tiles must be regular\n"
    "  without offset=, no super=, esize 8). Example, on 2 ranks:\n"
    "    redist-compare '8000x8000 tile=200x200 block_cyclic grid=1x2' \\\n"
    "                   '8000x8000 tile=300x300 block_cyclic grid=2x1' '7000x7000 from=500x300 to=1000x0'\n"
    "  REGION   'SIZE [from=SRC_OFFSET] [to=DST_OFFSET]' (default: all of both shapes' overlap)\n"
    "  --reps N timed runs per method (default 5), after one untimed warm-up each that\n"
    "           is also verified against the pattern oracle (pattern.hpp)\n"
    "  --json F also write the results as JSON to F (rank 0)\n"
    "Methods run interleaved, in a new order each round, so that machine noise hits all alike;\n"
    "MPI_Barrier before each run; a run's time is the slowest rank's. Bandwidth (paper\n"
    "000, Eq. 3): max over ranks of max(remote bytes sent, received) / time, with the\n"
    "remote bytes from redist's plan (the same data pdgemr2d must move). Speedup:\n"
    "pdgemr2d median / method median. Exit code 1 when a verification fails.\n";

using bench::Method;

Layout as_local_array(const Layout& l) {
  return Layout(l.shape(), l.partitions(), l.ownership(), Storage{StorageKind::local_array, l.storage().ld},
                l.elem_size());
}

int rank_ = 0;
[[noreturn]] void fail(const std::string& msg) {  // the same on every rank: rank 0 prints
  if (rank_ == 0) std::fprintf(stderr, "redist-compare: %s\n", msg.c_str());
  MPI_Finalize();
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  std::vector<std::string> pos;
  int reps = 5;
  std::string json;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      if (rank_ == 0) std::printf("%s", kUsage);
      MPI_Finalize();
      return 0;
    }
    if (a == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (a == "--json" && i + 1 < argc) {
      json = argv[++i];
    } else if (a.rfind("--", 0) == 0) {
      fail("unknown option " + a + " (see --help)");
    } else {
      pos.push_back(a);
    }
  }
  if (pos.size() < 2 || pos.size() > 3 || reps < 1) fail("expected SRC DST [REGION] and --reps >= 1 (see --help)");

  Layout src, dst;
  Region region;
  Plan plan;
  try {
    src = as_local_array(Layout::parse(pos[0]));
    dst = as_local_array(Layout::parse(pos[1]));
    for (const Layout* l : {&src, &dst})
      if (std::string why = scalapack::unsupported(*l); !why.empty()) fail(why + ": " + l->spec());
    if (pos.size() == 3) {
      region = Region::parse(pos[2]);
    } else {
      region = Region::whole(src.shape());
      for (int d = 0; d < 2; ++d) region.size[d] = std::min(src.shape()[d], dst.shape()[d]);
    }
    plan = make_plan(src, dst, region, MPI_COMM_WORLD);  // collective validation
  } catch (const std::exception& e) {
    fail(e.what());
  }

  // One source and one target local array shared by all methods (same first touch).
  const LocalIndex lsrc(src, rank_), ldst(dst, rank_);
  std::vector<double> a(static_cast<size_t>(std::max<index_t>(1, lsrc.elements())));
  std::vector<double> b(static_cast<size_t>(std::max<index_t>(1, ldst.elements())));
  std::vector<void*> pa{a.data()}, pb{b.data()};
  fill_pattern(src, rank_, pa, 1);

  // Heap-held so that its grids are released before MPI_Finalize.
  auto pdg = std::make_unique<scalapack::Redistribution>(src, lsrc.ld(), dst, ldst.ld(), region);
  if (!pdg->ok) fail("descinit rejected a descriptor");

  std::vector<Method> methods;
  for (Executor ex : all_executors())
    methods.push_back({to_string(ex), [&, ex] { plan.execute(a.data(), b.data(), ex); }, {}});
  methods.push_back({"pdgemr2d", [&] { pdg->run(a.data(), b.data()); }, {}});

  // Warm-up and verification: a fresh target for each method.
  bool all_verified = true;
  for (Method& me : methods) {
    fill_pattern(dst, rank_, pb, 2);
    me.run();
    CheckResult c = check_redistributed(dst, rank_, pb, region, src, 1, 2);
    if (!c.ok()) std::fprintf(stderr, "rank %d: %s wrong: %s\n", rank_, me.name.c_str(), c.first_error.c_str());
    int ok = c.ok(), all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    me.verified = all == 1;
    all_verified = all_verified && me.verified;
  }
  if (!check_pattern(src, rank_, pa, 1).ok()) {
    std::fprintf(stderr, "rank %d: the source changed\n", rank_);
    all_verified = false;
  }

  bench::time_interleaved(methods, reps, MPI_COMM_WORLD);

  // Paper 000, Eq. 3: the busiest rank's remote volume.
  const PlanStats& st = plan.stats();
  long long mine = std::max(st.bytes_sent, st.bytes_received), remote = 0;
  MPI_Allreduce(&mine, &remote, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);

  if (rank_ == 0) {
    char host[256] = "?";
    gethostname(host, sizeof host - 1);
    const double ref = methods.back().median();
    std::printf("redist-compare on %s: %d ranks, %u hardware threads, %s\n", host, nranks,
                std::thread::hardware_concurrency(), __VERSION__);
    std::printf("  src    %s\n  dst    %s\n  region %s\n  reps %d, max remote bytes per rank %lld\n",
                src.spec().c_str(), dst.spec().c_str(), region.str().c_str(), reps, remote);
    std::printf("%-10s %12s %12s %10s %9s %s\n", "method", "median [ms]", "min [ms]", "GB/s", "speedup", "verified");
    for (const Method& me : methods)
      std::printf("%-10s %12.3f %12.3f %10.3f %9.2f %s\n", me.name.c_str(), me.median() * 1e3, me.min() * 1e3,
                  me.median() > 0 ? remote / me.median() / 1e9 : 0.0, me.median() > 0 ? ref / me.median() : 0.0,
                  me.verified ? "yes" : "NO");
    if (!json.empty()) {
      if (FILE* f = std::fopen(json.c_str(), "w")) {
        std::fprintf(f, "{\"host\": \"%s\", \"ranks\": %d, \"compiler\": \"%s\",\n", host, nranks, __VERSION__);
        std::fprintf(f, " \"src\": \"%s\", \"dst\": \"%s\", \"region\": \"%s\", \"reps\": %d, \"remote_bytes\": %lld,\n",
                     src.spec().c_str(), dst.spec().c_str(), region.str().c_str(), reps, remote);
        std::fprintf(f, " \"methods\": [");
        for (size_t i = 0; i < methods.size(); ++i) {
          const Method& me = methods[i];
          std::fprintf(f, "%s\n  {\"name\": \"%s\", \"median_s\": %.9g, \"min_s\": %.9g, \"speedup\": %.6g, "
                       "\"verified\": %s, \"times_s\": [", i ? "," : "", me.name.c_str(), me.median(), me.min(),
                       me.median() > 0 ? ref / me.median() : 0.0, me.verified ? "true" : "false");
          for (size_t k = 0; k < me.times.size(); ++k) std::fprintf(f, "%s%.9g", k ? ", " : "", me.times[k]);
          std::fprintf(f, "]}");
        }
        std::fprintf(f, "\n]}\n");
        std::fclose(f);
      } else {
        std::fprintf(stderr, "redist-compare: cannot write %s\n", json.c_str());
      }
    }
  }
  pdg.reset();
  int ok = all_verified, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Finalize();
  return all ? 0 : 1;
}
