// The relay engine (relay.hpp): routes of blocks -> messages per step, slots on
// each rank for the blocks that start, pass or end here.
#include "exec/relay.hpp"

#include <algorithm>
#include <cstring>
#include <map>

#include "cost/model.hpp"
#include "exec/pack.hpp"
#include "mpi/agree.hpp"

namespace redist::detail {

namespace {
constexpr int kTag = 23;  // + step: per pair and step one message, chunks in MPI's order
}

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

  const int T = steps(blocks);
  const size_t nb = blocks.size();
  // where[k]: block k's holder before the current step; on this rank, slot[k].
  std::vector<int> where(nb);
  std::vector<index_t> slot(nb, -1);
  for (size_t k = 0; k < nb; ++k) where[k] = blocks[k].src;
  auto holder_after = [&](size_t k, int t) { return t == T ? blocks[k].dst : holder(blocks[k], t); };

  // Slots of the blocks that start here, in the order of their first message, so
  // that a first-hop message is one contiguous range (sent without a copy).
  std::vector<std::tuple<int, int, size_t>> first;  // (step, peer, block)
  for (size_t k = 0; k < nb; ++k) {
    if (blocks[k].src != p.rank) continue;
    int t = 1;
    while (t < T && holder_after(k, t) == blocks[k].src) ++t;
    first.emplace_back(t, holder_after(k, t), k);
  }
  std::sort(first.begin(), first.end());
  index_t top = 0;
  for (const auto& [t, peer, k] : first) {
    slot[k] = top;
    top += blocks[k].bytes;
    int i = 0;
    while (p.rp.sends[static_cast<size_t>(i)].peer != blocks[k].dst) ++i;
    origins_.emplace_back(i, slot[k]);
  }

  steps_.assign(static_cast<size_t>(T), {});
  index_t send_area = 0;
  for (int t = 1; t <= T; ++t) {
    Step& st = steps_[static_cast<size_t>(t - 1)];
    std::map<int, std::vector<size_t>> out, in;  // peer -> blocks, in block order
    std::vector<int> next(nb);
    for (size_t k = 0; k < nb; ++k) {
      next[k] = holder_after(k, t);
      if (next[k] == where[k]) continue;
      if (where[k] == p.rank) out[next[k]].push_back(k);
      if (next[k] == p.rank) in[where[k]].push_back(k);
    }
    index_t area = 0;
    for (const auto& [peer, ks] : out) {
      Message m{peer, slot[ks[0]], 0, false, {}};
      for (size_t k : ks) {
        m.copied = m.copied || slot[k] != m.offset + m.bytes;
        m.pieces.push_back({slot[k], 0, blocks[k].bytes});
        m.bytes += blocks[k].bytes;
      }
      if (m.copied) {
        forwarded_bytes_ += m.bytes;
        m.offset = area;
        for (Piece& c : m.pieces) c.at = area, area += c.bytes;
      } else {
        m.pieces.clear();
      }
      if (m.bytes > 0) st.sends.push_back(std::move(m));
    }
    send_area = std::max(send_area, area);
    for (const auto& [peer, ks] : in) {
      Message m{peer, top, 0, false, {}};
      for (size_t k : ks) {
        slot[k] = top;
        top += blocks[k].bytes;
        m.bytes += blocks[k].bytes;
        if (blocks[k].dst == p.rank) {
          int j = 0;
          while (p.rp.receives[static_cast<size_t>(j)].peer != blocks[k].src) ++j;
          st.finals.push_back({j, slot[k]});
        }
      }
      if (m.bytes > 0) st.receives.push_back(std::move(m));
    }
    where.swap(next);
  }
  slot_bytes_ = top;
  send_area_bytes_ = send_area;
}

void Relay::setup() {
  schedule();
  PlanCore& p = plan_;
  slots_.reset(new std::byte[static_cast<size_t>(std::max<index_t>(slot_bytes_, 1))]);
  send_area_.reset(new std::byte[static_cast<size_t>(std::max<index_t>(send_area_bytes_, 1))]);
  size_t most = 0;
  for (const Step& st : steps_) {
    size_t c = 0;
    for (const auto* ms : {&st.sends, &st.receives})
      for (const Message& m : *ms) c += static_cast<size_t>((m.bytes + p.options.max_message_bytes - 1) / p.options.max_message_bytes);
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
  for (size_t t = 0; t < steps_.size(); ++t) {
    const Step& st = steps_[t];
    const int tag = kTag + static_cast<int>(t);
    int nreq = 0;
    auto post = [&](const Message& m, bool send, std::byte* base) {
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
    for (const Message& m : st.receives) post(m, false, slots);
    for (const Message& m : st.sends) {
      if (m.copied)
        for (const Piece& c : m.pieces) std::memcpy(send_area_.get() + c.at, slots + c.slot, static_cast<size_t>(c.bytes));
      post(m, true, m.copied ? send_area_.get() : slots);
    }
    check_wait(MPI_Waitall(nreq, requests_.data(), status_.data()), "MPI_Waitall", p.comm, status_.data(), nreq, nullptr,
               [&](int i) {
                 const int q = request_peer_[static_cast<size_t>(i)];
                 return q >= 0 ? cat("send to rank ", q) : cat("receive from rank ", -1 - q);
               });
    for (const Final& f : st.finals) unpack_peer(p, f.receive_index, slots + f.slot, dst);
  }
}

Prediction Relay::predict_schedule(const Machine& m) {
  schedule();
  const PlanCore& p = plan_;
  Prediction pr;
  pr.memcpy = packed_copy_time(p.rp, rates(p.rp, m, true));
  if (m.bmemcpy > 0) pr.memcpy += static_cast<double>(forwarded_bytes_) / m.bmemcpy;
  for (const Step& st : steps_) {
    double out = 0, in = 0;
    for (const Message& x : st.sends) out += m.exchange_time(static_cast<double>(x.bytes));
    for (const Message& x : st.receives) in += m.exchange_time(static_cast<double>(x.bytes));
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
