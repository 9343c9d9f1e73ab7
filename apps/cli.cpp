#include "cli.hpp"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>
#include <utility>

#include "harness/launch.hpp"
#include "harness/watchdog.hpp"
#include "mpi/agree.hpp"

namespace redist::cli {

std::string Args::get(const std::string& k, const std::string& dflt) const {
  auto it = options.find(k);
  return it == options.end() ? dflt : it->second;
}

long long Args::get_int(const std::string& k, long long dflt, long long min, long long max) const {
  auto it = options.find(k);
  if (it == options.end()) return dflt;
  long long v = 0;
  size_t used = 0;
  try {
    v = std::stoll(it->second, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (max < min)  // no value fits this launch (--senders on one rank)
    detail::fail("option ", k, " cannot be used here: it would need an integer >= ", min, " and <= ", max,
                 " in this launch (too few ranks)");
  if (used == 0 || used != it->second.size() || v < min || v > max)
    detail::fail("option ", k, " needs an integer >= ", min, max < LLONG_MAX ? detail::cat(" and <= ", max) : "",
                 ", got '", it->second, "'");
  return v;
}

bool has_option(int argc, char** argv, int first, const std::string& key) {
  for (int i = first; i < argc; ++i)
    if (argv[i] == key || std::string(argv[i]).rfind(key + "=", 0) == 0) return true;
  return false;
}

Args parse_args(int argc, char** argv, int first, const std::vector<std::string>& valued,
                const std::vector<std::string>& flags, const std::vector<std::string>& hidden) {
  Args a;
  auto is = [](const std::vector<std::string>& v, const std::string& k) {
    return std::find(v.begin(), v.end(), k) != v.end();
  };
  for (int i = first; i < argc; ++i) {
    std::string s = argv[i];
    if (s.rfind("--", 0) != 0 || s == "--") {
      a.positional.push_back(s);
      continue;
    }
    std::string key = s, value;
    const size_t eq = s.find('=');
    if (eq != std::string::npos) key = s.substr(0, eq), value = s.substr(eq + 1);
    // `--reps 3 ... --reps 4` kept the last silently (a helper's trial): which one
    // a user meant is not for the program to guess.
    const auto seen = a.options.find(key);
    auto once = [&](const std::string& v) {
      if (seen == a.options.end()) return;
      if (is(flags, key)) detail::fail("option ", key, " is given twice; give it once");
      detail::fail("option ", key, " is given twice ('", seen->second, "' and '", v, "'); give it once");
    };
    if (is(flags, key)) {
      once("");
      // --no-verify=false read as --no-verify would do the opposite of what it says
      if (eq != std::string::npos) detail::fail("option ", key, " takes no value, got '", s, "'");
      a.options[key] = "";
    } else if (is(valued, key) || is(hidden, key)) {
      if (eq == std::string::npos) {
        if (i + 1 >= argc) detail::fail("option ", key, " needs a value");
        value = argv[++i];
        // `--senders --overlap`: the next option taken as the value left what
        // followed to be read as a REGION ("bad region")
        const std::string next = value.substr(0, value.find('='));
        if (is(flags, next) || is(valued, next))
          detail::fail("option ", key, " needs a value, got the option ", value, " (write ", key, "=", value,
                       " for a value that starts with --)");
      }
      // `--calibration ""` (a script's unset variable) read as the file "" ("cannot
      // open  (run ... --out  first)"): no option here means anything by nothing.
      if (value.empty()) detail::fail("option ", key, " needs a value, got an empty one");
      once(value);
      a.options[key] = value;
    } else {
      std::string allowed;
      for (const auto& k : valued) allowed += " " + k + " X";
      for (const auto& k : flags) allowed += " " + k;
      detail::fail("unknown option '", key, "'; allowed:", allowed);
    }
  }
  return a;
}

namespace {
// A library message in the command line's words: the Options fields it names are
// the options a command-line user typed (`options.max_buffer_bytes = 10` is
// `--memory 10`).
std::string in_cli_words(std::string msg) {
  static const std::pair<const char*, const char*> kNames[] = {
      {"max_buffer_bytes", "--memory"},   {"max_message_bytes", "--max-message"}, {"node_size", "--node-size"},
      {"copy_threads", "--copy-threads"}, {"auto_trials", "--auto-trials"}};
  for (const auto& [field, option] : kNames)
    for (const std::string prefix : {"options.", "Options::"}) {
      const std::string api = prefix + field;
      for (std::size_t at; (at = msg.find(api)) != std::string::npos;) {
        std::size_t end = at + api.size();
        if (msg.compare(end, 3, " = ") == 0) end += 2;  // `--memory 10`, not `--memory = 10`
        msg.replace(at, end - at, option);
      }
    }
  // The arithmetic is four options here; its messages' advice names the one to give.
  static const std::pair<const char*, const char*> kPhrases[] = {
      {"options.arithmetic: ", "--type, --alpha, --beta, --conj: "},
      {"apply options.arithmetic", "apply the arithmetic of --alpha, --beta, --conj"},
      {"applies options.arithmetic", "applies the arithmetic of --alpha, --beta, --conj"},
      {"name their type (", "name their type with --type ("},
      {"name complex elements (", "name complex elements with --type ("}};
  for (const auto& [api, cli] : kPhrases)
    if (const std::size_t at = msg.find(api); at != std::string::npos) msg.replace(at, std::strlen(api), cli);
  return msg;
}
}  // namespace

std::string storage_option(const Args& a, const std::string& dflt) {
  const std::string s = a.get("--storage", dflt);
  if (s != dflt && s != "heap" && s != "shared") detail::fail("--storage ", s, ": expected heap or shared");
  return s;
}

Problem parse_problem(const Args& a, const char* usage) {
  // The usage line only, not the whole help: every rank may print this message
  // (REDIST_SHOW_ERRORS=1), and writes above PIPE_BUF (4 KB) interleave.
  if (a.positional.size() < 2 || a.positional.size() > 3) {
    const std::string u(usage);
    detail::fail("expected SRC DST [REGION], got ", a.positional.size(), " arguments\n", u.substr(0, u.find('\n')),
                 "\n(--help for the options)");
  }
  Problem p{Layout::parse(a.positional[0]), Layout::parse(a.positional[1]), {}};
  // An empty REGION (a script's unset variable, quoted) is no REGION: the whole source.
  const bool region = a.positional.size() == 3 && a.positional[2].find_first_not_of(" \t\n") != std::string::npos;
  p.region = region ? Region::parse(a.positional[2]) : Region::whole(p.src.shape());
  // The default region named as what it is: the user typed none. Layouts that
  // are wrong themselves (a negative extent) are left to the plan's message.
  if (!region && p.src.ndim() == p.dst.ndim() && p.src.check(INT_MAX).empty() && p.dst.check(INT_MAX).empty())
    if (const std::string e = p.region.check(p.src.shape(), p.dst.shape()); !e.empty()) {
      Coord fits = p.src.shape();
      for (int d = 0; d < fits.ndim(); ++d) fits[d] = std::min(fits[d], p.dst.shape()[d]);
      detail::fail("no REGION given: the default moves the whole source ", p.src.shape().str(),
                   " to offset 0 of the target ", p.dst.shape().str(), ", which does not fit (", e,
                   "); give a REGION, such as ", fits.str(), " (docs/spec.md)");
    }
  return p;
}

bool launch_rank_zero() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (const char* v = std::getenv(name); v && *v) return std::strcmp(v, "0") == 0;
  return true;  // not started by a launcher: a single process
}

int launch_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* v = std::getenv(name); v && *v) return std::max(1, std::atoi(v));
  return 1;
}

bool print_help_if_asked(int argc, char** argv, const char* usage) {
  for (int i = 2; i < argc; ++i)
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      if (launch_rank_zero()) std::fputs(usage, stdout);
      return true;
    }
  return false;
}

int run_with_mpi(int& argc, char**& argv, const char* command,
                 const std::function<int(int rank, int size)>& body, bool threads) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, threads ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
  int rank, size, rc;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  try {
    harness::agree_launch(MPI_COMM_WORLD, argc, argv);  // before anything is parsed
    rc = body(rank, size);
  } catch (const MpiError& e) {
    // Seen on this rank alone: the others may be waiting on it in MPI, and the
    // plan may have operations in flight. Nothing can be agreed; end the job.
    std::fprintf(stderr, "redist %s: error on rank %d: %s; ending the job\n", command, rank, e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, harness::kFaultExit);
    rc = harness::kFaultExit;
  } catch (const Error& e) {
    // Agreed on collectively: the same message on every rank, printed once
    // (REDIST_SHOW_ERRORS=1: by every rank, to see that they agree).
    // The library's "redist: " is dropped after this line's own "redist run: error: ".
    const std::string words = in_cli_words(e.what());
    std::string_view msg = words;
    if (msg.rfind("redist: ", 0) == 0) msg.remove_prefix(8);
    if (rank == 0 || std::getenv("REDIST_SHOW_ERRORS"))
      std::fprintf(stderr, "redist %s: error: %.*s\n", command, static_cast<int>(msg.size()), msg.data());
    rc = 2;
  } catch (const std::exception& e) {
    // Not agreed (thrown on this rank alone): the other ranks may wait in a
    // collective, so end the job rather than hang.
    const bool oom = dynamic_cast<const std::bad_alloc*>(&e) != nullptr;
    std::fprintf(stderr, "redist %s: error on rank %d: %s; ending the job\n", command, rank,
                 oom ? "out of memory (std::bad_alloc)" : e.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
    rc = 2;
  }
  MPI_Finalize();
  return rc;
}

std::string human_bytes(double b) {
  const char* unit[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (b >= 1000 && u < 4) b /= 1000, ++u;
  char s[32];
  std::snprintf(s, sizeof s, u ? "%.2f %s" : "%.0f %s", b, unit[u]);
  return s;
}

std::string human_rate(double r) { return human_bytes(r) + "/s"; }

std::string counted(long long n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

namespace {
double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

Progress::Progress(std::string what, long long total)
    : what_(std::move(what)), total_(total), start_(now_seconds()), next_(start_ + 2) {}

void Progress::at(long long done) {
  const double t = now_seconds();
  if (t < next_) return;
  next_ = t + 2;
  const bool tty = isatty(fileno(stderr));
  std::fprintf(stderr, tty ? "\r\033[K%s: %lld of %lld, %.0f s" : "%s: %lld of %lld, %.0f s\n", what_.c_str(), done,
               total_, t - start_);
  std::fflush(stderr);
  printed_ = true;
}

void Progress::finish() {
  if (printed_ && isatty(fileno(stderr))) std::fprintf(stderr, "\r\033[K");
  printed_ = false;
  next_ = 1e300;  // no line after the end
}

Progress::~Progress() { finish(); }

std::string human_time(double t) {
  char s[32];
  if (t < 1e-3)
    std::snprintf(s, sizeof s, "%.1f us", t * 1e6);
  else if (t < 1)
    std::snprintf(s, sizeof s, "%.3f ms", t * 1e3);
  else
    std::snprintf(s, sizeof s, "%.3f s", t);
  return s;
}

}  // namespace redist::cli
