// The asynchronous communication engine of one rank (paper 004, sec. III-C;
// paper 000, sec. 6.2.3).
//
// Protocol. When a task completes, one ACTIVATE message goes to each rank that runs
// a successor (all flows that rank needs coalesced into it): the producer's class,
// parameters, and per flow its size (decided at run time, paper 000 sec. 6.2.2) and
// either the payload itself (size <= eager_limit) or a rendezvous handle. For a
// handle the receiver allocates the buffer, posts the receive, and sends GET; the
// producer then sends the data (payloads are never unexpected, paper 004 sec.
// III-C). With Options::push the producer posts the data send right after the
// ACTIVATE (the handle marked pushed in it) and the receiver sends no GET: the
// send waits in MPI, unmatched (above MPI's own eager limit only its header
// travels before the receive is posted), until the receiver posts its receive,
// under the same bound; with Open MPI's shared-memory single copy (CMA) the
// receiver then reads the data itself, whatever the producer is doing. The
// receiver evaluates the producer's OUT dependencies itself to find its local
// successors, so the message names no consumer.
//
// Remote collection reads and writes (remote_io.hpp) travel the same way, one tile
// per message: TILE (the owner sends a tile that tasks of the receiver read) and
// WRITE (a task's output for a tile the receiver owns, copied into its storage; a
// rendezvous transfer lands there directly).
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph_walk.hpp"
#include "remote_io.hpp"
#include "redist/runtime/runtime.hpp"

namespace redist::runtime::detail {

class Comm {
 public:
  struct Handlers {
    // Data (or a control token) of flow `flow` of a remote producer has arrived.
    std::function<void(int worker, const TaskClass&, const Params&, int flow, const Data&)> data;
    // Another rank failed; `origin` is the rank where the error happened.
    std::function<void(int origin, std::string message)> abort;
    // A remote tile that local tasks read has arrived.
    std::function<void(int worker, const TileKey&, const Data&)> tile;
    // A message of the lending protocol (lending.hpp: msg[0] is kSteal .. kFinished).
    std::function<void(int worker, int source, const std::vector<std::int64_t>& msg)> lending;
  };
  // The lending protocol's messages (lending.hpp), sent with send_control.
  enum : std::int64_t { kSteal = 6, kLend = 7, kNoLend = 8, kReturn = 9, kFinished = 10 };

  Comm(const TaskGraph& graph, MPI_Comm comm, const Options& options, Handlers handlers);

  // Announces the completion of producer (cls, p) to `dest`, with the output flows
  // listed in `flows` (data taken from flow_data[flow]). Any thread may call it.
  void activate(int dest, const TaskClass& cls, const Params& p, const std::vector<int>& flows,
                const Data* flow_data);
  // Sends tile `key` to its reader `dest` (write false: the owner serves a remote
  // read) or to its owner `dest` (write true: a remote write). Any thread may call it.
  void send_tile(int dest, bool write, const TileKey& key, const Data& d);
  // A small control message to `dest` (the lending protocol). Any thread may call it.
  void send_control(int dest, std::vector<std::int64_t>&& msg) { post(dest, std::move(msg)); }
  // This rank's run ends only after `n` more remote writes into its tiles landed.
  void expect_writes(std::int64_t n) { pending_.fetch_add(n, std::memory_order_acq_rel); }
  // One round of progress: posts queued commands, handles incoming messages, completes
  // transfers. One thread at a time; a non-blocking call gives up when another thread
  // is progressing. Returns whether anything happened. `worker` is the caller's
  // worker index (-1 for the communication thread).
  bool progress(int worker, bool blocking);
  // Tells every other rank that the run failed.
  void abort_all(int origin, const std::string& message);
  // True when nothing is queued, in flight, or waiting for a GET.
  bool idle() const { return pending_.load(std::memory_order_acquire) == 0; }
  // Error path: cancels receives and releases send requests (buffers are kept
  // alive, since the network may still read them).
  void abandon();
  // Error path, collective over the run's communicator once every rank's threads
  // have stopped (no send after it): receives and discards every message sent to
  // this rank that it did not receive, so that none is left in MPI's unexpected
  // queue when the communicator is freed (Open MPI never frees those: a leak per
  // failed run). Ranks exchange how many messages they sent to each other.
  void drain();

  std::int64_t activations_sent() const { return activations_; }
  std::int64_t eager_bytes() const { return eager_bytes_; }
  std::int64_t rendezvous_bytes() const { return rendezvous_bytes_; }
  // The most rendezvous receives that were in flight at once on this rank.
  std::int64_t rendezvous_peak() const { return rendezvous_peak_; }
  // GET requests this rank sent (rendezvous transfers that were not pushed).
  std::int64_t gets_sent() const { return gets_sent_; }
  // Tiles this rank sent to serve remote reads, and as remote writes.
  std::int64_t tiles_read() const { return tiles_read_; }
  std::int64_t tiles_written() const { return tiles_written_; }
  // Outputs that tasks of other ranks read in this rank's storage (no transfer).
  std::int64_t read_in_place() const { return read_in_place_; }

 private:
  struct Recv {
    Data data;
    const TaskClass* cls;  // an activation's flow (kind kActivate), or
    Params params;
    int flow;
    int source;
    std::int64_t handle;
    std::int64_t kind;  // kTile / kWrite: a collection tile
    TileKey key;
    bool pushed = false;  // the producer sends the data unasked: no GET
  };
  // A rendezvous payload the producer sends itself (Options::push) once its
  // announcement is posted.
  struct Push {
    std::int64_t handle;
    Data data;
  };
  // Appends a flow's size and either its payload or a rendezvous handle to `msg`;
  // a pushed handle's data goes to `pushes`.
  void append_data(std::vector<std::int64_t>& msg, const Data& d, std::vector<Push>& pushes);
  // Appends where `d` lies for `dest` to read in place (a collection's storage that
  // `dest` maps) and returns true; false when it does not lie in one.
  bool append_in_place(std::vector<std::int64_t>& msg, const Data& d, int dest);
  // The output of `size` bytes at `offset` in `source`'s storage of collection
  // `coll`, where this process maps it.
  Data in_place(int source, std::int64_t coll, std::int64_t offset, std::size_t size) const;
  // Posts the data sends of `pushes` to `dest` (after their announcement).
  void push_data(int dest, std::vector<Push>& pushes);
  // A remote write has landed in this rank's storage.
  void landed(const TileKey& key, const Data& d);
  void completed(int worker, Recv& r);
  void start_transfer(Recv&& r);
  void start_waiting();
  void post(int dest, std::vector<std::int64_t>&& msg);
  void isend(int dest, const void* buf, std::size_t bytes, int tag, std::vector<std::int64_t>&& msg,
             Data keep);
  void handle_message(int worker, int source, const std::vector<std::int64_t>& msg,
                      std::size_t words);
  int data_tag(std::int64_t handle) const;

  const TaskGraph& graph_;
  MPI_Comm comm_;
  Options options_;
  Handlers handlers_;
  int rank_ = 0, ranks_ = 1, tag_ub_ = 32767;

  std::atomic<std::int64_t> pending_{0};  // commands + sends + receives + unserved handles
  std::atomic<std::int64_t> activations_{0}, eager_bytes_{0}, rendezvous_bytes_{0};
  std::atomic<std::int64_t> tiles_read_{0}, tiles_written_{0}, read_in_place_{0};
  // in_place_[class][flow]: that output may be read in place (Options::read_in_place).
  std::vector<std::vector<char>> in_place_;
  // Messages sent to each rank (any thread), and received from each (under
  // progress_mutex_), on comm_: what drain() settles.
  std::unique_ptr<std::atomic<std::int64_t>[]> sent_to_;
  std::vector<std::int64_t> received_from_;

  std::mutex progress_mutex_;  // receiving stays single-threaded (paper 000, sec. 6.2.3)
  std::vector<std::int64_t> rbuf_;
  std::vector<MPI_Request> recv_reqs_;
  std::vector<Recv> recvs_;
  // Rendezvous transfers beyond options.max_rendezvous, in arrival order: their
  // receive is posted (and GET sent) when one in flight completes.
  std::deque<Recv> waiting_;
  std::int64_t rendezvous_peak_ = 0;
  std::int64_t gets_sent_ = 0;  // under progress_mutex_

  std::mutex send_mutex_;  // sends may be posted by any worker (CommMode::multiple)
  std::vector<MPI_Request> send_reqs_;
  struct SendKeep {
    std::vector<std::int64_t> msg;
    Data data;
  };
  std::vector<SendKeep> send_keep_;

  std::mutex command_mutex_;  // CommMode::funneled: sends queued for the comm thread
  struct Command {
    int dest;
    std::vector<std::int64_t> msg;  // a control message, or
    Data data;                      // a pushed payload (tag >= kDataTagBase)
    int tag;
  };
  std::vector<Command> commands_;

  std::mutex handle_mutex_;  // rendezvous data waiting for a GET
  std::unordered_map<std::int64_t, Data> handles_;
  std::int64_t next_handle_ = 0;
};

}  // namespace redist::runtime::detail
