// The one results schema (docs/results.md): written by `redist run --json` and by
// every `redist bench` suite (results.json), read by bench/plot.py and
// bench/pool.py. One key vocabulary: times in seconds (`*_s`), rates in bytes/s
// (`*_Bps`), `max_*` the busiest rank's, `total_*` sums over ranks.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "harness/case.hpp"

namespace redist::harness {

// Where and with what a result was measured (rank 0's view). Collective.
struct RunInfo {
  std::string hostname, compiler, mpi_library, date, build_type;
  unsigned cores = 0;
  int ranks = 0, ranks_per_node = 0;
  // cores 0: unknown (hardware_concurrency could not tell), not oversubscribed.
  bool oversubscribed() const { return cores > 0 && ranks_per_node > static_cast<int>(cores); }
};
RunInfo run_info(MPI_Comm comm);

// A results document: what ran (`tool`: "redist run", "redist bench SUITE"), where,
// the machine model, the cases, and members the tool adds (raw JSON members,
// e.g. "summary": [...]; may be empty).
struct Results {
  std::string tool, suite;
  int reps = 0;
  double scale = 1;
  RunInfo run;
  const Machine* machine = nullptr;
  std::vector<CaseResult> cases;
  std::string extra_members;
};
std::string to_json(const Results& r);
std::string to_json(const CaseResult& c);

std::string json_string(const std::string& s);  // quoted and escaped
std::string json_number(double v);               // null when not finite

}  // namespace redist::harness
