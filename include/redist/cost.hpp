// Layer `cost`: measured machine figures (calibration, saved as JSON), the
// paper's achieved bandwidth (000 Eq. 3) and bound (Eq. 5), and the terms of the
// time model T = T_index + T_comm + T_memcpy + T_runtime (000 Eq. 1) built on the
// message model T = t_m * M + t_w * D of paper 002 Eq. 1, with t_w read from
// measured curves instead of one constant. Each strategy's own model sits beside
// its code (layer exec, src/exec/strategies/); redist::predict() runs it.
#pragma once

#include <mpi.h>

#include <functional>
#include <string>
#include <vector>

#include "redist/plan.hpp"

namespace redist {

// A curve of measured points (x ascending); interpolated linearly in log(x),
// clamped at both ends.
struct Curve {
  std::vector<double> x{}, y{};
  bool empty() const { return x.empty(); }
  double at(double x) const;
};

struct Machine {
  double bnet = 0;     // bytes/s between two ranks at the plan's message size (Eq. 5)
  double bmemcpy = 0;  // bytes/s of a single-core memcpy of large buffers (bytes copied)
  // bytes/s per rank of a large copy with ranks 0 and 1 copying at once: the
  // single-copy limit's rate (every target byte written once, docs/shm.md); 0 in
  // an older calibration file (bmemcpy is used then).
  double bmemcpy_node = 0;
  double startup = 0;   // t_m: one-way time of a small message (ping-pong), seconds
  // Measured curves. All but the ping-pong run on ranks 0 and 1 at once, as a
  // redistribution does (they share the node's memory bandwidth).
  Curve pingpong{};  // message bytes -> one-way seconds (NetPIPE-like)
  Curve exchange{};  // message bytes -> seconds for both ranks to send one to each other
  Curve stream{};    // messages in flight each way -> seconds per 64-byte message
  Curve copy{};      // row bytes -> seconds per byte, strided rows into a packed buffer
  Curve datatype{};  // row bytes -> seconds per byte, exchange of an hvector of rows
  Curve vm_read{};   // row bytes -> seconds per byte, process_vm_readv of rows (empty: unavailable)
  // element bytes -> seconds per byte, a transposed copy (a permuted region's
  // box: one side read along its rows, the other written along its own, in
  // walk_run's blocks); empty in an older file (the copy curve at one element's
  // row is used then).
  Curve transpose{};
  // element bytes -> seconds per byte, an exchange of a transposed box through
  // MPI's datatype engine on both sides (alltoallw of a permuted region); empty
  // in an older file (the datatype curve at one element's row).
  Curve datatype_transpose{};
  // The row curves again, measured on a footprint that fits in the cache; the
  // model blends the two by the fraction of a plan's bytes that come from memory.
  Curve copy_small{}, datatype_small{}, vm_read_small{}, transpose_small{};
  double small_footprint = 0, large_footprint = 0;  // bytes touched per rank in each
  // Where the caches end: bytes touched per rank -> seconds per byte of 1.5 KB rows,
  // from the small footprint to the large one (both ranks at once: they share the
  // last-level cache). The fraction of a plan's bytes from memory is where the
  // curve stands between its two ends at twice the plan's footprint (see
  // detail::rates; empty: log-linear in the footprint).
  Curve footprint{};
  // Where it came from and on what.
  std::string source{};  // the file read, or "quick" (measured in this run; "quick (why)" when the
                       // default file exists but is not a calibration)
  std::string hostname{}, build{}, mpi_library{}, created{};
  int cores = 0, ranks = 0;
  // Seconds the quick measurement took on this rank when machine_for measured it
  // in this call (0: read from a file or from an earlier call). Not saved.
  double seconds = 0;

  double net_time(double bytes) const;       // one-way seconds for one message
  double exchange_time(double bytes) const;  // the same with both ranks sending at once
  double net_bandwidth(double bytes) const;  // bytes / net_time(bytes)
};

// --- calibration (collective over comm; ping-pongs between ranks 0 and 1) ---
struct CalibrateOptions {
  index_t max_size = index_t{64} << 20;  // largest ping-pong message
  bool quick = false;                    // fewer sizes and repetitions (~0.2 s)
};
// Every rank gets the same Machine (broadcast from rank 0). `progress` is called
// on rank 0 with one line per step (may be empty).
Machine calibrate(MPI_Comm comm, const CalibrateOptions& options = {},
                  const std::function<void(const std::string&)>& progress = {});

// $REDIST_CALIBRATION, else ~/.cache/redist/calibration.json.
std::string default_calibration_path();
std::string to_json(const Machine& m);
// Throws redist::Error naming what is wrong: another format, or a key that is
// missing or whose value is not a number in its range (src/cost/machine_json.cpp:
// the message names the key, what it holds and what is allowed).
Machine machine_from_json(const std::string& text);
// False when missing or unreadable; then `why`, when given, says which (the
// file cannot be opened, or what in it is not a calibration).
bool load_machine(const std::string& path, Machine& m, std::string* why = nullptr);
// What to do about a calibration file load_machine refused: for a missing file,
// run `redist calibrate --out path`; for one that exists (a folder, another
// file), name a file calibrate wrote (calibrate would not replace that one).
std::string calibration_hint(const std::string& path);
void save_machine(const std::string& path, const Machine& m);  // creates the folder; throws

// Collective: rank 0 reads the calibration file at `path` (empty: the default
// path; each file once per process, cached) and broadcasts it. Without a default
// file, every rank joins a quick calibration (kept for later calls); a `path`
// that cannot be read throws redist::Error on every rank. `source` says which.
Machine machine_for(MPI_Comm comm, const std::string& path = {});

// --- model ---
// A strategy's predicted time for one execute on one rank, by the terms of paper
// 000 Eq. 1; the plan's time is the max over ranks (Eq. 2).
struct Prediction {
  double index = 0, comm = 0, memcpy = 0, runtime = 0;  // seconds
  double total() const { return index + comm + memcpy + runtime; }
};

// Paper 000 Eq. 3: max over ranks of max(remote bytes sent, received) / seconds.
double achieved_bandwidth(index_t max_remote_bytes, double seconds);

// Paper 000 Eq. 5 with T_extra = 0: the best achievable Eq. 3 bandwidth when each
// remote byte is packed, sent and unpacked, and local bytes are copied once:
//   bound = Bnet * Bmemcpy / ((2 + r) * Bnet + Bmemcpy),  r = M_local / M_remote.
// With no remote bytes the bound is not defined (returns 0).
double bound_bandwidth(const Machine& m, index_t max_remote_bytes, index_t max_local_bytes);
// Same with Bnet taken from the calibrated curve at `message_bytes` (when the
// machine has one; else m.bnet).
double bound_bandwidth(const Machine& m, index_t max_remote_bytes, index_t max_local_bytes,
                       index_t message_bytes);

}  // namespace redist
