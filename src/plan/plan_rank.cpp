// plan_rank: paper 000 sec. 3.2 (Algorithm 1), generalised to N dimensions.
//
// Receive side: for every target tile this rank owns that meets the region, split
// the tile's part of the region by the source tiles it overlaps (a product of 1-D
// overlap lists: the nine SEGMENTS in 2-D); remote pieces are received, local ones
// copied. Send side: the same from the source tiles this rank owns, split by target
// tiles; only remote pieces (local ones are the receive side's copies).
// Both sides order each peer's segments by (target tile, position in the tile), so
// the sender packs exactly in the order the receiver unpacks, without talking.
#include <algorithm>
#include <numeric>

#include "plan/compressed.hpp"
#include "redist/plan.hpp"

namespace redist {
namespace {

struct Piece {
  index_t tile;   // tile index along this dimension in the *other* layout
  Interval part;  // in the other layout's coordinates
};

// Tiles of `part` overlapping [r.lo, r.hi()), each with its overlap (1-D SEGMENTS).
void overlap_pieces(const DimPartition& part, Interval r, std::vector<Piece>& out) {
  out.clear();
  if (r.empty()) return;
  const index_t last = part.tile_of(r.hi() - 1);
  for (index_t t = part.tile_of(r.lo); t <= last; ++t)
    out.push_back({t, intersect(part.tile_interval(t), r)});
}

// Calls f(tile) for each tile owned by `rank` that overlaps `box`, in ascending
// column-major tile order.
template <class F>
void for_each_owned_tile(const Layout& l, const LocalIndex& li, int rank, const Box& box, F&& f) {
  const int n = l.ndim();
  if (box.empty()) return;
  std::vector<std::vector<index_t>> lists(n);
  for (int d = 0; d < n; ++d) {
    const index_t lo = l.partition(d).tile_of(box.lo[d]);
    const index_t hi = l.partition(d).tile_of(box.lo[d] + box.size[d] - 1);
    if (li.per_dimension()) {
      lists[d].clear();
      for (index_t k = li.owned_before(d, lo), e = li.owned_before(d, hi + 1); k < e; ++k)
        lists[d].push_back(li.owned_tile(d, k));
    } else {
      lists[d].resize(hi - lo + 1);
      std::iota(lists[d].begin(), lists[d].end(), lo);
    }
    if (lists[d].empty()) return;
  }
  const Coord nt = l.ntiles();
  std::vector<size_t> idx(n, 0);
  Coord t(n);
  while (true) {
    for (int d = 0; d < n; ++d) t[d] = lists[d][idx[d]];
    if (li.per_dimension() || l.ownership().owner(t, nt) == rank) f(t);
    int d = 0;
    for (; d < n; ++d) {
      if (++idx[d] < lists[d].size()) break;
      idx[d] = 0;
    }
    if (d == n) return;
  }
}

// Walks the product of per-dimension piece lists (dimension 0 fastest), calling
// f(other_tile, other_box) for each N-D segment.
template <class F>
void for_each_segment(const std::vector<std::vector<Piece>>& pieces, F&& f) {
  const int n = static_cast<int>(pieces.size());
  for (int d = 0; d < n; ++d)
    if (pieces[d].empty()) return;
  std::vector<size_t> idx(n, 0);
  Coord tile(n);
  Box box{Coord(n), Coord(n)};
  while (true) {
    for (int d = 0; d < n; ++d) {
      const Piece& p = pieces[d][idx[d]];
      tile[d] = p.tile;
      box.lo[d] = p.part.lo;
      box.size[d] = p.part.size;
    }
    f(tile, box);
    int d = 0;
    for (; d < n; ++d) {
      if (++idx[d] < pieces[d].size()) break;
      idx[d] = 0;
    }
    if (d == n) return;
  }
}

index_t linear(const Coord& c, const Coord& extent) {
  index_t lin = 0;
  for (int d = c.ndim() - 1; d >= 0; --d) lin = lin * extent[d] + c[d];
  return lin;
}

int checked_owner(const Layout& l, const Coord& tile, const Coord& nt, int nranks, const char* side) {
  const int r = l.ownership().owner(tile, nt);
  if (r < 0 || r >= nranks)
    detail::fail(side, " ownership gives tile ", tile.str(), " to rank ", r,
                 ", outside the communicator of ", nranks, " ranks");
  return r;
}

// Accumulates segments per peer, then orders peers by distance from `rank`.
class PeerTable {
 public:
  PeerTable(int nranks) : slot_(nranks, -1) {}
  PeerPlan& at(int peer) {
    if (slot_[peer] < 0) {
      slot_[peer] = static_cast<int>(peers_.size());
      peers_.push_back({peer, 0, {}});
      keys_.emplace_back();
    }
    return peers_[slot_[peer]];
  }
  std::vector<std::pair<index_t, index_t>>& keys(int peer) { return keys_[slot_[peer]]; }
  // sort_by_key: reorder each peer's segments by its keys (send side).
  std::vector<PeerPlan> finish(int rank, int nranks, bool send_side, bool sort_by_key) {
    if (sort_by_key)
      for (size_t i = 0; i < peers_.size(); ++i) {
        auto& segs = peers_[i].segments;
        auto& k = keys_[i];
        std::vector<size_t> order(segs.size());
        std::iota(order.begin(), order.end(), size_t{0});
        std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return k[a] < k[b]; });
        std::vector<Segment> sorted;
        sorted.reserve(segs.size());
        for (size_t j : order) sorted.push_back(segs[j]);
        segs.swap(sorted);
      }
    detail::order_by_distance(peers_, rank, nranks, send_side);
    return std::move(peers_);
  }

 private:
  std::vector<int> slot_;
  std::vector<PeerPlan> peers_;
  std::vector<std::vector<std::pair<index_t, index_t>>> keys_;
};

}  // namespace

index_t contiguous_run(const Coord& shape, const Coord& strides) {
  const int n = shape.ndim();
  // A permuted source (Region::axes) may give dimension 0 a stride other than 1.
  if (n && shape[0] > 1 && strides[0] != 1) return 1;
  index_t run = n ? shape[0] : 1;
  for (int d = 1; d < n; ++d) {
    if (shape[d] == 1) continue;  // one index: its stride does not matter
    if (strides[d] != run) break;
    run *= shape[d];
  }
  return run;
}

RankPlan plan_rank(const Layout& src, const Layout& dst, const Region& region, int rank,
                   int nranks) {
  return plan_rank(src, dst, local_index(src, rank, "source"), local_index(dst, rank, "target"), region, rank,
                   nranks);
}

void detail::order_by_distance(std::vector<PeerPlan>& peers, int rank, int nranks, bool send_side) {
  auto dist = [&](int p) { return send_side ? (p - rank + nranks) % nranks : (rank - p + nranks) % nranks; };
  std::sort(peers.begin(), peers.end(), [&](const PeerPlan& a, const PeerPlan& b) { return dist(a.peer) < dist(b.peer); });
}

std::vector<Segment> expand(const Segment& run) {
  std::vector<Segment> out;
  for (index_t j = 0; j < run.count[1]; ++j)
    for (index_t i = 0; i < run.count[0]; ++i) {
      Segment s{run.shape, run.at, run.run};
      s.at.offset += i * run.step[0] + j * run.step[1];
      out.push_back(s);
    }
  return out;
}

std::vector<LocalCopy> expand(const LocalCopy& run) {
  std::vector<LocalCopy> out;
  for (index_t j = 0; j < run.count[1]; ++j)
    for (index_t i = 0; i < run.count[0]; ++i) {
      LocalCopy c{run.shape, run.from, run.to, run.run};
      c.from.offset += i * run.from_step[0] + j * run.from_step[1];
      c.to.offset += i * run.to_step[0] + j * run.to_step[1];
      out.push_back(c);
    }
  return out;
}

namespace {

// Runs and the memory the plan's lists hold.
void finish_stats(RankPlan& plan) {
  PlanStats& st = plan.stats;
  st.messages_sent = static_cast<index_t>(plan.sends.size());
  st.messages_received = static_cast<index_t>(plan.receives.size());
  st.runs_sent = st.runs_received = 0;
  index_t bytes = sizeof(RankPlan) + static_cast<index_t>((plan.sends.capacity() + plan.receives.capacity()) * sizeof(PeerPlan) +
                                                          plan.locals.capacity() * sizeof(LocalCopy));
  for (const PeerPlan& p : plan.sends) st.runs_sent += static_cast<index_t>(p.segments.size()), bytes += static_cast<index_t>(p.segments.capacity() * sizeof(Segment));
  for (const PeerPlan& p : plan.receives) st.runs_received += static_cast<index_t>(p.segments.size()), bytes += static_cast<index_t>(p.segments.capacity() * sizeof(Segment));
  st.local_runs = static_cast<index_t>(plan.locals.size());
  st.plan_bytes = bytes;
}

}  // namespace

RankPlan plan_rank(const Layout& src, const Layout& dst, const LocalIndex& src_local,
                   const LocalIndex& dst_local, const Region& region, int rank, int nranks) {
  RankPlan plan;
  plan.rank = rank;
  plan.ndim = src.ndim();
  plan.elem_size = src.elem_size();
  if (region.empty()) return plan;
  if (detail::plan_compressed(src, dst, src_local, dst_local, region, rank, nranks, plan)) {
    finish_stats(plan);
    return plan;
  }
  return detail::plan_segment_list(src, dst, src_local, dst_local, region, rank, nranks);
}

RankPlan plan_rank(const Layout& src, const Layout& dst, const LocalIndex& src_local,
                   const LocalIndex& dst_local, std::span<const Region> regions, int rank, int nranks) {
  if (regions.size() == 1) return plan_rank(src, dst, src_local, dst_local, regions[0], rank, nranks);
  RankPlan plan;
  plan.rank = rank;
  plan.ndim = src.ndim();
  plan.elem_size = src.elem_size();
  // Peers by distance (peer - rank) mod P, the order of RankPlan's lists.
  std::vector<PeerPlan> sends(static_cast<size_t>(nranks)), receives(static_cast<size_t>(nranks));
  auto merge = [&](std::vector<PeerPlan>& into, std::vector<PeerPlan>& from) {
    for (PeerPlan& q : from) {
      PeerPlan& to = into[static_cast<size_t>((q.peer - rank + nranks) % nranks)];
      to.peer = q.peer;
      to.bytes += q.bytes;
      to.segments.insert(to.segments.end(), q.segments.begin(), q.segments.end());
    }
  };
  for (const Region& r : regions) {
    RankPlan one = plan_rank(src, dst, src_local, dst_local, r, rank, nranks);
    merge(sends, one.sends);
    merge(receives, one.receives);
    plan.locals.insert(plan.locals.end(), one.locals.begin(), one.locals.end());
    PlanStats& a = plan.stats;
    const PlanStats& b = one.stats;
    a.bytes_sent += b.bytes_sent, a.bytes_received += b.bytes_received, a.bytes_local += b.bytes_local;
    a.segments_sent += b.segments_sent, a.segments_received += b.segments_received;
    a.local_copies += b.local_copies, a.target_tiles += b.target_tiles;
    a.max_segments_per_tile = std::max(a.max_segments_per_tile, b.max_segments_per_tile);
    a.segments_per_tile_total += b.segments_per_tile_total;
  }
  for (auto [all, out] : {std::pair{&sends, &plan.sends}, std::pair{&receives, &plan.receives}})
    for (PeerPlan& q : *all)
      if (!q.segments.empty()) out->push_back(std::move(q));
  finish_stats(plan);
  return plan;
}

RankPlan detail::plan_segment_list(const Layout& src, const Layout& dst, const LocalIndex& src_local,
                                   const LocalIndex& dst_local, const Region& region, int rank, int nranks) {
  const int n = src.ndim();
  RankPlan plan;
  plan.rank = rank;
  plan.ndim = n;
  plan.elem_size = src.elem_size();
  if (region.empty()) return plan;

  const Coord src_nt = src.ntiles(), dst_nt = dst.ntiles();
  const index_t es = src.elem_size();
  const Box src_region{region.src_offset, region.src_size()};
  const Box dst_region{region.dst_offset, region.size};
  std::vector<std::vector<Piece>> pieces(n);
  Coord g(n), stile(n);
  // Segments are in the target's order of dimensions: target dimension d reads
  // source dimension sd[d] (Region::axes), and a source address's strides are
  // permuted to that order.
  int sd[kMaxDims];
  for (int d = 0; d < n; ++d) sd[d] = region.src_dim(d);
  auto source_address = [&](const Coord& tile, const Coord& at) {
    Address a = src_local.address(tile, at);
    const Coord st = a.strides;
    for (int d = 0; d < n; ++d) a.strides[d] = st[sd[d]];
    return a;
  };

  // Receive side: target tiles of this rank.
  PeerTable recv(nranks);
  for_each_owned_tile(dst, dst_local, rank, dst_region, [&](const Coord& t) {
    const Box tb = intersect(dst.tile_box(t), dst_region);
    for (int d = 0; d < n; ++d)
      overlap_pieces(src.partition(sd[d]), {tb.lo[d] - region.dst_offset[d] + region.src_offset[sd[d]], tb.size[d]},
                     pieces[d]);
    index_t count = 0;
    // st, sb: the source tile and the segment's source box, both in the target's order.
    for_each_segment(pieces, [&](const Coord& st, const Box& sb) {
      ++count;
      Coord slo(n);
      for (int d = 0; d < n; ++d) {
        g[d] = sb.lo[d] - region.src_offset[sd[d]] + region.dst_offset[d];
        stile[sd[d]] = st[d];
        slo[sd[d]] = sb.lo[d];
      }
      const Address to = dst_local.address(t, g);
      const int p = checked_owner(src, stile, src_nt, nranks, "source");
      const index_t bytes = sb.size.volume() * es;
      if (p == rank) {
        const Address from = source_address(stile, slo);
        plan.locals.push_back({sb.size, from, to,
                               std::min(contiguous_run(sb.size, from.strides), contiguous_run(sb.size, to.strides))});
        plan.stats.bytes_local += bytes;
      } else {
        PeerPlan& pp = recv.at(p);
        pp.segments.push_back({sb.size, to, contiguous_run(sb.size, to.strides)});
        pp.bytes += bytes;
        plan.stats.bytes_received += bytes;
        ++plan.stats.segments_received;
      }
    });
    ++plan.stats.target_tiles;
    plan.stats.segments_per_tile_total += count;
    plan.stats.max_segments_per_tile = std::max(plan.stats.max_segments_per_tile, count);
  });

  // Send side: source tiles of this rank, pieces keyed by (target tile, offset in it).
  PeerTable send(nranks);
  for_each_owned_tile(src, src_local, rank, src_region, [&](const Coord& s) {
    const Box sb = intersect(src.tile_box(s), src_region);
    for (int d = 0; d < n; ++d)
      overlap_pieces(dst.partition(d),
                     {sb.lo[sd[d]] - region.src_offset[sd[d]] + region.dst_offset[d], sb.size[sd[d]]}, pieces[d]);
    for_each_segment(pieces, [&](const Coord& t, const Box& tb) {
      const int q = checked_owner(dst, t, dst_nt, nranks, "target");
      if (q == rank) return;
      for (int d = 0; d < n; ++d) g[sd[d]] = tb.lo[d] - region.dst_offset[d] + region.src_offset[sd[d]];
      PeerPlan& pp = send.at(q);
      const Address at = source_address(s, g);
      pp.segments.push_back({tb.size, at, contiguous_run(tb.size, at.strides)});
      const Box tile = dst.tile_box(t);
      Coord in_tile(n);
      for (int d = 0; d < n; ++d) in_tile[d] = tb.lo[d] - tile.lo[d];
      send.keys(q).emplace_back(linear(t, dst_nt), linear(in_tile, tile.size));
      const index_t bytes = tb.size.volume() * es;
      pp.bytes += bytes;
      plan.stats.bytes_sent += bytes;
      ++plan.stats.segments_sent;
    });
  });

  plan.receives = recv.finish(rank, nranks, false, false);
  plan.sends = send.finish(rank, nranks, true, true);
  plan.stats.local_copies = static_cast<index_t>(plan.locals.size());
  finish_stats(plan);
  return plan;
}

}  // namespace redist
