// Random layouts and regions for the planner and conformance tests: every
// partition kind, every ownership kind, every storage, ragged edges, 1-4 dims.
#pragma once

#include <algorithm>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "redist/layout.hpp"
#include "redist/plan.hpp"

namespace redist::testing {

using Rng = std::mt19937_64;

inline index_t uniform(Rng& rng, index_t lo, index_t hi) {  // inclusive
  return std::uniform_int_distribution<index_t>(lo, hi)(rng);
}

inline DimPartition random_partition(Rng& rng, index_t extent) {
  if (extent > 1 && uniform(rng, 0, 3) == 0) {  // irregular
    std::vector<index_t> b{0};
    while (b.back() < extent) b.push_back(std::min(extent, b.back() + uniform(rng, 1, std::max<index_t>(1, extent / 2))));
    return DimPartition::irregular(b);
  }
  // A quarter of the regular partitions are fine-grained (tiles of 1-4: cyclic).
  const index_t tile = uniform(rng, 0, 3) == 0 ? uniform(rng, 1, 4) : uniform(rng, 1, std::max<index_t>(1, extent + 1));
  const index_t offset = uniform(rng, 0, 2) == 0 ? uniform(rng, 0, tile - 1) : 0;
  return DimPartition::regular(extent, tile, offset);
}

// A block-cyclic grid with prod(grid) + first <= nranks.
inline Ownership random_block_cyclic(Rng& rng, int ndim, int nranks) {
  BlockCyclicParams p;
  p.grid = Coord(ndim, 1);
  p.source = Coord(ndim, 0);
  p.super = Coord(ndim, 1);
  index_t left = nranks;
  for (int d = 0; d < ndim; ++d) {
    p.grid[d] = uniform(rng, 1, left);
    left /= p.grid[d];
  }
  std::shuffle(&p.grid[0], &p.grid[0] + ndim, rng);
  index_t used = p.grid.volume();
  for (int d = 0; d < ndim; ++d) {
    p.source[d] = uniform(rng, 0, p.grid[d] - 1);
    p.super[d] = uniform(rng, 0, 2) == 0 ? uniform(rng, 2, 3) : 1;
  }
  p.order = uniform(rng, 0, 1) ? GridOrder::row : GridOrder::col;
  p.first_rank = static_cast<int>(uniform(rng, 0, nranks - used));
  if (uniform(rng, 0, 3) == 0) {  // ranks placed in any order (BLACS gridmap): `used` of them, shuffled
    std::vector<int> ranks(static_cast<size_t>(nranks));
    std::iota(ranks.begin(), ranks.end(), 0);
    std::shuffle(ranks.begin(), ranks.end(), rng);
    ranks.resize(static_cast<size_t>(used));
    p.map = std::make_shared<const std::vector<int>>(std::move(ranks));
    p.order = GridOrder::row;
    p.first_rank = 0;
  }
  return Ownership::block_cyclic(p);
}

// ScaLAPACK's LLD is each process's own: local_array layouts get a leading
// dimension of their own on each rank (this rank's local rows, or the layout's ld,
// plus rank % 3). Applied after the case is drawn, so every rank draws the same.
inline Layout with_rank_ld(const Layout& l, int rank) {
  if (l.storage().kind != StorageKind::local_array || rank % 3 == 0) return l;
  const index_t ld = LocalIndex(l, rank).ld() + rank % 3;
  return Layout(l.shape(), l.partitions(), l.ownership(), Storage{StorageKind::local_array, ld}, l.elem_size());
}

inline Ownership random_ownership(Rng& rng, int ndim, int nranks, const Coord& ntiles, int kind) {
  switch (kind) {
    case 0:
      return random_block_cyclic(rng, ndim, nranks);
    case 1: {
      RandomParams p;
      p.seed = rng();
      p.ranks = static_cast<int>(uniform(rng, 1, nranks));
      p.first_rank = static_cast<int>(uniform(rng, 0, nranks - p.ranks));
      return Ownership::random(p);
    }
    case 2:
      if (ndim >= 2)
        return Ownership::band(uniform(rng, 0, 2), random_block_cyclic(rng, ndim, nranks),
                               random_ownership(rng, ndim, nranks, ntiles, 1));
      [[fallthrough]];
    case 3: {
      std::vector<int> owners(static_cast<size_t>(ntiles.volume()));
      for (int& o : owners) o = static_cast<int>(uniform(rng, 0, nranks - 1));
      return Ownership::table(owners);
    }
    default: {
      const int r = nranks;
      return Ownership::function("sum_mod", r, [r](const Coord& t) {
        index_t s = 0;
        for (index_t x : t) s += x * (x + 1);
        return static_cast<int>(s % r);
      });
    }
  }
}

// A random valid layout of `shape` for `nranks` ranks.
inline Layout random_layout(Rng& rng, const Coord& shape, int nranks, index_t esize) {
  const int n = shape.ndim();
  std::vector<DimPartition> parts;
  Coord nt(n);
  for (int d = 0; d < n; ++d) {
    parts.push_back(random_partition(rng, shape[d]));
    nt[d] = parts.back().ntiles();
  }
  const int kind = static_cast<int>(uniform(rng, 0, 4));
  Ownership own = random_ownership(rng, n, nranks, nt, kind);
  Storage st;
  const int sk = static_cast<int>(uniform(rng, 0, 2));
  st.kind = sk == 0 ? StorageKind::tile : sk == 1 ? StorageKind::tile_pointers : StorageKind::local_array;
  if (st.kind == StorageKind::local_array && !own.per_dimension()) st.kind = StorageKind::tile;
  if (st.kind == StorageKind::local_array && uniform(rng, 0, 1)) {
    // An ld above every rank's local rows.
    st.ld = shape[0] + uniform(rng, 0, 3);
    if (st.ld == 0) st.ld = 1;
  }
  return Layout(shape, std::move(parts), own, st, esize);
}

inline Coord random_shape(Rng& rng, int ndim, index_t max_extent) {
  Coord s(ndim);
  for (int d = 0; d < ndim; ++d) s[d] = uniform(rng, 1, max_extent);
  return s;
}

// A region fitting both shapes: sometimes empty, a single element, the whole
// overlap, or touching the far edges.
inline Region random_region(Rng& rng, const Coord& a, const Coord& b) {
  const int n = a.ndim();
  Region r{Coord(n), Coord(n), Coord(n)};
  const int mode = static_cast<int>(uniform(rng, 0, 9));
  for (int d = 0; d < n; ++d) {
    const index_t m = std::min(a[d], b[d]);
    switch (mode) {
      case 0: r.size[d] = d == 0 ? 0 : uniform(rng, 0, m); break;   // empty
      case 1: r.size[d] = 1; break;                                   // one element
      case 2: r.size[d] = m; break;                                   // largest
      default: r.size[d] = uniform(rng, 1, m);
    }
    const bool touch = mode == 3;
    r.src_offset[d] = touch ? a[d] - r.size[d] : uniform(rng, 0, a[d] - r.size[d]);
    r.dst_offset[d] = touch ? b[d] - r.size[d] : uniform(rng, 0, b[d] - r.size[d]);
  }
  return r;
}

// A region that permutes dimensions (Region::axes, numpy.transpose's meaning):
// a random permutation (not the identity when there are 2 dimensions or more),
// then as random_region with target dimension d fitting source dimension axes[d].
inline Region random_permuted_region(Rng& rng, const Coord& a, const Coord& b) {
  const int n = a.ndim();
  std::vector<index_t> perm(static_cast<size_t>(n));
  for (int d = 0; d < n; ++d) perm[d] = d;
  do {
    for (int d = n - 1; d > 0; --d) std::swap(perm[d], perm[uniform(rng, 0, d)]);
  } while (n > 1 && std::is_sorted(perm.begin(), perm.end()));
  Coord axes(n), a_in_target_order(n);
  for (int d = 0; d < n; ++d) axes[d] = perm[d], a_in_target_order[d] = a[static_cast<int>(perm[d])];
  const Region t = random_region(rng, a_in_target_order, b);
  Region r{t.size, Coord(n), t.dst_offset, axes};
  for (int d = 0; d < n; ++d) r.src_offset[static_cast<int>(axes[d])] = t.src_offset[d];
  return r;
}

// One random case of the MPI suites: layouts for `nranks` ranks with 1 to
// `max_ndim` dimensions, element size `esize` (0: one of 1, 2, 3, 4, 5, 7, 8, 12, 16, 24),
// and a region fitting both.
struct RandomCase {
  Layout src, dst;
  Region region;
};

// A fine-grained block-cyclic layout: tiles of 1 to 4 elements often, k-cyclic,
// first-tile offsets, every storage.
inline Layout random_fine_layout(Rng& rng, const Coord& shape, int nranks, index_t es) {
  const int n = shape.ndim();
  std::vector<DimPartition> parts;
  for (int d = 0; d < n; ++d) {
    const index_t tile = uniform(rng, 0, 1) ? uniform(rng, 1, 4) : uniform(rng, 1, shape[d] + 1);
    parts.push_back(DimPartition::regular(shape[d], tile, uniform(rng, 0, 3) == 0 ? uniform(rng, 0, tile - 1) : 0));
  }
  Ownership own = random_block_cyclic(rng, n, nranks);
  Storage st;
  const int sk = static_cast<int>(uniform(rng, 0, 2));
  st.kind = sk == 0 ? StorageKind::tile : sk == 1 ? StorageKind::tile_pointers : StorageKind::local_array;
  if (st.kind == StorageKind::local_array && uniform(rng, 0, 1)) st.ld = shape[0] + uniform(rng, 0, 3);
  return Layout(shape, std::move(parts), own, st, es);
}

// `fine`: both layouts from random_fine_layout (block-cyclic, compressed plans).
// `permute`: the region permutes dimensions (random_permuted_region).
inline RandomCase random_case(Rng& rng, int nranks, int max_ndim = 4, index_t esize = 0, bool fine = false,
                              bool permute = false) {
  const int ndim = static_cast<int>(uniform(rng, 1, max_ndim));
  const index_t max_extent = ndim == 1 ? 300 : ndim == 2 ? 60 : ndim == 3 ? 14 : 8;
  const index_t es = esize ? esize : std::vector<index_t>{1, 2, 4, 8, 16, 3, 24, 5, 7, 12}[uniform(rng, 0, 9)];
  Coord a = random_shape(rng, ndim, max_extent), b = random_shape(rng, ndim, max_extent);
  auto make = fine ? random_fine_layout : random_layout;
  Layout src = make(rng, a, nranks, es), dst = make(rng, b, nranks, es);
  Region r = permute ? random_permuted_region(rng, a, b) : random_region(rng, a, b);
  return {std::move(src), std::move(dst), r};
}

}  // namespace redist::testing
