// redist-bench results: the terminal table, the summary, JSON and CSV.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "redist/cost.hpp"
#include "suites.hpp"
#include "timing.hpp"

namespace redist::bench {

struct MethodResult {
  std::string name;
  double median = 0, min = 0;
  bool verified = false;
  std::vector<double> times;
  std::string chose;  // auto only: the executor it picked
  double predicted = 0;  // the cost model's time, max over ranks (0: no model for it)
};

struct CaseResult {
  Case c;
  long long remote_bytes = 0, local_bytes = 0, message_bytes = 0;  // max over ranks
  double bound = 0;  // Eq. 5, bytes/s (0: no remote bytes)
  std::vector<MethodResult> methods;

  const MethodResult* find(const std::string& name) const;
  double bandwidth(const MethodResult& m) const;  // Eq. 3, bytes/s
  double speedup(const MethodResult& m) const;    // pdgemr2d median / m's; 0 without pdgemr2d
};

// Per suite and method: geomean speedup over pdgemr2d, best ratio to the bound,
// and how often auto was within 10% of the fastest redist executor.
struct SuiteSummary {
  std::string suite;
  std::vector<std::string> methods;
  std::vector<double> geomean_speedup, best_ratio;
  std::vector<int> speedup_cases;
  int auto_within_10 = 0, cases = 0;
};

class Report {
 public:
  Report(RunInfo info, std::string suite, int reps, double scale)
      : info_(std::move(info)), suite_(std::move(suite)), reps_(reps), scale_(scale) {}
  void set_machine(const Machine& m) { machine_ = m; }
  bool oversubscribed() const { return ranks_per_node > static_cast<int>(info_.cores); }
  void print_header(FILE* f) const;
  void print_launches(FILE* f) const;
  void print_summary(FILE* f) const;
  std::vector<SuiteSummary> summaries() const;
  bool write(const std::string& dir) const;  // results.json and results.csv

  std::vector<CaseResult> cases;
  int ranks_per_node = 0;

 private:
  RunInfo info_;
  std::string suite_;
  int reps_;
  double scale_;
  Machine machine_;
};

void print_case(FILE* f, const CaseResult& r, size_t i, size_t n);
void progress(FILE* f, size_t i, size_t n, const std::string& name, double elapsed);
void progress_done(FILE* f);

}  // namespace redist::bench
