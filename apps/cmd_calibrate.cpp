// `redist calibrate`: measure the machine figures of the cost model once and
// save them as JSON; `redist run` and the `auto` strategy reuse the file.
#include <mpi.h>

#include <cstdio>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "cli.hpp"
#include "mpi/agree.hpp"
#include "harness/results.hpp"
#include "redist/cost.hpp"

namespace redist::cli {
namespace {

const char* kUsage = R"(usage: mpirun -np 2 redist calibrate [options]

Measures, between ranks 0 and 1, what the cost model of `auto` needs (paper 000
sec. 7, paper 002 Eq. 1): a NetPIPE-like ping-pong from 8 B to --max-size
(median one-way time per size; the 8-byte time is the per-message startup),
single-core memcpy bandwidth, strided row copies (8 B .. 1 MB rows) and
transposed copies (4, 8 and 16 B elements), MPI derived-datatype transfers of
such rows and of transposes, and process_vm_readv per row. Saves
them as JSON with the host name, core count, build and MPI library. An existing
calibration file is reused unless --force; a file there that is no calibration
is not replaced without --force. Needs 2 or more ranks; takes a few seconds.

options:
  --out FILE       where to save (default $REDIST_CALIBRATION, else
                   ~/.cache/redist/calibration.json); its folder is made
                   when missing, as for the default
  --force          measure again even when FILE exists
  --max-size B     largest ping-pong message in bytes, 4096 to 1073741824
                   (default 67108864; the bandwidth is read at 1 MiB or the largest)
  --help           this text
)";

void summary(const Machine& m, const std::string& path) {
  std::printf("calibration %s\n  host %s, %d cores, %d ranks, %s\n  %s\n  %s\n", path.c_str(), m.hostname.c_str(),
              m.cores, m.ranks, m.created.c_str(), m.build.c_str(), m.mpi_library.c_str());
  std::printf("  per message: startup (ping-pong) %s; in a stream of n each way:", human_time(m.startup).c_str());
  for (size_t i = 0; i < m.stream.x.size(); ++i)
    std::printf(" n=%.0f: %s", m.stream.x[i], human_time(m.stream.y[i]).c_str());
  std::printf("\n");
  // At 1 MB when that was measured; else only the largest size (the curve would
  // extrapolate).
  const double largest = m.pingpong.empty() ? 0 : m.pingpong.x.back();
  if (largest >= (1 << 20))
    std::printf("  Bnet %s at 1 MB, %s at the largest size (%s); Bmemcpy %s\n",
                human_rate(m.net_bandwidth(1 << 20)).c_str(), human_rate(largest / m.pingpong.y.back()).c_str(),
                human_bytes(largest).c_str(), human_rate(m.bmemcpy).c_str());
  else
    std::printf("  Bnet %s at the largest size (%s); Bmemcpy %s\n",
                human_rate(largest > 0 ? largest / m.pingpong.y.back() : 0).c_str(), human_bytes(largest).c_str(),
                human_rate(m.bmemcpy).c_str());
  auto curve = [](const char* what, const Curve& c) {
    std::printf("  %-28s", what);
    for (size_t i = 0; i < c.x.size(); ++i)
      std::printf(" %s: %s", human_bytes(c.x[i]).c_str(), human_rate(c.y[i] > 0 ? 1 / c.y[i] : 0).c_str());
    std::printf(c.empty() ? " unavailable\n" : "\n");
  };
  std::printf("  %-28s", "exchange (both ways at once)");
  for (size_t i = 0; i < m.exchange.x.size(); ++i)
    std::printf(" %s: %s", human_bytes(m.exchange.x[i]).c_str(), human_rate(m.exchange.x[i] / m.exchange.y[i]).c_str());
  std::printf("\n");
  curve("row copy (pack/unpack)", m.copy);
  curve("datatype rows (alltoallw)", m.datatype);
  curve("process_vm_readv rows", m.vm_read);
  // By element size (an older file has none).
  curve("transposed copy, elements", m.transpose);
  curve("transposed datatype, elem.", m.datatype_transpose);
}

// Empty when `path` can be written (its folder made if missing: `made` says
// which), else why not.
std::string unwritable(const std::string& path, std::string& made) {
  namespace fs = std::filesystem;
  const fs::path p(path), dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::exists(dir, ec)) made = dir.string();
  fs::create_directories(dir, ec);
  if (ec) return detail::cat("--out ", path, ": cannot make its folder ", dir.string(), ": ", ec.message());
  const bool existed = fs::exists(p, ec);
  std::FILE* f = std::fopen(path.c_str(), "a");  // as save_machine will write it (root passes access())
  if (!f) return detail::cat("--out ", path, ": cannot write it: ", std::strerror(errno));
  std::fclose(f);
  if (!existed) fs::remove(p, ec);
  return {};
}

}  // namespace

int cmd_calibrate(int argc, char** argv) {
  if (print_help_if_asked(argc, argv, kUsage)) return 0;
  return run_with_mpi(argc, argv, "calibrate", [&](int rank, int size) {
    int rc = 0;
    const Args a = parse_args(argc, argv, 2, {"--out", "--max-size"}, {"--force", "--help"});
    if (!a.positional.empty()) detail::fail("unexpected argument '", a.positional[0], "'\n", kUsage);
    const std::string path = a.get("--out", default_calibration_path());
    CalibrateOptions opt;
    // Bnet is read at 1 MiB or the largest size: 8-byte messages gave 17 MB/s.
    opt.max_size = a.get_int("--max-size", opt.max_size, 4096, index_t{1} << 30);
    // Rank 0 decides whether to reuse the file; everyone follows. A file there
    // that no calibration wrote is not replaced without --force (one of an older
    // format, unreadable now, is measured again).
    // A folder is refused before anything reads it (reading one threw on rank 0 alone).
    Machine old;
    std::string why, foreign;
    int reuse = 0;
    if (rank == 0 && std::filesystem::is_directory(path))
      foreign = detail::cat("--out ", path, " is a folder: give a file's path, such as ",
                            (std::filesystem::path(path) / "calibration.json").string());
    else if (rank == 0 && !a.has("--force")) {
      reuse = load_machine(path, old, &why);
      if (!reuse && std::filesystem::exists(path)) {
        std::ifstream f(path);
        const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        if (!text.empty() && text.find("redist-calibration") == std::string::npos)
          foreign = detail::cat("--out ", path, " exists: ", why, "; give another --out, or --force to replace it");
      }
    }
    detail::agree(MPI_COMM_WORLD, foreign);
    MPI_Bcast(&reuse, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (reuse) {
      if (rank == 0) {
        summary(old, path);
        std::printf("(reused; --force measures again)\n");
      }
    } else {
      if (size < 2) detail::fail("calibrate needs 2 or more ranks (ping-pong between ranks 0 and 1); got 1");
      // A file it could not write fails now, not after the measurement.
      std::string made;
      // Rank 0's reason, on every rank (rank 1 said only "rank 0 cannot write the
      // calibration file": a helper's trial).
      detail::agree(MPI_COMM_WORLD, rank == 0 ? unwritable(path, made) : std::string());
      // More ranks than cores on a node: the figures measure the oversubscription
      // (3 ranks on 2 cores: Bnet 0.84 GB/s against 4.49 on 2), and auto and
      // `plan --predict` read the file afterwards. Said before and after measuring.
      const harness::RunInfo info = harness::run_info(MPI_COMM_WORLD);
      std::string crowded;
      if (info.oversubscribed())
        crowded = "WARNING: " + std::to_string(info.ranks_per_node) + " ranks on a node of " +
                  std::to_string(info.cores) + " cores (oversubscribed): these figures measure the crowding, not " +
                  "the machine; calibrate with at most " + std::to_string(info.cores) + " per node (2 ranks in all suffice)";
      if (rank == 0 && !crowded.empty()) std::fprintf(stderr, "redist calibrate: %s\n", crowded.c_str());
      const double t0 = MPI_Wtime();
      Machine m = calibrate(MPI_COMM_WORLD, opt, [](const std::string& s) {
        std::fprintf(stderr, "calibrate: %s\n", s.c_str());
      });
      std::string err;
      if (rank == 0) try {
          save_machine(path, m);
        } catch (const Error& e) {
          err = e.what();
        }
      int bad = !err.empty();
      MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
      if (bad) {
        if (rank == 0) std::fprintf(stderr, "redist calibrate: error: %s\n", err.c_str());
        rc = 2;
      } else if (rank == 0) {
        summary(m, path);
        std::printf("(measured in %.1f s, saved%s)\n", MPI_Wtime() - t0,
                    made.empty() ? "" : (", in the folder " + made + " made for it").c_str());
        if (!crowded.empty()) std::printf("%s\n", crowded.c_str());
      }
    }
    return rc;
  });
}

}  // namespace redist::cli
