#include "harness/results.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <ctime>
#include <sstream>
#include <thread>

#include "mpi/agree.hpp"

namespace redist::harness {

std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') o += '\\', o += ch;
    else if (ch == '\n') o += "\\n";
    else if (static_cast<unsigned char>(ch) >= 0x20) o += ch;
  }
  return o + "\"";
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

RunInfo run_info(MPI_Comm comm) {
  RunInfo info;
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  info.hostname = host;
  info.compiler = __VERSION__;
  char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int len = 0;
  detail::check_mpi(MPI_Get_library_version(lib, &len), "MPI_Get_library_version", comm);
  info.mpi_library = std::string(lib, static_cast<size_t>(len));
  while (!info.mpi_library.empty() && (info.mpi_library.back() == '\n' || info.mpi_library.back() == '\0'))
    info.mpi_library.pop_back();
  char date[64] = "";
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  info.date = date;
#ifdef REDIST_BUILD_TYPE
  info.build_type = REDIST_BUILD_TYPE;
#endif
  info.cores = std::thread::hardware_concurrency();
  detail::check_mpi(MPI_Comm_size(comm, &info.ranks), "MPI_Comm_size", comm);
  MPI_Comm node;  // ranks sharing this node: were the timings oversubscribed?
  detail::check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type",
                    comm);
  detail::check_mpi(MPI_Comm_size(node, &info.ranks_per_node), "MPI_Comm_size", comm);
  detail::check_mpi(MPI_Comm_free(&node), "MPI_Comm_free", comm);
  return info;
}

std::string to_json(const CaseResult& c) {
  std::ostringstream js;
  const GlobalStats& g = c.stats;
  js << "{\"suite\": " << json_string(c.suite) << ", \"series\": " << json_string(c.series)
     << ", \"name\": " << json_string(c.name) << ", \"x\": " << json_number(c.x)
     << ", \"x_label\": " << json_string(c.x_label) << ",\n   \"src\": " << json_string(c.src)
     << ", \"dst\": " << json_string(c.dst) << ", \"region\": " << json_string(c.region) << ", \"ranks\": " << c.ranks
     << ",\n   \"plan_s\": " << json_number(c.plan_seconds) << ", \"max_remote_bytes\": " << g.max_remote_bytes
     << ", \"max_local_bytes\": " << g.max_local_bytes << ", \"max_message_bytes\": " << g.max_message_bytes
     << ", \"total_remote_bytes\": " << g.total_remote_bytes << ", \"total_local_bytes\": " << g.total_local_bytes
     << ", \"messages\": " << g.messages << ", \"segments\": " << g.segments << ", \"runs\": " << g.runs
     << ", \"max_plan_bytes\": " << g.max_plan_bytes
     << ", \"max_segments_per_tile\": " << g.max_segments_per_tile << ",\n   \"bnet_Bps\": "
     << json_number(c.limits.bnet) << ", \"bmemcpy_Bps\": " << json_number(c.limits.bmemcpy)
     << ", \"bound_Bps\": " << json_number(c.limits.bound)
     << ", \"single_copy_s\": " << json_number(c.limits.single_copy) << ", \"single_copy_measured\": " << (c.limits.single_copy_measured ? "true" : "false") << ", \"model_choice\": " << json_string(c.model_choice)
     << ", \"methods\": [";
  for (size_t k = 0; k < c.methods.size(); ++k) {
    const MethodResult& m = c.methods[k];
    const double sp = c.speedup(m);
    js << (k ? ",\n" : "\n") << "   {\"name\": " << json_string(m.name) << ", \"chose\": " << json_string(m.chose)
       << ", \"median_s\": " << json_number(m.median) << ", \"min_s\": " << json_number(m.min)
       << ", \"predicted_s\": " << (m.predicted > 0 ? json_number(m.predicted) : "null")
       << ", \"bandwidth_Bps\": " << json_number(c.bandwidth(m))
       << ", \"ratio_to_bound\": " << (c.limits.bound > 0 ? json_number(c.ratio_to_bound(m)) : "null")
       << ", \"times_single_copy\": " << (c.limits.single_copy > 0 ? json_number(c.times_single_copy(m)) : "null")
       << ", \"speedup_vs_pdgemr2d\": " << (sp > 0 ? json_number(sp) : "null")
       << ", \"verified\": " << (m.verified ? (*m.verified ? "true" : "false") : "null")
       << ", \"checked\": " << m.checked << ", \"wrong\": " << m.wrong;
    if (m.route_messages >= 0) js << ", \"route_messages\": " << m.route_messages << ", \"route_bytes\": " << m.route_bytes;
    if (!m.trials.empty()) {
      js << ", \"trials\": [";
      for (size_t t = 0; t < m.trials.size(); ++t)
        js << (t ? ", " : "") << "{\"strategy\": " << json_string(m.trials[t].strategy)
           << ", \"seconds\": " << json_number(m.trials[t].seconds) << "}";
      js << "]";
    }
    js << ", \"times_s\": [";
    for (size_t t = 0; t < m.times.size(); ++t) js << (t ? ", " : "") << json_number(m.times[t]);
    js << "]}";
  }
  js << "]}";
  return js.str();
}

std::string to_json(const Results& r) {
  std::ostringstream js;
  const RunInfo& i = r.run;
  js << "{\"schema\": \"redist-results-1\", \"tool\": " << json_string(r.tool) << ", \"suite\": "
     << json_string(r.suite) << ", \"reps\": " << r.reps << ", \"scale\": " << json_number(r.scale) << ",\n"
     << " \"run\": {\"hostname\": " << json_string(i.hostname) << ", \"cores\": " << i.cores
     << ", \"ranks\": " << i.ranks << ", \"ranks_per_node\": " << i.ranks_per_node
     << ", \"oversubscribed\": " << (i.oversubscribed() ? "true" : "false")
     << ", \"build_type\": " << json_string(i.build_type) << ", \"compiler\": " << json_string(i.compiler)
     << ", \"mpi_library\": " << json_string(i.mpi_library) << ", \"date\": " << json_string(i.date) << "},\n";
  if (r.machine) {
    const Machine& m = *r.machine;
    js << " \"machine\": {\"source\": " << json_string(m.source) << ", \"hostname\": " << json_string(m.hostname)
       << ", \"created\": " << json_string(m.created) << ", \"bnet_Bps\": " << json_number(m.bnet)
       << ", \"bmemcpy_Bps\": " << json_number(m.bmemcpy) << ", \"startup_s\": " << json_number(m.startup) << "},\n";
  } else {
    js << " \"machine\": null,\n";
  }
  js << " \"strategies\": [";  // the registry: the methods that are strategies
  const std::vector<std::string> names = strategy_names();
  for (size_t k = 0; k < names.size(); ++k) js << (k ? ", " : "") << json_string(names[k]);
  js << "],\n \"cases\": [";
  for (size_t k = 0; k < r.cases.size(); ++k) js << (k ? ",\n  " : "\n  ") << to_json(r.cases[k]);
  js << "\n ]";
  if (!r.extra_members.empty()) js << ",\n " << r.extra_members;
  js << "}\n";
  return js.str();
}

}  // namespace redist::harness
