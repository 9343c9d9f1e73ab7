// `direct`: single-copy transfer between ranks of one machine. Each
// receiver reads its segments straight from the sender's source memory into its
// target with Linux cross-memory attach (process_vm_readv), so a remote byte is
// copied once instead of three times (pack, MPI, unpack: the 2 x Bmemcpy term of
// paper 000 Eq. 4 disappears). Senders learn when their readers are done by a
// zero-byte message, so the source stays valid while it is read.
//
// Setup (first execute, collective): all ranks must share a node and be allowed
// to read each other (same user, no ptrace restriction): every rank tries one
// read from a neighbour and the ranks agree. If any rank cannot, the plan falls
// back to `p2p` for good (the registry's fallback). Senders then send each
// reader the storage address and contiguous run of every segment once; each
// execute only exchanges the block base pointers.
//
// Short rows: a process_vm_readv costs about 1 us per 80-byte row here, more than
// packing it. Segments whose contiguous run (merged over both sides) is shorter
// than kCmaPackBelow are packed by the sender, read as one run and unpacked, as in
// p2p but with one copy less. The reader decides at setup (it knows both sides'
// strides) and tells the sender which of its segments to pack. The cross-memory
// machinery (probe, packing, batched reads, model) is exec/cma.hpp, shared with
// `shm`; $REDIST_CMA=0 makes this strategy fall back to p2p.
#include "cost/model.hpp"
#include "exec/cma.hpp"
#include "exec/pack.hpp"
#include "exec/remote.hpp"
#include "kernels/copy.hpp"
#include "mpi/agree.hpp"

namespace redist::detail {
namespace {

struct DirectState {
  CmaPacking pack;                                    // which segments travel packed, per peer
  std::vector<std::vector<std::uint64_t>> out_bases;  // per send peer: its blocks, then the packed run
  CmaPeers peers;                                     // per rank of the plan's communicator
  std::vector<std::vector<std::int64_t>> where;       // per receive peer: the sender's segment records
  std::vector<std::vector<std::uint64_t>> bases;      // per receive peer: its source block pointers (per execute)
  CmaMover reader;
  std::vector<MPI_Request> req;
  std::vector<int> index;
  std::vector<MPI_Status> status;  // of the requests one wait completed (errors name their peer)
  std::vector<size_t> send_order, recv_order;  // from_next: the peers from the next rank on
  std::vector<char> ready;                     // per receive peer, in a run
};

constexpr int kTagBases = 11, kTagDone = 12, kTagWhere = 13, kTagPack = 14;

// One-time collective setup: can every rank read every other rank's memory?
bool probe(const PlanCore& p, DirectState& st) {
  MPI_Comm node;
  check_mpi(MPI_Comm_split_type(p.comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type",
            p.comm);
  int node_size = 0;
  check_mpi(MPI_Comm_size(node, &node_size), "MPI_Comm_size", p.comm);
  check_mpi(MPI_Comm_free(&node), "MPI_Comm_free", p.comm);
  int ok = node_size == p.size && !cma_disabled();
  st.peers = cma_peers(p.comm);
  if (ok && p.size > 1) ok = cma_probe(st.peers, (p.rank + 1) % p.size) == kCmaOk;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, p.comm), "MPI_Allreduce", p.comm);
  return ok == 1;
}

// Senders tell each reader where every segment lives in their storage (once),
// then readers tell senders which segments to pack.
void exchange_where(PlanCore& p, DirectState& st) {
  st.where = exchange_records(p, std::vector<char>(static_cast<size_t>(p.size), 1), kTagWhere);
  // Always read: the sender does not know the target's records here (shm writes).
  st.pack = cma_packing(p, st.where, std::vector<char>(p.rp.receives.size(), 1),
                        std::vector<char>(p.rp.sends.size(), 1), std::vector<char>(p.rp.receives.size(), 0), kTagPack);
}

class Direct final : public Strategy {
 public:
  using Strategy::Strategy;

  // Collective: every rank probes; when all can read their neighbour, senders
  // tell their readers where each segment lives (once per plan).
  bool available() override {
    if (!probe(plan_, st_)) return false;
    exchange_where(plan_, st_);
    st_.send_order = from_next(plan_.rp.sends, plan_.rank, plan_.size);
    st_.recv_order = from_next(plan_.rp.receives, plan_.rank, plan_.size);
    return true;
  }

  void run(const SrcBlocks& src, const DstBlocks& dst) override;

 private:
  DirectState st_;
};

void Direct::run(const SrcBlocks& src, const DstBlocks& dst) {
  PlanCore& p = plan_;
  DirectState& st = st_;

  const size_t nr = p.rp.receives.size(), ns = p.rp.sends.size();
  st.req.resize(2 * (nr + ns));
  st.index.resize(2 * (nr + ns));
  st.status.resize(2 * (nr + ns));
  // Request k: a receive of bases per receive peer, a receive of "done" per send
  // peer, a send of bases per send peer, a send of "done" per receive peer.
  auto request = [&](int k) {
    const size_t i = static_cast<size_t>(k);
    if (i < nr) return cat("receive from rank ", p.rp.receives[i].peer);
    if (i < nr + ns) return cat("receive from rank ", p.rp.sends[i - nr].peer);
    if (i < nr + 2 * ns) return cat("send to rank ", p.rp.sends[i - nr - ns].peer);
    return cat("send to rank ", p.rp.receives[i - nr - 2 * ns].peer);
  };
  st.bases.resize(nr);
  st.out_bases.resize(ns);
  // Base pointers (the block count of each sender is known from the segment
  // addresses it sent), then the address of its packed run for me.
  for (size_t i = 0; i < nr; ++i) {
    const std::int64_t nblocks = record_blocks(st.where[i], p.rp.ndim);
    st.bases[i].resize(static_cast<size_t>(nblocks) + 1);
    check_mpi(MPI_Irecv(st.bases[i].data(), static_cast<int>(nblocks) + 1, MPI_UINT64_T, p.rp.receives[i].peer,
                        kTagBases, p.comm, &st.req[i]),
              "MPI_Irecv", p.comm, "receive from", p.rp.receives[i].peer);
  }
  // Done notices from my readers; then, with the short-row segments packed, my
  // base pointers to them (only the blocks they read) and the packed run.
  for (size_t i = 0; i < ns; ++i)
    check_mpi(MPI_Irecv(nullptr, 0, MPI_BYTE, p.rp.sends[i].peer, kTagDone, p.comm, &st.req[nr + i]), "MPI_Irecv",
              p.comm, "receive from", p.rp.sends[i].peer);
  // Buffers for the short-row segments only, each peer's after the previous one's.
  const index_t es = p.rp.elem_size;
  std::vector<index_t> out_at(ns + 1, 0), in_at(nr + 1, 0);
  for (size_t i = 0; i < ns; ++i) out_at[i + 1] = out_at[i] + st.pack.send_bytes[i];
  for (size_t i = 0; i < nr; ++i) in_at[i + 1] = in_at[i] + st.pack.recv_bytes[i];
  const index_t packed_out = out_at[ns], packed_in = in_at[nr];
  std::byte* sbuf = p.send_scratch(packed_out);
  const bool stream_out = stream_for(packed_out), stream_in = stream_for(packed_in);
  for (size_t i : st.send_order) {
    const auto& segs = p.rp.sends[i].segments;
    index_t nblocks = 0;
    std::byte* at = sbuf + out_at[i];
    for (size_t k = 0; k < segs.size(); ++k) {
      nblocks = std::max(nblocks, segs[k].at.block + 1);
      if (!st.pack.send[i][k]) continue;
      pack_run(segs[k], src.at(segs[k].at, es), at, es, stream_out);
      at += segs[k].elements() * es;
    }
    if (stream_out) stream_fence();
    auto& out = st.out_bases[i];
    out.resize(static_cast<size_t>(nblocks) + 1);
    for (index_t b = 0; b < nblocks; ++b) out[static_cast<size_t>(b)] = reinterpret_cast<std::uint64_t>(src.ptr[b]);
    out.back() = reinterpret_cast<std::uint64_t>(sbuf + out_at[i]);
    check_mpi(MPI_Isend(out.data(), static_cast<int>(out.size()), MPI_UINT64_T, p.rp.sends[i].peer, kTagBases,
                        p.comm, &st.req[nr + ns + i]),
              "MPI_Isend", p.comm, "send to", p.rp.sends[i].peer);
  }
  copy_locals(p, src, dst);
  // Read from the senders whose base pointers have arrived, the first of them in
  // from_next's order (Walker & Otto: no two readers start on one sender's
  // memory), then tell each one we are done.
  std::string err;
  const size_t per = record_size(p.rp.ndim);
  std::byte* rbuf = p.recv_scratch(packed_in);
  auto read = [&](size_t i) {
    const PeerPlan& pp = p.rp.receives[i];
    st.reader.start(st.peers.pid[static_cast<size_t>(pp.peer)], CmaMover::read);
    for (size_t k = 0; k < pp.segments.size() && err.empty(); ++k)
      if (!st.pack.recv[i][k])
        err = st.reader.segment(p, pp.segments[k], &st.where[i][k * per], st.bases[i].data(),
                               dst.at(pp.segments[k].at, es));
    std::byte* packed = rbuf + in_at[i];
    if (err.empty()) err = st.reader.run(packed, st.bases[i].back(), st.pack.recv_bytes[i]);
    if (err.empty()) err = st.reader.flush();
    for (size_t k = 0; k < pp.segments.size() && err.empty(); ++k) {
      if (!st.pack.recv[i][k]) continue;
      const Segment& g = pp.segments[k];
      unpack_run(g, packed, dst.at(g.at, es), es, stream_in);
      packed += g.elements() * es;
    }
    if (stream_in) stream_fence();
    check_mpi(MPI_Isend(nullptr, 0, MPI_BYTE, pp.peer, kTagDone, p.comm, &st.req[nr + 2 * ns + i]), "MPI_Isend",
              p.comm, "send to", pp.peer);
  };
  st.ready.assign(nr, 0);  // 1: bases here, 2: read
  for (size_t arrived = 0, done = 0; done < nr;) {
    if (arrived < nr) {  // collect what has arrived; wait only when nothing is left to read
      const bool wait = arrived == done;
      int count = 0;
      check_wait((wait ? MPI_Waitsome : MPI_Testsome)(static_cast<int>(nr), st.req.data(), &count, st.index.data(),
                                                      st.status.data()),
                 wait ? "MPI_Waitsome" : "MPI_Testsome", p.comm, st.status.data(), count, st.index.data(), request);
      // Some receive is still active here, so count is never MPI_UNDEFINED.
      for (int j = 0; j < count; ++j) st.ready[static_cast<size_t>(st.index[j])] = 1;
      arrived += static_cast<size_t>(count);
    }
    for (size_t i : st.recv_order)
      if (st.ready[i] == 1) {
        read(i);
        st.ready[i] = 2, ++done;
        break;
      }
  }
  // Wait for my readers (the source must stay valid until they finish) and my sends.
  check_wait(MPI_Waitall(static_cast<int>(2 * ns), st.req.data() + nr, st.status.data()), "MPI_Waitall", p.comm,
             st.status.data(), static_cast<int>(2 * ns), nullptr,
             [&](int i) { return request(static_cast<int>(nr) + i); });
  check_wait(MPI_Waitall(static_cast<int>(nr), st.req.data() + nr + 2 * ns, st.status.data()), "MPI_Waitall", p.comm,
             st.status.data(), static_cast<int>(nr), nullptr,
             [&](int i) { return request(static_cast<int>(nr + 2 * ns) + i); });
  agree(p.comm, err);  // a failed read is reported on every rank, not left half-done silently
}

}  // namespace

StrategyEntry direct_strategy() {
  return entry<Direct>("direct", "ranks on one machine read their segments straight from the sender's memory (one copy)",
                       cma_predict, /*fallback=*/"p2p");
}

}  // namespace redist::detail
