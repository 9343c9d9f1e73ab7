#include "paper001.hpp"

#include <algorithm>
#include <map>

#include "exec/pack.hpp"
#include "mpi/agree.hpp"
#include "plan/schedule.hpp"

namespace redist::bench {

namespace {
constexpr int kTag = 31;
constexpr std::uint64_t kSeed = 1995;  // the random schedule's, the same on every rank
}  // namespace

PaperPhases::PaperPhases(Plan& plan, PaperSchedule kind, int K) : plan_(plan) {
  const detail::PlanCore& p = detail::PlanAccess::core(plan);
  // The phase of each (sender, receiver) pair: its first block's phase.
  std::map<std::pair<int, int>, int> phase_of;
  int nphases = 0;
  if (kind == PaperSchedule::optimal) {
    const schedule::PairPhases ph = schedule::paper_rounds(p.src, p.dst, p.region, p.size);
    if (ph.empty()) throw Error("paper001: the plan is not the paper's r -> K*r case");
    for (size_t k = 0; k < ph.size(); ++k)
      for (const auto& pair : ph[k]) phase_of.emplace(pair, static_cast<int>(k));
    nphases = static_cast<int>(ph.size());
  } else {
    schedule::Schedule s = kind == PaperSchedule::simple ? schedule::expand_simple(p.size, K)
                                                         : schedule::expand_random(p.size, K, kSeed);
    // K*r -> r runs the schedule in reverse (sec. 4).
    if (p.src.partition(0).tile() > p.dst.partition(0).tile()) s = schedule::reverse(s);
    for (size_t k = 0; k < s.size(); ++k)
      for (const schedule::Move& m : s[k])
        if (m.src_rank != m.dst_rank) phase_of.emplace(std::pair{m.src_rank, m.dst_rank}, static_cast<int>(k));
    nphases = static_cast<int>(s.size());
  }
  // A pair of the plan in no phase (not expected in the paper's case) goes last.
  auto phase = [&](int from, int to) {
    const auto it = phase_of.find({from, to});
    return it == phase_of.end() ? nphases : it->second;
  };
  send_.assign(static_cast<size_t>(nphases + 1), -1);
  recv_.assign(static_cast<size_t>(nphases + 1), {});
  for (size_t i = 0; i < p.rp.sends.size(); ++i) {
    int& slot = send_[static_cast<size_t>(phase(p.rank, p.rp.sends[i].peer))];
    REDIST_ASSERT(slot < 0, "paper001: two messages of rank ", p.rank, " in one phase");
    slot = static_cast<int>(i);
  }
  for (size_t i = 0; i < p.rp.receives.size(); ++i)
    recv_[static_cast<size_t>(phase(p.rp.receives[i].peer, p.rank))].push_back(static_cast<int>(i));
  for (const auto& r : recv_) max_receives_ = std::max(max_receives_, static_cast<int>(r.size()));
  detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, &max_receives_, 1, MPI_INT, MPI_MAX, p.comm), "MPI_Allreduce", p.comm);
  if (send_.back() < 0 && recv_.back().empty()) send_.pop_back(), recv_.pop_back();
  int n = static_cast<int>(send_.size());  // the same phase count everywhere
  detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, &n, 1, MPI_INT, MPI_MAX, p.comm), "MPI_Allreduce", p.comm);
  send_.resize(static_cast<size_t>(n), -1);
  recv_.resize(static_cast<size_t>(n));
}

void PaperPhases::run(const void* src, void* dst) {
  detail::PlanCore& p = detail::PlanAccess::core(plan_);
  const void* sp[1] = {src};
  void* dp[1] = {dst};
  const detail::SrcBlocks s{sp};
  const detail::DstBlocks d{dp};
  std::byte* sbuf = p.send_scratch();
  std::byte* rbuf = p.recv_scratch();
  detail::copy_locals(p, s, d);
  std::vector<MPI_Request> req;
  for (size_t k = 0; k < send_.size(); ++k) {
    req.clear();
    for (int ri : recv_[k]) {
      const PeerPlan& q = p.rp.receives[static_cast<size_t>(ri)];
      req.emplace_back();
      detail::check_mpi(MPI_Irecv(rbuf + p.recv_offset[ri], static_cast<int>(q.bytes), MPI_BYTE, q.peer, kTag, p.comm,
                                  &req.back()),
                        "MPI_Irecv", p.comm);
    }
    if (const int si = send_[k]; si >= 0) {
      const PeerPlan& q = p.rp.sends[static_cast<size_t>(si)];
      detail::pack_peer(p, si, s, sbuf + p.send_offset[si]);
      req.emplace_back();
      detail::check_mpi(MPI_Isend(sbuf + p.send_offset[si], static_cast<int>(q.bytes), MPI_BYTE, q.peer, kTag, p.comm,
                                  &req.back()),
                        "MPI_Isend", p.comm);
    }
    detail::check_mpi(MPI_Waitall(static_cast<int>(req.size()), req.data(), MPI_STATUSES_IGNORE), "MPI_Waitall",
                      p.comm);
    for (int ri : recv_[k]) detail::unpack_peer(p, ri, rbuf + p.recv_offset[ri], d);
  }
}

}  // namespace redist::bench
