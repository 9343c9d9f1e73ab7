#include "comm.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>

#include "mpi/agree.hpp"
#include "places.hpp"
#include "redist/error.hpp"

namespace redist::runtime::detail {
namespace {

constexpr int kControlTag = 1;
constexpr int kDataTagBase = 16;
enum : std::int64_t { kActivate = 1, kGet = 2, kAbort = 3, kTile = 4, kWrite = 5 };
constexpr std::int64_t kEager = -1, kControl = -2;
// A rendezvous handle h >= 0 travels as h (the receiver sends GET) or, pushed by the
// producer (Options::push), as kPushed - h.
constexpr std::int64_t kPushed = -3;
// An output read in place (Options::read_in_place): followed by the collection's
// index and the byte offset in the producer's storage. No pushed handle reaches it.
constexpr std::int64_t kInPlace = INT64_MIN;
// Below Open MPI's shared-memory eager limit, so MPI_Send does not wait for the
// receiver. That limit (btl_vader_eager_limit, 4096) counts the headers too: a
// message of 4,096 bytes went by rendezvous, and two ranks sending each other one
// at once both waited in MPI_Send for a receive neither would post (taskgraph hung
// every few hundred executes: `redist run "1000x1000 tile=100x100 block_cyclic
// grid=1x2" "1000x1000 tile=70x90 block_cyclic grid=2x1" --strategy taskgraph
// --reps 1000`). 256 bytes of margin for the headers.
constexpr std::size_t kBlockingSendMax = 4096 - 256;

std::size_t words_for(std::size_t bytes) { return (bytes + 7) / 8; }

void append_bytes(std::vector<std::int64_t>& msg, const void* src, std::size_t bytes) {
  std::size_t at = msg.size();
  msg.resize(at + words_for(bytes));
  if (bytes) std::memcpy(msg.data() + at, src, bytes);
}

using ::redist::detail::check_mpi;

// A typed view's bytes packed into the message (one copy, as append_bytes).
void append_typed(std::vector<std::int64_t>& msg, const Data& d) {
  std::size_t at = msg.size();
  msg.resize(at + words_for(d.size()));
  int pos = 0;
  check_mpi(MPI_Pack(d.bytes(), 1, d.type(), msg.data() + at, static_cast<int>(d.size()), &pos, MPI_COMM_SELF),
            "MPI_Pack");
}

// How `d` travels in one MPI call: a typed view as one element of its type, else
// `bytes` bytes.
struct Wire {
  int count;
  MPI_Datatype type;
};
Wire wire(const Data& d, std::size_t bytes) {
  return d.is_typed() ? Wire{1, d.type()} : Wire{static_cast<int>(bytes), MPI_BYTE};
}

// Whether flow `f`'s output stays as it is once its task completed, so that other
// ranks may read it where it lies: the task wrote it (read_write) and every
// successor only reads it and passes it on to nobody.
bool stays_unchanged(const Flow& f) {
  if (f.control || f.landing || f.access != Access::read_write) return false;
  for (const Dep& d : f.outs) {
    if (!d.end.task) continue;  // to a collection: the final write
    const Flow& next = d.end.task->flow_at(d.flow_index);
    if (next.access != Access::read || !next.outs.empty()) return false;
  }
  return true;
}

// Where a remote producer's flow lands here: its Flow::landing, else a fresh buffer.
Data landing(const TaskClass& cls, const Params& p, int flow, std::size_t size) {
  const Flow& f = cls.flow_at(flow);
  if (!f.landing) return Data::allocate(size);
  Data d = f.landing(p);
  if (d.size() != size)
    fail(cls.describe(p), ".", f.name, " sends ", size, " bytes, its landing (.lands(), on the receiving rank) "
         "holds ", d.size(), ": a landing must have the size of the data its producer sends");
  return d;
}

// MPI_Testsome over `reqs`: moves the items of the requests that completed to
// `done` (in order), keeps the others with their requests, and returns how many
// completed. Receives and sends share it; the index array is reused per thread.
template <class T>
int reap(std::vector<MPI_Request>& reqs, std::vector<T>& items, std::vector<T>& done) {
  if (reqs.empty()) return 0;
  thread_local std::vector<int> idx;
  idx.resize(reqs.size());
  int count = 0;
  check_mpi(MPI_Testsome(static_cast<int>(reqs.size()), reqs.data(), &count, idx.data(), MPI_STATUSES_IGNORE),
            "MPI_Testsome");
  if (count <= 0) return 0;  // none, or MPI_UNDEFINED (no active request)
  std::size_t w = 0;
  for (std::size_t j = 0; j < reqs.size(); ++j) {
    if (reqs[j] == MPI_REQUEST_NULL) {  // completed just now: Testsome nulls it
      done.push_back(std::move(items[j]));
    } else {
      // Never move an item onto itself: a self-moved vector is left empty and its
      // buffer freed while its send is still in flight (garbage on the wire).
      if (w != j) {
        reqs[w] = reqs[j];
        items[w] = std::move(items[j]);
      }
      ++w;
    }
  }
  reqs.resize(w);
  items.resize(w);
  return count;
}

}  // namespace

Comm::Comm(const TaskGraph& graph, MPI_Comm comm, const Options& options, Handlers handlers)
    : graph_(graph), comm_(comm), options_(options), handlers_(std::move(handlers)) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &ranks_);
  sent_to_ = std::make_unique<std::atomic<std::int64_t>[]>(static_cast<std::size_t>(ranks_));
  received_from_.assign(static_cast<std::size_t>(ranks_), 0);
  int* ub = nullptr;
  int flag = 0;
  MPI_Comm_get_attr(comm_, MPI_TAG_UB, &ub, &flag);
  if (flag && ub) tag_ub_ = *ub;
  bool shared = false;
  for (int c = 0; c < graph_.num_collections(); ++c) shared = shared || !graph_.collection(c).storage_of(rank_).empty();
  in_place_.resize(static_cast<std::size_t>(graph_.num_classes()));
  for (int id = 0; shared && options_.read_in_place && id < graph_.num_classes(); ++id) {
    const TaskClass& cls = graph_.at(id);
    for (int f = 0; f < cls.num_flows(); ++f) in_place_[id].push_back(stays_unchanged(cls.flow_at(f)));
  }
}

int Comm::data_tag(std::int64_t handle) const {
  return kDataTagBase + static_cast<int>(handle % (tag_ub_ - kDataTagBase));
}

void Comm::isend(int dest, const void* buf, std::size_t bytes, int tag,
                 std::vector<std::int64_t>&& msg, Data keep) {
  MPI_Request req;
  const Wire w = wire(keep, bytes);  // a typed view: straight from where the data lies
  check_mpi(MPI_Isend(buf, w.count, w.type, dest, tag, comm_, &req), "MPI_Isend");
  sent_to_[dest].fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(send_mutex_);
  send_reqs_.push_back(req);
  send_keep_.push_back(SendKeep{std::move(msg), std::move(keep)});
}

void Comm::post(int dest, std::vector<std::int64_t>&& msg) {
  pending_.fetch_add(1, std::memory_order_acq_rel);
  if (options_.comm_mode == CommMode::funneled) {
    std::lock_guard lock(command_mutex_);
    commands_.push_back(Command{dest, std::move(msg), Data{}, kControlTag});
    return;
  }
  const void* buf = msg.data();
  std::size_t bytes = msg.size() * 8;
  if (bytes <= kBlockingSendMax) {
    // Small enough for MPI's own eager protocol: a blocking send returns at once and
    // needs no request to complete later (8 B ping-pong latency, paper 004 Fig. 6).
    check_mpi(MPI_Send(buf, static_cast<int>(bytes), MPI_BYTE, dest, kControlTag, comm_), "MPI_Send");
    sent_to_[dest].fetch_add(1, std::memory_order_relaxed);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
    return;
  }
  isend(dest, buf, bytes, kControlTag, std::move(msg), Data{});
}

void Comm::append_data(std::vector<std::int64_t>& msg, const Data& d, std::vector<Push>& pushes) {
  if (d.size() <= options_.eager_limit) {
    // Piggybacked on the message (activation or tile): no second one (paper 000, sec. 6.2.3).
    msg.insert(msg.end(), {static_cast<std::int64_t>(d.size()), kEager});
    if (d.is_typed())
      append_typed(msg, d);
    else
      append_bytes(msg, d.bytes(), d.size());
    eager_bytes_ += static_cast<std::int64_t>(d.size());
    return;
  }
  std::int64_t h;
  {
    std::lock_guard lock(handle_mutex_);
    h = next_handle_++;
    if (!options_.push) handles_.emplace(h, d);
  }
  pending_.fetch_add(1, std::memory_order_acq_rel);  // the data send's, once posted
  if (options_.push) pushes.push_back(Push{h, d});
  msg.insert(msg.end(), {static_cast<std::int64_t>(d.size()), options_.push ? kPushed - h : h});
}

bool Comm::append_in_place(std::vector<std::int64_t>& msg, const Data& d, int dest) {
  if (d.is_typed() || d.size() <= options_.eager_limit) return false;
  for (int c = 0; c < graph_.num_collections(); ++c) {
    const DataCollection& coll = graph_.collection(c);
    if (coll.storage_of(dest).empty()) continue;
    const std::int64_t offset = offset_in(coll.storage_of(rank_), d);
    if (offset < 0) continue;
    msg.insert(msg.end(), {static_cast<std::int64_t>(d.size()), kInPlace, c, offset});
    ++read_in_place_;
    return true;
  }
  return false;
}

void Comm::push_data(int dest, std::vector<Push>& pushes) {
  for (Push& p : pushes) {
    rendezvous_bytes_ += static_cast<std::int64_t>(p.data.size());
    if (options_.comm_mode == CommMode::funneled) {
      std::lock_guard lock(command_mutex_);
      commands_.push_back(Command{dest, {}, std::move(p.data), data_tag(p.handle)});
      continue;
    }
    const void* buf = p.data.bytes();
    const std::size_t bytes = p.data.size();
    isend(dest, buf, bytes, data_tag(p.handle), {}, std::move(p.data));
  }
}

void Comm::activate(int dest, const TaskClass& cls, const Params& p, const std::vector<int>& flows,
                    const Data* flow_data) {
  std::vector<std::int64_t> msg{kActivate, cls.id(), p[0], p[1], p[2], p[3],
                                static_cast<std::int64_t>(flows.size())};
  std::vector<Push> pushes;
  for (int f : flows) {
    if (cls.flow_at(f).control) {
      msg.insert(msg.end(), {f, 0, kControl});
      continue;
    }
    const Data& d = flow_data[f];
    msg.push_back(f);
    if (!in_place_[cls.id()].empty() && in_place_[cls.id()][f] && append_in_place(msg, d, dest)) continue;
    if (d.size() > static_cast<std::size_t>(INT_MAX))
      fail("output ", cls.flow_at(f).name, " of ", cls.describe(p), " has ", d.size(),
           " bytes; at most ", INT_MAX, " bytes travel on one flow");
    append_data(msg, d, pushes);
  }
  // What `dest` reads in place was stored before this message is sent, and MPI's
  // delivery orders it (its shared-memory queues publish with release stores, and
  // MPI calls are opaque to the compiler): no fence of our own.
  ++activations_;
  post(dest, std::move(msg));
  push_data(dest, pushes);
}

void Comm::send_tile(int dest, bool write, const TileKey& key, const Data& d) {
  if (d.size() > static_cast<std::size_t>(INT_MAX))
    fail("tile (", key.tile.m, ", ", key.tile.n, ") of ", graph_.collection(key.coll).describe(), " has ",
         d.size(), " bytes; at most ", INT_MAX, " bytes travel to another rank");
  std::vector<std::int64_t> msg{write ? kWrite : kTile, key.coll, key.tile.m, key.tile.n};
  std::vector<Push> pushes;
  append_data(msg, d, pushes);
  ++(write ? tiles_written_ : tiles_read_);
  post(dest, std::move(msg));
  push_data(dest, pushes);
}

void Comm::landed(const TileKey& key, const Data& d) {
  store_tile(graph_.collection(key.coll).data_of(key.tile), d);
  pending_.fetch_sub(1, std::memory_order_acq_rel);  // the write expect_writes counted
}

void Comm::completed(int worker, Recv& r) {
  if (r.kind == kTile)
    handlers_.tile(worker, r.key, r.data);
  else if (r.kind == kWrite)
    landed(r.key, r.data);
  else
    handlers_.data(worker, *r.cls, r.params, r.flow, r.data);
}

void Comm::handle_message(int worker, int source, const std::vector<std::int64_t>& msg,
                          std::size_t words) {
  if (msg[0] == kGet) {
    Data d;
    {
      std::lock_guard lock(handle_mutex_);
      auto it = handles_.find(msg[1]);
      if (it == handles_.end()) fail("internal error: GET for unknown handle ", msg[1]);
      d = std::move(it->second);
      handles_.erase(it);
    }
    rendezvous_bytes_ += static_cast<std::int64_t>(d.size());
    // The handle's pending count now belongs to this send.
    isend(source, d.bytes(), d.size(), data_tag(msg[1]), {}, d);
    return;
  }
  if (msg[0] >= kSteal && msg[0] <= kFinished) {
    if (!handlers_.lending) fail("internal error: a lending message, and Options::lend is off");
    handlers_.lending(worker, source, msg);
    return;
  }
  if (msg[0] == kAbort) {
    std::string text(reinterpret_cast<const char*>(msg.data() + 3), static_cast<std::size_t>(msg[2]));
    handlers_.abort(static_cast<int>(msg[1]), std::move(text));
    return;
  }
  if (msg[0] == kTile || msg[0] == kWrite) {
    const TileKey key{static_cast<int>(msg[1]), Tile{msg[2], msg[3]}};
    const std::size_t size = static_cast<std::size_t>(msg[4]);
    if (msg[5] == kEager) {
      if (words_for(size) + 6 > words) fail("internal error: malformed tile message");
      Data d = Data::wrap(const_cast<std::int64_t*>(msg.data() + 6), size);  // read before rbuf_ is reused
      if (msg[0] == kWrite) {
        landed(key, d);
      } else {
        Data copy = Data::allocate(size);
        if (size) std::memcpy(copy.bytes(), d.bytes(), size);
        handlers_.tile(worker, key, copy);
      }
      return;
    }
    Data into;
    if (msg[0] == kWrite) {  // straight into the owner's storage when it fits
      into = graph_.collection(key.coll).data_of(key.tile);
      if (into.size() < size) into = Data::allocate(size);
    } else {
      into = Data::allocate(size);
    }
    pending_.fetch_add(1, std::memory_order_acq_rel);  // until the data arrived
    const bool pushed = msg[5] <= kPushed;
    waiting_.push_back(
        Recv{std::move(into), nullptr, {}, -1, source, pushed ? kPushed - msg[5] : msg[5], msg[0], key, pushed});
    start_waiting();
    return;
  }
  const TaskClass& cls = graph_.at(static_cast<int>(msg[1]));
  Params p{msg[2], msg[3], msg[4], msg[5]};
  std::size_t at = 7;
  for (std::int64_t i = 0; i < msg[6]; ++i) {
    int flow = static_cast<int>(msg[at]);
    std::size_t size = static_cast<std::size_t>(msg[at + 1]);
    std::int64_t how = msg[at + 2];
    at += 3;
    if (how == kControl) {
      handlers_.data(worker, cls, p, flow, Data{});
    } else if (how == kInPlace) {
      handlers_.data(worker, cls, p, flow, in_place(source, msg[at], msg[at + 1], size));
      at += 2;
    } else if (how == kEager) {
      Data d = landing(cls, p, flow, size);
      if (d.is_typed()) {
        int pos = 0;
        check_mpi(MPI_Unpack(msg.data() + at, static_cast<int>(size), &pos, d.bytes(), 1, d.type(), MPI_COMM_SELF),
                  "MPI_Unpack");
      } else if (size) {
        std::memcpy(d.bytes(), msg.data() + at, size);
      }
      at += words_for(size);
      handlers_.data(worker, cls, p, flow, d);
    } else {
      pending_.fetch_add(1, std::memory_order_acq_rel);  // until the data arrived
      const bool pushed = how <= kPushed;
      waiting_.push_back(Recv{landing(cls, p, flow, size), &cls, p, flow, source, pushed ? kPushed - how : how,
                              kActivate, {}, pushed});
      start_waiting();
    }
  }
  if (at > words) fail("internal error: malformed activation message");
}

Data Comm::in_place(int source, std::int64_t coll, std::int64_t offset, std::size_t size) const {
  if (coll < 0 || coll >= graph_.num_collections()) fail("internal error: read in place from collection ", coll);
  const DataCollection& c = graph_.collection(static_cast<int>(coll));
  const std::span<const std::byte> there = c.storage_of(source);
  if (there.empty())
    fail(c.describe(), ": rank ", source, " sent an output to read in its storage, which rank ", rank_,
         " does not map (DataCollection::storage_of must be symmetric)");
  if (!fits(there, offset, size))
    fail("internal error: ", size, " bytes at ", offset, " read in place from rank ", source, "'s ", there.size());
  return view_at(there, offset, size);  // consumers only read it (stays_unchanged)
}

// Posts the receive of a rendezvous transfer and asks its producer for the data.
void Comm::start_transfer(Recv&& r) {
  MPI_Request req;
  const Wire w = wire(r.data, r.data.size());
  check_mpi(MPI_Irecv(r.data.bytes(), w.count, w.type, r.source, data_tag(r.handle), comm_, &req), "MPI_Irecv");
  const int source = r.source;
  const std::int64_t handle = r.handle;
  const bool pushed = r.pushed;
  recv_reqs_.push_back(req);
  recvs_.push_back(std::move(r));
  rendezvous_peak_ = std::max(rendezvous_peak_, static_cast<std::int64_t>(recv_reqs_.size()));
  if (!pushed) {  // a pushed payload is on its way already
    ++gets_sent_;
    post(source, {kGet, handle});
  }
}

// Starts waiting transfers while fewer than options.max_rendezvous are in flight
// (paper 004, sec. III-C: uncontrolled concurrent transfers ruin the aggregate
// bandwidth and exhaust MPI's requests). Under progress_mutex_.
void Comm::start_waiting() {
  const std::size_t bound = options_.max_rendezvous > 0 ? static_cast<std::size_t>(options_.max_rendezvous)
                                                        : SIZE_MAX;
  while (!waiting_.empty() && recv_reqs_.size() < bound) {
    Recv r = std::move(waiting_.front());
    waiting_.pop_front();
    start_transfer(std::move(r));
  }
}

bool Comm::progress(int worker, bool blocking) {
  std::unique_lock lock(progress_mutex_, std::defer_lock);
  if (blocking)
    lock.lock();
  else if (!lock.try_lock())
    return false;
  bool did = false;

  if (options_.comm_mode == CommMode::funneled) {
    std::vector<Command> cmds;
    {
      std::lock_guard cl(command_mutex_);
      cmds.swap(commands_);
    }
    for (Command& c : cmds) {
      if (c.tag != kControlTag) {  // a pushed payload
        const void* buf = c.data.bytes();
        const std::size_t bytes = c.data.size();
        isend(c.dest, buf, bytes, c.tag, {}, std::move(c.data));
        continue;
      }
      const void* buf = c.msg.data();
      std::size_t bytes = c.msg.size() * 8;
      isend(c.dest, buf, bytes, kControlTag, std::move(c.msg), Data{});
    }
    did = did || !cmds.empty();
  }

  // A worker handles one message per call, then runs what it released.
  for (int i = 0, most = worker >= 0 ? 1 : 16; i < most; ++i) {
    int flag = 0;
    MPI_Message m;
    MPI_Status st;
    check_mpi(MPI_Improbe(MPI_ANY_SOURCE, kControlTag, comm_, &flag, &m, &st), "MPI_Improbe");
    if (!flag) break;
    int bytes = 0;
    MPI_Get_count(&st, MPI_BYTE, &bytes);
    if (rbuf_.size() < words_for(bytes)) rbuf_.resize(words_for(bytes));
    check_mpi(MPI_Mrecv(rbuf_.data(), bytes, MPI_BYTE, &m, MPI_STATUS_IGNORE), "MPI_Mrecv");
    ++received_from_[static_cast<std::size_t>(st.MPI_SOURCE)];
    handle_message(worker, st.MPI_SOURCE, rbuf_, words_for(bytes));
    did = true;
  }

  {
    std::vector<Recv> finished;
    if (const int done = reap(recv_reqs_, recvs_, finished)) {
      start_waiting();  // before the handlers: the next transfers overlap their work
      for (Recv& r : finished) {
        ++received_from_[static_cast<std::size_t>(r.source)];
        completed(worker, r);
      }
      pending_.fetch_sub(done, std::memory_order_acq_rel);
      did = true;
    }
  }

  std::vector<SendKeep> released;  // freed outside the lock
  {
    std::lock_guard sl(send_mutex_);
    if (const int done = reap(send_reqs_, send_keep_, released)) {
      pending_.fetch_sub(done, std::memory_order_acq_rel);
      did = true;
    }
  }
  return did;
}

void Comm::abort_all(int origin, const std::string& message) {
  for (int r = 0; r < ranks_; ++r) {
    if (r == rank_) continue;
    std::vector<std::int64_t> msg{kAbort, origin, static_cast<std::int64_t>(message.size())};
    append_bytes(msg, message.data(), message.size());
    const void* buf = msg.data();
    std::size_t bytes = msg.size() * 8;
    // Posted directly even in funneled mode: the comm thread may be the one failing.
    pending_.fetch_add(1, std::memory_order_acq_rel);
    isend(r, buf, bytes, kControlTag, std::move(msg), Data{});
  }
}

void Comm::abandon() {
  std::lock_guard lock(progress_mutex_);
  for (std::size_t j = 0; j < recv_reqs_.size(); ++j) {
    MPI_Cancel(&recv_reqs_[j]);
    MPI_Status st;
    MPI_Wait(&recv_reqs_[j], &st);
    int cancelled = 0;
    MPI_Test_cancelled(&st, &cancelled);
    if (!cancelled) ++received_from_[static_cast<std::size_t>(recvs_[j].source)];  // it had arrived
  }
  recv_reqs_.clear();
  recvs_.clear();
  waiting_.clear();
  std::lock_guard sl(send_mutex_);
  // A send the peer never matched may still be read by the network after this
  // run: its buffers are deliberately kept for the life of the process.
  static auto* graveyard = new std::vector<SendKeep>;
  for (std::size_t j = 0; j < send_reqs_.size(); ++j) {
    int done = 0;
    MPI_Test(&send_reqs_[j], &done, MPI_STATUS_IGNORE);
    if (!done) {
      MPI_Request_free(&send_reqs_[j]);
      graveyard->push_back(std::move(send_keep_[j]));
    }
  }
  send_reqs_.clear();
  send_keep_.clear();
}

void Comm::drain() {
  std::lock_guard lock(progress_mutex_);
  const auto n = static_cast<std::size_t>(ranks_);
  std::vector<std::int64_t> sent(n), expect(n);
  for (std::size_t r = 0; r < n; ++r) sent[r] = sent_to_[r].load(std::memory_order_relaxed);
  check_mpi(MPI_Alltoall(sent.data(), 1, MPI_INT64_T, expect.data(), 1, MPI_INT64_T, comm_), "MPI_Alltoall");
  std::vector<std::byte> scratch;
  for (std::size_t p = 0; p < n; ++p)
    for (; received_from_[p] < expect[p]; ++received_from_[p]) {
      MPI_Status st;
      check_mpi(MPI_Probe(static_cast<int>(p), MPI_ANY_TAG, comm_, &st), "MPI_Probe");
      int bytes = 0;
      MPI_Get_count(&st, MPI_BYTE, &bytes);
      scratch.resize(static_cast<std::size_t>(std::max(bytes, 1)));
      check_mpi(MPI_Recv(scratch.data(), bytes, MPI_BYTE, static_cast<int>(p), st.MPI_TAG, comm_, MPI_STATUS_IGNORE),
                "MPI_Recv");
    }
}

}  // namespace redist::runtime::detail
