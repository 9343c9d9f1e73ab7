// The planner under fuzzing (fuzz_plan and fuzz_plan_gen): a move given as
// text goes through the checks make_plan makes for N ranks, then, on valid
// input, plan_rank for every rank. No crash, no UB, no exception other than
// redist::Error, and no wrong plan: the plans are cross-checked between ranks
// (what p sends q is what q receives from p, run for run), their volume against
// the region's, each rank against the segment-list planner (paper 000's
// Algorithm 1, an independent algorithm), and, when the storage is small,
// executed in memory and compared element by element with the serial oracle
// (harness/pattern.hpp), as the planner's unit tests do.
#pragma once

#include <map>
#include <optional>

#include "fuzz_common.hpp"
#include "harness/pattern.hpp"
#include "kernels/copy.hpp"
#include "plan/compressed.hpp"
#include "redist/plan.hpp"

namespace redist::fuzz {
namespace plan_check {

// Work bounds. Valid layouts may be huge (extents up to 2^62, a tile per
// element): planning them is legitimate but slow, and a fuzzer input that takes
// seconds finds nothing. Planning costs O(segments) at most (O(runs) for
// block-cyclic layouts), and LocalIndex of a non-block-cyclic ownership walks
// every tile of the array, so both are bounded before planning. Huge arrays
// still get through with a small region or large tiles, which is where 64-bit
// overflow lives.
constexpr index_t kMaxSegments = 1 << 12;  // upper bound on the move's segments
constexpr index_t kMaxTiles = 1 << 12;     // tiles of a non-block-cyclic layout
// Executing in memory and checking every element costs far more than planning
// (the oracle's per-element work, under ASan), so only small arrays are executed.
constexpr index_t kMaxSimBytes = 1 << 18;     // storage executed in memory, all ranks and both sides
constexpr index_t kMaxSimElements = 1 << 13;  // elements of that storage

// How far inputs get (printed at exit with REDIST_FUZZ_STATS=1, e.g. over a
// corpus with -runs=0): a fuzzer that stops at the checks tests little.
struct Reached {
  long inputs = 0, parsed = 0, valid = 0, bounded = 0, planned = 0, executed = 0;
  ~Reached() {
    if (std::getenv("REDIST_FUZZ_STATS"))
      std::fprintf(stderr, "%ld inputs, %ld parsed, %ld valid, %ld within the work bounds, %ld planned, %ld executed\n",
                   inputs, parsed, valid, bounded, planned, executed);
  }
};
inline Reached reached;

struct Case {
  Layout src, dst;
  Region region;
  int nranks = 1;
  std::string what;
};

// Tiles of a non-block-cyclic layout, and an upper bound on the segments: along
// each dimension a segment starts at a tile boundary of one side or at the
// region's start, so there are fewer than (source tiles + target tiles) the
// region meets; the segments are the product over the dimensions.
inline bool small_enough(const Case& c) {
  for (const Layout* l : {&c.src, &c.dst}) {
    if (l->ownership().per_dimension()) continue;
    index_t tiles = 1;
    for (index_t n : l->ntiles())
      if (!fits_mul(tiles, n, tiles) || tiles > kMaxTiles) return false;
    // A placement (paper 003) also walks its source's tiles to place the patches.
    if (l->ownership().kind() == Ownership::Kind::placement && l->ownership().plc().of) {
      tiles = 1;
      for (index_t n : l->ownership().plc().of->ntiles())
        if (!fits_mul(tiles, n, tiles) || tiles > kMaxTiles) return false;
    }
  }
  if (c.region.empty()) return true;
  index_t segments = 1;
  for (int d = 0; d < c.src.ndim(); ++d) {
    // Target dimension d meets source dimension sd (Region::axes; checked before this).
    auto tiles = [&](const Layout& l, int dim, index_t at) {
      const DimPartition& p = l.partition(dim);
      return p.tile_of(at + c.region.size[d] - 1) - p.tile_of(at) + 1;
    };
    const int sd = c.region.src_dim(d);
    index_t n;
    if (!fits_add(tiles(c.src, sd, c.region.src_offset[sd]), tiles(c.dst, d, c.region.dst_offset[d]), n) ||
        !fits_mul(segments, n, segments) || segments > kMaxSegments)
      return false;
  }
  return true;
}

using PeerBytes = std::map<int, index_t>;
inline PeerBytes peer_bytes(const std::vector<PeerPlan>& peers) {
  PeerBytes m;
  for (const PeerPlan& p : peers) m[p.peer] += p.bytes;
  return m;
}

// One rank's plan on its own: peers in range and once each, byte counts adding up.
inline void check_rank(const Case& c, const RankPlan& p) {
  const index_t es = c.src.elem_size();
  const std::string who = detail::cat(c.what, ": rank ", p.rank);
  index_t sent = 0, received = 0, local = 0;
  for (auto [peers, total] : {std::pair{&p.sends, &sent}, std::pair{&p.receives, &received}}) {
    std::vector<bool> seen(c.nranks, false);
    for (const PeerPlan& pp : *peers) {
      if (pp.peer < 0 || pp.peer >= c.nranks || pp.peer == p.rank || seen[pp.peer])
        finding(detail::cat(who, ": peer ", pp.peer, " out of range, itself or listed twice"));
      seen[pp.peer] = true;
      index_t bytes = 0;
      for (const Segment& s : pp.segments) bytes += s.elements() * es;
      if (bytes != pp.bytes)
        finding(detail::cat(who, ": peer ", pp.peer, " has ", pp.bytes, " bytes, its runs ", bytes));
      *total += bytes;
    }
  }
  for (const LocalCopy& l : p.locals) local += l.elements() * es;
  if (sent != p.stats.bytes_sent || received != p.stats.bytes_received || local != p.stats.bytes_local)
    finding(detail::cat(who, ": stats say sent/received/local ", p.stats.bytes_sent, "/", p.stats.bytes_received, "/",
                        p.stats.bytes_local, " bytes, the lists ", sent, "/", received, "/", local));
}

// plan_rank plans in closed form (plan_compressed) when both layouts are
// block-cyclic over regular partitions, else with the segment list itself.
inline bool compressed(const Layout& l) {
  if (l.ownership().kind() != Ownership::Kind::block_cyclic) return false;
  for (const DimPartition& p : l.partitions())
    if (!p.is_regular()) return false;
  return true;
}

// The segment-list planner moves the same bytes between the same peers.
inline void check_against_segment_list(const Case& c, const RankPlan& p, const LocalIndex& sl, const LocalIndex& dl) {
  if (!compressed(c.src) || !compressed(c.dst)) return;  // plan_rank used it: nothing to compare
  const RankPlan o = detail::plan_segment_list(c.src, c.dst, sl, dl, c.region, p.rank, c.nranks);
  if (peer_bytes(p.sends) != peer_bytes(o.sends) || peer_bytes(p.receives) != peer_bytes(o.receives) ||
      p.stats.bytes_local != o.stats.bytes_local)
    finding(detail::cat(c.what, ": rank ", p.rank, " plans other peers or bytes than the segment-list planner (sent ",
                        p.stats.bytes_sent, " vs ", o.stats.bytes_sent, ", received ", p.stats.bytes_received, " vs ",
                        o.stats.bytes_received, ", local ", p.stats.bytes_local, " vs ", o.stats.bytes_local, ")"));
}

struct Store {
  std::vector<std::vector<std::byte>> blocks;
  std::vector<void*> ptr;
  std::byte* at(const Address& a, index_t es) { return blocks[a.block].data() + a.offset * es; }
};

inline Store allocate(const LocalIndex& li, index_t es) {
  Store s;
  for (index_t b = 0; b < li.nblocks(); ++b) s.blocks.emplace_back(static_cast<size_t>(li.block_elements(b) * es));
  for (auto& b : s.blocks) s.ptr.push_back(b.data());
  return s;
}

// Packs every message, unpacks it at its receiver, runs the local copies, then
// checks every stored element of both arrays against the serial oracle.
inline void execute_and_verify(const Case& c, const std::vector<RankPlan>& plans, const std::vector<LocalIndex>& sl,
                        const std::vector<LocalIndex>& dl) {
  const index_t es = c.src.elem_size();
  std::vector<Store> s, d;
  for (int r = 0; r < c.nranks; ++r) {
    s.push_back(allocate(sl[r], es));
    d.push_back(allocate(dl[r], es));
    fill_pattern(c.src, r, s[r].ptr, 11);
    fill_pattern(c.dst, r, d[r].ptr, 22);
  }
  for (int p = 0; p < c.nranks; ++p) {
    for (const PeerPlan& sp : plans[p].sends) {
      const PeerPlan* rp = nullptr;
      for (const PeerPlan& x : plans[sp.peer].receives)
        if (x.peer == p) rp = &x;
      std::vector<std::byte> msg(static_cast<size_t>(sp.bytes));
      std::byte* m = msg.data();
      for (const Segment& seg : sp.segments) {
        detail::copy_run(seg.shape, seg.run, es, seg.count, s[p].at(seg.at, es), seg.at.strides, seg.step, m,
                         detail::packed_strides(seg.shape), detail::packed_steps(seg.shape, seg.count));
        m += seg.elements() * es;
      }
      m = msg.data();
      for (const Segment& seg : rp->segments) {
        detail::copy_run(seg.shape, seg.run, es, seg.count, m, detail::packed_strides(seg.shape),
                         detail::packed_steps(seg.shape, seg.count), d[sp.peer].at(seg.at, es), seg.at.strides,
                         seg.step);
        m += seg.elements() * es;
      }
    }
    for (const LocalCopy& l : plans[p].locals)
      detail::copy_run(l.shape, l.run, es, l.count, s[p].at(l.from, es), l.from.strides, l.from_step,
                       d[p].at(l.to, es), l.to.strides, l.to_step);
  }
  for (int r = 0; r < c.nranks; ++r) {
    const CheckResult t = check_redistributed(c.dst, r, d[r].ptr, c.region, c.src, 11, 22);
    if (!t.ok()) finding(detail::cat(c.what, ": ", t.wrong, " wrong elements of ", t.checked, "; ", t.first_error));
    const CheckResult u = check_pattern(c.src, r, s[r].ptr, 11);
    if (!u.ok()) finding(detail::cat(c.what, ": the source changed: ", u.first_error));
  }
}

inline void plan_all(const Case& c) {
  // Storage maps: an Error here is bad input that make_plan reports too (ld
  // below the local rows, storage beyond 64-bit bytes, an owner function that
  // misbehaves).
  std::vector<LocalIndex> sl, dl;
  try {
    for (int r = 0; r < c.nranks; ++r) {
      sl.push_back(local_index(c.src, r, "source"));
      dl.push_back(local_index(c.dst, r, "target"));
    }
  } catch (const Error&) {
    return;
  }
  ++reached.planned;
  // Past every check make_plan makes, planning must succeed.
  std::vector<RankPlan> plans;
  for (int r = 0; r < c.nranks; ++r) {
    try {
      plans.push_back(plan_rank(c.src, c.dst, sl[r], dl[r], c.region, r, c.nranks));
    } catch (const Error& e) {
      finding(detail::cat(c.what, ": plan_rank of rank ", r, " failed on input make_plan accepts: ", e.what()));
    }
    check_rank(c, plans.back());
    check_against_segment_list(c, plans.back(), sl[r], dl[r]);
  }
  // Between ranks: every message has a receiver expecting exactly its runs.
  index_t sent = 0, received = 0, local = 0;
  for (int p = 0; p < c.nranks; ++p) {
    for (const PeerPlan& sp : plans[p].sends) {
      const PeerPlan* rp = nullptr;
      for (const PeerPlan& x : plans[sp.peer].receives)
        if (x.peer == p) rp = &x;
      if (!rp || rp->bytes != sp.bytes || rp->segments.size() != sp.segments.size())
        finding(detail::cat(c.what, ": rank ", p, " sends ", sp.bytes, " bytes in ", sp.segments.size(),
                            " runs to rank ", sp.peer, ", which expects ", rp ? rp->bytes : 0, " bytes in ",
                            rp ? rp->segments.size() : 0));
      for (size_t k = 0; k < sp.segments.size(); ++k)
        if (!(rp->segments[k].shape == sp.segments[k].shape) || rp->segments[k].count != sp.segments[k].count)
          finding(detail::cat(c.what, ": run ", k, " of ", p, "->", sp.peer, " is ", sp.segments[k].shape.str(),
                              " x", sp.segments[k].count[0], "x", sp.segments[k].count[1], " when sent, ",
                              rp->segments[k].shape.str(), " x", rp->segments[k].count[0], "x",
                              rp->segments[k].count[1], " when received"));
    }
    for (const PeerPlan& rp : plans[p].receives) {
      bool found = false;
      for (const PeerPlan& x : plans[rp.peer].sends) found |= x.peer == p;
      if (!found) finding(detail::cat(c.what, ": rank ", p, " expects data from ", rp.peer, ", which sends none"));
    }
    sent += plans[p].stats.bytes_sent, received += plans[p].stats.bytes_received, local += plans[p].stats.bytes_local;
  }
  const index_t es = c.src.elem_size();
  const index_t want = c.region.empty() ? 0 : c.region.size.volume() * es;  // fits: inside an array that fits
  if (sent != received || received + local != want)
    finding(detail::cat(c.what, ": ", sent, " bytes sent, ", received, " received, ", local, " copied; the region has ",
                        want));

  // The oracle holds one element in memory even where a rank stores none.
  if (es > kMaxSimBytes) return;
  index_t elements = 0;
  for (const auto* side : {&sl, &dl})
    for (const LocalIndex& li : *side)
      if (!fits_add(elements, li.elements(), elements) || elements > kMaxSimElements) return;
  if (elements * es > kMaxSimBytes) return;
  ++reached.executed;
  execute_and_verify(c, plans, sl, dl);
}

}  // namespace plan_check

// The move "SRC -> DST, REGION on N ranks" (no region: the whole source array),
// given as spec strings, checked as described above.
inline void check_move(int nranks, std::string_view src, std::string_view dst,
                       std::optional<std::string_view> region) {
  using namespace plan_check;
  ++reached.inputs;
  if (std::getenv("REDIST_FUZZ_PRINT"))  // the move as a fuzz_plan input (replays fuzz_plan_gen's findings)
    std::fprintf(stderr, "fuzz_plan input: %d|%.*s|%.*s%s%.*s\n", nranks, static_cast<int>(src.size()), src.data(),
                 static_cast<int>(dst.size()), dst.data(), region ? "|" : "",
                 region ? static_cast<int>(region->size()) : 0, region ? region->data() : "");
  Case c;
  c.nranks = nranks;
  try {
    c.src = Layout::parse(src);
    c.dst = Layout::parse(dst);
    c.region = region ? Region::parse(std::string(*region)) : Region::whole(c.src.shape());
  } catch (const Error&) {
    return;
  }
  ++reached.parsed;
  // make_plan's local checks, in its order (src/exec/plan.cpp).
  if (!c.src.check(c.nranks).empty() || !c.dst.check(c.nranks).empty()) return;
  if (c.src.ndim() != c.dst.ndim() || c.src.elem_size() != c.dst.elem_size()) return;
  if (!c.region.check(c.src.shape(), c.dst.shape()).empty()) return;
  ++reached.valid;
  if (!small_enough(c)) return;
  ++reached.bounded;
  c.what = detail::cat(c.nranks, " ranks, [", c.src.spec(), "] -> [", c.dst.spec(), "], region ", c.region.str(),
                       " (fuzz_plan input: ", c.nranks, "|", src, "|", dst, region ? "|" : "", region ? *region : "",
                       ")");
  plan_all(c);
}

}  // namespace redist::fuzz
