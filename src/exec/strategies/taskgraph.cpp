// `taskgraph`: the redistribution of paper 000 (sec. 5, 6) as a parameterized task
// graph on our runtime (src/runtime, paper 004), not as a loop over the plan. Four
// task classes; t is a target tile touched by the region (a linear index over the
// box of such tiles, column-major, so that one multi-index of any dimension fits
// one parameter) and k one of the source tiles overlapping it (column-major over
// the product of the 1-D overlap lists of its dimensions):
//   Init(t)       on t's owner: opens the tile (the first link of its chain);
//   Send(t, k)    on the source tile's owner: packs the segment (or, without
//                 dynamic_volume, the whole source tile) when the target is remote;
//   Receive(t, k) on t's owner: writes the segment, from the Send's data when
//                 remote, straight from the source storage when local (no MPI);
//   Finish(t)     on t's owner: the join of the tile's Receives.
// Execution spaces and dependencies are functions of (t, k) evaluated from the
// layouts' 1-D overlap lists, never an unrolled graph. Optimizations (sec. 6.2)
// are the TaskgraphOptions switches; docs/taskgraph.md.
// With a grain G > 1 (tiny segments, many tiles) the same four classes run per
// group g of G consecutive target tiles of one tile column and per pair of ranks:
//   Init(g, r), Finish(g, r)  on r, for the tiles of g that r owns;
//   Send(g, s, r)             on s: packs every remote segment of g from s to r
//                             into one flow;
//   Receive(g, s, r)          on r: unpacks it, or (s == r) copies g's local
//                             segments of r straight from the source.
// so that a task moves up to a few hundred kilobytes, not one 800-byte segment.
// With TaskgraphOptions::datatypes a remote segment's flow (grouped: a group's
// pieces for one peer, when they lie in one storage block) is a typed view: it
// leaves from the source storage as an MPI datatype and lands straight in the
// target (the flow's landing), so Send and Receive copy nothing.
#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <mutex>
#include <numeric>
#include <span>

#include "exec/datatypes.hpp"
#include "exec/pack.hpp"
#include "cost/model.hpp"
#include "kernels/copy.hpp"
#include "mpi/agree.hpp"
#include "redist/runtime/dot.hpp"
#include "redist/runtime/runtime.hpp"

namespace redist::detail {
namespace {

namespace rt = redist::runtime;
using rt::Span;
using rt::TaskContext;
using rt::Targets;

// Along one dimension: the target tiles the region touches, and for each the
// source tiles its part of the region overlaps (paper 000 Alg. 1, in 1-D).
struct DimOverlap {
  index_t t0 = 0, nt = 0;               // target tiles t0 .. t0 + nt - 1
  std::vector<index_t> s_first, s_num;  // per target tile: first overlapping source tile, how many
};

// The most elements a tile of `p` holds along its dimension.
index_t max_tile_extent(const DimPartition& p) {
  if (p.is_regular()) return std::min(p.tile(), p.extent());
  index_t m = 0;
  const std::vector<index_t>& b = p.bounds();
  for (size_t i = 1; i < b.size(); ++i) m = std::max(m, b[i] - b[i - 1]);
  return m;
}

// The most bytes one Send task can produce for one segment: the segment (the
// intersection of a source and a target tile), or a whole source tile without
// dynamic_volume.
double max_send_bytes(const PlanCore& p) {
  double seg = static_cast<double>(p.src.elem_size()), tile = seg;
  for (int d = 0; d < p.src.ndim(); ++d) {
    const double s = static_cast<double>(max_tile_extent(p.src.partition(d)));
    seg *= std::min(s, static_cast<double>(max_tile_extent(p.dst.partition(d))));
    tile *= s;
  }
  return p.options.taskgraph.dynamic_volume ? seg : tile;
}

// grain = auto: target tiles per task group. Segments of up to kSmallSegment
// bytes are grouped, when the region has at least kManyTiles target tiles or
// kManySegments segments, so that a group carries about kGroupBytes (measured in
// docs/taskgraph.md); else 1, paper 000's graph (a few large tasks cost nothing
// to schedule). The segment count matters alone too: 200 target tiles of 1000
// one-element segments each (200000x1, tiles 1 -> 1000, 2 ranks) took 497 ms
// ungrouped, 0.53 ms grouped (p2p: 0.24 ms).
constexpr double kSmallSegment = 16384, kGroupBytes = 262144;
constexpr index_t kManyTiles = 1024, kManySegments = 8 * kManyTiles;

// Committed box datatypes by (shape, strides): a plan's segments have a few
// shapes (inner, first and last pieces per dimension), so a few types serve every
// segment. Filled on first use by any thread (task bodies, landings); freed with
// the strategy.
class BoxTypes {
 public:
  BoxTypes() = default;
  BoxTypes(const BoxTypes&) = delete;
  BoxTypes& operator=(const BoxTypes&) = delete;
  ~BoxTypes() {
    int finalized = 0;
    MPI_Finalized(&finalized);  // unchecked: a destructor, nothing to do on failure
    if (finalized) return;
    for (auto& [key, t] : types_) MPI_Type_free(&t);  // unchecked: a destructor
    for (MPI_Datatype& t : owned_) MPI_Type_free(&t);  // unchecked: a destructor
  }
  // Keeps a committed type of the caller's, freed with the others.
  MPI_Datatype own(MPI_Datatype t) {
    std::lock_guard lock(mutex_);
    owned_.push_back(t);
    return t;
  }
  MPI_Datatype get(const Coord& shape, const Coord& strides, index_t es) {
    std::vector<index_t> key(shape.begin(), shape.end());
    key.insert(key.end(), strides.begin(), strides.end());
    key.push_back(es);
    std::lock_guard lock(mutex_);
    auto [it, fresh] = types_.try_emplace(std::move(key), MPI_DATATYPE_NULL);
    if (fresh) {
      MPI_Datatype t = box_type("taskgraph", shape, strides, es);
      check_mpi(MPI_Type_commit(&t), "MPI_Type_commit");
      it->second = t;
    }
    return it->second;
  }

 private:
  std::mutex mutex_;
  std::map<std::vector<index_t>, MPI_Datatype> types_;
  std::vector<MPI_Datatype> owned_;
};

class TaskGraphStrategy final : public Strategy {
 public:
  // A flow carries at most INT_MAX bytes (one MPI message): plans with larger
  // segments (tiles above 2 GiB), or groups of them (a grouped Send carries up to
  // grain segments), run p2p instead, which splits messages. Decided from the
  // layouts and options alone, so the same on every rank.
  // A permuting region (Region::axes) runs p2p too: the task graph's overlap
  // lists pair each target dimension with the same source dimension.
  // A plan of several regions (make_plan's list) runs p2p: the graph covers one box.
  bool available() override {
    return plan_.regions.size() == 1 && !plan_.region.permutes() &&
           max_send_bytes(plan_) * static_cast<double>(std::max<index_t>(grain_, 1)) <= static_cast<double>(INT_MAX);
  }

  explicit TaskGraphStrategy(PlanCore& p) : Strategy(p), opt_(p.options.taskgraph), nd_(p.dst.ndim()) {
    const Region& r = p.region;
    if (r.permutes() || p.regions.size() != 1) return;  // not available(): nothing to build
    tiles_ = 1;
    segments_ = 1;
    for (int d = 0; d < nd_; ++d) {
      DimOverlap& o = dims_[d];
      const DimPartition& tp = p.dst.partition(d);
      const DimPartition& sp = p.src.partition(d);
      if (r.size[d] > 0) {
        o.t0 = tp.tile_of(r.dst_offset[d]);
        o.nt = tp.tile_of(r.dst_offset[d] + r.size[d] - 1) - o.t0 + 1;
      }
      for (index_t j = 0; j < o.nt; ++j) {
        const Interval piece = intersect(tp.tile_interval(o.t0 + j), {r.dst_offset[d], r.size[d]});
        const index_t lo = piece.lo - r.dst_offset[d] + r.src_offset[d];
        o.s_first.push_back(sp.tile_of(lo));
        o.s_num.push_back(sp.tile_of(lo + piece.size - 1) - o.s_first.back() + 1);
      }
      tiles_ *= o.nt;
      index_t along = 0;  // (target tile, source tile) overlaps along d
      for (index_t k : o.s_num) along += k;
      segments_ *= along;  // at most the region's elements: no overflow
    }
    rows_ = nd_ > 0 && dims_[nd_ - 1].nt > 0 ? tiles_ / dims_[nd_ - 1].nt : 0;
    batch_ = opt_.batch == TaskgraphOptions::kBatchAuto ? auto_batch() : opt_.batch;
    grain_ = opt_.grain == TaskgraphOptions::kGrainAuto ? auto_grain() : opt_.grain;
    grain_ = std::clamp<index_t>(grain_, 1, std::max<index_t>(rows_, 1));
    typed_ = opt_.datatypes && opt_.dynamic_volume && opt_.isolate_segments;
    if (grain_ == 1) {
      build();
    } else {
      per_column_ = (rows_ + grain_ - 1) / grain_;
      build_grouped();
    }
  }

  void run(const SrcBlocks& src, const DstBlocks& dst) override {
    if (thread_level_ < 0) check_mpi(MPI_Query_thread(&thread_level_), "MPI_Query_thread");
    if (grain_ > 1 && !pieces_) {
      auto p = std::make_unique<Pieces>(collect_pieces());
      if (typed_) typed_pieces(p->sends), typed_pieces(p->receives);
      pieces_ = std::move(p);
    }
    src_ = &src;
    dst_ = &dst;
    rt::Options o;
    o.threads = opt_.threads;
    o.eager_limit = static_cast<std::size_t>(opt_.eager_limit);
    o.validate = opt_.validate;
    // Without a communication thread the workers progress MPI themselves (2 ranks
    // x 1 worker on 2 cores: 2 busy threads, not 4); several workers then need
    // MPI_THREAD_MULTIPLE. funneled (multiple_send off) needs the thread.
    const bool mt = thread_level_ >= MPI_THREAD_MULTIPLE;
    if (!opt_.multiple_send)
      o.comm_mode = rt::CommMode::funneled;
    else if (!opt_.comm_thread && (opt_.threads == 1 || mt))
      o.comm_mode = rt::CommMode::workers;
    else
      o.comm_mode = mt ? rt::CommMode::multiple : rt::CommMode::funneled;
    stats_ = rt::run(graph_, plan_.comm, o);
    src_ = nullptr;
    dst_ = nullptr;
  }

  rt::TaskGraph& graph() { return graph_; }

 private:
  struct Seg {
    Coord tile, stile;  // target and source tile
    Box box;            // the segment, in target coordinates
  };

  Coord target_tile(index_t t) const {
    Coord c(nd_);
    for (int d = 0; d < nd_; ++d) c[d] = dims_[d].t0 + t % dims_[d].nt, t /= dims_[d].nt;
    return c;
  }
  // Source tiles overlapping target tile t (>= 1 for every t in the space).
  index_t overlaps(index_t t) const {
    index_t k = 1;
    for (int d = 0; d < nd_; ++d) k *= dims_[d].s_num[t % dims_[d].nt], t /= dims_[d].nt;
    return k;
  }
  Seg segment(index_t t, index_t k) const {
    const Region& r = plan_.region;
    Seg s{Coord(nd_), Coord(nd_), {Coord(nd_), Coord(nd_)}};
    for (int d = 0; d < nd_; ++d) {
      const DimOverlap& o = dims_[d];
      const index_t j = t % o.nt;
      t /= o.nt;
      s.tile[d] = o.t0 + j;
      s.stile[d] = o.s_first[j] + k % o.s_num[j];
      k /= o.s_num[j];
      Interval in = intersect(plan_.dst.partition(d).tile_interval(s.tile[d]), {r.dst_offset[d], r.size[d]});
      const Interval st = plan_.src.partition(d).tile_interval(s.stile[d]);
      in = intersect(in, {st.lo - r.src_offset[d] + r.dst_offset[d], st.size});
      s.box.lo[d] = in.lo;
      s.box.size[d] = in.size;
    }
    return s;
  }
  Coord source_point(const Coord& g) const {
    Coord c(nd_);
    for (int d = 0; d < nd_; ++d) c[d] = g[d] - plan_.region.dst_offset[d] + plan_.region.src_offset[d];
    return c;
  }
  int target_owner(index_t t) const { return plan_.dst.owner(target_tile(t)); }
  bool remote(index_t t, index_t k) const {
    const Seg s = segment(t, k);
    return plan_.src.owner(s.stile) != plan_.dst.owner(s.tile);
  }
  index_t column(index_t t) const { return rows_ > 0 ? t / rows_ : 0; }
  index_t columns() const { return nd_ > 0 ? dims_[nd_ - 1].nt : 0; }

  // Paper 000 sec. 6.2.1: lcm(Qs*SNBs, Qt*SNBt) for two block-cyclic layouts (the
  // last dimension is the columns), else min(ceil(size_col / NBt), ranks).
  index_t auto_batch() const {
    const Ownership& so = plan_.src.ownership();
    const Ownership& to = plan_.dst.ownership();
    if (nd_ > 0 && so.per_dimension() && to.per_dimension()) {
      const int d = nd_ - 1;
      const index_t qs = so.bc().grid[d] * std::max<index_t>(1, so.bc().super.ndim() ? so.bc().super[d] : 1);
      const index_t qt = to.bc().grid[d] * std::max<index_t>(1, to.bc().super.ndim() ? to.bc().super[d] : 1);
      return std::max<index_t>(1, std::lcm(qs, qt));
    }
    return std::max<index_t>(1, std::min<index_t>(columns(), plan_.size));
  }

  index_t auto_grain() const {
    const double seg = max_send_bytes(plan_);
    if (seg > kSmallSegment || (tiles_ < kManyTiles && segments_ < kManySegments)) return 1;
    return static_cast<index_t>(std::ceil(kGroupBytes / std::max(seg, 1.0)));
  }

  // Groups (grain_ > 1): group g holds the target tiles [first, end) of the tile
  // column g / per_column_ (consecutive linear tile indices).
  index_t groups() const { return per_column_ * columns(); }
  std::pair<index_t, index_t> group_tiles(index_t g) const {
    const index_t col = g / per_column_, first = col * rows_ + (g % per_column_) * grain_;
    return {first, std::min(first + grain_, (col + 1) * rows_)};
  }
  // Calls f(seg) for each segment of group g from source rank s to target rank r,
  // in the same order on both sides (tiles, then overlaps), while f returns true.
  template <class F>
  void for_each_segment(index_t g, index_t s, index_t r, F&& f) const {
    const auto [first, end] = group_tiles(g);
    for (index_t t = first; t < end; ++t) {
      if (target_owner(t) != r) continue;
      for (index_t k = 0, n = overlaps(t); k < n; ++k) {
        const Seg seg = segment(t, k);
        if (plan_.src.owner(seg.stile) == s && !f(seg)) return;
      }
    }
  }
  // The storage side of this rank's segments in groups, computed on the first run
  // (O(this rank's segments), as the plan's lists) so that the bodies and guards
  // do not evaluate owners and addresses per segment on every run. A piece's key is
  // g * ranks + peer (the target rank of a Send, the source rank of a Receive,
  // this rank for local copies); pieces of one key in the order of
  // for_each_segment, which both sides of a flow follow.
  struct Piece {
    Coord shape;       // elements copied
    Address at;        // in this rank's storage (source for sends and local copies)
    Address to;        // local copies: in the target storage
    Coord packed;      // strides in the shipped buffer
    index_t run = 0;   // contiguous elements on both sides
    index_t skip = 0;  // receives of whole tiles: bytes before the segment in the buffer
    index_t bytes = 0; // shipped bytes (all `count` boxes)
    // `count` boxes of this shape, each `step_at` / `step_to` elements after the
    // last in the storage and packed one after another (merge_into: the pieces of
    // a group's tiles down a column, one copy_run call instead of one per tile).
    index_t count = 1, step_at = 0, step_to = 0;
  };
  struct PieceList {
    std::vector<index_t> keys;  // sorted
    std::vector<Piece> pieces;  // same order
    // typed_: a key's pieces in one block as one committed type, relative to its
    // first piece (typed_pieces); keys without one (pieces in several blocks) pack.
    std::map<index_t, MPI_Datatype> types;
    MPI_Datatype type_of(index_t key) const {
      const auto it = types.find(key);
      return it == types.end() ? MPI_DATATYPE_NULL : it->second;
    }
    std::span<const Piece> of(index_t key) const {
      const auto [lo, hi] = std::equal_range(keys.begin(), keys.end(), key);
      return {pieces.data() + (lo - keys.begin()), static_cast<std::size_t>(hi - lo)};
    }
  };
  struct Pieces {
    PieceList sends, receives, locals;
  };
  Pieces collect_pieces() const;
  // The types of PieceList::types, for sends and receives (typed_).
  void typed_pieces(PieceList& l);
  // A group's flow from the pieces of one key: where its bytes lie (typed) or a
  // fresh buffer they are packed into.
  rt::Data group_view(const PieceList& l, index_t key, bool source);
  bool merge_into(Piece& p, const Piece& q) const;
  index_t key(index_t g, index_t peer) const { return g * plan_.size + peer; }

  // Whether Send(g, s, r) has bytes for another rank.
  bool group_remote(index_t g, index_t s, index_t r) const {
    if (s == r) return false;
    if (pieces_ && s == plan_.rank) return !pieces_->sends.of(key(g, r)).empty();
    if (pieces_ && r == plan_.rank) return !pieces_->receives.of(key(g, s)).empty();
    bool any = false;
    for_each_segment(g, s, r, [&any](const Seg&) {
      any = true;
      return false;  // one is enough
    });
    return any;
  }

  void build();
  void build_grouped();
  void send_body(TaskContext& c, index_t t, index_t k);
  void receive_body(TaskContext& c, index_t t, index_t k) const;
  // One segment's bytes as Send ships them (the segment, or its whole source tile).
  index_t shipped_bytes(const Seg& s) const;
  // What a segment's Send packs, its Receive unpacks, or a local copy moves; and
  // doing it (pack into out, unpack from in, copy).
  Piece send_piece(const Seg& s) const;
  Piece receive_piece(const Seg& s) const;
  Piece local_piece(const Seg& s) const;
  // A piece of this rank's storage as a flow: a typed view, or a plain view when
  // it is contiguous.
  rt::Data view(const Piece& p, std::byte* at);
  void pack(const Piece& p, std::byte* out) const;
  void unpack(const Piece& p, const std::byte* in) const;
  void copy_local(const Piece& p) const;

  TaskgraphOptions opt_;
  int nd_;
  std::array<DimOverlap, kMaxDims> dims_;
  index_t tiles_ = 0, rows_ = 0, batch_ = 0;
  index_t segments_ = 0;  // the region's segments, every rank's (auto_grain)
  index_t grain_ = 1, per_column_ = 0;  // target tiles per task group; groups per tile column
  bool typed_ = false;  // remote segments travel as typed views (TaskgraphOptions::datatypes)
  BoxTypes types_;
  std::unique_ptr<const Pieces> pieces_;  // grain_ > 1, from the first run
  int thread_level_ = -1;  // MPI's, asked on the first run
  rt::TaskGraph graph_;
  const SrcBlocks* src_ = nullptr;
  const DstBlocks* dst_ = nullptr;
  rt::Stats stats_;
};

void TaskGraphStrategy::build() {
  auto& init = graph_.task_class("Init");
  auto& send = graph_.task_class("Send");
  auto& recv = graph_.task_class("Receive");
  auto& fin = graph_.task_class("Finish");
  const index_t last = tiles_ - 1;
  auto kmax = [this](auto t) { return overlaps(t) - 1; };

  init.param("t", 0, last).affinity([this](auto t) { return target_owner(t); });
  send.param("t", 0, last).param("k", 0, kmax).affinity([this](auto t, auto k) {
    return plan_.src.owner(segment(t, k).stile);
  });
  recv.param("t", 0, last).param("k", 0, kmax).affinity([this](auto t) { return target_owner(t); });
  fin.param("t", 0, last).affinity([this](auto t) { return target_owner(t); });

  // The segment's bytes: remote ones only; local segments are copied by Receive.
  rt::FlowBuilder seg = send.flow("seg");
  seg.out_if([this](auto t, auto k) { return remote(t, k); }, rt::to(recv, "seg", [](auto t, auto k) {
    return Targets{t, k};
  }));
  if (typed_)  // the segment lands straight in the target tile
    seg.lands([this](auto t, auto k) {
      const Piece p = receive_piece(segment(t, k));
      return view(p, dst_->at(p.at, plan_.rp.elem_size));
    });
  recv.flow("seg", rt::Access::read)
      .in_if([this](auto t, auto k) { return remote(t, k); }, rt::from(send, "seg", [](auto t, auto k) {
        return Targets{t, k};
      }));

  // The tile's chain Init -> Receive(s) -> Finish: with isolate_segments the
  // Receives of a tile are independent, joined by Finish (sec. 6.2.1); without,
  // they run one after another.
  if (opt_.isolate_segments) {
    init.control("tile").out(rt::to(recv, "tile", [kmax](auto t) { return Targets{t, Span{0, kmax(t)}}; }));
    recv.control("tile").in(rt::from(init, "tile", [](auto t) { return Targets{t}; }));
    recv.control("done").out(rt::to(fin, "done", [](auto t) { return Targets{t}; }));
    fin.control("done").in(rt::from(recv, "done", [kmax](auto t) { return Targets{t, Span{0, kmax(t)}}; }));
  } else {
    init.control("tile").out(rt::to(recv, "tile", [](auto t) { return Targets{t, 0}; }));
    recv.control("tile")
        .in_if([](auto /*t*/, auto k) { return k == 0; }, rt::from(init, "tile", [](auto t) { return Targets{t}; }))
        .otherwise(rt::from(recv, "tile", [](auto t, auto k) { return Targets{t, k - 1}; }))
        .out_if([kmax](auto t, auto k) { return k < kmax(t); },
                rt::to(recv, "tile", [](auto t, auto k) { return Targets{t, k + 1}; }))
        .otherwise(rt::to(fin, "done", [](auto t) { return Targets{t}; }));
    fin.control("done").in(rt::from(recv, "tile", [kmax](auto t) { return Targets{t, kmax(t)}; }));
  }

  // batch (sec. 6.2.1): the Sends of target tile (row, column c) wait for
  // Finish(row, c - batch), so at most `batch` columns of each row are exposed.
  if (batch_ > 0 && batch_ < columns()) {
    const index_t b = batch_ * rows_, cols = columns();
    send.control("batch").in_if([b](auto t) { return t >= b; },
                                rt::from(fin, "batch", [b](auto t) { return Targets{t - b}; }));
    fin.control("batch").out_if([this, b, cols](auto t) { return column(t) + batch_ < cols; },
                                rt::to(send, "batch", [b, kmax](auto t) {
                                  return Targets{t + b, Span{0, kmax(t + b)}};
                                }));
  }

  init.body([](TaskContext&, auto /*t*/) {});
  fin.body([](TaskContext&, auto /*t*/) {});
  send.body([this](TaskContext& c, auto t, auto k) { this->send_body(c, t, k); });
  recv.body([this](TaskContext& c, auto t, auto k) { this->receive_body(c, t, k); });
}

void TaskGraphStrategy::build_grouped() {
  auto& init = graph_.task_class("Init");
  auto& send = graph_.task_class("Send");
  auto& recv = graph_.task_class("Receive");
  auto& fin = graph_.task_class("Finish");
  const index_t last = groups() - 1, top = plan_.size - 1;
  const Span ranks{0, top};

  init.param("g", 0, last).param("r", 0, top).affinity([](auto, auto r) { return static_cast<int>(r); });
  send.param("g", 0, last).param("s", 0, top).param("r", 0, top).affinity([](auto, auto s) {
    return static_cast<int>(s);
  });
  recv.param("g", 0, last).param("s", 0, top).param("r", 0, top).affinity([](auto, auto, auto r) {
    return static_cast<int>(r);
  });
  fin.param("g", 0, last).param("r", 0, top).affinity([](auto, auto r) { return static_cast<int>(r); });

  // The group's bytes from s to r, when s != r and it has any; Receive(g, r, r)
  // copies r's local segments of the group.
  auto remote = [this](auto g, auto s, auto r) { return group_remote(g, s, r); };
  auto same = [](auto g, auto s, auto r) { return Targets{g, s, r}; };
  rt::FlowBuilder seg = send.flow("seg");
  seg.out_if(remote, rt::to(recv, "seg", same));
  if (typed_)  // r's pieces of the group land where they belong (or in a buffer to unpack)
    seg.lands([this](auto g, auto s) { return group_view(pieces_->receives, key(g, s), false); });
  recv.flow("seg", rt::Access::read).in_if(remote, rt::from(send, "seg", same));

  if (opt_.isolate_segments) {
    init.control("tile").out(rt::to(recv, "tile", [ranks](auto g, auto r) { return Targets{g, ranks, r}; }));
    recv.control("tile").in(rt::from(init, "tile", [](auto g, auto, auto r) { return Targets{g, r}; }));
    recv.control("done").out(rt::to(fin, "done", [](auto g, auto, auto r) { return Targets{g, r}; }));
    fin.control("done").in(rt::from(recv, "done", [ranks](auto g, auto r) { return Targets{g, ranks, r}; }));
  } else {  // Receive(g, 0, r) -> Receive(g, 1, r) -> ... -> Finish(g, r)
    init.control("tile").out(rt::to(recv, "tile", [](auto g, auto r) { return Targets{g, 0, r}; }));
    recv.control("tile")
        .in_if([](auto, auto s) { return s == 0; },
               rt::from(init, "tile", [](auto g, auto, auto r) { return Targets{g, r}; }))
        .otherwise(rt::from(recv, "tile", [](auto g, auto s, auto r) { return Targets{g, s - 1, r}; }))
        .out_if([top](auto, auto s) { return s < top; },
                rt::to(recv, "tile", [](auto g, auto s, auto r) { return Targets{g, s + 1, r}; }))
        .otherwise(rt::to(fin, "done", [](auto g, auto, auto r) { return Targets{g, r}; }));
    fin.control("done").in(rt::from(recv, "tile", [top](auto g, auto r) { return Targets{g, top, r}; }));
  }

  // batch: the Sends of group g wait for every rank's Finish of the group `batch`
  // tile columns before it in the same tile row of groups.
  if (batch_ > 0 && batch_ < columns()) {
    const index_t b = batch_ * per_column_, cols = columns();
    send.control("batch").in_if([b](auto g) { return g >= b; },
                                rt::from(fin, "batch", [b, ranks](auto g) { return Targets{g - b, ranks}; }));
    fin.control("batch").out_if([this, b, cols](auto g) { return g / per_column_ + batch_ < cols; },
                                rt::to(send, "batch", [b, ranks](auto g) { return Targets{g + b, ranks, ranks}; }));
  }

  init.body([](TaskContext&, auto /*g*/) {});
  fin.body([](TaskContext&, auto /*g*/) {});
  send.body([this](TaskContext& c, auto g, auto s, auto r) {
    if (s == r) return;  // local segments: Receive(g, r, r) copies them
    if (!group_remote(g, s, r)) return;
    rt::Data& out = c.data("seg");
    out = group_view(pieces_->sends, key(g, r), true);
    if (out.is_typed()) return;  // MPI reads the pieces where they lie
    std::byte* at = out.bytes();
    for (const Piece& p : pieces_->sends.of(key(g, r))) {
      pack(p, at);
      at += p.bytes;
    }
  });
  recv.body([this](TaskContext& c, auto g, auto s, auto r) {
    if (s == r) {
      for (const Piece& p : pieces_->locals.of(key(g, r))) copy_local(p);
      return;
    }
    const rt::Data& d = c.data("seg");
    if (d.empty() || d.is_typed()) return;  // nothing from s in this group, or it has landed
    const std::byte* in = d.bytes();
    for (const Piece& p : pieces_->receives.of(key(g, s))) {
      unpack(p, in);
      in += p.bytes;
    }
  });
}

void TaskGraphStrategy::typed_pieces(PieceList& l) {
  const index_t es = plan_.rp.elem_size;
  for (std::size_t i = 0, j = 0; i < l.keys.size(); i = j) {
    const Piece& first = l.pieces[i];
    bool one_block = true;
    for (j = i; j < l.keys.size() && l.keys[j] == l.keys[i]; ++j)
      one_block = one_block && l.pieces[j].at.block == first.at.block;
    if (!one_block) continue;
    std::vector<MPI_Datatype> types;
    std::vector<MPI_Aint> at;
    for (std::size_t k = i; k < j; ++k) {
      const Piece& p = l.pieces[k];
      types.push_back(run_type("taskgraph", p.shape, p.at.strides, {p.count, 1}, {p.step_at, 0}, es));
      at.push_back(static_cast<MPI_Aint>((p.at.offset - first.at.offset) * es));
    }
    l.types.emplace(l.keys[i], types_.own(struct_of(types, at)));
  }
}

rt::Data TaskGraphStrategy::group_view(const PieceList& l, index_t key, bool source) {
  const std::span<const Piece> ps = l.of(key);
  index_t bytes = 0;
  for (const Piece& p : ps) bytes += p.bytes;
  const MPI_Datatype t = l.type_of(key);
  if (!typed_ || t == MPI_DATATYPE_NULL) return rt::Data::allocate(static_cast<std::size_t>(bytes));
  const index_t es = plan_.rp.elem_size;
  std::byte* at = source ? const_cast<std::byte*>(src_->at(ps.front().at, es)) : dst_->at(ps.front().at, es);
  return rt::Data::typed(at, t, static_cast<std::size_t>(bytes));
}

TaskGraphStrategy::Pieces TaskGraphStrategy::collect_pieces() const {
  const int me = plan_.rank;
  std::vector<std::pair<index_t, Piece>> sends, receives, locals;
  for (index_t g = 0; g < groups(); ++g) {
    const auto [first, end] = group_tiles(g);
    for (index_t t = first; t < end; ++t) {
      const int r = target_owner(t);
      for (index_t k = 0, n = overlaps(t); k < n; ++k) {
        const Seg seg = segment(t, k);
        const int s = plan_.src.owner(seg.stile);
        if (s == me && r == me)
          locals.emplace_back(key(g, me), local_piece(seg));
        else if (s == me)
          sends.emplace_back(key(g, r), send_piece(seg));
        else if (r == me)
          receives.emplace_back(key(g, s), receive_piece(seg));
      }
    }
  }
  auto list = [this](std::vector<std::pair<index_t, Piece>>& v) {
    std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    PieceList l;
    for (auto& [k, p] : v)
      if (l.keys.empty() || l.keys.back() != k || !merge_into(l.pieces.back(), p))
        l.keys.push_back(k), l.pieces.push_back(std::move(p));
    return l;
  };
  return {list(sends), list(receives), list(locals)};
}

index_t TaskGraphStrategy::shipped_bytes(const Seg& s) const {
  const Coord& size = opt_.dynamic_volume ? s.box.size : plan_.src.tile_box(s.stile).size;
  return size.volume() * plan_.rp.elem_size;
}

// Appends q to p as one more repetition when both have the same shape, strides
// and block and q lies one step after p's last box on every side (sends and
// receives: packed right after it, so segment bytes only, no whole tiles).
bool TaskGraphStrategy::merge_into(Piece& p, const Piece& q) const {
  const index_t packed = q.shape.volume() * plan_.rp.elem_size;  // q's bytes when only its box is shipped
  if (p.skip || q.skip || q.count != 1 || q.bytes != p.bytes / p.count || (q.bytes != 0 && q.bytes != packed) ||
      p.shape != q.shape || p.run != q.run || p.at.block != q.at.block || p.to.block != q.to.block ||
      p.at.strides != q.at.strides || p.to.strides != q.to.strides)
    return false;
  const index_t da = q.at.offset - (p.at.offset + (p.count - 1) * p.step_at);
  const index_t dt = q.to.offset - (p.to.offset + (p.count - 1) * p.step_to);
  if (p.count > 1 ? (da != p.step_at || dt != p.step_to) : da == 0) return false;
  p.step_at = da, p.step_to = dt;
  ++p.count;
  p.bytes += q.bytes;
  return true;
}

TaskGraphStrategy::Piece TaskGraphStrategy::send_piece(const Seg& s) const {
  // dynamic_volume (sec. 6.2.2): only the segment; else the whole source tile,
  // as a runtime moving whole tiles would.
  const Box b = opt_.dynamic_volume ? Box{source_point(s.box.lo), s.box.size} : plan_.src.tile_box(s.stile);
  Piece p;
  p.shape = b.size;
  p.at = plan_.src_local->address(s.stile, b.lo);
  p.packed = packed_strides(b.size);
  p.run = contiguous_run(b.size, p.at.strides);
  p.bytes = shipped_bytes(s);
  return p;
}

TaskGraphStrategy::Piece TaskGraphStrategy::receive_piece(const Seg& s) const {
  Piece p;
  p.shape = s.box.size;
  p.at = plan_.dst_local->address(s.tile, s.box.lo);
  p.packed = packed_strides(s.box.size);
  if (!opt_.dynamic_volume) {  // the segment inside the whole source tile
    const Coord from_lo = source_point(s.box.lo);
    const Box tb = plan_.src.tile_box(s.stile);
    p.packed = packed_strides(tb.size);
    for (int d = 0; d < nd_; ++d) p.skip += (from_lo[d] - tb.lo[d]) * p.packed[d] * plan_.rp.elem_size;
  }
  p.run = std::min(contiguous_run(p.shape, p.packed), contiguous_run(p.shape, p.at.strides));
  p.bytes = shipped_bytes(s);
  return p;
}

TaskGraphStrategy::Piece TaskGraphStrategy::local_piece(const Seg& s) const {  // straight from the source
  Piece p;
  p.shape = s.box.size;
  p.at = plan_.src_local->address(s.stile, source_point(s.box.lo));
  p.to = plan_.dst_local->address(s.tile, s.box.lo);
  p.run = std::min(contiguous_run(p.shape, p.at.strides), contiguous_run(p.shape, p.to.strides));
  return p;
}

void TaskGraphStrategy::pack(const Piece& p, std::byte* out) const {
  const index_t es = plan_.rp.elem_size;
  copy_run(p.shape, p.run, es, {p.count, 1}, src_->at(p.at, es), p.at.strides, {p.step_at, 0}, out, p.packed,
           {p.shape.volume(), 0});
}

void TaskGraphStrategy::unpack(const Piece& p, const std::byte* in) const {
  const index_t es = plan_.rp.elem_size;
  copy_run(p.shape, p.run, es, {p.count, 1}, in + p.skip, p.packed, {p.shape.volume(), 0}, dst_->at(p.at, es),
           p.at.strides, {p.step_at, 0});
}

void TaskGraphStrategy::copy_local(const Piece& p) const {
  const index_t es = plan_.rp.elem_size;
  copy_run(p.shape, p.run, es, {p.count, 1}, src_->at(p.at, es), p.at.strides, {p.step_at, 0}, dst_->at(p.to, es),
           p.to.strides, {p.step_to, 0});
}

rt::Data TaskGraphStrategy::view(const Piece& p, std::byte* at) {
  const index_t es = plan_.rp.elem_size;
  if (p.run == p.shape.volume()) return rt::Data::wrap(at, static_cast<std::size_t>(p.bytes));
  return rt::Data::typed(at, types_.get(p.shape, p.at.strides, es), static_cast<std::size_t>(p.bytes));
}

void TaskGraphStrategy::send_body(TaskContext& c, index_t t, index_t k) {
  if (!remote(t, k)) return;  // a local segment: its Receive copies it
  const Piece p = send_piece(segment(t, k));
  if (typed_)  // straight from the source storage; MPI reads it through the type
    c.data("seg") = view(p, const_cast<std::byte*>(src_->at(p.at, plan_.rp.elem_size)));
  else
    pack(p, c.allocate("seg", static_cast<std::size_t>(p.bytes)).bytes());
}

void TaskGraphStrategy::receive_body(TaskContext& c, index_t t, index_t k) const {
  const Seg s = segment(t, k);
  if (plan_.src.owner(s.stile) == plan_.dst.owner(s.tile))
    copy_local(local_piece(s));
  else if (!typed_)  // typed: the segment has landed in place (the flow's landing)
    unpack(receive_piece(s), c.data("seg").bytes());
}

// Per-task cost of the runtime (T_runtime of Eq. 1): a task's scheduling,
// dependency bookkeeping and activation: 2000^2 with 10x10 tiles on 2 ranks runs
// 80,000 tasks per rank in 68-75 ms here, about 1 us each (docs/taskgraph.md).
constexpr double kTaskSeconds = 1e-6;

// One message per remote segment, many in flight (as `segment`), each segment
// packed and unpacked once, local ones copied once; plus T_runtime: Send and
// Receive per segment, Init and Finish per target tile.
Prediction predict(const RankPlan& rp, const Machine& m) {
  const Rates rt = rates(rp, m, true);
  const PlanStats& st = rp.stats;
  auto side = [&](const std::vector<PeerPlan>& peers, index_t n) {
    return message_time(peers, m) + static_cast<double>(n) * stream_cost(m, std::min<index_t>(n, 64));
  };
  Prediction p;
  p.comm = std::max(side(rp.sends, st.segments_sent), side(rp.receives, st.segments_received));
  p.memcpy = packed_copy_time(rp, rt);
  const index_t tasks = st.segments_sent + st.segments_received + 2 * st.local_copies + 2 * st.target_tiles;
  p.runtime = static_cast<double>(tasks) * kTaskSeconds;
  return p;
}

}  // namespace

StrategyEntry taskgraph_strategy() {
  return entry<TaskGraphStrategy>(
      "taskgraph", "paper 000's task graph on the runtime: Init/Send/Receive/Finish tasks per segment", predict,
      "p2p");
}

}  // namespace redist::detail

namespace redist {

std::string taskgraph_dot(const Layout& src, const Layout& dst, const Region& region, int ranks,
                          const TaskgraphOptions& options) {
  for (const Layout* l : {&src, &dst})
    if (std::string err = l->check(ranks); !err.empty()) detail::fail("taskgraph_dot: ", err);
  if (std::string err = region.check(src.shape(), dst.shape()); !err.empty()) detail::fail("taskgraph_dot: ", err);
  if (region.permutes()) detail::fail("taskgraph_dot: a region with axes= runs p2p, not the task graph");
  detail::PlanCore core;
  core.src = src, core.dst = dst, core.region = region, core.regions = {region}, core.size = ranks;
  core.options.taskgraph = options;
  detail::TaskGraphStrategy s(core);
  return runtime::to_dot(s.graph(), ranks);
}

}  // namespace redist
