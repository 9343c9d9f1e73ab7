#include "exec/cma.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "cost/model.hpp"
#include "exec/remote.hpp"
#include "kernels/copy.hpp"
#include "mpi/agree.hpp"

namespace redist::detail {
namespace {

constexpr size_t kBatch = 1024;  // IOV_MAX on Linux
constexpr std::uint64_t kProbeMagic = 0x5eedc0de00000000u;

// The word every process offers its readers: lives as long as the process.
const volatile std::uint64_t* probe_word() {
  static const volatile std::uint64_t word = kProbeMagic ^ static_cast<std::uint64_t>(getpid());
  return &word;
}

}  // namespace

bool cma_disabled() {
  const char* v = std::getenv("REDIST_CMA");
  return v && std::strcmp(v, "0") == 0;
}

CmaPeers cma_peers(MPI_Comm comm) {
  int size = 0;
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size", comm);
  struct { std::uint64_t addr; std::int64_t pid; } me{reinterpret_cast<std::uint64_t>(probe_word()), getpid()};
  std::vector<decltype(me)> all(static_cast<size_t>(size));
  check_mpi(MPI_Allgather(&me, sizeof me, MPI_BYTE, all.data(), sizeof me, MPI_BYTE, comm), "MPI_Allgather", comm);
  CmaPeers peers;
  for (const auto& a : all) peers.pid.push_back(static_cast<pid_t>(a.pid)), peers.probe.push_back(a.addr);
  return peers;
}

int cma_probe(const CmaPeers& peers, int r) {
  std::uint64_t got = 0;
  iovec l{&got, sizeof got}, rem{reinterpret_cast<void*>(peers.probe[static_cast<size_t>(r)]), sizeof got};
  const ssize_t n = process_vm_readv(peers.pid[static_cast<size_t>(r)], &l, 1, &rem, 1, 0);
  if (n < 0) return errno > 0 ? errno : EIO;
  if (n != sizeof got || got != (kProbeMagic ^ static_cast<std::uint64_t>(peers.pid[static_cast<size_t>(r)])))
    return kCmaWrongValue;
  return kCmaOk;
}

std::string cma_reason(int code) {
  switch (code) {
    case kCmaOk: return "cma";
    case kCmaOff: return "REDIST_CMA=0";
    case kCmaWrongValue: return "probe failed: read another value";
    case kCmaArithmetic: return "arithmetic: applied by messages";
    default: return std::string("probe failed: ") + std::strerror(code);
  }
}

CmaPacking cma_packing(PlanCore& p, const std::vector<std::vector<std::int64_t>>& where,
                       const std::vector<char>& recv_with, const std::vector<char>& send_with, int tag) {
  const size_t per = record_size(p.rp.ndim);
  CmaPacking k;
  std::vector<MPI_Request> req;
  std::vector<std::string> role;  // of each request, for errors
  const size_t nr = p.rp.receives.size(), ns = p.rp.sends.size();
  k.recv.assign(nr, {});
  k.recv_bytes.assign(nr, 0);
  for (size_t i = 0; i < nr; ++i) {
    if (!recv_with[i]) continue;
    const auto& segs = p.rp.receives[i].segments;
    k.recv[i].resize(segs.size());
    for (size_t s = 0; s < segs.size(); ++s) {
      const bool pack = run_both(segs[s], &where[i][s * per]) * p.rp.elem_size < kCmaPackBelow;
      k.recv[i][s] = pack;
      if (pack) k.recv_bytes[i] += segs[s].elements() * p.rp.elem_size;
    }
    req.emplace_back();
    role.push_back(cat("send to rank ", p.rp.receives[i].peer));
    check_mpi(MPI_Isend(k.recv[i].data(), static_cast<int>(segs.size()), MPI_CHAR, p.rp.receives[i].peer, tag, p.comm,
                        &req.back()),
              "MPI_Isend", p.comm, "send to", p.rp.receives[i].peer);
  }
  k.send.assign(ns, {});
  for (size_t i = 0; i < ns; ++i) {
    if (!send_with[i]) continue;
    k.send[i].resize(p.rp.sends[i].segments.size());
    req.emplace_back();
    role.push_back(cat("receive from rank ", p.rp.sends[i].peer));
    check_mpi(MPI_Irecv(k.send[i].data(), static_cast<int>(k.send[i].size()), MPI_CHAR, p.rp.sends[i].peer, tag,
                        p.comm, &req.back()),
              "MPI_Irecv", p.comm, "receive from", p.rp.sends[i].peer);
  }
  std::vector<MPI_Status> status(req.size());
  check_wait(MPI_Waitall(static_cast<int>(req.size()), req.data(), status.data()), "MPI_Waitall", p.comm,
             status.data(), static_cast<int>(req.size()), nullptr, [&](int i) { return role[static_cast<size_t>(i)]; });
  k.send_bytes.assign(ns, 0);
  for (size_t i = 0; i < ns; ++i)
    for (size_t s = 0; s < k.send[i].size(); ++s)
      if (k.send[i][s]) k.send_bytes[i] += p.rp.sends[i].segments[s].elements() * p.rp.elem_size;
  return k;
}

std::string CmaReader::flush() {
  size_t li = 0, ri = 0;
  while (li < local_.size()) {
    const ssize_t got = process_vm_readv(pid_, &local_[li], static_cast<unsigned long>(local_.size() - li),
                                         &remote_[ri], static_cast<unsigned long>(remote_.size() - ri), 0);
    if (got < 0) return std::string("process_vm_readv failed: ") + std::strerror(errno);
    if (got == 0) return "process_vm_readv made no progress";
    // Advance both iovec lists past `got` bytes (rows have equal lengths on both sides).
    size_t left = static_cast<size_t>(got);
    while (left > 0) {
      const size_t step = std::min(left, local_[li].iov_len);
      local_[li].iov_base = static_cast<char*>(local_[li].iov_base) + step;
      local_[li].iov_len -= step;
      remote_[ri].iov_base = static_cast<char*>(remote_[ri].iov_base) + step;
      remote_[ri].iov_len -= step;
      left -= step;
      if (local_[li].iov_len == 0) ++li, ++ri;
    }
  }
  local_.clear();
  remote_.clear();
  return {};
}

std::string CmaReader::run(std::byte* local, std::uint64_t remote, index_t bytes) {
  for (index_t off = 0; off < bytes;) {
    const index_t len = std::min<index_t>(bytes - off, index_t{1} << 30);
    local_.push_back({local + off, static_cast<size_t>(len)});
    remote_.push_back({reinterpret_cast<void*>(remote + static_cast<std::uint64_t>(off)), static_cast<size_t>(len)});
    off += len;
    if (local_.size() == kBatch) {
      std::string e = flush();
      if (!e.empty()) return e;
    }
  }
  return {};
}

std::string CmaReader::segment(const PlanCore& p, const Segment& s, const std::int64_t* w, const std::uint64_t* bases,
                               const DstBlocks& dst) {
  const int n = p.rp.ndim;
  const index_t es = p.rp.elem_size;
  const std::int64_t* rs = w + 5;
  const index_t row = run_both(s, w);
  const int d = first_dim_outside(s.shape, row);
  for (index_t j = 0; j < s.count[1]; ++j)
    for (index_t i = 0; i < s.count[0]; ++i) {
      const std::uint64_t rbase = bases[w[0]] + static_cast<std::uint64_t>((w[1] + i * w[3] + j * w[4]) * es);
      std::byte* lbase = dst.at(s.at, es) + (i * s.step[0] + j * s.step[1]) * es;
      index_t idx[kMaxDims] = {};
      while (true) {
        index_t lo = 0, ro = 0;
        for (int e = d; e < n; ++e) lo += idx[e] * s.at.strides[e], ro += idx[e] * rs[e];
        std::string err = run(lbase + lo * es, rbase + static_cast<std::uint64_t>(ro * es), row * es);
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

Prediction cma_predict(const RankPlan& rp, const Machine& m) {
  if (m.vm_read.empty()) return registry()[static_cast<size_t>(find_strategy("p2p"))].predict(rp, m);
  const Rates rt = rates(rp, m, false);
  const index_t es = rp.elem_size;
  double pack = 0, read = 0;
  for (const PeerPlan& pp : rp.sends)
    for (const Segment& g : pp.segments)
      if (g.run * es < kCmaPackBelow) pack += rt.copy.time(runs_of(g, es));
  for (const PeerPlan& pp : rp.receives)
    for (const Segment& g : pp.segments) {
      const Runs r = runs_of(g, es);
      if (g.run * es < kCmaPackBelow)  // packed, read as one run, unpacked
        read += rt.copy.time(r) + rt.vm.time({r.row_bytes * r.rows, 1});
      else  // one read per row of each segment
        read += rt.vm.time({static_cast<double>(g.run * es), static_cast<double>(g.elements() / g.run)});
    }
  Prediction p;
  p.comm = 2 * m.startup * static_cast<double>(std::max(rp.sends.size(), rp.receives.size()));
  p.memcpy = local_copy_time(rp, rt) + pack + read;
  return p;
}

}  // namespace redist::detail
