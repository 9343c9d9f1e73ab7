// MPI derived datatypes for the collective strategies: byte runs above 2^31,
// N-D boxes of a segment, one struct type per peer at absolute addresses, and an
// MPI_Alltoallw call with one such type per peer.
#pragma once

#include <mpi.h>

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "exec/strategy.hpp"

namespace redist::detail {

// A contiguous run of `bytes` bytes as one datatype (MPI counts are int: above
// 2^31 bytes the run is built from 1 GiB blocks plus a remainder). Not committed.
MPI_Datatype byte_run(index_t bytes);
// MPI counts are int: a box that spans more than INT_MAX indices in a dimension
// that box_type builds as a vector, or a run repeated more than INT_MAX times,
// has no datatype. The message names `strategy`, the caller ("alltoallw: a
// segment spans ..."); empty when the counts fit.
std::string type_count_error(std::string_view strategy, const Coord& shape, const Coord& st,
                             const std::array<index_t, 2>& count);
// The first such error over the plan's send and receive segments (pure, local).
std::string type_count_error(std::string_view strategy, const PlanCore& p);
// An N-D box of elements with element strides `st` (dimension 0 contiguous).
// Throws type_count_error's message (local to this rank) when a count exceeds INT_MAX.
MPI_Datatype box_type(std::string_view strategy, const Coord& shape, const Coord& st, index_t es);
// A box of `shape` with element strides `st` repeated count[k] times at element
// steps step[k] (hvectors over box_type). Not committed. Throws as box_type.
MPI_Datatype run_type(std::string_view strategy, const Coord& shape, const Coord& st,
                      const std::array<index_t, 2>& count, const std::array<index_t, 2>& step, index_t es);
// A run of segments (Segment): its box repeated as the run says. Not committed.
MPI_Datatype run_type(std::string_view strategy, const Segment& s, index_t es);
// One committed datatype for pieces at absolute addresses (used with
// MPI_BOTTOM); frees `types`.
MPI_Datatype struct_of(std::vector<MPI_Datatype>& types, std::vector<MPI_Aint>& addr);
MPI_Aint address_of(const void* p);

// MPI_Alltoallw with one committed type per peer (count 1) at MPI_BOTTOM, and
// MPI_BYTE/0 for the other ranks. Keeps its per-rank arrays between calls (no
// allocation after the first).
class AlltoallwCall {
 public:
  void run(const PlanCore& p, const std::vector<MPI_Datatype>& send_types,
           const std::vector<MPI_Datatype>& recv_types);

 private:
  std::vector<int> sc_, rc_, zero_;
  std::vector<MPI_Datatype> st_, rt_;
};

// A list of committed per-peer types, freed with the list (or by reset()).
struct PeerTypes {
  std::vector<MPI_Datatype> send, recv;
  PeerTypes() = default;
  PeerTypes(const PeerTypes&) = delete;
  PeerTypes& operator=(const PeerTypes&) = delete;
  ~PeerTypes();
  void reset();
};

// The per-peer struct types of a plan (one per send peer and one per receive
// peer: the run types of its segments at their absolute addresses, for
// MPI_BOTTOM), rebuilt only when the block pointers differ from the last call's.
// Used by alltoallw and phased_dt; `strategy` names the caller in errors. The
// first get() is collective: it agrees on type_count_error over the plan, so a
// count above INT_MAX on any rank fails on every rank, before anything moves.
class PeerTypesAt {
 public:
  explicit PeerTypesAt(std::string_view strategy) : strategy_(strategy) {}
  const PeerTypes& get(const PlanCore& p, const SrcBlocks& src, const DstBlocks& dst);

 private:
  std::string_view strategy_;  // a registry name (static storage)
  bool checked_ = false;
  PeerTypes types_;
  std::vector<const void*> src_key_;
  std::vector<void*> dst_key_;
};

}  // namespace redist::detail
