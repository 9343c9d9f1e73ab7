#include "report.hpp"

#include <unistd.h>

#include <cmath>
#include <fstream>
#include <sstream>

namespace redist::bench {
namespace {

std::string esc(const std::string& s) {  // JSON string body
  std::string o;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') o += '\\', o += ch;
    else if (ch == '\n') o += "\\n";
    else if (static_cast<unsigned char>(ch) >= 0x20) o += ch;
  }
  return o;
}

std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

bool is_redist_executor(const std::string& name) { return name != "auto" && name != "pdgemr2d" && name != "alltoall"; }

}  // namespace

const MethodResult* CaseResult::find(const std::string& name) const {
  for (const MethodResult& m : methods)
    if (m.name == name) return &m;
  return nullptr;
}
double CaseResult::bandwidth(const MethodResult& m) const { return m.median > 0 ? remote_bytes / m.median : 0; }
double CaseResult::speedup(const MethodResult& m) const {
  const MethodResult* p = find("pdgemr2d");
  return p && m.median > 0 ? p->median / m.median : 0;
}

void Report::print_header(FILE* f) const {
  std::fprintf(f, "redist-bench %s on %s: %d ranks, %u cores, %s build, %s\n  %s\n", suite_.c_str(),
               info_.hostname.c_str(), info_.ranks, info_.cores, info_.build_type.c_str(), info_.compiler.c_str(),
               info_.mpi_library.c_str());
  std::fprintf(f, "  reps %d (median, slowest rank), scale %g; machine from %s: Bnet %.2f GB/s, Bmemcpy %.2f GB/s\n",
               reps_, scale_, machine_.source.c_str(), machine_.bnet / 1e9, machine_.bmemcpy / 1e9);
}

void Report::print_launches(FILE* f) const {
  std::fprintf(f, "  launches: %d ranks, %d on this node with %u cores%s\n", info_.ranks, ranks_per_node, info_.cores,
               oversubscribed() ? " -- OVERSUBSCRIBED: timings are not meaningful" : " (one core each or more)");
}

void print_case(FILE* f, const CaseResult& r, size_t i, size_t n) {
  std::fprintf(f, "\n[%zu/%zu] %s %s\n  src %s\n  dst %s%s%s\n", i, n, r.c.suite.c_str(), r.c.name.c_str(),
               r.c.src.c_str(), r.c.dst.c_str(), r.c.region.empty() ? "" : "\n  region ", r.c.region.c_str());
  std::fprintf(f, "  remote %.2f MB/rank, local %.2f MB/rank, mean message %.1f KB, bound %.3f GB/s\n",
               r.remote_bytes / 1e6, r.local_bytes / 1e6, r.message_bytes / 1e3, r.bound / 1e9);
  std::fprintf(f, "  %-16s %10s %10s %8s %7s %9s %s\n", "method", "median ms", "min ms", "GB/s", "/bound",
               "vs pdgemr", "ok");
  for (const MethodResult& m : r.methods) {
    const std::string name = m.chose.empty() ? m.name : m.name + "(" + m.chose + ")";
    const double bw = r.bandwidth(m), sp = r.speedup(m);
    char ratio[16] = "-", speed[16] = "n/a";
    if (r.bound > 0) std::snprintf(ratio, sizeof ratio, "%.2f", bw / r.bound);
    if (sp > 0) std::snprintf(speed, sizeof speed, "%.2fx", sp);
    std::fprintf(f, "  %-16s %10.3f %10.3f %8.3f %7s %9s %s\n", name.c_str(), m.median * 1e3, m.min * 1e3, bw / 1e9,
                 ratio, speed, m.verified ? "yes" : "NO");
  }
  std::fflush(f);
}

std::vector<SuiteSummary> Report::summaries() const {
  std::vector<SuiteSummary> out;
  for (const CaseResult& r : cases) {
    if (out.empty() || out.back().suite != r.c.suite) out.push_back({r.c.suite, {}, {}, {}, {}, 0, 0});
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
      if (r.bound > 0) s.best_ratio[k] = std::max(s.best_ratio[k], r.bandwidth(m) / r.bound);
      if (is_redist_executor(m.name) && m.median > 0 && (best == 0 || m.median < best)) best = m.median;
    }
    if (const MethodResult* a = r.find("auto"); a && best > 0 && a->median <= 1.1 * best) s.auto_within_10++;
  }
  for (SuiteSummary& s : out)
    for (size_t k = 0; k < s.methods.size(); ++k)
      s.geomean_speedup[k] = s.speedup_cases[k] ? std::exp(s.geomean_speedup[k] / s.speedup_cases[k]) : 0;
  return out;
}

void Report::print_summary(FILE* f) const {
  for (const SuiteSummary& s : summaries()) {
    std::fprintf(f, "\nsummary %s (%d cases): auto within 10%% of the fastest redist executor in %d/%d\n",
                 s.suite.c_str(), s.cases, s.auto_within_10, s.cases);
    std::fprintf(f, "  %-10s %22s %16s\n", "method", "geomean vs pdgemr2d", "best /bound");
    for (size_t k = 0; k < s.methods.size(); ++k) {
      char sp[32] = "n/a";
      if (s.speedup_cases[k]) std::snprintf(sp, sizeof sp, "%.2fx (%d cases)", s.geomean_speedup[k], s.speedup_cases[k]);
      std::fprintf(f, "  %-10s %22s %16.2f\n", s.methods[k].c_str(), sp, s.best_ratio[k]);
    }
  }
}

bool Report::write(const std::string& dir) const {
  std::ostringstream js;
  js << "{\"suite\": \"" << esc(suite_) << "\", \"reps\": " << reps_ << ", \"scale\": " << num(scale_) << ",\n"
     << " \"run\": {\"hostname\": \"" << esc(info_.hostname) << "\", \"cores\": " << info_.cores
     << ", \"ranks\": " << info_.ranks << ", \"ranks_per_node\": " << ranks_per_node
     << ", \"oversubscribed\": " << (oversubscribed() ? "true" : "false") << ", \"build_type\": \""
     << esc(info_.build_type) << "\", \"compiler\": \"" << esc(info_.compiler) << "\", \"mpi_library\": \""
     << esc(info_.mpi_library) << "\", \"date\": \"" << esc(info_.date) << "\"},\n"
     << " \"machine\": {\"source\": \"" << esc(machine_.source) << "\", \"bnet\": " << num(machine_.bnet)
     << ", \"bmemcpy\": " << num(machine_.bmemcpy) << "},\n \"cases\": [";
  std::ostringstream csv;
  csv << "suite,series,case,x,x_label,remote_bytes,local_bytes,message_bytes,bound_Bps,method,chose,median_s,min_s,"
         "bandwidth_Bps,ratio_to_bound,speedup_vs_pdgemr2d,verified\n";
  for (size_t i = 0; i < cases.size(); ++i) {
    const CaseResult& r = cases[i];
    js << (i ? ",\n" : "\n") << "  {\"suite\": \"" << esc(r.c.suite) << "\", \"series\": \"" << esc(r.c.series)
       << "\", \"name\": \"" << esc(r.c.name) << "\", \"x\": " << num(r.c.x) << ", \"x_label\": \""
       << esc(r.c.x_label) << "\", \"src\": \"" << esc(r.c.src) << "\", \"dst\": \"" << esc(r.c.dst)
       << "\", \"region\": \"" << esc(r.c.region) << "\", \"remote_bytes\": " << r.remote_bytes
       << ", \"local_bytes\": " << r.local_bytes << ", \"message_bytes\": " << r.message_bytes
       << ", \"bound_Bps\": " << num(r.bound) << ", \"methods\": [";
    for (size_t k = 0; k < r.methods.size(); ++k) {
      const MethodResult& m = r.methods[k];
      const double bw = r.bandwidth(m), sp = r.speedup(m), ratio = r.bound > 0 ? bw / r.bound : NAN;
      js << (k ? ",\n" : "\n") << "   {\"name\": \"" << m.name << "\", \"chose\": \"" << m.chose
         << "\", \"median_s\": " << num(m.median) << ", \"min_s\": " << num(m.min)
         << ", \"predicted_s\": " << (m.predicted > 0 ? num(m.predicted) : "null")
         << ", \"bandwidth_Bps\": " << num(bw) << ", \"ratio_to_bound\": " << num(ratio)
         << ", \"speedup_vs_pdgemr2d\": " << (sp > 0 ? num(sp) : "null")
         << ", \"verified\": " << (m.verified ? "true" : "false") << ", \"times_s\": [";
      for (size_t t = 0; t < m.times.size(); ++t) js << (t ? ", " : "") << num(m.times[t]);
      js << "]}";
      csv << r.c.suite << "," << r.c.series << ",\"" << r.c.name << "\"," << num(r.c.x) << "," << r.c.x_label << ","
          << r.remote_bytes << "," << r.local_bytes << "," << r.message_bytes << "," << num(r.bound) << "," << m.name
          << "," << m.chose << "," << num(m.median) << "," << num(m.min) << "," << num(bw) << ","
          << (r.bound > 0 ? num(ratio) : "") << "," << (sp > 0 ? num(sp) : "") << "," << (m.verified ? 1 : 0) << "\n";
    }
    js << "]}";
  }
  js << "\n ],\n \"summary\": [";
  const auto sums = summaries();
  for (size_t i = 0; i < sums.size(); ++i) {
    const SuiteSummary& s = sums[i];
    js << (i ? ",\n" : "\n") << "  {\"suite\": \"" << s.suite << "\", \"cases\": " << s.cases
       << ", \"auto_within_10pct\": " << s.auto_within_10 << ", \"methods\": {";
    for (size_t k = 0; k < s.methods.size(); ++k)
      js << (k ? ", " : "") << "\"" << s.methods[k] << "\": {\"geomean_speedup_vs_pdgemr2d\": "
         << (s.speedup_cases[k] ? num(s.geomean_speedup[k]) : "null") << ", \"best_ratio_to_bound\": "
         << num(s.best_ratio[k]) << "}";
    js << "}}";
  }
  js << "\n ]}\n";
  std::ofstream fj(dir + "/results.json"), fc(dir + "/results.csv");
  fj << js.str();
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
