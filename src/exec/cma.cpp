#include "exec/cma.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "cost/model.hpp"
#include "exec/remote.hpp"
#include "exec/threads.hpp"
#include "kernels/copy.hpp"
#include "mpi/agree.hpp"

namespace redist::detail {
namespace {

// Iovecs per side and call: IOV_MAX on Linux; $REDIST_CMA_IOV_BATCH (1..1024)
// makes it smaller, for tests (batches end often, between any two rows).
size_t iov_batch() {
  static const size_t n = [] {
    const char* v = std::getenv("REDIST_CMA_IOV_BATCH");
    const long k = v ? std::strtol(v, nullptr, 10) : 0;
    return k >= 1 && k <= 1024 ? static_cast<size_t>(k) : size_t{1024};
  }();
  return n;
}
constexpr std::uint64_t kProbeMagic = 0x5eedc0de00000000u;

// The word every process offers its readers: lives as long as the process.
const volatile std::uint64_t* probe_word() {
  static const volatile std::uint64_t word = kProbeMagic ^ static_cast<std::uint64_t>(getpid());
  return &word;
}
// The word every process offers its writers' probes (its value is never read).
volatile std::uint64_t* landing_word() {
  static volatile std::uint64_t word = 0;
  return &word;
}

// Walks the rows of segment `s` between this rank's side (its first element at
// `mine`, strides `ms`, steps `mstep`) and the peer's (its record `w`, its block
// at `theirs`) in walk_run's order (adjacent repetitions merged, the level with
// the smallest steps innermost: storage order on both sides where it can be):
// f(mine_row, theirs_row, bytes). Addresses only: never dereferenced here.
template <class F>
void walk_rows(const Segment& s, int ndim, index_t es, index_t run, std::uint64_t mine, const Coord& ms,
               const std::array<index_t, 2>& mstep, std::uint64_t theirs, const std::int64_t* w, F&& f) {
  const SenderView v = sender_view(w, ndim);
  const auto* peer = reinterpret_cast<const std::byte*>(theirs + static_cast<std::uint64_t>(v.offset * es));
  walk_run(s.shape, run, es, s.count, peer, v.strides, v.step, reinterpret_cast<std::byte*>(mine), ms, mstep,
           [&](std::byte* t, index_t ts0, index_t ts1, const std::byte* fr, index_t fs0, index_t fs1, index_t n0,
               index_t n1, index_t row) {
             const auto tt = reinterpret_cast<std::uint64_t>(t), ff = reinterpret_cast<std::uint64_t>(fr);
             for (index_t j = 0; j < n1; ++j)
               for (index_t i = 0; i < n0; ++i)
                 f(tt + static_cast<std::uint64_t>(j * ts1 + i * ts0),
                   ff + static_cast<std::uint64_t>(j * fs1 + i * fs0), row);
           });
}

// Advances an iovec list past `n` bytes from entry `at`.
void advance(std::vector<iovec>& v, size_t& at, size_t n) {
  while (n > 0 && at < v.size()) {
    const size_t step = std::min(n, v[at].iov_len);
    v[at].iov_base = static_cast<char*>(v[at].iov_base) + step;
    v[at].iov_len -= step;
    n -= step;
    if (v[at].iov_len == 0) ++at;
  }
}

// Appends `bytes` at `at` to an iovec list, merged into its last entry when adjacent.
void append(std::vector<iovec>& v, std::uint64_t at, size_t bytes) {
  constexpr size_t kMaxIov = size_t{1} << 30;
  if (!v.empty()) {
    iovec& last = v.back();
    if (reinterpret_cast<std::uint64_t>(last.iov_base) + last.iov_len == at && last.iov_len + bytes <= kMaxIov) {
      last.iov_len += bytes;
      return;
    }
  }
  v.push_back({reinterpret_cast<void*>(at), bytes});
}

}  // namespace

bool cma_disabled() {
  return env_off("REDIST_CMA");
}

CmaPeers cma_peers(MPI_Comm comm, std::int64_t work) {
  int size = 0;
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size", comm);
  struct { std::uint64_t addr, landing; std::int64_t pid, work; } me{reinterpret_cast<std::uint64_t>(probe_word()),
                                                                     reinterpret_cast<std::uint64_t>(landing_word()),
                                                                     getpid(), work};
  std::vector<decltype(me)> all(static_cast<size_t>(size));
  check_mpi(MPI_Allgather(&me, sizeof me, MPI_BYTE, all.data(), sizeof me, MPI_BYTE, comm), "MPI_Allgather", comm);
  CmaPeers peers;
  for (const auto& a : all)
    peers.pid.push_back(static_cast<pid_t>(a.pid)), peers.probe.push_back(a.addr), peers.landing.push_back(a.landing),
        peers.work.push_back(a.work);
  return peers;
}

int cma_probe(const CmaPeers& peers, int r, bool write) {
  const size_t k = static_cast<size_t>(r);
  std::uint64_t word = write ? kProbeMagic : 0;
  iovec l{&word, sizeof word}, rem{reinterpret_cast<void*>(write ? peers.landing[k] : peers.probe[k]), sizeof word};
  const ssize_t n = write ? process_vm_writev(peers.pid[k], &l, 1, &rem, 1, 0)
                          : process_vm_readv(peers.pid[k], &l, 1, &rem, 1, 0);
  if (n < 0) return errno > 0 ? errno : EIO;
  if (n != sizeof word || (!write && word != (kProbeMagic ^ static_cast<std::uint64_t>(peers.pid[k]))))
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

CmaRuns cma_runs(const PlanCore& p, const std::vector<Segment>& segments, const std::int64_t* where_i) {
  const size_t per = record_size(p.rp.ndim);
  const index_t es = p.rp.elem_size;
  // Stand-in addresses: block b at b << 44 on each side (blocks never adjacent).
  auto at = [](std::int64_t block) { return static_cast<std::uint64_t>(block + 1) << 44; };
  CmaRuns n;
  std::uint64_t src_end = 0, dst_end = 0;
  for (size_t k = 0; k < segments.size(); ++k) {
    const Segment& s = segments[k];
    const std::int64_t* w = where_i + k * per;
    walk_rows(s, p.rp.ndim, es, run_both(s, w), at(s.at.block) + static_cast<std::uint64_t>(s.at.offset * es),
              s.at.strides, s.step, at(w[0]), w, [&](std::uint64_t dst, std::uint64_t src, index_t bytes) {
                n.target += dst != dst_end, n.source += src != src_end;
                dst_end = dst + static_cast<std::uint64_t>(bytes), src_end = src + static_cast<std::uint64_t>(bytes);
              });
  }
  return n;
}

CmaPacking cma_packing(PlanCore& p, const std::vector<std::vector<std::int64_t>>& where,
                       const std::vector<char>& recv_with, const std::vector<char>& send_with,
                       const std::vector<char>& recv_may_write, int tag, const CmaPeers* peers) {
  const size_t per = record_size(p.rp.ndim);
  CmaPacking k;
  std::vector<MPI_Request> req;
  std::vector<std::string> role;  // of each request, for errors
  const size_t nr = p.rp.receives.size(), ns = p.rp.sends.size();
  k.recv.assign(nr, {});
  k.recv_bytes.assign(nr, 0);
  k.recv_write.assign(nr, 0);
  k.recv_long.assign(nr, 0);
  // Per receive peer: its segments' flags, then one of flags: whether the sender
  // writes (kWrites), whether the runs are long (kLong).
  constexpr char kWrites = 1, kLong = 2;
  for (size_t i = 0; i < nr; ++i) {
    if (!recv_with[i]) continue;
    const auto& segs = p.rp.receives[i].segments;
    const index_t bytes = p.rp.receives[i].bytes;
    // Both ranks of the pair busy without it (kCmaLongRun)?
    const bool busy = peers && peers->work[static_cast<size_t>(p.rank)] - bytes >= bytes &&
                      peers->work[static_cast<size_t>(p.rp.receives[i].peer)] - bytes >= bytes;
    if (recv_may_write[i] || busy) {
      const CmaRuns runs = cma_runs(p, segs, where[i].data());
      if (recv_may_write[i]) k.recv_write[i] = runs.target < runs.source;
      k.recv_long[i] = busy && bytes / std::max<index_t>(1, std::max(runs.source, runs.target)) >= kCmaLongRun;
    }
    const index_t below = k.recv_write[i] ? kCmaWritePackBelow : kCmaPackBelow;
    k.recv[i].resize(segs.size() + 1);
    for (size_t s = 0; s < segs.size(); ++s) {
      const bool pack = run_both(segs[s], &where[i][s * per]) * p.rp.elem_size < below;
      k.recv[i][s] = pack;
      if (pack && !k.recv_write[i]) k.recv_bytes[i] += segs[s].elements() * p.rp.elem_size;
    }
    k.recv[i].back() = static_cast<char>((k.recv_write[i] ? kWrites : 0) | (k.recv_long[i] ? kLong : 0));
    req.emplace_back();
    role.push_back(cat("send to rank ", p.rp.receives[i].peer));
    check_mpi(MPI_Isend(k.recv[i].data(), static_cast<int>(segs.size() + 1), MPI_CHAR, p.rp.receives[i].peer, tag,
                        p.comm, &req.back()),
              "MPI_Isend", p.comm, "send to", p.rp.receives[i].peer);
  }
  k.send.assign(ns, {});
  for (size_t i = 0; i < ns; ++i) {
    if (!send_with[i]) continue;
    k.send[i].resize(p.rp.sends[i].segments.size() + 1);
    req.emplace_back();
    role.push_back(cat("receive from rank ", p.rp.sends[i].peer));
    check_mpi(MPI_Irecv(k.send[i].data(), static_cast<int>(k.send[i].size()), MPI_CHAR, p.rp.sends[i].peer, tag,
                        p.comm, &req.back()),
              "MPI_Irecv", p.comm, "receive from", p.rp.sends[i].peer);
  }
  std::vector<MPI_Status> status(req.size());
  check_wait(MPI_Waitall(static_cast<int>(req.size()), req.data(), status.data()), "MPI_Waitall", p.comm,
             status.data(), static_cast<int>(req.size()), nullptr, [&](int i) { return role[static_cast<size_t>(i)]; });
  for (auto& flags : k.recv)
    if (!flags.empty()) flags.pop_back();
  k.send_bytes.assign(ns, 0);
  k.send_write.assign(ns, 0);
  k.send_long.assign(ns, 0);
  for (size_t i = 0; i < ns; ++i) {
    if (k.send[i].empty()) continue;
    k.send_write[i] = (k.send[i].back() & kWrites) != 0;
    k.send_long[i] = (k.send[i].back() & kLong) != 0;
    k.send[i].pop_back();
    for (size_t s = 0; s < k.send[i].size(); ++s)
      if (k.send[i][s]) k.send_bytes[i] += p.rp.sends[i].segments[s].elements() * p.rp.elem_size;
  }
  return k;
}

std::string CmaMover::flush() {
  size_t li = 0, ri = 0;
  const char* call = dir_ == read ? "process_vm_readv" : "process_vm_writev";
  while (li < local_.size()) {
    const auto nl = static_cast<unsigned long>(local_.size() - li);
    const auto nr = static_cast<unsigned long>(remote_.size() - ri);
    const ssize_t got = dir_ == read ? process_vm_readv(pid_, &local_[li], nl, &remote_[ri], nr, 0)
                                     : process_vm_writev(pid_, &local_[li], nl, &remote_[ri], nr, 0);
    if (got < 0) return cat(call, " failed: ", std::strerror(errno));
    if (got == 0) return cat(call, " made no progress");
    advance(local_, li, static_cast<size_t>(got));
    advance(remote_, ri, static_cast<size_t>(got));
  }
  local_.clear();
  remote_.clear();  // not the scratch: run() flushes full iovec lists while the rows packed last wait in it
  return {};
}

std::string CmaMover::run(std::byte* local, std::uint64_t remote, index_t bytes) {
  for (index_t off = 0; off < bytes;) {
    const index_t len = std::min<index_t>(bytes - off, index_t{1} << 30);
    if (local_.size() >= iov_batch() || remote_.size() >= iov_batch()) {
      std::string e = flush();
      if (!e.empty()) return e;
    }
    append(local_, reinterpret_cast<std::uint64_t>(local + off), static_cast<size_t>(len));
    append(remote_, remote + static_cast<std::uint64_t>(off), static_cast<size_t>(len));
    off += len;
  }
  return {};
}

std::string CmaMover::segment(const PlanCore& p, const Segment& s, const std::int64_t* w, const std::uint64_t* bases,
                              std::byte* mine, bool pack) {
  std::string err;
  walk_rows(s, p.rp.ndim, p.rp.elem_size, run_both(s, w), reinterpret_cast<std::uint64_t>(mine), s.at.strides, s.step,
            bases[w[0]], w, [&](std::uint64_t here, std::uint64_t there, index_t bytes) {
              if (!err.empty()) return;
              auto* row = reinterpret_cast<std::byte*>(here);
              if (pack && bytes <= scratch_end_ - scratch_) {
                if (bytes > scratch_end_ - at_) {  // the scratch is full: move it, then reuse it
                  err = flush();
                  if (!err.empty()) return;
                  at_ = scratch_;
                }
                std::memcpy(at_, row, static_cast<size_t>(bytes));
                row = at_, at_ += bytes;
              }
              err = this->run(row, there, bytes);
            });
  return err;
}

double cma_read_time(const Segment& g, index_t es, const Rates& rt) {
  const Runs r = runs_of(g, es);
  if (g.run * es < kCmaPackBelow)  // packed, read as one run, unpacked
    return rt.copy.time(r) + rt.vm.time({r.row_bytes * r.rows, 1});
  return rt.vm.time({static_cast<double>(g.run * es), static_cast<double>(g.elements() / g.run)});  // row by row
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
    for (const Segment& g : pp.segments) read += cma_read_time(g, es, rt);
  Prediction p;
  p.comm = 2 * m.startup * static_cast<double>(std::max(rp.sends.size(), rp.receives.size()));
  p.memcpy = local_copy_time(rp, rt) + pack + read;
  return p;
}

}  // namespace redist::detail
