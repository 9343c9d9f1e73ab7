// Layer `plan`: what one rank sends, receives and copies. Pure, no MPI.
//
// Paper 000 sec. 3: each target tile is split by the source tiles it overlaps into
// up to nine SEGMENTS (NW N NE W I E SW S SE) in 2-D; in N-D a segment is the
// product of one 1-D overlap piece per dimension. A segment is remote (sent) when
// its source tile and target tile have different owners, local (copied) otherwise.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "redist/layout.hpp"

namespace redist {

// The part of the array to move: `size` elements per dimension, read at
// `src_offset` in the source, written at `dst_offset` in the target.
//
// `axes` (empty: the identity) permutes the dimensions, as numpy.transpose does:
// target dimension d reads source dimension axes[d], so in 2-D axes = {1, 0} is
// the transpose, target(i, j) = source(j, i). `size` and `dst_offset` are in the
// target's order of dimensions, `src_offset` in the source's: the source box is
// src_offset + src_size(). The planner expresses every segment in the target's
// order, with the source's strides permuted to it (docs/transforms.md).
struct Region {
  Coord size{};
  Coord src_offset{};
  Coord dst_offset{};
  Coord axes = Coord();

  // The whole of `shape`, offsets 0.
  static Region whole(const Coord& shape);
  // Parses "7000x7000 from=500x300 to=1000x0 axes=1,0" (from/to default to 0,
  // axes to the identity; `transpose` is axes=1,0 for 2-D).
  static Region parse(const std::string& text);
  std::string str() const;
  bool empty() const;
  // Empty when the region fits both shapes, else what is wrong.
  std::string check(const Coord& src_shape, const Coord& dst_shape) const;
  // Does it permute dimensions (axes given and not the identity)?
  bool permutes() const;
  // The source dimension target dimension d reads.
  int src_dim(int d) const { return axes.ndim() ? static_cast<int>(axes[d]) : d; }
  // The extent in the source's order of dimensions.
  Coord src_size() const;
};

// Several regions moved by one plan (a shape that is not one box: the
// ScaLAPACK drop-in's trapezoids, docs/scalapack.md). Empty when every region
// fits both shapes (Region::check) and no two overlap in the target (they may
// in the source); else what is wrong, naming the regions by their index. Cost
// O(k log k) plus the pairs whose extents in the last dimension overlap.
std::string check_regions(std::span<const Region> regions, const Coord& src_shape, const Coord& dst_shape);

// A RUN of segments, the plan's unit (a compressed plan): one segment of `shape`
// elements at `at` in this rank's storage, repeated count[0] times step[0]
// elements apart, all of that repeated count[1] times step[1] elements apart
// (paper 001's superblock: a fine-grained cyclic layout is a few runs, not one
// entry per element). In a message the run's segments follow one another in
// that order, each column-major. `run`: elements of one segment's longest
// contiguous run in storage (the leading dimensions whose storage is contiguous,
// merged), computed once by the planner for the copy kernels, the strategies and
// their cost models.
struct Segment {
  Coord shape;
  Address at;
  index_t run = 0;
  std::array<index_t, 2> count{1, 1};
  std::array<index_t, 2> step{0, 0};
  index_t segments() const { return count[0] * count[1]; }
  index_t elements() const { return shape.volume() * segments(); }
};

// A run of local pieces: copied from the source storage to the target storage,
// repeated as in Segment with steps on each side. `run`: the longest run of one
// piece contiguous in both storages.
struct LocalCopy {
  Coord shape;
  Address from;
  Address to;
  index_t run = 0;
  std::array<index_t, 2> count{1, 1};
  std::array<index_t, 2> from_step{0, 0}, to_step{0, 0};
  index_t segments() const { return count[0] * count[1]; }
  index_t elements() const { return shape.volume() * segments(); }
};

// The segments of a run, one entry each, in message order (the uncompressed
// form: tests compare plans through it, and strategies that need one entry per
// segment use it).
std::vector<Segment> expand(const Segment& run);
std::vector<LocalCopy> expand(const LocalCopy& run);

// Elements of the leading run of a box of `shape` that is contiguous in storage
// with element strides `strides`: the product of the leading extents while each
// next stride equals the run so far (dimensions of extent 1 are skipped); 1 when
// dimension 0 is not contiguous (a source side permuted by Region::axes).
index_t contiguous_run(const Coord& shape, const Coord& strides);

// Everything exchanged with one peer, in message order: the message is the
// segments packed one after another, each column-major.
struct PeerPlan {
  int peer = -1;
  index_t bytes = 0;
  std::vector<Segment> segments;
};

struct PlanStats {
  index_t bytes_sent = 0, bytes_received = 0, bytes_local = 0;
  index_t messages_sent = 0, messages_received = 0;
  index_t segments_sent = 0, segments_received = 0, local_copies = 0;  // segments (runs expanded)
  index_t runs_sent = 0, runs_received = 0, local_runs = 0;            // entries of the plan
  index_t plan_bytes = 0;  // memory the plan's lists hold (capacity)
  index_t target_tiles = 0;               // target tiles of this rank touched by the region
  index_t max_segments_per_tile = 0;      // over those tiles (paper 000: at most 9 in 2-D
                                          // when source tiles are not smaller than target tiles)
  index_t segments_per_tile_total = 0;    // sum, for the mean
};

struct RankPlan {
  int rank = 0;
  int ndim = 0;
  index_t elem_size = 0;
  std::vector<PeerPlan> sends;     // ordered by peer distance (peer - rank) mod P
  std::vector<PeerPlan> receives;  // same order
  std::vector<LocalCopy> locals;
  PlanStats stats;
};

// Plans `rank`: which segments it sends to and receives from each peer, and
// which it copies locally. Preconditions: both layouts valid (Layout::check),
// same element size and dimension, region fits both (Region::check), `nranks`
// larger than every owner. Cost O(this rank's tiles + segments) for block_cyclic
// ownerships, O(tiles in the region) for others. Throws redist::Error when an
// ownership names a rank outside [0, nranks).
RankPlan plan_rank(const Layout& src, const Layout& dst, const Region& region, int rank,
                   int nranks);
// Same, reusing this rank's storage maps (built for `rank` from `src` and `dst`).
RankPlan plan_rank(const Layout& src, const Layout& dst, const LocalIndex& src_local,
                   const LocalIndex& dst_local, const Region& region, int rank, int nranks);
// Several regions (check_regions passed): each is planned as above and the
// plans are merged, one message per peer holding region 0's segments, then
// region 1's, and so on (sender and receiver list them in the same order).
// The statistics add up (a target tile touched by two regions counts twice in
// target_tiles); max_segments_per_tile is the largest of one region's.
RankPlan plan_rank(const Layout& src, const Layout& dst, const LocalIndex& src_local,
                   const LocalIndex& dst_local, std::span<const Region> regions, int rank, int nranks);

}  // namespace redist
