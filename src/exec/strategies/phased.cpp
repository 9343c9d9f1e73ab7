// `phased`: contention-free rounds (paper 001, Walker & Otto, secs. 2.2-2.3) for
// any plan. When the layouts are the paper's case (1-D block-cyclic r -> K*r or
// K*r -> r, schedule::paper_rounds) the rounds are the paper's optimal schedule
// (K <= P: K phases, each a permutation; K > P: every pair, the P - 1 phases of
// schedule::shift_rounds). Otherwise they are a
// proper edge colouring of the plan's bipartite sender/receiver graph (one edge
// per pair of ranks that exchange data, local pieces aside) with exactly D
// colours, D its maximum degree (Konig): in each round every rank sends at most
// one message and receives at most one. The graph is gathered once, when the
// plan first runs the strategy; every rank colours it the same way
// (schedule::colour_edges is deterministic).
//
// Variants (registered under their own names, to compare, as in the paper's Fig. 13):
//  - `phased`: synchronized, non-blocking receive (Fig. 4 with a known source):
//    per round post the receive, pack and send, wait, unpack. Extra memory: the
//    largest message sent plus the largest received, not the whole volume; under
//    a memory budget (Options::max_buffer_bytes) each message goes as pieces of
//    half the budget (budget_piece, plan/pieces.hpp), so the budget holds.
//  - `phased_sendrecv`: one MPI_Sendrecv per round (Fig. 12, per piece); the same memory.
//  - `phased_unsync`: every receive posted first, sends in round order, unpack as
//    each arrives (Fig. 5): the whole volume buffered, no waiting between rounds.
// Messages above Options::max_message_bytes go as several within their round.
#include <algorithm>

#include "cost/model.hpp"
#include "exec/datatypes.hpp"
#include "exec/pack.hpp"
#include "mpi/agree.hpp"
#include "plan/schedule.hpp"

namespace redist::detail {
namespace {

constexpr int kTag = 11;  // one tag: each pair of ranks exchanges in one round only

enum class Variant { synchronized, sendrecv, unsynchronized, datatypes };

// This rank's part of the rounds: in round c it sends rp.sends[send[c]] and
// receives rp.receives[recv[c]] (-1: nothing).
struct Rounds {
  std::vector<int> send, recv;
};

int peer_index(const std::vector<PeerPlan>& peers, int peer) {
  const auto it = std::find_if(peers.begin(), peers.end(), [peer](const PeerPlan& q) { return q.peer == peer; });
  return it == peers.end() ? -1 : static_cast<int>(it - peers.begin());
}

// This rank's part of the paper's phases; false when a message of the plan is
// in none of them or in two (not expected: paper_rounds covers every pair once).
bool paper_part(const PlanCore& p, const schedule::PairPhases& phases, Rounds& rd) {
  rd = Rounds{std::vector<int>(phases.size(), -1), std::vector<int>(phases.size(), -1)};
  std::vector<char> sent(p.rp.sends.size(), 0), received(p.rp.receives.size(), 0);
  for (size_t k = 0; k < phases.size(); ++k)
    for (auto [a, b] : phases[k]) {
      if (a == p.rank && (rd.send[k] = peer_index(p.rp.sends, b)) >= 0 && sent[rd.send[k]]++) return false;
      if (b == p.rank && (rd.recv[k] = peer_index(p.rp.receives, a)) >= 0 && received[rd.recv[k]]++) return false;
    }
  return std::all_of(sent.begin(), sent.end(), [](char c) { return c == 1; }) &&
         std::all_of(received.begin(), received.end(), [](char c) { return c == 1; });
}

// Collective. The paper's case (schedule::paper_rounds, the same decision on
// every rank: it depends on the layouts only, and the ranks agree that it covers
// their messages) takes the paper's optimal schedule; any other plan gathers
// every rank's send peers and colours the graph.
Rounds make_rounds(const PlanCore& p) {
  if (const schedule::PairPhases phases = schedule::paper_rounds(p.src, p.dst, p.region, p.size); !phases.empty()) {
    Rounds rd;
    int ok = paper_part(p, phases, rd) ? 1 : 0;
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, p.comm), "MPI_Allreduce", p.comm);
    if (ok) return rd;
  }
  const int n = static_cast<int>(p.rp.sends.size());
  std::vector<int> counts(static_cast<size_t>(p.size)), displs(static_cast<size_t>(p.size));
  check_mpi(MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, p.comm), "MPI_Allgather", p.comm);
  int total = 0;
  for (int r = 0; r < p.size; ++r) displs[r] = total, total += counts[r];
  std::vector<int> mine(static_cast<size_t>(n)), peers(static_cast<size_t>(total));
  for (int i = 0; i < n; ++i) mine[i] = p.rp.sends[i].peer;
  check_mpi(MPI_Allgatherv(mine.data(), n, MPI_INT, peers.data(), counts.data(), displs.data(), MPI_INT, p.comm),
            "MPI_Allgatherv", p.comm);
  std::vector<std::pair<int, int>> edges(static_cast<size_t>(total));
  for (int r = 0; r < p.size; ++r)
    for (int i = 0; i < counts[r]; ++i) edges[displs[r] + i] = {r, peers[displs[r] + i]};
  const std::vector<int> colour = schedule::colour_edges(p.size, p.size, edges);
  const int D = schedule::max_degree(p.size, p.size, edges);
  Rounds rd{std::vector<int>(static_cast<size_t>(D), -1), std::vector<int>(static_cast<size_t>(D), -1)};
  for (int i = 0; i < n; ++i) rd.send[colour[displs[p.rank] + i]] = i;
  for (size_t e = 0; e < edges.size(); ++e) {
    if (edges[e].second != p.rank) continue;
    rd.recv[colour[e]] = peer_index(p.rp.receives, edges[e].first);
    REDIST_ASSERT(rd.recv[colour[e]] >= 0, "rank ", p.rank, " has no receive from ", edges[e].first);
  }
  return rd;
}

index_t largest(const std::vector<PeerPlan>& peers) {
  index_t m = 0;
  for (const PeerPlan& q : peers) m = std::max(m, q.bytes);
  return m;
}

// The synchronized variants' buffers: one packed message each way, each at most
// one piece under a budget. A message that is one run of storage moves in place
// (under Options::arithmetic, only sent ones), so it takes none.
index_t one_message_each_way(const RankPlan& rp, index_t budget, bool arithmetic) {
  const index_t piece = budget_piece(budget, rp.elem_size);
  return std::min(piece, largest_packed_message(rp.sends)) +
         std::min(piece, largest_packed_message(rp.receives, arithmetic));
}

template <Variant V>
class Phased final : public Strategy {
 public:
  explicit Phased(PlanCore& p) : Strategy(p), rounds_(make_rounds(p)) {
    if constexpr (V == Variant::datatypes) {
      requests_.resize(2);
    } else if constexpr (V != Variant::unsynchronized) {
      const index_t max = p.options.max_message_bytes;
      const index_t chunks = (std::min(piece_, largest(p.rp.sends)) + max - 1) / max +
                             (std::min(piece_, largest(p.rp.receives)) + max - 1) / max;
      requests_.resize(static_cast<size_t>(chunks));
    } else {
      requests_.resize(p.rp.sends.size() + p.rp.receives.size());
      done_.resize(p.rp.receives.size());
    }
    status_.resize(requests_.size());
    if constexpr (V != Variant::datatypes) {
      send_run_ = send_runs(p), recv_run_ = receive_runs(p);
      if constexpr (V == Variant::unsynchronized) {
        send_at_ = packed_offsets(p.rp.sends, send_run_, send_packed_);
        recv_at_ = packed_offsets(p.rp.receives, recv_run_, recv_packed_);
      } else {
        // extra_bytes' figures (one_message_each_way)
        send_packed_ = largest_packed_message(p.rp.sends);
        recv_packed_ = largest_packed_message(p.rp.receives, arithmetic_of(p) != nullptr);
      }
    }
  }

  void run(const SrcBlocks& src, const DstBlocks& dst) override {
    if constexpr (V == Variant::unsynchronized)
      run_unsynchronized(src, dst);
    else if constexpr (V == Variant::datatypes)
      run_datatypes(src, dst);
    else
      run_rounds(src, dst);
  }

 private:
  // Per round: one message each way, as pieces of at most `piece_` bytes (the
  // memory budget's, budget_piece; one piece without a budget): piece j of the
  // message sent pairs with piece j of the one received, each packed, moved and
  // unpacked before the next, so the buffers hold one piece each way.
  void run_rounds(const SrcBlocks& src, const DstBlocks& dst) {
    PlanCore& p = plan_;
    const index_t max = p.options.max_message_bytes;
    // The plan's (kept after an MPI error: Plan abandons them); one-run messages take none.
    std::byte* const sbuf = p.round_send(send_packed_, recv_packed_);
    std::byte* const rbuf = p.round_recv(send_packed_, recv_packed_);
    copy_locals(p, src, dst);
    for (size_t c = 0; c < rounds_.send.size(); ++c) {
      const int si = rounds_.send[c], ri = rounds_.recv[c];
      const index_t sall = si < 0 ? 0 : p.rp.sends[si].bytes, rall = ri < 0 ? 0 : p.rp.receives[ri].bytes;
      const int to = si < 0 ? MPI_PROC_NULL : p.rp.sends[si].peer;
      const int from = ri < 0 ? MPI_PROC_NULL : p.rp.receives[ri].peer;
      // A message that is one run of storage goes from the source, or into the
      // target, piece by piece as it is (exec/pack.hpp, message_out / message_in).
      const bool out_run = si >= 0 && send_run_[static_cast<size_t>(si)].block >= 0;
      const bool in_run = ri >= 0 && recv_run_[static_cast<size_t>(ri)].block >= 0;
      for (index_t at = 0; at < std::max(sall, rall); at += piece_) {
        const index_t sbytes = std::clamp<index_t>(sall - at, 0, piece_);
        const index_t rbytes = std::clamp<index_t>(rall - at, 0, piece_);
        const std::byte* out = sbuf;
        std::byte* in = rbuf;
        // A whole message (no budget, or one below it) as before: pack_peer / unpack_peer.
        if (out_run && sbytes > 0) out = message_out(p, si, src, send_run_[static_cast<size_t>(si)], nullptr) + at;
        else if (sbytes == sall && sall > 0) pack_peer(p, si, src, sbuf);
        else if (sbytes > 0) pack_peer_range(p, si, src, at, sbytes, sbuf);
        if (in_run && rbytes > 0) in = message_in(p, dst, recv_run_[static_cast<size_t>(ri)], nullptr) + at;
        exchange(out, sbytes, to, in, rbytes, from, max);
        if (in_run) continue;
        if (rbytes == rall && rall > 0) unpack_peer(p, ri, rbuf, dst);
        else if (rbytes > 0) unpack_peer_range(p, ri, rbuf, at, rbytes, dst);
      }
    }
  }

  // One piece each way (either may be empty), in MPI messages of at most `max` bytes.
  void exchange(const std::byte* sbuf, index_t sbytes, int to, std::byte* rbuf, index_t rbytes, int from,
                index_t max) {
    PlanCore& p = plan_;
    if constexpr (V == Variant::sendrecv) {
      // Both sides split their piece at the same max_message_bytes: chunk j pairs with chunk j.
      for (index_t off = 0; off < std::max(sbytes, rbytes); off += max) {
        const int sn = static_cast<int>(std::clamp<index_t>(sbytes - off, 0, max));
        const int rn = static_cast<int>(std::clamp<index_t>(rbytes - off, 0, max));
        MPI_Status st;
        check_mpi(MPI_Sendrecv(sbuf + std::min(off, sbytes), sn, MPI_BYTE, sn ? to : MPI_PROC_NULL, kTag,
                               rbuf + std::min(off, rbytes), rn, MPI_BYTE, rn ? from : MPI_PROC_NULL, kTag, p.comm,
                               &st),
                  "MPI_Sendrecv", p.comm, "exchange with", rn ? from : to);
      }
    } else {
      int nreq = 0;
      for (index_t off = 0; off < rbytes; off += max)
        check_mpi(MPI_Irecv(rbuf + off, static_cast<int>(std::min(max, rbytes - off)), MPI_BYTE, from, kTag, p.comm,
                            &requests_[nreq++]),
                  "MPI_Irecv", p.comm, "receive from", from);
      const int nrecv = nreq;
      for (index_t off = 0; off < sbytes; off += max)
        check_mpi(MPI_Isend(sbuf + off, static_cast<int>(std::min(max, sbytes - off)), MPI_BYTE, to, kTag, p.comm,
                            &requests_[nreq++]),
                  "MPI_Isend", p.comm, "send to", to);
      check_wait(MPI_Waitall(nreq, requests_.data(), status_.data()), "MPI_Waitall", p.comm, status_.data(), nreq,
                 nullptr, [&](int i) { return i < nrecv ? cat("receive from rank ", from) : cat("send to rank ", to); });
    }
  }

  // Fig. 2/3's derived datatypes, generalised: per peer one struct of the segments'
  // run types at absolute addresses (as alltoallw), so MPI reads the source and
  // writes the target in place: no packed buffer. Rebuilt when the block
  // pointers change. Per round: receive posted, send, wait.
  void run_datatypes(const SrcBlocks& src, const DstBlocks& dst) {
    PlanCore& p = plan_;
    const PeerTypes& types = types_.get(p, src, dst);
    copy_locals(p, src, dst);
    for (size_t c = 0; c < rounds_.send.size(); ++c) {
      const int si = rounds_.send[c], ri = rounds_.recv[c];
      int n = 0;
      if (ri >= 0)
        check_mpi(MPI_Irecv(MPI_BOTTOM, 1, types.recv[ri], p.rp.receives[ri].peer, kTag, p.comm, &requests_[n++]),
                  "MPI_Irecv", p.comm, "receive from", p.rp.receives[ri].peer);
      const int nrecv = n;
      if (si >= 0)
        check_mpi(MPI_Isend(MPI_BOTTOM, 1, types.send[si], p.rp.sends[si].peer, kTag, p.comm, &requests_[n++]),
                  "MPI_Isend", p.comm, "send to", p.rp.sends[si].peer);
      check_wait(MPI_Waitall(n, requests_.data(), status_.data()), "MPI_Waitall", p.comm, status_.data(), n, nullptr,
                 [&](int i) {
                   return i < nrecv ? cat("receive from rank ", p.rp.receives[ri].peer)
                                    : cat("send to rank ", p.rp.sends[si].peer);
                 });
    }
  }

  // Fig. 5: all receives posted, sends in round order; the plan's packed scratch.
  void run_unsynchronized(const SrcBlocks& src, const DstBlocks& dst) {
    PlanCore& p = plan_;
    const index_t max = p.options.max_message_bytes;
    std::byte* rbuf = p.recv_scratch(recv_packed_);  // one-run messages take none
    std::byte* sbuf = p.send_scratch(send_packed_);
    // One request per peer when messages fit max_message_bytes; else chunked requests.
    std::vector<MPI_Request>& req = requests_;
    req.clear();
    std::vector<int>& owner = done_;  // request -> receive peer index
    owner.clear();
    for (size_t i = 0; i < p.rp.receives.size(); ++i) {
      const PeerPlan& q = p.rp.receives[i];
      std::byte* in = message_in(p, dst, recv_run_[i], rbuf + recv_at_[i]);
      for (index_t off = 0; off < q.bytes; off += max) {
        req.emplace_back();
        owner.push_back(static_cast<int>(i));
        check_mpi(MPI_Irecv(in + off, static_cast<int>(std::min(max, q.bytes - off)), MPI_BYTE, q.peer, kTag, p.comm,
                            &req.back()),
                  "MPI_Irecv", p.comm, "receive from", q.peer);
      }
    }
    const size_t nr = req.size();
    for (int si : rounds_.send) {
      if (si < 0) continue;
      const PeerPlan& q = p.rp.sends[si];
      const auto k = static_cast<size_t>(si);
      const std::byte* out = message_out(p, si, src, send_run_[k], sbuf + send_at_[k]);
      for (index_t off = 0; off < q.bytes; off += max) {
        req.emplace_back();
        check_mpi(MPI_Isend(out + off, static_cast<int>(std::min(max, q.bytes - off)), MPI_BYTE, q.peer, kTag, p.comm,
                            &req.back()),
                  "MPI_Isend", p.comm, "send to", q.peer);
      }
    }
    copy_locals(p, src, dst);
    pending_.assign(p.rp.receives.size(), 0);
    for (int i : owner) ++pending_[i];
    status_.resize(req.size());
    index_.resize(nr);
    for (size_t left = nr; left > 0;) {
      int count = 0;
      check_wait(MPI_Waitsome(static_cast<int>(nr), req.data(), &count, index_.data(), status_.data()), "MPI_Waitsome",
                 p.comm, status_.data(), count, index_.data(),
                 [&](int i) { return cat("receive from rank ", p.rp.receives[owner[i]].peer); });
      for (int j = 0; j < count; ++j) {
        const int i = owner[index_[j]];
        if (--pending_[i] == 0 && recv_run_[static_cast<size_t>(i)].block < 0)
          unpack_peer(p, i, rbuf + recv_at_[static_cast<size_t>(i)], dst);
      }
      left -= static_cast<size_t>(count);
    }
    const int ns = static_cast<int>(req.size() - nr);
    check_wait(MPI_Waitall(ns, req.data() + nr, status_.data()), "MPI_Waitall", p.comm, status_.data(), ns, nullptr,
               [&](int) { return std::string("a send"); });
  }

  Rounds rounds_;
  index_t piece_ = budget_piece(plan_.options.max_buffer_bytes, plan_.rp.elem_size);
  std::vector<MPI_Request> requests_;
  std::vector<MPI_Status> status_;
  std::vector<int> done_, index_, pending_;
  PeerTypesAt types_{"phased_dt"};  // phased_dt: one per peer and direction, for the block pointers last seen
  std::vector<StorageRun> send_run_, recv_run_;  // per peer: a message that is one run of storage (not phased_dt)
  // The packed buffers, without one-run messages: the largest message each way
  // (phased, phased_sendrecv), or all of them, one after another at send_at_
  // (recv_at_) (phased_unsync).
  index_t send_packed_ = 0, recv_packed_ = 0;
  std::vector<index_t> send_at_, recv_at_;
};

// Messages of one side, largest first.
std::vector<index_t> sorted_bytes(const std::vector<PeerPlan>& peers) {
  std::vector<index_t> b;
  for (const PeerPlan& q : peers) b.push_back(q.bytes);
  std::sort(b.rbegin(), b.rend());
  return b;
}

// Synchronized rounds: each round costs the exchange of its larger message, and
// a round cannot start before its partner is there (t_m per round, T_runtime).
// The rank's own rounds pair its sends and receives largest with largest (the
// colouring is global; this is the rank's best case). T_memcpy as p2p.
// Under a memory budget each round's messages go as pieces of budget_piece bytes,
// piece j of both before piece j + 1 (run_rounds): an exchange and a wait for the
// partner per piece. Without a budget one piece per round.
Prediction predict_rounds_budget(const RankPlan& rp, const Machine& m, index_t budget) {
  const index_t piece = budget_piece(budget, rp.elem_size);
  const std::vector<index_t> s = sorted_bytes(rp.sends), r = sorted_bytes(rp.receives);
  Prediction p;
  index_t steps = 0;
  for (size_t c = 0; c < std::max(s.size(), r.size()); ++c) {
    const index_t bytes = std::max(c < s.size() ? s[c] : 0, c < r.size() ? r[c] : 0);
    const index_t whole = bytes / piece, rest = bytes % piece;
    p.comm += static_cast<double>(whole) * m.exchange_time(static_cast<double>(piece)) +
              (rest > 0 || whole == 0 ? m.exchange_time(static_cast<double>(rest)) : 0.0);
    steps += std::max<index_t>(1, whole + (rest > 0));
  }
  p.memcpy = p2p_copy_time(rp, rates(rp, m, true));
  p.runtime = m.startup * static_cast<double>(steps);
  return p;
}
Prediction predict_rounds(const RankPlan& rp, const Machine& m) { return predict_rounds_budget(rp, m, 0); }

// Unsynchronized: as p2p (every message in flight at once).
Prediction predict_unsync(const RankPlan& rp, const Machine& m) {
  Prediction p;
  p.comm = std::max(message_time(rp.sends, m), message_time(rp.receives, m));
  p.memcpy = p2p_copy_time(rp, rates(rp, m, true));
  return p;
}

// Rounds as predict_rounds, plus the datatype engine on both sides (as alltoallw); no packing.
Prediction predict_datatypes(const RankPlan& rp, const Machine& m) {
  Prediction p = predict_rounds(rp, m);
  const Rates rt = rates(rp, m, true);
  p.comm +=
      datatype_engine_time(rp.sends, rp.elem_size, rt, m) + datatype_engine_time(rp.receives, rp.elem_size, rt, m);
  p.memcpy = local_copy_time(rp, rt);
  return p;
}

}  // namespace

StrategyEntry phased_strategy() {
  StrategyEntry e = entry<Phased<Variant::synchronized>>(
      "phased", "contention-free rounds (edge colouring): per round one receive posted, one send, wait; "
                "buffers one message each way", predict_rounds);
  e.extra_bytes = one_message_each_way;
  e.predict_budget = predict_rounds_budget;
  e.arithmetic = true;
  return e;
}
StrategyEntry phased_sendrecv_strategy() {
  StrategyEntry e = entry<Phased<Variant::sendrecv>>(
      "phased_sendrecv", "contention-free rounds, one MPI_Sendrecv per round", predict_rounds);
  e.extra_bytes = one_message_each_way;
  e.predict_budget = predict_rounds_budget;
  e.arithmetic = true;
  return e;
}
StrategyEntry phased_unsync_strategy() {
  StrategyEntry e = entry<Phased<Variant::unsynchronized>>(
      "phased_unsync", "every receive posted, sends in contention-free round order, whole volume buffered",
      predict_unsync);
  e.arithmetic = true;
  e.extra_bytes = [](const RankPlan& rp, index_t, bool arithmetic) {  // as p2p's
    return p2p_packed_bytes(rp, arithmetic);
  };
  return e;
}

}  // namespace redist::detail

namespace redist::detail {
StrategyEntry phased_dt_strategy() {
  StrategyEntry e = entry<Phased<Variant::datatypes>>(
      "phased_dt", "contention-free rounds, data moved by derived datatypes in place (no packed buffer)",
      predict_datatypes);
  e.extra_bytes = [](const RankPlan&, index_t, bool) { return index_t{0}; };
  return e;
}
}  // namespace redist::detail
