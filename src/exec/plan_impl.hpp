// Private state of a Plan: the layouts, this rank's plan, its own communicator,
// and the buffers and request arrays every execute reuses (allocated on first use).
#pragma once

#include <mpi.h>

#include <memory>
#include <span>
#include <vector>

#include "redist/redist.hpp"

namespace redist {

// Block base pointers of one side for one execute.
struct SrcBlocks {
  std::span<const void* const> ptr;
  const std::byte* at(const Address& a, index_t es) const {
    return static_cast<const std::byte*>(ptr[a.block]) + a.offset * es;
  }
};
struct DstBlocks {
  std::span<void* const> ptr;
  std::byte* at(const Address& a, index_t es) const {
    return static_cast<std::byte*>(ptr[a.block]) + a.offset * es;
  }
};

// One MPI message of at most options.max_message_bytes: part of a peer's data.
struct Chunk {
  int peer_index;  // into RankPlan::sends or ::receives
  int peer;
  index_t offset;  // bytes, into the packed buffer
  index_t bytes;
};

struct DirectState;  // direct.cpp
struct DirectStateDeleter {
  void operator()(DirectState* s) const;
};

class PlanImpl {
 public:
  PlanImpl(const Layout& src, const Layout& dst, const Region& region, MPI_Comm comm,
           const Options& options);
  ~PlanImpl();

  Layout src, dst;
  Region region;
  Options options;
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
  std::unique_ptr<LocalIndex> src_local, dst_local;
  RankPlan rp;
  Executor auto_choice = Executor::auto_;  // decided on the first execute with auto_

  // Packed layout of the send and receive buffers: peer i's data at *_offset[i].
  std::vector<index_t> send_offset, recv_offset;
  std::vector<Chunk> send_chunks, recv_chunks;

  // Reused between executes.
  std::unique_ptr<std::byte[]> send_buf, recv_buf;
  std::vector<MPI_Request> requests;
  std::vector<int> done_index;
  std::vector<index_t> pending;  // per receive peer (p2p) or segment (segment): messages in flight

  // alltoallw: one derived datatype per peer and direction, built for the block
  // pointers last seen (rebuilt only when they change).
  std::vector<MPI_Datatype> w_send_types, w_recv_types;
  std::vector<const void*> w_src_key;
  std::vector<void*> w_dst_key;
  bool w_packed_mode = false;  // types describe the packed buffers (alltoallv fallback)
  // Per-rank count, displacement and type arrays of the collectives, and
  // alltoallv's unit types (built on first use, so an execute allocates nothing).
  // Each executor has its own: a plan may alternate executors.
  std::vector<int> v_sc, v_sd, v_rc, v_rd;          // alltoallv
  std::vector<int> w_sc, w_rc, w_zero;              // alltoallw
  std::vector<MPI_Datatype> w_st, w_rt;
  MPI_Datatype v_send_unit = MPI_DATATYPE_NULL, v_recv_unit = MPI_DATATYPE_NULL;
  int v_mode = 0;  // alltoallv: 0 not decided, 1 int counts in units, 2 packed alltoallw

  // direct: pids, segment addresses of the senders, iovec batches (first execute).
  std::unique_ptr<DirectState, DirectStateDeleter> direct;

  std::byte* send_buffer();
  std::byte* recv_buffer();
  void free_types();  // alltoallw's per-peer types
};

// Executors: each moves rp's data from `src` to `dst` (validated already).
void run_p2p(PlanImpl& p, const SrcBlocks& src, const DstBlocks& dst);
void run_segment(PlanImpl& p, const SrcBlocks& src, const DstBlocks& dst);
void run_alltoallv(PlanImpl& p, const SrcBlocks& src, const DstBlocks& dst);
void run_alltoallw(PlanImpl& p, const SrcBlocks& src, const DstBlocks& dst);
void run_direct(PlanImpl& p, const SrcBlocks& src, const DstBlocks& dst);

// Shared pieces.
void copy_locals(const PlanImpl& p, const SrcBlocks& src, const DstBlocks& dst);
void pack_peer(const PlanImpl& p, int i, const SrcBlocks& src, std::byte* buf);
void unpack_peer(const PlanImpl& p, int i, const std::byte* buf, const DstBlocks& dst);

// Collective agreement: returns when `local_error` is empty on every rank of
// `comm`; otherwise throws redist::Error on every rank with the message of the
// lowest rank that reported one (prefixed by that rank).
void agree(MPI_Comm comm, const std::string& local_error);

// Throws redist::Error naming the MPI call when rc is not MPI_SUCCESS.
void check_mpi(int rc, const char* call);

}  // namespace redist
