// redist bench results: the terminal table, the per-suite summary, and the
// results folder (results.json in the harness's schema, docs/results.md, and a
// flat results.csv).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "harness/results.hpp"

namespace redist::bench {

// Per suite and method: geomean speedup over pdgemr2d, best ratio to the bound,
// and how often auto was within 10% of the fastest redist strategy.
struct SuiteSummary {
  std::string suite;
  std::vector<std::string> methods;
  std::vector<double> geomean_speedup, best_ratio;
  std::vector<int> speedup_cases;
  int auto_within_10 = 0, cases = 0;
  int auto_cases = 0;  // cases that timed auto
};

class Report {
 public:
  Report(harness::Results results) : r_(std::move(results)) {}
  void print_header(FILE* f) const;
  void print_launches(FILE* f) const;
  void print_summary(FILE* f) const;
  std::vector<SuiteSummary> summaries() const;
  bool write(const std::string& dir) const;  // results.json and results.csv
  void add(harness::CaseResult c) { r_.cases.push_back(std::move(c)); }
  const harness::RunInfo& run() const { return r_.run; }
  const std::vector<harness::CaseResult>& cases() const { return r_.cases; }

 private:
  harness::Results r_;
};

void print_case(FILE* f, const harness::CaseResult& r, size_t i, size_t n);
void progress(FILE* f, size_t i, size_t n, const std::string& name, double elapsed);
void progress_done(FILE* f);

}  // namespace redist::bench
