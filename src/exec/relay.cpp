// The relay engine (relay.hpp): routes of blocks -> messages per step, slots on
// each rank for the blocks that start, pass or end here.
#include "exec/relay.hpp"

#include <algorithm>
#include <cstring>
#include <tuple>
#include <unordered_map>

#include "cost/model.hpp"
#include "exec/groups_union.hpp"
#include "exec/pack.hpp"
#include "mpi/agree.hpp"

namespace redist::detail {

namespace {
constexpr int kTag = 23;  // + step: per pair and step one message, chunks in MPI's order
}

void Route::hops(size_t k, const RelayBlock& b, int T, std::vector<Hop>& out) const {
  int at = b.src;
  for (int t = 1; t <= T; ++t) {
    const int next = t == T ? b.dst : holder(b, t);
    if (next != at) out.push_back({k, t, at, next, at == b.src && (out.empty() || out.back().block != k)});
    at = next;
  }
}

std::vector<Route::Hop> route_hops(const Route& route, const std::vector<RelayBlock>& blocks, int T) {
  std::vector<Route::Hop> hops;
  hops.reserve(blocks.size() * 2);
  for (size_t k = 0; k < blocks.size(); ++k) route.hops(k, blocks[k], T, hops);
  return hops;
}

RelaySchedule relay_schedule(int rank, int T, const std::vector<RelayBlock>& blocks,
                             const std::vector<Route::Hop>& hops, const std::vector<size_t>& mine) {
  RelaySchedule r;
  std::unordered_map<size_t, index_t> slot;  // on this rank, of the blocks that touch it
  slot.reserve(mine.size());
  // Slots of the blocks that start here, in the order of their first message, so
  // that a first-hop message is one contiguous range (sent without a copy).
  std::vector<std::tuple<int, int, size_t>> first;  // (step, peer, block)
  for (size_t i : mine)
    if (hops[i].first && hops[i].from == rank) first.emplace_back(hops[i].step, hops[i].to, hops[i].block);
  std::sort(first.begin(), first.end());
  index_t top = 0;
  for (const auto& [t, peer, k] : first) {
    slot[k] = top;
    r.origins.emplace_back(k, top);
    top += blocks[k].bytes;
  }
  // This rank's moves by step, then peer, then block (mine is in block order):
  // only the steps with moves here are visited (hybrid has R + 1 steps).
  struct Move {
    int step, peer;
    bool out;
    size_t block;
    auto key() const { return std::tuple(step, !out, peer, block); }  // sends of a step first
  };
  std::vector<Move> moves;
  moves.reserve(mine.size());
  for (size_t i : mine) {
    const Route::Hop& h = hops[i];
    if (h.from == rank) moves.push_back({h.step, h.to, true, h.block});
    if (h.to == rank) moves.push_back({h.step, h.from, false, h.block});
  }
  std::sort(moves.begin(), moves.end(), [](const Move& x, const Move& y) { return x.key() < y.key(); });
  r.steps.assign(static_cast<size_t>(T), {});
  index_t area = 0;
  for (size_t i = 0; i < moves.size();) {
    const Move& head = moves[i];
    size_t end = i;  // one message: the same step, direction and peer
    while (end < moves.size() && moves[end].step == head.step && moves[end].out == head.out && moves[end].peer == head.peer)
      ++end;
    RelaySchedule::Step& st = r.steps[static_cast<size_t>(head.step - 1)];
    if (i == 0 || moves[i - 1].step != head.step) area = 0;
    if (head.out) {
      RelaySchedule::Message m{head.peer, slot.at(head.block), 0, false, {}};
      for (size_t j = i; j < end; ++j) {
        const size_t k = moves[j].block;
        const index_t at = slot.at(k);
        m.copied = m.copied || at != m.offset + m.bytes;
        m.pieces.push_back({at, 0, blocks[k].bytes});
        m.bytes += blocks[k].bytes;
      }
      if (m.copied) {
        r.forwarded_bytes += m.bytes;
        m.offset = area;
        for (RelaySchedule::Piece& c : m.pieces) c.at = area, area += c.bytes;
      } else {
        m.pieces.clear();
      }
      r.send_area_bytes = std::max(r.send_area_bytes, area);
      if (m.bytes > 0) st.sends.push_back(std::move(m));
    } else {
      RelaySchedule::Message m{head.peer, top, 0, false, {}};
      for (size_t j = i; j < end; ++j) {
        const size_t k = moves[j].block;
        slot[k] = top;
        top += blocks[k].bytes;
        m.bytes += blocks[k].bytes;
        if (blocks[k].dst == rank) st.finals.push_back({k, slot[k]});
      }
      if (m.bytes > 0) st.receives.push_back(std::move(m));
    }
    i = end;
  }
  r.slot_bytes = top;
  return r;
}

std::vector<RouteCounts> relay_counts(const std::vector<RelayBlock>& blocks, const RelayGroups& g,
                                     const Machine* machine) {
  std::vector<RouteCounts> all;
  const size_t P = static_cast<size_t>(g.size);
  RouteCounts direct{"p2p", 1, std::vector<RelayCounts>(P)};
  for (const RelayBlock& b : blocks) {
    RelayCounts &s = direct.ranks[static_cast<size_t>(b.src)], &d = direct.ranks[static_cast<size_t>(b.dst)];
    ++s.messages_sent, s.bytes_sent += b.bytes, s.buffer_bytes += b.bytes;
    ++d.messages_received, d.bytes_received += b.bytes, d.buffer_bytes += b.bytes;
  }
  all.push_back(std::move(direct));
  for (const StrategyEntry& e : registry()) {
    if (!e.route) continue;
    std::unique_ptr<Route> route = e.route(g);
    const int T = route->steps(blocks);
    const std::vector<Route::Hop> hops = route_hops(*route, blocks, T);
    std::vector<std::vector<size_t>> by_rank(P);
    for (size_t i = 0; i < hops.size(); ++i) {
      by_rank[static_cast<size_t>(hops[i].from)].push_back(i);
      by_rank[static_cast<size_t>(hops[i].to)].push_back(i);
    }
    RouteCounts rc{e.name, T, std::vector<RelayCounts>(P)};
    for (size_t r = 0; r < P; ++r) {
      if (by_rank[r].empty()) continue;
      const RelaySchedule s = relay_schedule(static_cast<int>(r), T, blocks, hops, by_rank[r]);
      RelayCounts& c = rc.ranks[r];
      for (const RelaySchedule::Step& st : s.steps) {
        c.messages_sent += static_cast<index_t>(st.sends.size());
        c.messages_received += static_cast<index_t>(st.receives.size());
        double out = 0, in = 0;  // as predict_schedule charges a step
        for (const RelaySchedule::Message& m : st.sends) {
          c.bytes_sent += m.bytes;
          if (machine) out += machine->exchange_time(static_cast<double>(m.bytes));
        }
        for (const RelaySchedule::Message& m : st.receives) {
          c.bytes_received += m.bytes;
          if (machine) in += machine->exchange_time(static_cast<double>(m.bytes));
        }
        c.comm_seconds += std::max(out, in);
      }
      c.buffer_bytes = s.slot_bytes + s.send_area_bytes;
      c.forwarded_bytes = s.forwarded_bytes;
    }
    all.push_back(std::move(rc));
  }
  return all;
}

RelayGroups union_groups(int P, int S, bool overlap) {
  RelayGroups g{P, {}, {}};
  for (int r = 0; r < P; ++r) {
    if (S == 0 || r < S) g.senders.push_back(r);
    if (S == 0 || overlap || r >= S) g.receivers.push_back(r);
  }
  return g;
}

std::vector<RouteCounts> group_route_counts(const Layout& src, const Layout& dst, const Region& region, int P, int S,
                                            bool overlap) {
  const RelayGroups g = union_groups(P, S, overlap);
  const Layout udst = S > 0 ? renumber_to_union(dst, g.receivers, P, dst.spec()) : dst;
  std::vector<RelayBlock> blocks;
  for (int r = 0; r < P; ++r)
    for (const PeerPlan& q : plan_rank(src, udst, region, r, P).sends) blocks.push_back({r, q.peer, q.bytes});
  return relay_counts(blocks, g);
}

RelayGroups relay_groups(const PlanCore& p) { return {p.size, p.group_senders(), p.group_receivers()}; }

// Collective, once: every rank's blocks (its rp.sends), then this rank's part of
// every step.
void Relay::schedule() {
  if (scheduled_) return;
  scheduled_ = true;
  PlanCore& p = plan_;
  std::vector<index_t> mine;
  for (const PeerPlan& q : p.rp.sends) mine.insert(mine.end(), {index_t{p.rank}, index_t{q.peer}, q.bytes});
  int n = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<size_t>(p.size)), displs(static_cast<size_t>(p.size) + 1, 0);
  check_mpi(MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, p.comm), "MPI_Allgather", p.comm);
  for (int r = 0; r < p.size; ++r) displs[r + 1] = displs[r] + counts[r];
  std::vector<index_t> flat(static_cast<size_t>(displs[p.size]));
  check_mpi(MPI_Allgatherv(mine.data(), n, MPI_INT64_T, flat.data(), counts.data(), displs.data(), MPI_INT64_T, p.comm),
            "MPI_Allgatherv", p.comm);
  std::vector<RelayBlock> blocks;
  for (size_t i = 0; i < flat.size(); i += 3)
    blocks.push_back({static_cast<int>(flat[i]), static_cast<int>(flat[i + 1]), flat[i + 2]});

  const int T = route_->steps(blocks);
  const std::vector<Route::Hop> hops = route_hops(*route_, blocks, T);
  std::vector<size_t> touching;
  for (size_t i = 0; i < hops.size(); ++i)
    if (hops[i].from == p.rank || hops[i].to == p.rank) touching.push_back(i);
  s_ = relay_schedule(p.rank, T, blocks, hops, touching);
  auto index_of = [](const std::vector<PeerPlan>& peers, int peer) {
    int i = 0;
    while (peers[static_cast<size_t>(i)].peer != peer) ++i;
    return i;
  };
  for (const auto& [k, at] : s_.origins) origins_.emplace_back(index_of(p.rp.sends, blocks[k].dst), at);
  for (const RelaySchedule::Step& st : s_.steps) {
    finals_.emplace_back();
    for (const RelaySchedule::Final& f : st.finals) finals_.back().emplace_back(index_of(p.rp.receives, blocks[f.block].src), f.slot);
  }
}

index_t Relay::buffer_bytes() {
  schedule();
  return s_.slot_bytes + s_.send_area_bytes;
}

void Relay::setup() {
  schedule();
  PlanCore& p = plan_;
  slots_.reset(new std::byte[static_cast<size_t>(std::max<index_t>(s_.slot_bytes, 1))]);
  send_area_.reset(new std::byte[static_cast<size_t>(std::max<index_t>(s_.send_area_bytes, 1))]);
  p.buffer_bytes += s_.slot_bytes + s_.send_area_bytes;  // Plan::buffer_bytes: every buffer the plan holds
  p.buffer_peak = std::max(p.buffer_peak, p.buffer_bytes);
  size_t most = 0;
  for (const RelaySchedule::Step& st : s_.steps) {
    size_t c = 0;
    for (const auto* ms : {&st.sends, &st.receives})
      for (const RelaySchedule::Message& m : *ms)
        c += static_cast<size_t>((m.bytes + p.options.max_message_bytes - 1) / p.options.max_message_bytes);
    most = std::max(most, c);
    messages_sent_ += static_cast<index_t>(st.sends.size());
  }
  requests_.resize(most);
  status_.resize(most);
  request_peer_.resize(most);
  ready_ = true;
}

void Relay::run(const SrcBlocks& src, const DstBlocks& dst) {
  if (!ready_) setup();
  PlanCore& p = plan_;
  std::byte* slots = slots_.get();
  for (const auto& [i, at] : origins_) pack_peer(p, i, src, slots + at);
  copy_locals(p, src, dst);
  const index_t max = p.options.max_message_bytes;
  for (size_t t = 0; t < s_.steps.size(); ++t) {
    const RelaySchedule::Step& st = s_.steps[t];
    const int tag = kTag + static_cast<int>(t);
    int nreq = 0;
    auto post = [&](const RelaySchedule::Message& m, bool send, std::byte* base) {
      for (index_t off = 0; off < m.bytes; off += max) {
        const int bytes = static_cast<int>(std::min(max, m.bytes - off));
        request_peer_[static_cast<size_t>(nreq)] = send ? m.peer : -1 - m.peer;
        if (send)
          check_mpi(MPI_Isend(base + m.offset + off, bytes, MPI_BYTE, m.peer, tag, p.comm, &requests_[static_cast<size_t>(nreq)]),
                    "MPI_Isend", p.comm, "send to", m.peer);
        else
          check_mpi(MPI_Irecv(base + m.offset + off, bytes, MPI_BYTE, m.peer, tag, p.comm, &requests_[static_cast<size_t>(nreq)]),
                    "MPI_Irecv", p.comm, "receive from", m.peer);
        ++nreq;
      }
    };
    for (const RelaySchedule::Message& m : st.receives) post(m, false, slots);
    for (const RelaySchedule::Message& m : st.sends) {
      if (m.copied)
        for (const RelaySchedule::Piece& c : m.pieces) std::memcpy(send_area_.get() + c.at, slots + c.slot, static_cast<size_t>(c.bytes));
      post(m, true, m.copied ? send_area_.get() : slots);
    }
    check_wait(MPI_Waitall(nreq, requests_.data(), status_.data()), "MPI_Waitall", p.comm, status_.data(), nreq, nullptr,
               [&](int i) {
                 const int q = request_peer_[static_cast<size_t>(i)];
                 return q >= 0 ? cat("send to rank ", q) : cat("receive from rank ", -1 - q);
               });
    for (const auto& [i, at] : finals_[t]) unpack_peer(p, i, slots + at, dst);
  }
}

Prediction Relay::predict_schedule(const Machine& m) {
  schedule();
  const PlanCore& p = plan_;
  Prediction pr;
  pr.memcpy = packed_copy_time(p.rp, rates(p.rp, m, true));
  if (m.bmemcpy > 0) pr.memcpy += static_cast<double>(s_.forwarded_bytes) / m.bmemcpy;
  for (const RelaySchedule::Step& st : s_.steps) {
    double out = 0, in = 0;
    for (const RelaySchedule::Message& x : st.sends) out += m.exchange_time(static_cast<double>(x.bytes));
    for (const RelaySchedule::Message& x : st.receives) in += m.exchange_time(static_cast<double>(x.bytes));
    pr.comm += std::max(out, in);
  }
  return pr;
}

Prediction relay_prediction(const RankPlan& rp, const Machine& m, double hops, index_t messages) {
  index_t out = 0, in = 0;
  for (const PeerPlan& q : rp.sends) out += q.bytes;
  for (const PeerPlan& q : rp.receives) in += q.bytes;
  const Rates rt = rates(rp, m, true);
  Prediction pr;
  if (out == 0 && in == 0) {  // nothing remote here: only the local copies
    pr.memcpy = local_copy_time(rp, rt);
    return pr;
  }
  const double v = static_cast<double>(std::max(out, in));
  pr.comm = static_cast<double>(messages) * m.exchange_time(0) + hops * (m.exchange_time(v) - m.exchange_time(0));
  pr.memcpy = packed_copy_time(rp, rt) * hops;
  return pr;
}

}  // namespace redist::detail
