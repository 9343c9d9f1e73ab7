#include "report.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace redist::bench {
namespace {

using harness::CaseResult;
using harness::json_number;
using harness::json_string;
using harness::MethodResult;

bool is_strategy(const std::string& name) {
  static const std::vector<std::string> names = strategy_names();  // the registry
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

void Report::print_header(FILE* f) const {
  const harness::RunInfo& i = r_.run;
  std::fprintf(f, "%s on %s: %d rank%s, %u cores, %s build, %s\n  %s\n", r_.tool.c_str(), i.hostname.c_str(), i.ranks,
               i.ranks == 1 ? "" : "s",
               i.cores, i.build_type.c_str(), i.compiler.c_str(), i.mpi_library.c_str());
  std::fprintf(f, "  reps %d (median, slowest rank), scale %g; machine from %s: Bnet %.2f GB/s, Bmemcpy %.2f GB/s\n",
               r_.reps, r_.scale, r_.machine->source.c_str(), r_.machine->bnet / 1e9, r_.machine->bmemcpy / 1e9);
}

void Report::print_launches(FILE* f) const {
  const harness::RunInfo& i = r_.run;
  std::fprintf(f, "  launches: %d ranks, %d on this node with %u cores%s\n", i.ranks, i.ranks_per_node, i.cores,
               i.oversubscribed() ? " -- OVERSUBSCRIBED: timings are not meaningful" : " (one core each or more)");
}

void print_case(FILE* f, const CaseResult& r, size_t i, size_t n) {
  std::fprintf(f, "\n[%zu/%zu] %s %s\n  src %s\n  dst %s\n  region %s\n", i, n, r.suite.c_str(), r.name.c_str(),
               r.src.c_str(), r.dst.c_str(), r.region.empty() ? "the whole array" : r.region.c_str());
  std::fprintf(f, "  remote %.2f MB/rank, local %.2f MB/rank, mean message %.1f KB, bound %.3f GB/s, single-copy "
               "limit %.3f ms%s\n",
               r.stats.max_remote_bytes / 1e6, r.stats.max_local_bytes / 1e6, r.stats.max_message_bytes / 1e3,
               r.limits.bound / 1e9, r.limits.single_copy * 1e3,
               r.limits.single_copy_measured ? " (measured in this run: `single copy`)" : "");
  std::fprintf(f, "  %-16s %10s %10s %8s %7s %7s %9s %s\n", "method", "median ms", "min ms", "GB/s", "/bound",
               "x1copy", "vs pdgemr", "ok");
  for (const MethodResult& m : r.methods) {
    const std::string name = m.chose.empty() ? m.name : m.name + "(" + m.chose + ")";
    const double bw = r.bandwidth(m), sp = r.speedup(m);
    char ratio[16] = "-", speed[16] = "n/a", once[16] = "-";
    if (r.limits.bound > 0) std::snprintf(ratio, sizeof ratio, "%.2f", r.ratio_to_bound(m));
    if (r.limits.single_copy > 0) std::snprintf(once, sizeof once, "%.2f", r.times_single_copy(m));
    if (sp > 0) std::snprintf(speed, sizeof speed, "%.2fx", sp);
    std::fprintf(f, "  %-16s %10.3f %10.3f %8.3f %7s %7s %9s %s\n", name.c_str(), m.median * 1e3, m.min * 1e3,
                 bw / 1e9, ratio, once, speed, !m.verified ? "-" : *m.verified ? "yes" : "NO");
  }
  std::fflush(f);
}

std::vector<SuiteSummary> Report::summaries() const {
  std::vector<SuiteSummary> out;
  for (const CaseResult& r : r_.cases) {
    if (out.empty() || out.back().suite != r.suite) out.push_back({r.suite, {}, {}, {}, {}, 0, 0});
    SuiteSummary& s = out.back();
    s.cases++;
    double best = 0;
    for (const MethodResult& m : r.methods) {
      size_t k = 0;
      while (k < s.methods.size() && s.methods[k] != m.name) ++k;
      if (k == s.methods.size()) {
        s.methods.push_back(m.name), s.geomean_speedup.push_back(0), s.best_ratio.push_back(0);
        s.speedup_cases.push_back(0);
      }
      if (const double sp = r.speedup(m); sp > 0) s.geomean_speedup[k] += std::log(sp), s.speedup_cases[k]++;
      s.best_ratio[k] = std::max(s.best_ratio[k], r.ratio_to_bound(m));
      if (is_strategy(m.name) && m.median > 0 && (best == 0 || m.median < best)) best = m.median;
    }
    if (const MethodResult* a = r.find("auto")) {
      s.auto_cases++;
      if (best > 0 && a->median <= 1.1 * best) s.auto_within_10++;
    }
  }
  for (SuiteSummary& s : out)
    for (size_t k = 0; k < s.methods.size(); ++k)
      s.geomean_speedup[k] = s.speedup_cases[k] ? std::exp(s.geomean_speedup[k] / s.speedup_cases[k]) : 0;
  return out;
}

void Report::print_summary(FILE* f) const {
  for (const SuiteSummary& s : summaries()) {
    std::fprintf(f, "\nsummary %s (%d cases)", s.suite.c_str(), s.cases);
    if (s.auto_cases > 0)
      std::fprintf(f, ": auto within 10%% of the fastest redist strategy in %d/%d", s.auto_within_10, s.auto_cases);
    // ScaLAPACK's routine the speedups are over (Redistribution::name(); the JSON
    // keeps one key name for both).
    const bool tran = std::find(s.methods.begin(), s.methods.end(), "pdtran") != s.methods.end();
    const std::string ref = std::string("geomean vs ") + (tran ? "pdtran" : "pdgemr2d");
    std::fprintf(f, "\n  %-16s %22s %16s\n", "method", ref.c_str(), "best /bound");
    for (size_t k = 0; k < s.methods.size(); ++k) {
      char sp[32] = "n/a";
      if (s.speedup_cases[k]) std::snprintf(sp, sizeof sp, "%.2fx (%d cases)", s.geomean_speedup[k], s.speedup_cases[k]);
      // No ratio in any case (one rank: nothing remote, no bound): "-", as the case rows print it.
      char best[32] = "-";
      if (s.best_ratio[k] > 0) std::snprintf(best, sizeof best, "%.2f", s.best_ratio[k]);
      std::fprintf(f, "  %-16s %22s %16s\n", s.methods[k].c_str(), sp, best);
    }
  }
}

bool Report::write(const std::string& dir) const {
  std::ostringstream sum;
  sum << "\"summary\": [";
  const auto sums = summaries();
  for (size_t i = 0; i < sums.size(); ++i) {
    const SuiteSummary& s = sums[i];
    sum << (i ? ",\n  " : "\n  ") << "{\"suite\": " << json_string(s.suite) << ", \"cases\": " << s.cases
        << ", \"auto_within_10pct\": " << s.auto_within_10 << ", \"methods\": {";
    for (size_t k = 0; k < s.methods.size(); ++k)
      sum << (k ? ", " : "") << json_string(s.methods[k]) << ": {\"geomean_speedup_vs_pdgemr2d\": "
          << (s.speedup_cases[k] ? json_number(s.geomean_speedup[k]) : "null")
          << ", \"best_ratio_to_bound\": " << json_number(s.best_ratio[k]) << "}";
    sum << "}}";
  }
  sum << "\n ]";
  harness::Results doc = r_;
  doc.extra_members = sum.str();

  std::ostringstream csv;
  csv << "suite,series,case,x,x_label,max_remote_bytes,max_local_bytes,max_message_bytes,bound_Bps,method,chose,"
         "median_s,min_s,bandwidth_Bps,ratio_to_bound,speedup_vs_pdgemr2d,verified\n";
  for (const CaseResult& r : r_.cases)
    for (const MethodResult& m : r.methods) {
      const double sp = r.speedup(m);
      csv << r.suite << "," << r.series << ",\"" << r.name << "\"," << json_number(r.x) << "," << r.x_label << ","
          << r.stats.max_remote_bytes << "," << r.stats.max_local_bytes << "," << r.stats.max_message_bytes << ","
          << json_number(r.limits.bound) << "," << m.name << "," << m.chose << "," << json_number(m.median) << ","
          << json_number(m.min) << "," << json_number(r.bandwidth(m)) << ","
          << (r.limits.bound > 0 ? json_number(r.ratio_to_bound(m)) : "") << "," << (sp > 0 ? json_number(sp) : "")
          << "," << (m.verified ? (*m.verified ? "1" : "0") : "") << "\n";
    }
  std::ofstream fj(dir + "/results.json"), fc(dir + "/results.csv");
  fj << harness::to_json(doc);
  fc << csv.str();
  return bool(fj) && bool(fc);
}

void progress(FILE* f, size_t i, size_t n, const std::string& name, double elapsed) {
  std::fprintf(f, isatty(fileno(f)) ? "\r\033[K[case %zu/%zu] %s, %.0f s elapsed" : "[case %zu/%zu] %s, %.0f s elapsed\n",
               i, n, name.c_str(), elapsed);
  std::fflush(f);
}
void progress_done(FILE* f) {
  if (isatty(fileno(f))) std::fprintf(f, "\r\033[K");
}

}  // namespace redist::bench
