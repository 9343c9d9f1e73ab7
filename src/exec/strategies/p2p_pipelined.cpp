// `p2p_pipelined`: one message per peer, as p2p, but streamed as pieces of one slot
// (256 KB) through 4 slots per peer and direction. The sender packs a piece into
// a slot and sends it, and packs its next piece into a slot once that slot's send
// is done; the receiver unpacks each piece as it lands and posts the receive of
// its next piece into the slot it emptied. So packing, the transfer and
// unpacking overlap (p2p packs a whole message before its first byte leaves, and
// unpacks after its last arrives), and the slots can stay in the caches between
// the copies, as shm's rings do on a node, but through MPI (across nodes too). A
// message that is one run of storage (storage_run) goes in pieces straight from
// the source or into the target. docs/strategies.md, "Pipelined messages".
//
// Pieces are whole elements (a peer's last one shorter), at most
// Options::max_message_bytes (unless that is below one element), the same on
// both sides: their size is agreed when the strategy is made. Under a memory
// budget (Options::max_buffer_bytes) they shrink until every rank's slots fit
// (down to one element each), so the strategy fits budgets far below one
// message without rounds. The n-th receive
// posted for a peer matches its n-th send (MPI's order per pair and tag), which
// is piece n. Every rank posts its first receives before any send and then
// serves whichever of its requests completes, so no rank waits on a peer that
// waits on it; its local copies run a part at a time while none has completed.
// Not threaded (Options::copy_threads): the overlap is between ranks.
#include <algorithm>
#include <cstdlib>

#include "cost/model.hpp"
#include "exec/pack.hpp"
#include "exec/threads.hpp"
#include "kernels/copy.hpp"
#include "mpi/agree.hpp"

namespace redist::detail {
namespace {

constexpr int kTag = 7;
constexpr index_t kSlots = 4;                       // pieces in flight per peer and direction
constexpr index_t kSlotBytes = index_t{256} << 10;  // one piece; $REDIST_P2P_PIPELINED_SLOT_BYTES (tests)

// This rank's wish for the piece size (the strategy takes the smallest over
// ranks): kSlotBytes or $REDIST_P2P_PIPELINED_SLOT_BYTES, at most max_message_bytes,
// whole elements, at least one. A value that is no size: `err` (it was read as 1
// byte, pieces of one element).
index_t wanted_slot(index_t es, index_t max_message, std::string& err) {
  index_t s = env_number("REDIST_P2P_PIPELINED_SLOT_BYTES", kSlotBytes, 1, index_t{1} << 40,
                         "p2p_pipelined's piece size in bytes", err);
  s = std::min(s, max_message);
  return std::max(es, s / es * es);
}

// One peer's message in one direction: `pieces` pieces of `slot` bytes (the last
// shorter), through min(kSlots, pieces) slots (none when it moves in place).
struct Stream {
  int peer_index = 0;  // into rp.sends or rp.receives
  index_t bytes = 0, pieces = 0, slot = 0;
  index_t next = 0;       // the next piece to post
  index_t slot_at = 0;    // its slots' offset in the plan's packed buffer
  int first_request = 0;  // its requests: one per slot, consecutive
  bool in_place = false;  // one run of storage: pieces straight from the source / into the target
  bool stream = false;    // unpack with streaming stores (a large message)
  index_t slots() const { return std::min(kSlots, pieces); }
  index_t piece_bytes(index_t j) const { return std::min(slot, bytes - j * slot); }
};

// The slots of the messages this rank packs or unpacks (packed_messages,
// cost/model.hpp) with pieces of `slot` bytes: each message up to
// kSlots pieces (what the strategy allocates).
index_t slot_buffers(const std::vector<index_t>& messages, index_t slot) {
  index_t n = 0;
  for (index_t b : messages) n += std::min(b, kSlots * slot);
  return n;
}

// The largest piece (whole elements, at most kSlotBytes) whose slots fit this
// rank's memory budget (0: none); one element where none fits (the strategy
// then needs more than the budget, and make_plan says so).
index_t budget_slot(const std::vector<index_t>& messages, index_t es, index_t budget) {
  index_t hi = std::max(es, kSlotBytes / es * es);
  if (budget <= 0 || slot_buffers(messages, hi) <= budget) return hi;
  index_t lo = es;
  if (slot_buffers(messages, lo) > budget) return lo;
  while (hi - lo > es) {  // slot_buffers(lo) <= budget < slot_buffers(hi)
    const index_t mid = std::max(lo + es, (lo + (hi - lo) / 2) / es * es);
    (slot_buffers(messages, mid) <= budget ? lo : hi) = mid;
  }
  return lo;
}

class P2pPipelined final : public Strategy {
 public:
  explicit P2pPipelined(PlanCore& p) : Strategy(p) {}

  // Collective: agrees on the piece size (the smallest any rank wants: under a
  // memory budget, small enough for its slots to fit), then lays out the streams
  // and their slots.
  bool available() override {
    PlanCore& p = plan_;
    const index_t budgeted =
        budget_slot(packed_messages(p.rp, arithmetic_of(p) != nullptr), p.rp.elem_size, p.options.max_buffer_bytes);
    std::string err;
    index_t slot = std::min(wanted_slot(p.rp.elem_size, p.options.max_message_bytes, err), budgeted);
    agree(p.comm, err);  // a bad value on one rank: the same error on every rank
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &slot, 1, MPI_INT64_T, MPI_MIN, p.comm), "MPI_Allreduce", p.comm);
    slot_ = slot;
    const std::vector<StorageRun> in = receive_runs(p), out = send_runs(p);
    int requests = 0;
    auto lay_out = [&](const std::vector<PeerPlan>& peers, const std::vector<StorageRun>& runs,
                       std::vector<Stream>& streams, index_t& slot_bytes) {
      for (size_t i = 0; i < peers.size(); ++i) {
        if (peers[i].bytes == 0) continue;
        Stream s;
        s.peer_index = static_cast<int>(i);
        s.bytes = peers[i].bytes;
        s.slot = std::min(slot, s.bytes);
        s.pieces = (s.bytes + slot - 1) / slot;
        s.in_place = runs[i].block >= 0;
        s.stream = stream_for(s.bytes);
        s.first_request = requests;
        requests += static_cast<int>(s.slots());
        if (!s.in_place) s.slot_at = slot_bytes, slot_bytes += std::min(s.slots() * s.slot, s.bytes);
        streams.push_back(s);
      }
    };
    lay_out(p.rp.receives, in, recv_, recv_slot_bytes_);
    lay_out(p.rp.sends, out, send_, send_slot_bytes_);
    recv_run_ = in, send_run_ = out;
    requests_.assign(static_cast<size_t>(requests), MPI_REQUEST_NULL);
    owner_.resize(static_cast<size_t>(requests));
    piece_.resize(static_cast<size_t>(requests));
    for (size_t k = 0; k < recv_.size() + send_.size(); ++k) {
      const Stream& s = k < recv_.size() ? recv_[k] : send_[k - recv_.size()];
      for (index_t j = 0; j < s.slots(); ++j) owner_[static_cast<size_t>(s.first_request + j)] = static_cast<int>(k);
    }
    done_.resize(requests_.size());
    status_.resize(requests_.size());
    return true;
  }

  void run(const SrcBlocks& src, const DstBlocks& dst) override {
    PlanCore& p = plan_;
    rbuf_ = p.recv_scratch(recv_slot_bytes_);
    sbuf_ = p.send_scratch(send_slot_bytes_);
    for (Stream& s : recv_) {
      s.next = 0;
      for (index_t k = 0; k < s.slots(); ++k) post_receive(s, static_cast<size_t>(s.first_request + k), dst);
    }
    for (Stream& s : send_) {
      s.next = 0;
      for (index_t k = 0; k < s.slots(); ++k) post_send(s, static_cast<size_t>(s.first_request + k), src);
    }
    // The local copies fill the waits, 4 slots' bytes at a time, so that slots
    // are refilled while they run (one copy of a whole 64 MB local part would stop
    // this rank's pieces for its length).
    LocalParts locals(p, src, dst, kSlots * slot_ / p.rp.elem_size);
    bool copying = true;
    const int n = static_cast<int>(requests_.size());
    auto what = [&](int i) { return describe_request(i); };
    for (;;) {
      int count = 0;
      if (copying) {
        check_wait(MPI_Testsome(n, requests_.data(), &count, done_.data(), status_.data()), "MPI_Testsome", p.comm,
                   status_.data(), count, done_.data(), what);
        if (count == 0) {
          copying = locals.step();
          continue;
        }
      } else {
        check_wait(MPI_Waitsome(n, requests_.data(), &count, done_.data(), status_.data()), "MPI_Waitsome", p.comm,
                   status_.data(), count, done_.data(), what);
      }
      if (count == MPI_UNDEFINED) break;  // every request done
      for (int c = 0; c < count; ++c) {
        const auto r = static_cast<size_t>(done_[c]);
        const auto k = static_cast<size_t>(owner_[r]);
        if (k < recv_.size()) {
          Stream& s = recv_[k];
          if (!s.in_place) {
            const index_t j = piece_[r];
            unpack_peer_range(p, s.peer_index, slot_of(s, rbuf_, r), j * s.slot, s.piece_bytes(j), dst, s.stream);
          }
          if (s.next < s.pieces) post_receive(s, r, dst);  // into the slot just emptied
        } else {
          Stream& s = send_[k - recv_.size()];
          if (s.next < s.pieces) post_send(s, r, src);
        }
      }
    }
    while (locals.step()) {
    }
    if (locals.stream()) stream_fence();
  }

 private:
  // Slot r (a request index) of stream s. Pieces take whichever slot is free (a
  // later piece may land before an earlier one completes), so piece_ says which
  // piece a slot holds.
  std::byte* slot_of(const Stream& s, std::byte* buf, size_t r) const {
    return buf + s.slot_at + (static_cast<index_t>(r) - s.first_request) * s.slot;
  }

  // Posts the stream's next piece on request (slot) r.
  void post_receive(Stream& s, size_t r, const DstBlocks& dst) {
    PlanCore& p = plan_;
    const index_t j = s.next++;
    piece_[r] = j;
    const PeerPlan& q = p.rp.receives[static_cast<size_t>(s.peer_index)];
    std::byte* to = s.in_place ? message_in(p, dst, recv_run_[static_cast<size_t>(s.peer_index)], nullptr) + j * s.slot
                               : slot_of(s, rbuf_, r);
    check_mpi(MPI_Irecv(to, static_cast<int>(s.piece_bytes(j)), MPI_BYTE, q.peer, kTag, p.comm, &requests_[r]),
              "MPI_Irecv", p.comm, "receive from", q.peer);
  }

  void post_send(Stream& s, size_t r, const SrcBlocks& src) {
    PlanCore& p = plan_;
    const index_t j = s.next++;
    piece_[r] = j;
    const PeerPlan& q = p.rp.sends[static_cast<size_t>(s.peer_index)];
    const std::byte* from;
    if (s.in_place) {
      from = message_out(p, s.peer_index, src, send_run_[static_cast<size_t>(s.peer_index)], nullptr) + j * s.slot;
    } else {
      std::byte* slot = slot_of(s, sbuf_, r);
      pack_peer_range(p, s.peer_index, src, j * s.slot, s.piece_bytes(j), slot, false);  // stays in the caches
      from = slot;
    }
    check_mpi(MPI_Isend(from, static_cast<int>(s.piece_bytes(j)), MPI_BYTE, q.peer, kTag, p.comm, &requests_[r]),
              "MPI_Isend", p.comm, "send to", q.peer);
  }

  std::string describe_request(int i) const {
    const auto k = static_cast<size_t>(owner_[static_cast<size_t>(i)]);
    const RankPlan& rp = plan_.rp;
    if (k < recv_.size()) return cat("receive from rank ", rp.receives[static_cast<size_t>(recv_[k].peer_index)].peer);
    return cat("send to rank ", rp.sends[static_cast<size_t>(send_[k - recv_.size()].peer_index)].peer);
  }

  index_t slot_ = 0;  // the agreed piece size
  std::vector<Stream> recv_, send_;
  std::vector<StorageRun> recv_run_, send_run_;
  index_t recv_slot_bytes_ = 0, send_slot_bytes_ = 0;  // the packed buffers: every stream's slots
  std::vector<MPI_Request> requests_;  // the receives' slots, then the sends'
  std::vector<int> owner_;             // per request: its stream (receives first, then sends)
  std::vector<index_t> piece_;         // per request: the piece in its slot
  std::vector<int> done_;
  std::vector<MPI_Status> status_;
  std::byte *rbuf_ = nullptr, *sbuf_ = nullptr;
};

// As p2p (the same copies and bytes), plus each piece beyond a peer's first at
// the cost of one more message with kSlots in flight. The overlap between ranks
// (one rank packing while its peer unpacks) is not modelled.
// Under a memory budget the pieces are budget_slot's (smaller: more of them).
Prediction predict_budget(const RankPlan& rp, const Machine& m, index_t budget) {
  const Rates rt = rates(rp, m, true);
  const index_t slot = budget_slot(packed_messages(rp, false), rp.elem_size, budget);
  auto side = [&](const std::vector<PeerPlan>& peers) {
    index_t extra = 0;
    for (const PeerPlan& q : peers) extra += std::max<index_t>(0, (q.bytes + slot - 1) / slot - 1);
    return message_time(peers, m) + static_cast<double>(extra) * stream_cost(m, kSlots);
  };
  Prediction p;
  p.comm = std::max(side(rp.sends), side(rp.receives));
  p.memcpy = p2p_copy_time(rp, rt);
  return p;
}
Prediction predict(const RankPlan& rp, const Machine& m) { return predict_budget(rp, m, 0); }

}  // namespace

StrategyEntry p2p_pipelined_strategy() {
  StrategyEntry e = entry<P2pPipelined>(
      "p2p_pipelined",
      "one message per peer, streamed in 256 KB pieces through 4 slots: packing, MPI and unpacking overlap", predict);
  e.arithmetic = true;
  e.predict_budget = predict_budget;
  e.extra_bytes = [](const RankPlan& rp, index_t budget, bool arithmetic) {
    const std::vector<index_t> m = packed_messages(rp, arithmetic);
    return slot_buffers(m, budget_slot(m, rp.elem_size, budget));
  };
  return e;
}

}  // namespace redist::detail
