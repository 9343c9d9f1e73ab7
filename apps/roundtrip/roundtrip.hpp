// What the round-trip calls share (potrf.cpp, geqrf.cpp, gemm.cpp): checks of the
// caller's arguments, the runtime's options, and the caller's matrix on the
// working layout.
#pragma once

#include <mpi.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "redist/apps.hpp"
#include "redist/exec.hpp"
#include "redist/runtime/runtime.hpp"

namespace redist::apps::detail {

// Empty when `layout` is a valid 2-D layout of doubles for `ranks` ranks and
// `data` is not null where this rank stores elements; else a message that names
// `what` ("potrf: the matrix") and the problem. Local (agree on it).
std::string check_matrix(const char* what, const Layout& layout, const void* data, int rank, int ranks);
// Empty when `sub` lies in `layout`'s matrix (a valid 2-D layout), and then `box`
// is it (an empty Submatrix::size: the rest of the matrix from `at`); else a message
// that names `what` and the problem. Local (agree on it).
std::string resolve(const char* what, const Layout& layout, const Submatrix& sub, Box& box);
// Is `box` the whole of `layout`'s matrix?
bool whole(const Layout& layout, const Box& box);
// Is the submatrix `box` of `user` the working layout `work` itself (the call then
// runs in the caller's storage, nothing copied)?
bool in_place(const Layout& user, const Box& box, const Layout& work);
// Empty when the options are valid for `ranks` ranks; else the message.
std::string check_options(const char* call, const Options& options, int ranks);
// Throws (collectively) the first non-empty message of any rank; also checks that
// every rank passed the same layouts (ld= of local_array storage may differ),
// submatrices `boxes`, options and `scalars` (gemm's alpha and beta: a branch
// depends on them).
void agree(MPI_Comm comm, const std::string& error, const std::vector<const Layout*>& layouts,
           const std::vector<Box>& boxes, const Options& options, const std::vector<double>& scalars = {});

runtime::Options runtime_options(const Options& options);

// Which tiles of the working layout the algorithm reads and writes.
enum class Part {
  whole,  // every tile
  lower,  // the tiles on and below the diagonal (potrf, dpotrf 'L'); the others are
          // never moved in nor back, nor faulted in: their memory stays as it was
};

// The caller's matrix, or its submatrix of the working layout's shape at `at`, on
// the working layout: the caller's own storage when the layouts are the same (and
// `at` 0, the whole matrix), else a copy moved there by a plan (timed into
// `seconds`), in options.workspace's buffer `slot` when there is one, else in fresh
// memory.
class WorkMatrix {
 public:
  // Collective. With `load` false nothing is moved into the working copy and its
  // memory is left as it is (not zeroed, not faulted: gemm with beta = 0, whose
  // GEMM(m, n, 0) writes C without reading it). `part`: the tiles moved in and back
  // (Part::lower needs a square matrix). With options.threads > 1 (and
  // MPI_THREAD_MULTIPLE) both moves run as options.threads plans over consecutive
  // tile columns of about equal volume, one per thread, at once.
  WorkMatrix(const Layout& user, void* data, const Box& sub, const Layout& work, MPI_Comm comm,
             const Options& options, bool load, int slot, double& seconds, Part part = Part::whole);
  runtime::LayoutCollection& collection() { return *collection_; }
  bool moved() const { return moved_; }
  // Collective: moves the working copy back into the caller's storage (nothing
  // when it is the caller's storage), timed into `seconds`.
  void store_back(double& seconds);

 private:
  Layout user_, work_;
  Coord at_;  // where the working layout's matrix lies in the caller's
  bool moved_;
  void* data_;
  MPI_Comm comm_;
  redist::Options exec_;
  // What travels, in both directions, in the working layout's coordinates: one plan
  // (thread) each.
  std::vector<std::vector<Region>> groups_;
  // Moves groups_ in (`in`: the caller's storage to the working copy, whose byte
  // ranges pages[i] thread i first faults; none: pages empty) or back: one plan per
  // group, made here in order (collective), executed at once from one thread each.
  void move(bool in, const std::vector<std::vector<std::pair<std::size_t, std::size_t>>>& pages);
  struct Free {  // detail::free_fresh of what allocate_fresh made of `bytes`
    std::size_t bytes;  // no default member initializer: the unique_ptr needs Free default-constructible here
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte, Free> owned_;  // the working copy when there is no workspace
  // Options::shared_work: the working copy in a shared window, freed (collectively:
  // every rank destroys its WorkMatrix at the same point of the call) with it.
  struct SharedFree {
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte, SharedFree> shared_;
  std::optional<runtime::LayoutCollection> collection_;
};

// Runs `graph` (timed into r.compute_seconds, tasks into r.tasks). Collective.
// When the graph fails (a task threw), the runtime throws the same Error on every
// rank.
void run_graph(runtime::TaskGraph& graph, MPI_Comm comm, const Options& options, Report& r);

// run_graph, then stores `result` back (timed into r.back_seconds): when the graph
// fails, nothing goes back.
void run_and_store(runtime::TaskGraph& graph, WorkMatrix& result, MPI_Comm comm, const Options& options, Report& r);

// Elements of this rank's storage of `layout`.
index_t local_elements(const Layout& layout, int rank);
int rank_of(MPI_Comm comm);
int size_of(MPI_Comm comm);

}  // namespace redist::apps::detail
