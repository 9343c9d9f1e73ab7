// `shm`: single-copy transfers between ranks of one node through MPI-3 shared
// windows (include/redist/shm.hpp, docs/shm.md). Each rank copies its own target
// segments straight from the sender's source memory, mapped in its own address
// space: one copy, no packing, no message carrying data, and the plan's
// arithmetic applied as it copies. Each rank writes only its own target.
//
// Per execute and peer on the node, the sender tells the reader where its source
// blocks are (window serial, member, offset: a header message, which is also the
// "sources ready" synchronization); the reader copies, then sends a zero-byte
// "done" (the sender may reuse its source once every reader is done). A sender
// whose source blocks are not all in windows the reader can map says so in the
// header and sends the peer's segments packed instead (the message path); peers
// on other nodes (node size: Options::node_size, $REDIST_NODE_SIZE) always get
// messages, as p2p. Where each segment lives in the sender's storage is told
// once per plan (exec/remote.hpp), as in `direct`.
#include <atomic>

#include "cost/model.hpp"
#include "exec/pack.hpp"
#include "exec/remote.hpp"
#include "exec/shm_window.hpp"
#include "kernels/arith.hpp"
#include "kernels/copy.hpp"
#include "mpi/agree.hpp"

namespace redist::detail {
namespace {

constexpr int kTagWhere = 21, kTagHeader = 22, kTagDone = 23, kTagData = 24;
// Header: the path, then per source block (serial, member, offset, bytes).
constexpr std::int64_t kPathWindow = 0, kPathMessage = 1;
constexpr size_t kPerBlock = 4;

// Blocks of the sender's storage that segments `segs` read: 0 .. max block.
template <class Block>
std::int64_t blocks_used(size_t n, Block block) {
  std::int64_t b = 0;
  for (size_t k = 0; k < n; ++k) b = std::max<std::int64_t>(b, block(k) + 1);
  return b;
}

class Shm final : public Strategy {
 public:
  explicit Shm(PlanCore& p) : Strategy(p) {}

  // Collective: node discovery and, with the peers on this rank's node, where
  // their segments live. Always available: peers it cannot map get messages.
  bool available() override;
  void run(const SrcBlocks& src, const DstBlocks& dst) override;
  std::string describe() const override { return report_; }

 private:
  struct Request {
    int peer_index;
    bool header;  // else a data chunk
  };
  void post_data_receives(size_t i, std::byte* rbuf);
  std::string copy_from_window(size_t i, const DstBlocks& dst);
  void send_header(size_t i, const SrcBlocks& src, std::byte* sbuf);

  std::vector<char> on_node_;            // per rank of the plan
  std::vector<int> world_;               // per rank of the plan: its rank in MPI_COMM_WORLD
  std::vector<std::vector<std::int64_t>> where_;  // per receive peer on the node
  std::vector<std::int64_t> recv_blocks_, send_blocks_;  // per peer: blocks its segments use
  std::vector<std::vector<std::int64_t>> header_in_, header_out_;
  std::vector<std::int64_t> path_in_;     // per receive peer, this execute
  std::vector<index_t> pending_;          // per receive peer: data chunks in flight
  std::vector<MPI_Request> rq_, sq_;      // reader's and sender's requests
  std::vector<Request> rwhat_;
  std::vector<std::string> swhat_;
  std::vector<int> index_;
  std::vector<MPI_Status> status_;
  std::string report_;
};

bool Shm::available() {
  PlanCore& p = plan_;
  MPI_Comm node = node_comm(p.comm, p.options.node_size);
  int leader = p.rank;  // the node's first plan rank names it
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, node), "MPI_Allreduce", p.comm);
  check_mpi(MPI_Comm_free(&node), "MPI_Comm_free", p.comm);
  std::vector<int> leaders(static_cast<size_t>(p.size));
  check_mpi(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, p.comm), "MPI_Allgather", p.comm);
  on_node_.resize(static_cast<size_t>(p.size));
  for (int r = 0; r < p.size; ++r) on_node_[static_cast<size_t>(r)] = leaders[static_cast<size_t>(r)] == leader;
  MPI_Group plan_group, world_group;
  check_mpi(MPI_Comm_group(p.comm, &plan_group), "MPI_Comm_group", p.comm);
  check_mpi(MPI_Comm_group(MPI_COMM_WORLD, &world_group), "MPI_Comm_group", p.comm);
  std::vector<int> ranks(static_cast<size_t>(p.size));
  for (int r = 0; r < p.size; ++r) ranks[static_cast<size_t>(r)] = r;
  world_.resize(static_cast<size_t>(p.size));
  check_mpi(MPI_Group_translate_ranks(plan_group, p.size, ranks.data(), world_group, world_.data()),
            "MPI_Group_translate_ranks", p.comm);
  check_mpi(MPI_Group_free(&plan_group), "MPI_Group_free", p.comm);
  check_mpi(MPI_Group_free(&world_group), "MPI_Group_free", p.comm);

  where_ = exchange_records(p, on_node_, kTagWhere);
  const size_t per = record_size(p.rp.ndim);
  for (size_t i = 0; i < p.rp.receives.size(); ++i)
    recv_blocks_.push_back(
        blocks_used(where_[i].size() / per, [&](size_t k) { return where_[i][k * per]; }));
  for (const PeerPlan& pp : p.rp.sends)
    send_blocks_.push_back(blocks_used(pp.segments.size(), [&](size_t k) { return pp.segments[k].at.block; }));
  header_in_.resize(p.rp.receives.size());
  header_out_.resize(p.rp.sends.size());
  for (size_t i = 0; i < header_in_.size(); ++i)
    header_in_[i].resize(1 + kPerBlock * static_cast<size_t>(recv_blocks_[i]));
  for (size_t i = 0; i < header_out_.size(); ++i)
    header_out_[i].resize(1 + kPerBlock * static_cast<size_t>(send_blocks_[i]));
  path_in_.assign(p.rp.receives.size(), kPathMessage);
  pending_.assign(p.rp.receives.size(), 0);
  return true;
}

// The sender's header for send peer i: the window path when every block the
// peer reads lies in a window the peer is a member of, else the message path
// (and then the peer's segments are packed and sent).
void Shm::send_header(size_t i, const SrcBlocks& src, std::byte* sbuf) {
  PlanCore& p = plan_;
  const PeerPlan& pp = p.rp.sends[i];
  const int peer_world = world_[static_cast<size_t>(pp.peer)];
  auto& h = header_out_[i];
  h[0] = kPathWindow;
  for (std::int64_t b = 0; b < send_blocks_[i] && h[0] == kPathWindow; ++b) {
    const index_t bytes = p.src_local->block_elements(b) * p.rp.elem_size;
    const std::vector<int>* members = nullptr;
    const WindowRef ref = bytes > 0 ? find_window(src.ptr[static_cast<size_t>(b)], bytes, &members) : WindowRef{0, 0, 0};
    if (bytes > 0 && (ref.owner < 0 || std::find(members->begin(), members->end(), peer_world) == members->end()))
      h[0] = kPathMessage;
    h[1 + kPerBlock * static_cast<size_t>(b)] = static_cast<std::int64_t>(ref.serial);
    h[2 + kPerBlock * static_cast<size_t>(b)] = ref.owner;
    h[3 + kPerBlock * static_cast<size_t>(b)] = ref.offset;
    h[4 + kPerBlock * static_cast<size_t>(b)] = bytes;
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);  // the source's stores before the header
  sq_.emplace_back();
  swhat_.push_back(cat("send to rank ", pp.peer));
  check_mpi(MPI_Isend(h.data(), static_cast<int>(h.size()), MPI_INT64_T, pp.peer, kTagHeader, p.comm, &sq_.back()),
            "MPI_Isend", p.comm, "send to", pp.peer);
  if (h[0] == kPathWindow) {
    sq_.emplace_back();
    swhat_.push_back(cat("receive from rank ", pp.peer));
    check_mpi(MPI_Irecv(nullptr, 0, MPI_BYTE, pp.peer, kTagDone, p.comm, &sq_.back()), "MPI_Irecv", p.comm,
              "receive from", pp.peer);
    return;
  }
  pack_peer(p, static_cast<int>(i), src, sbuf + p.send_offset[i]);
  for (index_t off = 0; off < pp.bytes; off += p.options.max_message_bytes) {
    sq_.emplace_back();
    swhat_.push_back(cat("send to rank ", pp.peer));
    check_mpi(MPI_Isend(sbuf + p.send_offset[i] + off,
                        static_cast<int>(std::min(p.options.max_message_bytes, pp.bytes - off)), MPI_BYTE, pp.peer,
                        kTagData, p.comm, &sq_.back()),
              "MPI_Isend", p.comm, "send to", pp.peer);
  }
}

void Shm::post_data_receives(size_t i, std::byte* rbuf) {
  PlanCore& p = plan_;
  const PeerPlan& pp = p.rp.receives[i];
  for (index_t off = 0; off < pp.bytes; off += p.options.max_message_bytes) {
    rq_.emplace_back();
    rwhat_.push_back({static_cast<int>(i), false});
    ++pending_[i];
    check_mpi(MPI_Irecv(rbuf + p.recv_offset[i] + off,
                        static_cast<int>(std::min(p.options.max_message_bytes, pp.bytes - off)), MPI_BYTE, pp.peer,
                        kTagData, p.comm, &rq_.back()),
              "MPI_Irecv", p.comm, "receive from", pp.peer);
  }
}

// Copies receive peer i's segments from its source blocks, mapped here.
std::string Shm::copy_from_window(size_t i, const DstBlocks& dst) {
  PlanCore& p = plan_;
  const PeerPlan& pp = p.rp.receives[i];
  const index_t es = p.rp.elem_size;
  const auto& h = header_in_[i];
  std::vector<const std::byte*> base(static_cast<size_t>(recv_blocks_[i]), nullptr);
  std::atomic_thread_fence(std::memory_order_seq_cst);  // the header before the source's loads
  const size_t per = record_size(p.rp.ndim);
  const bool stream = stream_for(p.rp.stats.bytes_received);
  const Arithmetic* a = arithmetic_of(p);
  for (size_t k = 0; k < pp.segments.size(); ++k) {
    const Segment& s = pp.segments[k];
    const std::int64_t* w = &where_[i][k * per];
    const SenderView v = sender_view(w, p.rp.ndim);
    const auto b = static_cast<size_t>(v.block);
    if (!base[b]) {
      // The whole block must lie in the member's part of the window, as mapped here.
      const WindowRef ref{static_cast<std::uint64_t>(h[1 + kPerBlock * b]), h[2 + kPerBlock * b], h[3 + kPerBlock * b]};
      base[b] = window_address(ref, h[4 + kPerBlock * b]);
      if (!base[b])
        return cat("shm: rank ", pp.peer, "'s source block ", b, " is in a shared window this rank cannot map");
    }
    const std::byte* from = base[b] + v.offset * es;
    const index_t run = run_both(s, w);
    if (a)
      axpby_run(*a, s.shape, run, es, s.count, from, v.strides, v.step, dst.at(s.at, es), s.at.strides, s.step);
    else
      copy_run(s.shape, run, es, s.count, from, v.strides, v.step, dst.at(s.at, es), s.at.strides, s.step, stream);
  }
  if (stream) stream_fence();
  return {};
}

void Shm::run(const SrcBlocks& src, const DstBlocks& dst) {
  PlanCore& p = plan_;
  std::byte* rbuf = p.recv_scratch();
  std::byte* sbuf = p.send_scratch();
  rq_.clear(), rwhat_.clear(), sq_.clear(), swhat_.clear();
  std::fill(pending_.begin(), pending_.end(), 0);
  for (size_t i = 0; i < p.rp.receives.size(); ++i) {
    const int peer = p.rp.receives[i].peer;
    if (!on_node_[static_cast<size_t>(peer)]) {
      path_in_[i] = kPathMessage;
      post_data_receives(i, rbuf);
      continue;
    }
    rq_.emplace_back();
    rwhat_.push_back({static_cast<int>(i), true});
    check_mpi(MPI_Irecv(header_in_[i].data(), static_cast<int>(header_in_[i].size()), MPI_INT64_T, peer, kTagHeader,
                        p.comm, &rq_.back()),
              "MPI_Irecv", p.comm, "receive from", peer);
  }
  for (size_t i = 0; i < p.rp.sends.size(); ++i) {
    const PeerPlan& pp = p.rp.sends[i];
    if (on_node_[static_cast<size_t>(pp.peer)]) {
      send_header(i, src, sbuf);
      continue;
    }
    pack_peer(p, static_cast<int>(i), src, sbuf + p.send_offset[i]);
    for (index_t off = 0; off < pp.bytes; off += p.options.max_message_bytes) {
      sq_.emplace_back();
      swhat_.push_back(cat("send to rank ", pp.peer));
      check_mpi(MPI_Isend(sbuf + p.send_offset[i] + off,
                          static_cast<int>(std::min(p.options.max_message_bytes, pp.bytes - off)), MPI_BYTE, pp.peer,
                          kTagData, p.comm, &sq_.back()),
                "MPI_Isend", p.comm, "send to", pp.peer);
    }
  }
  copy_locals(p, src, dst);
  // Until every receive completed: headers start a window copy (then "done") or
  // the data receives of the message path; data is unpacked when a peer's last
  // chunk arrives. Requests are added between waits, never during one.
  std::string err;
  std::vector<MPI_Request> done;  // "done" notices to senders read through a window
  std::vector<int> done_peer;
  for (;;) {
    int count = 0;
    index_.resize(rq_.size());
    status_.resize(rq_.size());
    check_wait(MPI_Waitsome(static_cast<int>(rq_.size()), rq_.data(), &count, index_.data(), status_.data()),
               "MPI_Waitsome", p.comm, status_.data(), count, index_.data(), [&](int k) {
                 return cat("receive from rank ", p.rp.receives[static_cast<size_t>(rwhat_[static_cast<size_t>(k)].peer_index)].peer);
               });
    if (count == MPI_UNDEFINED) break;
    for (int j = 0; j < count; ++j) {
      const Request r = rwhat_[static_cast<size_t>(index_[static_cast<size_t>(j)])];
      const auto i = static_cast<size_t>(r.peer_index);
      const int peer = p.rp.receives[i].peer;
      if (r.header) {
        path_in_[i] = header_in_[i][0];
        if (path_in_[i] == kPathMessage) {
          post_data_receives(i, rbuf);
          if (pending_[i] == 0) unpack_peer(p, r.peer_index, rbuf + p.recv_offset[i], dst);  // nothing to receive
          continue;
        }
        if (err.empty()) err = copy_from_window(i, dst);
        done.emplace_back();
        done_peer.push_back(peer);
        check_mpi(MPI_Isend(nullptr, 0, MPI_BYTE, peer, kTagDone, p.comm, &done.back()), "MPI_Isend", p.comm,
                  "send to", peer);
      } else if (--pending_[i] == 0) {
        unpack_peer(p, r.peer_index, rbuf + p.recv_offset[i], dst);
      }
    }
  }
  // My readers must be done before my source may change; my sends must complete.
  status_.resize(std::max(sq_.size(), done.size()));
  check_wait(MPI_Waitall(static_cast<int>(sq_.size()), sq_.data(), status_.data()), "MPI_Waitall", p.comm,
             status_.data(), static_cast<int>(sq_.size()), nullptr, [&](int k) { return swhat_[static_cast<size_t>(k)]; });
  check_wait(MPI_Waitall(static_cast<int>(done.size()), done.data(), status_.data()), "MPI_Waitall", p.comm,
             status_.data(), static_cast<int>(done.size()), nullptr,
             [&](int k) { return cat("send to rank ", done_peer[static_cast<size_t>(k)]); });
  // What each peer's data took, for Plan::describe("shm").
  index_t window = 0, message = 0, off_node = 0;
  for (size_t i = 0; i < p.rp.receives.size(); ++i) {
    const index_t b = p.rp.receives[i].bytes;
    if (!on_node_[static_cast<size_t>(p.rp.receives[i].peer)]) off_node += b;
    else if (path_in_[i] == kPathWindow) window += b;
    else message += b;
  }
  report_ = cat("received ", window, " bytes through shared windows (one copy), ", message,
                " bytes by messages from ranks on this node whose source is not in a window it can map, ",
                off_node, " bytes by messages from other nodes; ", p.rp.stats.bytes_local, " bytes copied locally");
  agree(p.comm, err);  // a failed mapping is reported on every rank
}

// Assumes every peer is on the node with its source in a window (the model
// cannot know where execute's buffers will live): T_memcpy = local copies + each
// received segment copied once from the sender's memory; T_comm = 2 t_m per peer
// (header, done).
Prediction predict(const RankPlan& rp, const Machine& m) {
  const Rates rt = rates(rp, m, false);
  Prediction pr;
  pr.comm = 2 * m.startup * static_cast<double>(std::max(rp.sends.size(), rp.receives.size()));
  pr.memcpy = local_copy_time(rp, rt) + pack_time(rp.receives, rp.elem_size, rt);
  return pr;
}

// auto's condition for the model above: every source block in a shared window.
bool suits(const PlanCore& p, const SrcBlocks& src) {
  for (index_t b = 0; b < p.src_local->nblocks(); ++b) {
    const index_t bytes = p.src_local->block_elements(b) * p.rp.elem_size;
    if (bytes > 0 && find_window(src.ptr[static_cast<size_t>(b)], bytes, nullptr).owner < 0) return false;
  }
  return true;
}

}  // namespace

StrategyEntry shm_strategy() {
  StrategyEntry e = entry<Shm>(
      "shm", "ranks on one node copy their segments straight from the sender's shared window (one copy); messages otherwise",
      predict);
  e.arithmetic = true;
  e.suits = suits;
  return e;
}

}  // namespace redist::detail
