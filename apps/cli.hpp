// Shared pieces of the `redist` command-line program.
#pragma once

#include <climits>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "redist/layout.hpp"
#include "redist/plan.hpp"

namespace redist::cli {

// argv after the subcommand: positional arguments and --key[=| ]value options.
struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> options;  // "--reps" -> "5"; flags -> ""
  bool has(const std::string& k) const { return options.count(k) > 0; }
  std::string get(const std::string& k, const std::string& dflt) const;
  // The integer value of option k (dflt when absent); throws redist::Error unless
  // it is a whole integer in [min, max].
  long long get_int(const std::string& k, long long dflt, long long min, long long max = LLONG_MAX) const;
};

// Parses argv; `flags` are options without a value. Throws redist::Error for an
// unknown option or a missing value, naming the allowed ones. `hidden` are valued
// options for the tests only: accepted, never listed.
Args parse_args(int argc, char** argv, int first, const std::vector<std::string>& valued,
                const std::vector<std::string>& flags, const std::vector<std::string>& hidden = {});

// True when argv[first..] holds option `key` ("--timeout" or "--timeout=..."):
// what must be known before MPI starts.
bool has_option(int argc, char** argv, int first, const std::string& key);

// SRC DST [REGION] -> layouts and region (region defaults to the whole source).
struct Problem {
  Layout src, dst;
  Region region;
};
Problem parse_problem(const Args& a, const char* usage);

// --storage: heap or shared (docs/shm.md); `dflt` when not given; else an error.
std::string storage_option(const Args& a, const std::string& dflt);

// True (after printing `usage`) when --help or -h is among argv[2..]: every
// subcommand answers it before MPI starts, once per job (launch_rank_zero).
bool print_help_if_asked(int argc, char** argv, const char* usage);

// False when a launcher started this process as a rank other than 0 (Open MPI's
// OMPI_COMM_WORLD_RANK, PMIx's PMIX_RANK, PMI's PMI_RANK), before MPI starts:
// what is printed then (help, an unknown command) is printed by rank 0 alone,
// not once per rank. The variables are inherited: a redist started by a program
// that is itself rank 1 of a job prints no help, and an unknown command there
// ends with 0. Other launchers' variables are not read: every rank prints.
bool launch_rank_zero();
// The launcher's rank count (OMPI_COMM_WORLD_SIZE, PMI_SIZE), 1 without one.
int launch_size();

// Starts MPI (MPI_THREAD_MULTIPLE when `threads`, for a watchdog thread that
// may call MPI_Abort), runs body(rank, size) -> exit code, ends MPI. A
// redist::Error is the same on every rank (arguments are, validation agrees
// collectively): rank 0 prints it once as "redist COMMAND: error: ..." and the
// exit code is 2. A redist::MpiError (an MPI call failed on one rank: local,
// others may wait on it) is printed by the rank that has it, which ends the job
// with MPI_Abort (exit code 3, harness::kFaultExit).
int run_with_mpi(int& argc, char**& argv, const char* command,
                 const std::function<int(int rank, int size)>& body, bool threads = false);

std::string human_bytes(double bytes);
std::string human_rate(double bytes_per_s);
std::string human_time(double seconds);
// "1 round", "3 rounds": n and the noun, plural unless n is 1.
std::string counted(long long n, const char* one, const char* many);

// Progress of a long loop on stderr: nothing for the first 2 s, then a line at
// most every 2 s ("redist plan: planning ranks: 1200 of 4096, 14 s"), one line
// rewritten in place on a terminal; the last line ends when the object goes.
class Progress {
 public:
  Progress(std::string what, long long total);
  ~Progress();
  void at(long long done);  // call often: cheap unless a line is due
  void finish();            // the loop ended: clears a terminal's line (the destructor calls it)
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

 private:
  std::string what_;
  long long total_;
  double start_, next_;
  bool printed_ = false;
};

int cmd_run(int argc, char** argv);
int cmd_plan(int argc, char** argv);
int cmd_calibrate(int argc, char** argv);
int cmd_repartition(int argc, char** argv);

}  // namespace redist::cli
