// `direct` executor: single-copy transfer between ranks of one machine. Each
// receiver reads its segments straight from the sender's source memory into its
// target with Linux cross-memory attach (process_vm_readv), so a remote byte is
// copied once instead of three times (pack, MPI, unpack: the 2 x Bmemcpy term of
// paper 000 Eq. 4 disappears). Senders learn when their readers are done by a
// zero-byte message, so the source stays valid while it is read.
//
// Setup (first execute, collective): all ranks must share a node and be allowed
// to read each other (same user, no ptrace restriction): every rank tries one
// read from a neighbour and the ranks agree. If any rank cannot, the plan falls
// back to `p2p` for good. Senders then send each reader the storage address of
// every segment once; each execute only exchanges the block base pointers.
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "copy.hpp"
#include "plan_impl.hpp"

namespace redist {

struct DirectState {
  bool available = false;
  std::vector<int> pid;                              // per rank of the plan's communicator
  std::vector<std::vector<std::int64_t>> where;      // per receive peer: per segment block, offset, strides
  std::vector<std::vector<std::uint64_t>> bases;     // per receive peer: its source block pointers (per execute)
  std::vector<std::uint64_t> my_bases;               // this rank's source block pointers
  std::vector<iovec> local, remote;                  // batches for process_vm_readv
  std::vector<MPI_Request> req;
  std::vector<int> index;
};

namespace {

constexpr int kTagBases = 11, kTagDone = 12, kTagWhere = 13;
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
bool probe(PlanImpl& p, DirectState& st) {
  MPI_Comm node;
  check_mpi(MPI_Comm_split_type(p.comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
  int node_size = 0;
  MPI_Comm_size(node, &node_size);
  MPI_Comm_free(&node);
  int ok = node_size == p.size;
  static thread_local std::uint64_t probe_value;
  probe_value = 0x5eed0000u + static_cast<unsigned>(p.rank);
  struct { std::uint64_t addr; std::int64_t pid; } me{reinterpret_cast<std::uint64_t>(&probe_value), getpid()};
  std::vector<decltype(me)> all(static_cast<size_t>(p.size));
  check_mpi(MPI_Allgather(&me, sizeof me, MPI_BYTE, all.data(), sizeof me, MPI_BYTE, p.comm), "MPI_Allgather");
  st.pid.resize(static_cast<size_t>(p.size));
  for (int r = 0; r < p.size; ++r) st.pid[r] = static_cast<int>(all[r].pid);
  if (ok && p.size > 1) {
    const int q = (p.rank + 1) % p.size;
    std::uint64_t got = 0;
    iovec l{&got, sizeof got}, r{reinterpret_cast<void*>(all[q].addr), sizeof got};
    ok = process_vm_readv(all[q].pid, &l, 1, &r, 1, 0) == sizeof got && got == 0x5eed0000u + unsigned(q);
  }
  // Nobody may leave before its neighbour has read its probe value.
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, p.comm), "MPI_Allreduce");
  return ok == 1;
}

// Senders tell each reader where every segment lives in their storage (once).
void exchange_where(PlanImpl& p, DirectState& st) {
  const int n = p.rp.ndim;
  const size_t per = static_cast<size_t>(2 + n);
  std::vector<std::vector<std::int64_t>> out(p.rp.sends.size());
  std::vector<MPI_Request> req;
  st.where.assign(p.rp.receives.size(), {});
  for (size_t i = 0; i < p.rp.receives.size(); ++i) {
    st.where[i].resize(p.rp.receives[i].segments.size() * per);
    req.emplace_back();
    check_mpi(MPI_Irecv(st.where[i].data(), static_cast<int>(st.where[i].size()), MPI_INT64_T,
                        p.rp.receives[i].peer, kTagWhere, p.comm, &req.back()),
              "MPI_Irecv");
  }
  for (size_t i = 0; i < p.rp.sends.size(); ++i) {
    for (const Segment& s : p.rp.sends[i].segments) {
      out[i].push_back(s.at.block);
      out[i].push_back(s.at.offset);
      for (int d = 0; d < n; ++d) out[i].push_back(s.at.strides[d]);
    }
    req.emplace_back();
    check_mpi(MPI_Isend(out[i].data(), static_cast<int>(out[i].size()), MPI_INT64_T, p.rp.sends[i].peer,
                        kTagWhere, p.comm, &req.back()),
              "MPI_Isend");
  }
  check_mpi(MPI_Waitall(static_cast<int>(req.size()), req.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
}

// Queues the rows of one segment: local rows in the target, remote rows in the
// sender's source; dimensions contiguous on both sides are merged into one row.
std::string read_segment(PlanImpl& p, DirectState& st, const Segment& s, const std::int64_t* w,
                         const std::vector<std::uint64_t>& bases, pid_t pid, const DstBlocks& dst) {
  const int n = p.rp.ndim;
  const index_t es = p.rp.elem_size;
  const std::uint64_t rbase = bases[static_cast<size_t>(w[0])] + static_cast<std::uint64_t>(w[1] * es);
  const std::int64_t* rs = w + 2;
  std::byte* lbase = dst.at(s.at, es);
  index_t row = s.shape[0], run = s.shape[0];
  int d = 1;
  while (d < n && rs[d] == run && s.at.strides[d] == run) row *= s.shape[d], run *= s.shape[d], ++d;
  index_t idx[kMaxDims] = {};
  while (true) {
    index_t lo = 0, ro = 0;
    for (int e = d; e < n; ++e) lo += idx[e] * s.at.strides[e], ro += idx[e] * rs[e];
    // A row above what one iovec should carry is split (iov_len is size_t, but keep batches sane).
    for (index_t off = 0; off < row * es;) {
      const index_t len = std::min<index_t>(row * es - off, index_t{1} << 30);
      st.local.push_back({lbase + lo * es + off, static_cast<size_t>(len)});
      st.remote.push_back({reinterpret_cast<void*>(rbase + static_cast<std::uint64_t>(ro * es + off)),
                           static_cast<size_t>(len)});
      off += len;
      if (st.local.size() == kBatch) {
        std::string e = read_batch(pid, st.local, st.remote);
        if (!e.empty()) return e;
      }
    }
    int e = d;
    for (; e < n; ++e) {
      if (++idx[e] < s.shape[e]) break;
      idx[e] = 0;
    }
    if (e >= n) return {};
  }
}

}  // namespace

void DirectStateDeleter::operator()(DirectState* s) const { delete s; }

void run_direct(PlanImpl& p, const SrcBlocks& src, const DstBlocks& dst) {
  if (!p.direct) {
    p.direct.reset(new DirectState);
    p.direct->available = probe(p, *p.direct);
    if (p.direct->available) exchange_where(p, *p.direct);
  }
  DirectState& st = *p.direct;
  if (!st.available) return run_p2p(p, src, dst);

  const size_t nr = p.rp.receives.size(), ns = p.rp.sends.size();
  st.req.resize(2 * (nr + ns));
  st.index.resize(2 * (nr + ns));
  st.bases.resize(nr);
  st.my_bases.resize(src.ptr.size());
  for (size_t b = 0; b < src.ptr.size(); ++b) st.my_bases[b] = reinterpret_cast<std::uint64_t>(src.ptr[b]);
  // Base pointers: block count of each sender is known from the segment addresses it sent.
  for (size_t i = 0; i < nr; ++i) {
    std::int64_t nblocks = 0;
    const size_t per = static_cast<size_t>(2 + p.rp.ndim);
    for (size_t k = 0; k < st.where[i].size(); k += per) nblocks = std::max(nblocks, st.where[i][k] + 1);
    st.bases[i].resize(static_cast<size_t>(nblocks));
    check_mpi(MPI_Irecv(st.bases[i].data(), static_cast<int>(nblocks), MPI_UINT64_T, p.rp.receives[i].peer,
                        kTagBases, p.comm, &st.req[i]),
              "MPI_Irecv");
  }
  // Done notices from my readers; then my base pointers to them (only the blocks they read).
  for (size_t i = 0; i < ns; ++i)
    check_mpi(MPI_Irecv(nullptr, 0, MPI_BYTE, p.rp.sends[i].peer, kTagDone, p.comm, &st.req[nr + i]), "MPI_Irecv");
  for (size_t i = 0; i < ns; ++i) {
    index_t nblocks = 0;
    for (const Segment& s : p.rp.sends[i].segments) nblocks = std::max(nblocks, s.at.block + 1);
    check_mpi(MPI_Isend(st.my_bases.data(), static_cast<int>(nblocks), MPI_UINT64_T, p.rp.sends[i].peer, kTagBases,
                        p.comm, &st.req[nr + ns + i]),
              "MPI_Isend");
  }
  copy_locals(p, src, dst);
  // Read from each sender as soon as its base pointers arrive, then tell it we are done.
  std::string err;
  const size_t per = static_cast<size_t>(2 + p.rp.ndim);
  for (size_t left = nr; left > 0;) {
    int count = 0;
    check_mpi(MPI_Waitsome(static_cast<int>(nr), st.req.data(), &count, st.index.data(), MPI_STATUSES_IGNORE),
              "MPI_Waitsome");
    for (int j = 0; j < count; ++j) {
      const size_t i = static_cast<size_t>(st.index[j]);
      const PeerPlan& pp = p.rp.receives[i];
      const pid_t pid = st.pid[static_cast<size_t>(pp.peer)];
      for (size_t k = 0; k < pp.segments.size() && err.empty(); ++k)
        err = read_segment(p, st, pp.segments[k], &st.where[i][k * per], st.bases[i], pid, dst);
      if (err.empty() && !st.local.empty()) err = read_batch(pid, st.local, st.remote);
      st.local.clear();
      st.remote.clear();
      check_mpi(MPI_Isend(nullptr, 0, MPI_BYTE, pp.peer, kTagDone, p.comm, &st.req[nr + 2 * ns + i]),
                "MPI_Isend");
    }
    left -= static_cast<size_t>(count);
  }
  // Wait for my readers (the source must stay valid until they finish) and my sends.
  check_mpi(MPI_Waitall(static_cast<int>(2 * ns), st.req.data() + nr, MPI_STATUSES_IGNORE), "MPI_Waitall");
  check_mpi(MPI_Waitall(static_cast<int>(nr), st.req.data() + nr + 2 * ns, MPI_STATUSES_IGNORE), "MPI_Waitall");
  agree(p.comm, err);  // a failed read is reported on every rank, not left half-done silently
}

}  // namespace redist
