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
// than kPackBelow are packed by the sender, read as one run and unpacked, as in
// p2p but with one copy less. The reader decides at setup (it knows both sides'
// strides) and tells the sender which of its segments to pack.
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "cost/model.hpp"
#include "exec/pack.hpp"
#include "exec/remote.hpp"
#include "kernels/copy.hpp"
#include "mpi/agree.hpp"

namespace redist::detail {
namespace {

// The sender packs segments whose contiguous run (merged over both sides) is
// shorter than this many bytes: one process_vm_readv per short row costs more
// than packing it, streamed, and unpacking it (measured crossover between 1.6 KB
// and 3.2 KB rows, docs/strategies.md).
constexpr index_t kPackBelow = 2048;

struct DirectState {
  std::vector<std::vector<char>> pack_recv, pack_send;  // per peer, per segment: read packed
  std::vector<index_t> packed_recv_bytes, packed_send_bytes;  // per peer
  std::vector<std::vector<std::uint64_t>> out_bases;  // per send peer: its blocks, then the packed run
  std::vector<int> pid;                              // per rank of the plan's communicator
  std::vector<std::vector<std::int64_t>> where;      // per receive peer: per run block, offset, run, step[2], strides
  std::vector<std::vector<std::uint64_t>> bases;     // per receive peer: its source block pointers (per execute)
  std::vector<iovec> local, remote;                  // batches for process_vm_readv
  std::vector<MPI_Request> req;
  std::vector<int> index;
  std::vector<MPI_Status> status;  // of the requests one wait completed (errors name their peer)
};

constexpr int kTagBases = 11, kTagDone = 12, kTagWhere = 13, kTagPack = 14;
constexpr size_t kBatch = 1024;  // IOV_MAX on Linux

// Reads everything in the batch from `pid`, resuming after partial reads.
// Returns an empty string or the reason it failed.
std::string read_batch(pid_t pid, std::vector<iovec>& local, std::vector<iovec>& remote) {
  size_t li = 0, ri = 0;
  while (li < local.size()) {
    const ssize_t got = process_vm_readv(pid, &local[li], static_cast<unsigned long>(local.size() - li),
                                         &remote[ri], static_cast<unsigned long>(remote.size() - ri), 0);
    if (got < 0) return std::string("process_vm_readv failed: ") + std::strerror(errno);
    if (got == 0) return "process_vm_readv made no progress";
    // Advance both iovec lists past `got` bytes (rows have equal lengths on both sides).
    size_t left = static_cast<size_t>(got);
    while (left > 0) {
      const size_t step = std::min(left, local[li].iov_len);
      local[li].iov_base = static_cast<char*>(local[li].iov_base) + step;
      local[li].iov_len -= step;
      remote[ri].iov_base = static_cast<char*>(remote[ri].iov_base) + step;
      remote[ri].iov_len -= step;
      left -= step;
      if (local[li].iov_len == 0) ++li, ++ri;
    }
  }
  local.clear();
  remote.clear();
  return {};
}

// One-time collective setup: can every rank read every other rank's memory?
bool probe(const PlanCore& p, DirectState& st) {
  MPI_Comm node;
  check_mpi(MPI_Comm_split_type(p.comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type",
            p.comm);
  int node_size = 0;
  check_mpi(MPI_Comm_size(node, &node_size), "MPI_Comm_size", p.comm);
  check_mpi(MPI_Comm_free(&node), "MPI_Comm_free", p.comm);
  int ok = node_size == p.size;
  static thread_local std::uint64_t probe_value;
  probe_value = 0x5eed0000u + static_cast<unsigned>(p.rank);
  struct { std::uint64_t addr; std::int64_t pid; } me{reinterpret_cast<std::uint64_t>(&probe_value), getpid()};
  std::vector<decltype(me)> all(static_cast<size_t>(p.size));
  check_mpi(MPI_Allgather(&me, sizeof me, MPI_BYTE, all.data(), sizeof me, MPI_BYTE, p.comm), "MPI_Allgather", p.comm);
  st.pid.resize(static_cast<size_t>(p.size));
  for (int r = 0; r < p.size; ++r) st.pid[r] = static_cast<int>(all[r].pid);
  if (ok && p.size > 1) {
    const int q = (p.rank + 1) % p.size;
    std::uint64_t got = 0;
    iovec l{&got, sizeof got}, r{reinterpret_cast<void*>(all[q].addr), sizeof got};
    ok = process_vm_readv(all[q].pid, &l, 1, &r, 1, 0) == sizeof got && got == 0x5eed0000u + unsigned(q);
  }
  // Nobody may leave before its neighbour has read its probe value.
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, p.comm), "MPI_Allreduce", p.comm);
  return ok == 1;
}

// Senders tell each reader where every segment lives in their storage (once),
// then readers tell senders which segments to pack.
void exchange_where(PlanCore& p, DirectState& st) {
  const size_t per = record_size(p.rp.ndim);
  st.where = exchange_records(p, std::vector<char>(static_cast<size_t>(p.size), 1), kTagWhere);
  std::vector<MPI_Request> req;
  // Readers decide which segments travel packed and tell their senders.
  st.pack_recv.assign(p.rp.receives.size(), {});
  st.packed_recv_bytes.assign(p.rp.receives.size(), 0);
  for (size_t i = 0; i < p.rp.receives.size(); ++i) {
    const auto& segs = p.rp.receives[i].segments;
    st.pack_recv[i].resize(segs.size());
    for (size_t k = 0; k < segs.size(); ++k) {
      const bool pack = run_both(segs[k], &st.where[i][k * per]) * p.rp.elem_size < kPackBelow;
      st.pack_recv[i][k] = pack;
      if (pack) st.packed_recv_bytes[i] += segs[k].elements() * p.rp.elem_size;
    }
    req.emplace_back();
    check_mpi(MPI_Isend(st.pack_recv[i].data(), static_cast<int>(segs.size()), MPI_CHAR, p.rp.receives[i].peer,
                        kTagPack, p.comm, &req.back()),
              "MPI_Isend", p.comm, "send to", p.rp.receives[i].peer);
  }
  st.pack_send.assign(p.rp.sends.size(), {});
  for (size_t i = 0; i < p.rp.sends.size(); ++i) {
    st.pack_send[i].resize(p.rp.sends[i].segments.size());
    req.emplace_back();
    check_mpi(MPI_Irecv(st.pack_send[i].data(), static_cast<int>(st.pack_send[i].size()), MPI_CHAR,
                        p.rp.sends[i].peer, kTagPack, p.comm, &req.back()),
              "MPI_Irecv", p.comm, "receive from", p.rp.sends[i].peer);
  }
  // Requests: a send per receive peer (its pack flags), then a receive per send peer.
  auto second_round = [&](int i) {
    const size_t nr = p.rp.receives.size(), k = static_cast<size_t>(i);
    return k < nr ? cat("send to rank ", p.rp.receives[k].peer) : cat("receive from rank ", p.rp.sends[k - nr].peer);
  };
  std::vector<MPI_Status> status(req.size());
  check_wait(MPI_Waitall(static_cast<int>(req.size()), req.data(), status.data()), "MPI_Waitall", p.comm,
             status.data(), static_cast<int>(req.size()), nullptr, second_round);
  st.packed_send_bytes.assign(p.rp.sends.size(), 0);
  for (size_t i = 0; i < p.rp.sends.size(); ++i)
    for (size_t k = 0; k < st.pack_send[i].size(); ++k)
      if (st.pack_send[i][k]) st.packed_send_bytes[i] += p.rp.sends[i].segments[k].elements() * p.rp.elem_size;
}

// Queues `bytes` contiguous bytes from the reader's view of a remote address.
std::string queue_run(DirectState& st, std::byte* local, std::uint64_t remote, index_t bytes, pid_t pid) {
  for (index_t off = 0; off < bytes;) {
    const index_t len = std::min<index_t>(bytes - off, index_t{1} << 30);
    st.local.push_back({local + off, static_cast<size_t>(len)});
    st.remote.push_back({reinterpret_cast<void*>(remote + static_cast<std::uint64_t>(off)), static_cast<size_t>(len)});
    off += len;
    if (st.local.size() == kBatch) {
      std::string e = read_batch(pid, st.local, st.remote);
      if (!e.empty()) return e;
    }
  }
  return {};
}

// Queues the rows of one segment: local rows in the target, remote rows in the
// sender's source; dimensions contiguous on both sides are merged into one row.
std::string read_segment(PlanCore& p, DirectState& st, const Segment& s, const std::int64_t* w,
                         const std::vector<std::uint64_t>& bases, pid_t pid, const DstBlocks& dst) {
  const int n = p.rp.ndim;
  const index_t es = p.rp.elem_size;
  const std::int64_t* rs = w + 5;
  const index_t row = run_both(s, w);
  const int d = first_dim_outside(s.shape, row);
  for (index_t j = 0; j < s.count[1]; ++j)
    for (index_t i = 0; i < s.count[0]; ++i) {
      const std::uint64_t rbase =
          bases[static_cast<size_t>(w[0])] + static_cast<std::uint64_t>((w[1] + i * w[3] + j * w[4]) * es);
      std::byte* lbase = dst.at(s.at, es) + (i * s.step[0] + j * s.step[1]) * es;
      index_t idx[kMaxDims] = {};
      while (true) {
        index_t lo = 0, ro = 0;
        for (int e = d; e < n; ++e) lo += idx[e] * s.at.strides[e], ro += idx[e] * rs[e];
        std::string err = queue_run(st, lbase + lo * es, rbase + static_cast<std::uint64_t>(ro * es), row * es, pid);
        if (!err.empty()) return err;
        int e = d;
        for (; e < n; ++e) {
          if (++idx[e] < s.shape[e]) break;
          idx[e] = 0;
        }
        if (e >= n) break;
      }
    }
  return {};
}

class Direct final : public Strategy {
 public:
  using Strategy::Strategy;

  // Collective: every rank probes; when all can read their neighbour, senders
  // tell their readers where each segment lives (once per plan).
  bool available() override {
    if (!probe(plan_, st_)) return false;
    exchange_where(plan_, st_);
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
  std::byte* sbuf = p.send_scratch();
  const index_t es = p.rp.elem_size;
  index_t packed_out = 0, packed_in = 0;
  for (index_t b : st.packed_send_bytes) packed_out += b;
  for (index_t b : st.packed_recv_bytes) packed_in += b;
  const bool stream_out = stream_for(packed_out), stream_in = stream_for(packed_in);
  for (size_t i = 0; i < ns; ++i) {
    const auto& segs = p.rp.sends[i].segments;
    index_t nblocks = 0;
    std::byte* at = sbuf + p.send_offset[i];
    for (size_t k = 0; k < segs.size(); ++k) {
      nblocks = std::max(nblocks, segs[k].at.block + 1);
      if (!st.pack_send[i][k]) continue;
      pack_run(segs[k], src.at(segs[k].at, es), at, es, stream_out);
      at += segs[k].elements() * es;
    }
    if (stream_out) stream_fence();
    auto& out = st.out_bases[i];
    out.resize(static_cast<size_t>(nblocks) + 1);
    for (index_t b = 0; b < nblocks; ++b) out[static_cast<size_t>(b)] = reinterpret_cast<std::uint64_t>(src.ptr[b]);
    out.back() = reinterpret_cast<std::uint64_t>(sbuf + p.send_offset[i]);
    check_mpi(MPI_Isend(out.data(), static_cast<int>(out.size()), MPI_UINT64_T, p.rp.sends[i].peer, kTagBases,
                        p.comm, &st.req[nr + ns + i]),
              "MPI_Isend", p.comm, "send to", p.rp.sends[i].peer);
  }
  copy_locals(p, src, dst);
  // Read from each sender as soon as its base pointers arrive, then tell it we are done.
  std::string err;
  const size_t per = record_size(p.rp.ndim);
  std::byte* rbuf = p.recv_scratch();
  for (size_t left = nr; left > 0;) {
    int count = 0;
    check_wait(MPI_Waitsome(static_cast<int>(nr), st.req.data(), &count, st.index.data(), st.status.data()),
               "MPI_Waitsome", p.comm, st.status.data(), count, st.index.data(), request);
    for (int j = 0; j < count; ++j) {
      const size_t i = static_cast<size_t>(st.index[j]);
      const PeerPlan& pp = p.rp.receives[i];
      const pid_t pid = st.pid[static_cast<size_t>(pp.peer)];
      for (size_t k = 0; k < pp.segments.size() && err.empty(); ++k)
        if (!st.pack_recv[i][k]) err = read_segment(p, st, pp.segments[k], &st.where[i][k * per], st.bases[i], pid, dst);
      std::byte* packed = rbuf + p.recv_offset[i];
      if (err.empty()) err = queue_run(st, packed, st.bases[i].back(), st.packed_recv_bytes[i], pid);
      if (err.empty() && !st.local.empty()) err = read_batch(pid, st.local, st.remote);
      st.local.clear();
      st.remote.clear();
      for (size_t k = 0; k < pp.segments.size() && err.empty(); ++k) {
        if (!st.pack_recv[i][k]) continue;
        const Segment& g = pp.segments[k];
        unpack_run(g, packed, dst.at(g.at, es), es, stream_in);
        packed += g.elements() * es;
      }
      if (stream_in) stream_fence();
      check_mpi(MPI_Isend(nullptr, 0, MPI_BYTE, pp.peer, kTagDone, p.comm, &st.req[nr + 2 * ns + i]), "MPI_Isend",
                p.comm, "send to", pp.peer);
    }
    left -= static_cast<size_t>(count);
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

// T_comm = 2 t_m per peer (pointers, done); T_memcpy = local copies + the rows
// this rank reads at the measured process_vm_readv cost per row size; rows under
// kPackBelow: packed by the sender (charged to it), read as one run, unpacked.
// Without cross-memory attach (no vm_read curve) it runs, and costs, its fallback.
Prediction predict(const RankPlan& rp, const Machine& m) {
  if (m.vm_read.empty()) return registry()[static_cast<size_t>(find_strategy("p2p"))].predict(rp, m);
  const Rates rt = rates(rp, m, false);
  const index_t es = rp.elem_size;
  double pack = 0, read = 0;
  for (const PeerPlan& pp : rp.sends)
    for (const Segment& g : pp.segments)
      if (g.run * es < kPackBelow) pack += rt.copy.time(runs_of(g, es));
  for (const PeerPlan& pp : rp.receives)
    for (const Segment& g : pp.segments) {
      const Runs r = runs_of(g, es);
      if (g.run * es < kPackBelow)  // packed, read as one run, unpacked
        read += rt.copy.time(r) + rt.vm.time({r.row_bytes * r.rows, 1});
      else  // one read per row of each segment
        read += rt.vm.time({static_cast<double>(g.run * es), static_cast<double>(g.elements() / g.run)});
    }
  Prediction p;
  p.comm = 2 * m.startup * static_cast<double>(std::max(rp.sends.size(), rp.receives.size()));
  p.memcpy = local_copy_time(rp, rt) + pack + read;
  return p;
}

}  // namespace

StrategyEntry direct_strategy() {
  return entry<Direct>("direct", "ranks on one machine read their segments straight from the sender's memory (one copy)",
                       predict, /*fallback=*/"p2p");
}

}  // namespace redist::detail
