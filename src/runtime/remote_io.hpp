// Remote collection reads and writes (paper 004, sec. III-A: a task's input may be
// a collection element that another rank owns, and its output may go to one).
//
// Nothing is unrolled on one rank: while every rank walks the execution spaces
// (validation, counting its tasks), it evaluates the collection dependencies of
// every task and keeps only what concerns it:
//  - as an owner, the ranks whose tasks read each of its tiles (it sends each such
//    tile once per reading rank at the start of the run), and how many writes other
//    ranks' tasks will send it (its run ends only after they landed);
//  - as a reader, which of its own tasks read each remote tile (delivered to all of
//    them when the tile arrives, as a task input).
// A remote read sees the tile as it was when the run started: a tile that the run
// may modify (a collection output, or a read-write collection input of a task on
// the owner) is copied before any task runs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "graph_walk.hpp"

namespace redist::runtime::detail {

// A tile of one of the graph's collections (TaskGraph::collection(coll)).
struct TileKey {
  int coll = 0;
  Tile tile;
  bool operator==(const TileKey&) const = default;
};
struct TileKeyHash {
  std::size_t operator()(const TileKey& k) const;
};

// Writes a task's output `d` into its collection tile `home` on the owner (the
// local write of the engine, a remote write landing): nothing when `d` is the tile
// itself (written in place) or empty.
inline void store_tile(const Data& home, const Data& d) {
  if (home.bytes() != d.bytes() && d.size() > 0) std::memcpy(home.bytes(), d.bytes(), std::min(home.size(), d.size()));
}

// A flow of a local task that reads a remote tile.
struct Reader {
  const TaskClass* cls;
  Params params;
  int flow;
};

class RemoteIo {
 public:
  explicit RemoteIo(int rank) : rank_(rank) {}

  // Records the collection dependencies of task (c, p), which runs on rank `runner`,
  // that concern this rank. Returns "" or the problem found (a tile written twice).
  std::string visit(const TaskClass& c, const Params& p, int runner);

  struct Send {
    int dest;
    TileKey key;
  };
  // This rank's tiles that tasks of other ranks read: once per tile and reading rank.
  const std::vector<Send>& sends() const { return sends_; }
  // The local flows that read a remote tile (null if none).
  const std::vector<Reader>* readers(const TileKey& key) const {
    auto it = readers_.find(key);
    return it == readers_.end() ? nullptr : &it->second;
  }
  // Writes into this rank's tiles that tasks of other ranks send.
  std::int64_t incoming_writes() const { return incoming_writes_; }
  // Whether the run may change this rank's tile `key` before a remote read of it is served.
  bool modified(const TileKey& key) const { return modified_.contains(key); }

 private:
  struct SendKey {
    TileKey key;
    int dest;
    bool operator==(const SendKey&) const = default;
  };
  struct SendKeyHash {
    std::size_t operator()(const SendKey& k) const;
  };
  struct Writer {
    const TaskClass* cls;
    Params params;
    int flow;
  };

  int rank_;
  std::vector<Send> sends_;
  std::unordered_set<SendKey, SendKeyHash> sent_;
  std::unordered_map<TileKey, std::vector<Reader>, TileKeyHash> readers_;
  std::unordered_map<TileKey, Writer, TileKeyHash> written_;  // this rank's tiles: their writer
  std::unordered_set<TileKey, TileKeyHash> modified_;
  std::int64_t incoming_writes_ = 0;
};

}  // namespace redist::runtime::detail
