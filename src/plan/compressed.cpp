// Compressed plans: what a rank sends, receives and copies as RUNS of segments
// (Segment::count/step), computed in closed form when both layouts are
// block-cyclic over regular partitions. Cost O(runs), never O(elements): a
// cyclic(1) vector of 10^8 elements moved to blocks of 1000 on 4 ranks is a
// handful of runs per peer (paper 001's superblocks), where the segment list had
// one entry per element.
//
// Per dimension d and per pair (source grid coordinate cs, target grid
// coordinate ct), the 1-D pieces the pair exchanges (the overlaps of cs's source
// tiles with ct's target tiles inside the region) are listed in increasing
// position as 1-D entries: a piece repeated count[0] x count[1] times with
// constant steps in position and in each side's local coordinates. The pieces a
// source rank p sends a target rank q are the product of its 1-D lists over the
// dimensions; one dimension, the one with the most pieces, is the RUN dimension
// whose entries become runs, the others are walked piece by piece. Both sides of
// a pair compute the same lists, so they agree on the runs and their order
// without talking: the message is the runs in order, a run's segments in order,
// each segment column-major.
//
// Pieces of one pair that touch are merged across a tile boundary when storage
// on that side is SEAMLESS there (the two tiles are adjacent in storage along d:
// local_array always; tile storage when no other dimension is split), so a
// 4000x4000 local array moved between two grids of one rank is one segment.
#include <algorithm>
#include <numeric>

#include "plan/compressed.hpp"

namespace redist::detail {

namespace {
// The least x >= 0 with lo <= (a x) mod m <= hi (0 < lo <= hi < m, 0 <= a < m),
// or -1: Euclid's recursion on (a, m). Either a multiple of a falls in [lo, hi]
// before the first wrap, or (hi - lo < a) the least wrap count y with a multiple
// of a in [lo + m y, hi + m y] solves the same problem for (m mod a, a), and
// x = ceil((lo + m y) / a). Depth O(log m).
__int128 least_in_range(__int128 a, __int128 m, __int128 lo, __int128 hi) {
  if (lo == 0) return 0;
  a %= m;
  if (a == 0) return -1;
  const __int128 k = (lo + a - 1) / a;
  if (a * k <= hi) return k;
  const __int128 y = least_in_range(m % a, a, (a - hi % a) % a, (a - lo % a) % a);
  return y < 0 ? -1 : (m * y + lo + a - 1) / a;
}
}  // namespace

index_t first_in_window(index_t a, index_t b, index_t m, index_t h) {
  a %= m, b %= m;
  if (b <= h) return 0;
  return static_cast<index_t>(least_in_range(a, m, m - b, m - b + h));
}

namespace {

constexpr int kSrc = 0, kDst = 1;

// One dimension of one side of the move, in closed form. Pieces are split at
// UNIT boundaries: a unit is a tile, or for a seamless side a super-tile (all
// tiles when the grid has one process along d), since storage runs on across
// the tiles of a unit.
struct Axis {
  index_t T = 1, off = 0, extent = 0, nt = 0;  // regular partition
  index_t G = 1, k = 1, src = 0;               // block-cyclic along d
  index_t r = 0;                               // region offset on this side
  bool seamless = false, pointers = false;
  index_t m = 1;  // tiles per unit
  index_t B = 1;  // units per block of one coordinate (k for tile units, else 1)

  index_t tile_of(index_t g) const { return (g + off) / T; }
  index_t tile_lo(index_t t) const { return t == 0 ? 0 : t * T - off; }
  index_t tile_hi(index_t t) const { return std::min((t + 1) * T - off, extent); }
  bool ragged(index_t t) const { return tile_hi(t) - tile_lo(t) != T; }
  index_t coord_of_tile(index_t t) const { return (t / k + src) % G; }
  index_t nunits() const { return (nt + m - 1) / m; }
  index_t unit_of(index_t g) const { return tile_of(g) / m; }
  index_t unit_lo(index_t u) const { return tile_lo(u * m); }
  index_t unit_hi(index_t u) const { return tile_hi(std::min((u + 1) * m, nt) - 1); }
  index_t unit_coord(index_t u) const { return coord_of_tile(u * m); }
  index_t unit_size() const { return m * T; }  // nominal
  // A unit is ragged when one of its tiles is (only the first and the last can be).
  bool unit_ragged(index_t u) const { return ragged(u * m) || ragged(std::min((u + 1) * m, nt) - 1); }
  // Smallest block index >= s whose coordinate is c.
  index_t block_at_or_after(index_t s, index_t c) const { return s + (((c - src - s) % G) + G) % G; }
};

Axis make_axis(const Layout& l, int d, index_t region_offset) {
  const DimPartition& p = l.partition(d);
  const BlockCyclicParams& bc = l.ownership().bc();
  Axis a;
  a.T = p.tile();
  a.off = p.offset();
  a.extent = p.extent();
  a.nt = p.ntiles();
  a.G = bc.grid[d];
  a.k = bc.super[d];
  a.src = bc.source[d];
  a.r = region_offset;
  const StorageKind kind = l.storage().kind;
  a.pointers = kind == StorageKind::tile_pointers;
  if (kind == StorageKind::local_array) {
    a.seamless = true;
  } else if (kind == StorageKind::tile) {
    a.seamless = true;  // tiles along d adjacent in storage with equal strides:
    for (int e = 0; e < l.ndim(); ++e)  // one tile along each lower dimension, extent 1 above
      if ((e < d && l.partition(e).ntiles() != 1) || (e > d && l.shape()[e] != 1)) a.seamless = false;
  }
  if (a.seamless) {
    a.m = a.G == 1 ? std::max<index_t>(a.nt, 1) : a.k;
    a.B = 1;
  } else {
    a.m = 1;
    a.B = a.k;
  }
  return a;
}

// A point of a 1-D list: position x in the region and, per side, the local tile
// index l, the offset w in that tile and the local index lam (the prefix of
// the rank's tiles along d plus w).
struct Pt {
  index_t x = 0;
  index_t l[2] = {0, 0}, w[2] = {0, 0}, lam[2] = {0, 0};
};

Pt minus(const Pt& a, const Pt& b) {
  Pt d;
  d.x = a.x - b.x;
  for (int s = 0; s < 2; ++s) d.l[s] = a.l[s] - b.l[s], d.w[s] = a.w[s] - b.w[s], d.lam[s] = a.lam[s] - b.lam[s];
  return d;
}

// The point at region position x (both sides own it).
Pt point_at(const Axis* ax, index_t x) {
  Pt p;
  p.x = x;
  for (int s = 0; s < 2; ++s) {
    const Axis& a = ax[s];
    const index_t g = a.r + x, t = a.tile_of(g);
    p.l[s] = (t / a.k) / a.G * a.k + t % a.k;
    p.w[s] = g - a.tile_lo(t);
    const bool owns_first = a.coord_of_tile(0) == a.coord_of_tile(t);
    p.lam[s] = p.l[s] * a.T - (owns_first && p.l[s] > 0 ? a.off : 0) + p.w[s];
  }
  return p;
}

// A 1-D entry: `size` elements at `p`, repeated c[0] times step[0] apart, all
// of that c[1] times step[1] apart. `fixed`: never merged with another entry
// (it lies in a tile of unusual size on a side where that changes strides).
struct Entry {
  Pt p;
  index_t size = 0;
  index_t c[2] = {1, 1};
  Pt step[2];
  bool fixed = false;
};

// Builds a pair's 1-D list from pieces and progressions pushed in increasing
// position, merging them into entries while every side's storage stays affine.
class Compressor {
 public:
  Compressor(const Axis* ax, std::vector<Entry>& out) : ax_(ax), out_(out) {}

  void push(const Entry& in) {
    if (in.c[0] > 1 && !valid(in.step[0])) {  // a progression across tiles of tile_pointers storage
      for (index_t i = 0; i < in.c[0]; ++i) {
        Entry one = in;
        one.p = point_at(ax_, in.p.x + i * in.step[0].x);  // l and w need not be affine
        one.c[0] = 1;
        push(one);
      }
      return;
    }
    if (has_cur_ && in.size == cur_.size && !in.fixed && !cur_.fixed) {
      const Pt gap = minus(in.p, cur_.p);
      if (cur_.c[0] == 1 && in.c[0] == 1 && valid(gap)) {
        cur_.step[0] = gap;
        cur_.c[0] = 2;
        return;
      }
      if (cur_.c[0] >= 2 && same(gap, cur_.step[0], cur_.c[0]) && (in.c[0] == 1 || same(in.step[0], cur_.step[0], 1))) {
        cur_.c[0] += in.c[0];
        return;
      }
      if (cur_.c[0] == 1 && in.c[0] >= 2 && same(gap, in.step[0], 1) && valid(gap)) {
        cur_.step[0] = gap;  // the actual second point: exact on every side
        cur_.c[0] = 1 + in.c[0];
        return;
      }
    }
    close();
    cur_ = in;
    has_cur_ = true;
  }

  // Closes the open entry: at the end of the list, and at period boundaries
  // for the periodic shortcut (see pair_list), which then skips `periods`
  // periods of a steady state.
  void flush() { close(); }
  size_t entries() const { return out_.size(); }
  // Entries [b, b + k) repeat entries [a, a + k) one period of `dx` positions later.
  bool repeats(size_t a, size_t b, size_t k, index_t dx) const {
    for (size_t i = 0; i < k; ++i) {
      const Entry &e = out_[a + i], &f = out_[b + i];
      if (e.fixed || f.fixed || e.c[1] != 1 || f.c[1] != 1 || e.c[0] != f.c[0] || e.size != f.size) return false;
      if (f.p.x - e.p.x != dx || !same(minus(f.p, e.p), minus(out_[b].p, out_[a].p), 1)) return false;
      if (e.c[0] > 1 && !same(e.step[0], f.step[0], 1)) return false;
    }
    return true;
  }
  // In a list that repeats every `dx` positions, the second repetition level
  // repeats an entry from one period to the next only (never inside a period),
  // so that two periods are alike entry for entry.
  void periodic(index_t dx) { period_x_ = dx; }
  index_t last_c1() const { return out_.empty() ? 0 : out_.back().c[1]; }
  // The last entry repeats once per period: `periods` more.
  void skip_repetitions(index_t periods) { out_.back().c[1] += periods; }
  // The last k entries (one period) repeat: each becomes the first of `periods`
  // repetitions one period apart, one entry per phase of the period (the list
  // is no longer in increasing position, which both sides agree on).
  void skip_phases(size_t k, index_t periods, index_t dx) {
    const size_t first = out_.size() - k;
    for (size_t i = 0; i < k; ++i) {
      Entry e = out_[first + i];
      e.p = point_at(ax_, e.p.x + dx);
      const Pt next = point_at(ax_, e.p.x + dx);
      e.step[1] = minus(next, e.p);
      e.c[1] = periods;
      if (periods > 1 && !valid(e.step[1])) {  // tile_pointers across tiles: one entry per period
        for (index_t j = 0; j < periods; ++j) {
          Entry one = out_[first + i];
          one.p = point_at(ax_, one.p.x + (j + 1) * dx);
          out_.push_back(one);
        }
        continue;
      }
      out_.push_back(e);
    }
  }

 private:
  // Steps equal where each side needs them to be: a seamless side by its local
  // index, a tile side by tile and offset (its strides change with the tile).
  bool same(const Pt& a, const Pt& b, index_t times) const {
    if (a.x != b.x * times) return false;
    for (int s = 0; s < 2; ++s) {
      if (ax_[s].seamless) {
        if (a.lam[s] != b.lam[s] * times) return false;
      } else if (a.l[s] != b.l[s] * times || a.w[s] != b.w[s] * times) {
        return false;
      }
    }
    return true;
  }
  // tile_pointers: a run stays inside one tile (one block).
  bool valid(const Pt& step) const {
    for (int s = 0; s < 2; ++s)
      if (ax_[s].pointers && step.l[s] != 0) return false;
    return true;
  }

  // Appends the current entry, as one more repetition of the last entry when it
  // repeats it.
  void close() {
    if (!has_cur_) return;
    has_cur_ = false;
    if (!out_.empty()) {
      Entry& last = out_.back();
      const Pt gap = minus(cur_.p, last.p);
      const bool alike = !last.fixed && !cur_.fixed && last.size == cur_.size && last.c[0] == cur_.c[0] &&
                         (cur_.c[0] == 1 || same(cur_.step[0], last.step[0], 1));
      if (alike && last.c[0] > 1) {
        if (last.c[1] == 1 && valid(gap) && (period_x_ == 0 || gap.x == period_x_)) {
          last.step[1] = gap;
          last.c[1] = 2;
          return;
        }
        if (last.c[1] >= 2 && same(gap, last.step[1], last.c[1])) {
          ++last.c[1];
          return;
        }
      }
    }
    out_.push_back(cur_);
  }

  const Axis* ax_;
  std::vector<Entry>& out_;
  Entry cur_;
  bool has_cur_ = false;
  index_t period_x_ = 0;
};

// The pieces pair (cs, ct) exchanges along one dimension, region [0, n).
// The side with the larger units is walked unit by unit (its units of its
// coordinate only); each of its units is split by the other side's units of its
// coordinate in closed form: a first and a last partial piece and, between
// them, whole units as one progression per block.
void pair_list(const Axis* ax, index_t n, index_t cs, index_t ct, std::vector<Entry>& out, bool jump = true) {
  out.clear();
  if (n <= 0) return;
  const int o = ax[kDst].unit_size() >= ax[kSrc].unit_size() ? kDst : kSrc, i = 1 - o;
  const Axis &A = ax[o], &I = ax[i];
  const index_t co = o == kSrc ? cs : ct, ci = o == kSrc ? ct : cs;
  Compressor comp(ax, out);
  auto piece_fixed = [&](index_t x, index_t size) {
    for (int s = 0; s < 2; ++s) {
      const Axis& a = ax[s];
      if (a.seamless) continue;
      const index_t t0 = a.tile_of(a.r + x), t1 = a.tile_of(a.r + x + size - 1);
      if (a.ragged(t0) || a.ragged(t1)) return true;
    }
    return false;
  };
  auto push_piece = [&](index_t x, index_t size) {
    Entry e;
    e.p = point_at(ax, x);
    e.size = size;
    e.fixed = piece_fixed(x, size);
    comp.push(e);
  };
  // Whole inner units u0..u1 (consecutive, one coordinate, none ragged).
  auto push_units = [&](index_t u0, index_t u1, index_t a, index_t b) {
    if (u1 < u0) return;
    const index_t lo = std::max(I.unit_lo(u0) - I.r, a);
    if (u1 == u0) return push_piece(lo, std::min(I.unit_hi(u0) - I.r, b) - lo);
    Entry e;
    e.p = point_at(ax, lo);
    e.size = I.unit_size();
    e.c[0] = u1 - u0 + 1;
    e.step[0] = minus(point_at(ax, I.unit_lo(u0 + 1) - I.r), e.p);
    e.fixed = piece_fixed(lo, e.size);
    comp.push(e);
  };
  const index_t uo_first = A.unit_of(A.r), uo_last = A.unit_of(A.r + n - 1);
  // Both sides' pieces repeat every L = lcm(W_o, W_i) positions, W the span of
  // one cycle of a side's grid. Once two whole periods gave the same entries
  // (shifted by L), every period up to the last two of the region would: each
  // entry of a period becomes one entry repeated over those periods (its second
  // level), so a cyclic(1) -> cyclic(3) list costs a few periods, not one step
  // per tile.
  auto cycle = [](const Axis& x) -> index_t {
    if (x.seamless && x.G == 1) return 0;  // one unit: nothing repeats
    const __int128 w = static_cast<__int128>(x.G) * x.B * x.unit_size();
    return w > (index_t{1} << 50) ? 0 : static_cast<index_t>(w);
  };
  const index_t wo = cycle(A), wi = cycle(I);
  index_t period_x = 0, blocks_per_period = 0;
  if (wo > 0 && wi > 0) {
    const __int128 l = static_cast<__int128>(wo / std::gcd(wo, wi)) * wi;
    if (l <= n / 4) period_x = static_cast<index_t>(l), blocks_per_period = period_x / wo;
  }
  if (period_x > 0) comp.periodic(period_x);
  size_t sizes[3] = {0, 0, 0};
  index_t c1s[3] = {0, 0, 0};
  int seen = 0;
  index_t walked = 0;
  // Jumps over the blocks of co that meet no unit of ci (most of them when the
  // two grids are large and their cycles unlike: tile 1 on 4096 ranks -> tile 1
  // on 4095, one block in 4095 meets). Nominally (whole tiles, not clipped by
  // the region or the extent) a block of co starts at S(blk) = blk len_o - off
  // - r, one of ci at I0 + j wi, and they meet when (S - I0 + len_o - 1) mod wi
  // <= len_o + len_i - 2: first_in_window finds the next such block in closed
  // form. A block passed over would push nothing; the walk still stops at every
  // period boundary, so the periodic shortcut sees what it saw block by block.
  const index_t len_o = wo > 0 ? wo / A.G : 0, len_i = wi > 0 ? wi / I.G : 0;
  const bool jumping = jump && wo > 0 && wi > 0 && len_o + len_i - 1 < wi;
  const index_t last_blk = uo_last / A.B;
  auto steps_to_meeting = [&](index_t blk) {  // -1: none
    const __int128 i0 = static_cast<__int128>(((ci - I.src) % I.G + I.G) % I.G) * len_i - I.off - I.r;
    const __int128 s = static_cast<__int128>(blk) * len_o - A.off - A.r;
    const index_t b = static_cast<index_t>(((s - i0 + len_o - 1) % wi + wi) % wi);
    return first_in_window(wo % wi, b, wi, len_o + len_i - 2);
  };
  index_t blk = A.block_at_or_after(uo_first / A.B, co);
  while (blk <= last_blk) {
    if (blocks_per_period > 0 && walked > 0 && walked % blocks_per_period == 0) {
      comp.flush();
      sizes[0] = sizes[1], sizes[1] = sizes[2], sizes[2] = comp.entries();
      c1s[0] = c1s[1], c1s[1] = c1s[2], c1s[2] = comp.last_c1();
      const index_t x_next = std::max(A.unit_lo(blk * A.B) - A.r, index_t{0});
      const index_t periods = (n - x_next - 2 * period_x) / period_x;
      if (++seen >= 3 && periods > 0) {
        const size_t k = sizes[2] - sizes[1];
        bool skipped = false;
        if (k == 0 && sizes[1] == sizes[0] && c1s[2] - c1s[1] == 1 && c1s[1] - c1s[0] == 1) {
          comp.skip_repetitions(periods);  // one entry per period, merged from period to period
          skipped = true;
        } else if (k > 0 && sizes[1] - sizes[0] == k && comp.repeats(sizes[0], sizes[1], k, period_x)) {
          comp.skip_phases(k, periods, period_x);
          skipped = true;
        }
        if (skipped) {
          blk += periods * blocks_per_period * A.G;
          seen = 0;
          if (blk * A.B > uo_last) break;
        }
      }
    }
    if (jumping) {
      const index_t left = (last_blk - blk) / A.G;  // blocks of co after blk
      const index_t j = steps_to_meeting(blk);
      if (blocks_per_period > 0) {
        const index_t to_boundary = blocks_per_period - walked % blocks_per_period;
        if (j < 0 || j >= to_boundary) {
          if (to_boundary > left) break;
          blk += to_boundary * A.G, walked += to_boundary;
          continue;
        }
      } else if (j < 0 || j > left) {
        break;
      }
      blk += j * A.G, walked += j;
    }
    ++walked;
    for (index_t uo = std::max(blk * A.B, uo_first); uo <= std::min(blk * A.B + A.B - 1, uo_last); ++uo) {
      const index_t a = std::max(A.unit_lo(uo) - A.r, index_t{0}), b = std::min(A.unit_hi(uo) - A.r, n);
      const index_t ui_lo = I.unit_of(I.r + a), ui_hi = I.unit_of(I.r + b - 1);
      auto clip = [&](index_t u) {  // unit u of the inner side inside [a, b)
        const index_t lo = std::max(I.unit_lo(u) - I.r, a), hi = std::min(I.unit_hi(u) - I.r, b);
        push_piece(lo, hi - lo);
      };
      if (I.unit_coord(ui_lo) == ci) clip(ui_lo);
      if (ui_hi > ui_lo + 1) {  // whole units strictly between
        if (I.B == 1) {
          const index_t u0 = I.block_at_or_after(ui_lo + 1, ci);
          if (u0 < ui_hi) {
            const index_t u1 = u0 + (ui_hi - 1 - u0) / I.G * I.G;
            if (u0 == u1) {
              push_units(u0, u0, a, b);
            } else {
              Entry e;
              e.p = point_at(ax, I.unit_lo(u0) - I.r);
              e.size = I.unit_size();
              e.c[0] = (u1 - u0) / I.G + 1;
              e.step[0] = minus(point_at(ax, I.unit_lo(u0 + I.G) - I.r), e.p);
              e.fixed = piece_fixed(e.p.x, e.size);
              comp.push(e);
            }
          }
        } else {
          for (index_t bi = I.block_at_or_after((ui_lo + 1) / I.B, ci); bi * I.B < ui_hi; bi += I.G)
            push_units(std::max(bi * I.B, ui_lo + 1), std::min(bi * I.B + I.B - 1, ui_hi - 1), a, b);
        }
      }
      if (ui_hi > ui_lo && I.unit_coord(ui_hi) == ci) clip(ui_hi);
    }
    blk += A.G;
  }
  comp.flush();
}

// The other side's grid coordinates along one dimension that share a piece with
// coordinate `me` of side `s` in the region [0, n): those whose pair_list is not
// empty, ascending. A rank plans with these only, not with every coordinate of
// the other grid (4096 pair lists per rank and side of which 8 had pieces, in
// the 1-D tile 4 -> tile 5 move on 4096 ranks).
//
// Pieces repeat every L = lcm(G k T of each side) positions: a piece at x >= L
// has a copy at x - L between tiles of the same coordinates (L is whole cycles
// of both grids, and the copy stays inside the region, the extent and the first
// tile). So the blocks of `me` (k consecutive tiles) that meet [0, min(n, L))
// meet every coordinate there is; each block's other-side tiles give their
// coordinates in closed form (whole blocks of the other side, at most one cycle
// of them). Cost O(blocks of `me` in one period, or in the region when shorter),
// and it stops once every coordinate is found.
std::vector<index_t> peer_coords(const Axis* ax, index_t n, int s, index_t me) {
  const Axis &M = ax[s], &O = ax[1 - s];
  std::vector<index_t> found;
  if (n <= 0) return found;
  // One cycle of a side's grid in positions, or -1 when longer than the region.
  auto cycle = [n](const Axis& a) -> __int128 {
    const __int128 kt = static_cast<__int128>(a.k) * a.T;  // k, T < 2^63: fits
    return kt > n ? -1 : kt * a.G;
  };
  const __int128 wm = cycle(M), wo = cycle(O);
  index_t lim = n;
  if (wm > 0 && wo > 0 && wm <= n && wo <= n) {
    const auto a = static_cast<index_t>(wm), b = static_cast<index_t>(wo);
    lim = static_cast<index_t>(std::min<__int128>(n, static_cast<__int128>(a / std::gcd(a, b)) * b));
  }
  std::vector<char> seen(static_cast<size_t>(O.G), 0);
  const index_t t_first = M.tile_of(M.r), t_last = M.tile_of(M.r + lim - 1);
  for (index_t blk = M.block_at_or_after(t_first / M.k, me); blk <= t_last / M.k; blk += M.G) {
    const index_t t0 = std::max(blk * M.k, t_first), t1 = t_last - blk * M.k < M.k ? t_last : blk * M.k + M.k - 1;
    const index_t a = std::max(M.tile_lo(t0), M.r) - M.r, b = std::min(M.tile_hi(t1), M.r + n) - M.r;
    if (a >= b) continue;
    const index_t b0 = O.tile_of(O.r + a) / O.k, b1 = O.tile_of(O.r + b - 1) / O.k;
    for (index_t ob = b0; ob <= b1 && ob - b0 < O.G; ++ob) {
      const index_t c = (ob + O.src) % O.G;
      if (seen[static_cast<size_t>(c)]) continue;
      seen[static_cast<size_t>(c)] = 1;
      found.push_back(c);
    }
    if (static_cast<index_t>(found.size()) == O.G) break;
  }
  std::sort(found.begin(), found.end());
  return found;
}

bool compressible(const Layout& l) {
  if (l.ownership().kind() != Ownership::Kind::block_cyclic) return false;
  for (int d = 0; d < l.ndim(); ++d)
    if (!l.partition(d).is_regular()) return false;
  return true;
}

// Along one dimension: this rank's target tiles in the region, the source tiles
// they overlap in all, and the most one overlaps. The first and last tiles of
// the region are counted one by one; the others have the nominal size, and the
// count of a tile is periodic along each arithmetic sequence of this rank's
// tiles (period S / gcd(step, S) in tiles), so each sequence costs at most one
// period: O(min(tiles, source tile size)) instead of O(tiles).
struct TileCounts {
  index_t tiles = 0, pieces = 0, most = 0;
};
TileCounts tile_counts(const Axis& S, const Axis& T, const LocalIndex& li, int d, index_t n) {
  TileCounts c;
  if (n <= 0) return c;
  const index_t lo = T.r, hi = T.r + n;
  auto pieces_of = [&](index_t t) {
    const index_t a = std::max(T.tile_lo(t), lo) - T.r + S.r, b = std::min(T.tile_hi(t), hi) - T.r + S.r;
    return S.tile_of(b - 1) - S.tile_of(a) + 1;
  };
  auto add = [&](index_t pieces, index_t times) {
    c.tiles += times, c.pieces += pieces * times, c.most = std::max(c.most, pieces);
  };
  const index_t tf = T.tile_of(lo), tl = T.tile_of(hi - 1);
  const index_t l0 = li.owned_before(d, tf), l1 = li.owned_before(d, tl + 1);
  if (l0 == l1) return c;
  index_t a = l0, b = l1;  // local tiles strictly inside the region's first and last
  if (li.owned_tile(d, a) == tf) add(pieces_of(tf), 1), ++a;
  if (b > a && li.owned_tile(d, b - 1) == tl) add(pieces_of(tl), 1), --b;
  // Tiles a..b-1: up to k sequences (one per position in a super-tile), each with a tile step G*k.
  const index_t step = T.G * T.k;
  const auto shift = static_cast<index_t>(static_cast<unsigned __int128>(step) * static_cast<unsigned __int128>(T.T) %
                                          static_cast<unsigned __int128>(S.T));  // position step mod S
  const index_t gcd_step = std::gcd(shift, S.T);
  const index_t period = S.T / (gcd_step == 0 ? S.T : gcd_step);
  // Each sequence starts at one of the first min(k, b - a) local tiles (k may be
  // far larger than the tile count: a loop over k positions would not end).
  for (index_t first = a; first < b && first - a < T.k; ++first) {
    const index_t count = (b - 1 - first) / T.k + 1;  // local tiles first, first + k, ... (tile step G*k)
    const index_t m = std::min(count, period);
    index_t sum_all = 0, sum_rem = 0;
    for (index_t j = 0; j < m; ++j) {
      const index_t p = pieces_of(li.owned_tile(d, first + j * T.k));
      sum_all += p;
      if (j < count % period) sum_rem += p;
      c.most = std::max(c.most, p);
    }
    c.tiles += count;
    c.pieces += count <= period ? sum_all : count / period * sum_all + sum_rem;
  }
  return c;
}

}  // namespace

bool plan_compressed(const Layout& src, const Layout& dst, const LocalIndex& src_local, const LocalIndex& dst_local,
                     const Region& region, int rank, int nranks, RankPlan& plan, bool every_pair) {
  if (!compressible(src) || !compressible(dst)) return false;
  const int n = src.ndim();
  const index_t es = src.elem_size();
  // Everything is in the target's order of dimensions: target dimension d reads
  // source dimension sd[d] (Region::axes; the identity without them), whose 1-D
  // axis pairs with d's, and a source address's strides are permuted to that
  // order (as plan_segment_list's).
  std::vector<int> sd(n);
  for (int d = 0; d < n; ++d) sd[d] = region.src_dim(d);
  std::vector<std::array<Axis, 2>> axes(n);
  for (int d = 0; d < n; ++d) {
    axes[d][kSrc] = make_axis(src, sd[d], region.src_offset[sd[d]]);
    axes[d][kDst] = make_axis(dst, d, region.dst_offset[d]);
  }
  // The run dimension rd: the most pieces; the second one r2 (-1 in 1-D): the
  // most pieces among the others (the same choice on every rank).
  int rd = 0, r2 = -1;
  {
    std::vector<double> pieces(n);
    for (int d = 0; d < n; ++d)
      pieces[d] = static_cast<double>(region.size[d]) /
                  static_cast<double>(std::min(axes[d][kSrc].unit_size(), axes[d][kDst].unit_size()));
    for (int d = 1; d < n; ++d)
      if (pieces[d] > pieces[rd]) rd = d;
    for (int d = 0; d < n; ++d)
      if (d != rd && (r2 < 0 || pieces[d] > pieces[r2])) r2 = d;
  }

  Coord my_s, my_t;
  const bool in_src = src.ownership().grid_coord(rank, my_s) && src.ownership().rank_at(my_s) == rank;
  const bool in_dst = dst.ownership().grid_coord(rank, my_t) && dst.ownership().rank_at(my_t) == rank;

  // A run: the pieces `cur` (one per dimension; cur[rd] is where the run starts),
  // repeated level[0].c times moving level[0].step along level[0].dim, all of that
  // level[1].c times along level[1].dim. The levels are those of an rd entry; when
  // that entry has one level and r2's entry is a progression, the progression is
  // the other level (a t x t -> (t+1) x (t+1) move is a run per peer and piece
  // shape, not one per row of pieces), the lower dimension's level first.
  struct Piece {
    index_t size;
    Pt p;
  };
  struct Level {
    int dim;
    index_t c;
    Pt step;
  };
  auto for_each_run = [&](const std::vector<const std::vector<Entry>*>& lists, auto&& f) {
    for (int d = 0; d < n; ++d)
      if (lists[d]->empty()) return;
    std::vector<std::vector<Piece>> pieces(n);
    std::vector<Level> prog;  // r2's progressions, one per pieces[r2] (c = 1: none)
    for (int d = 0; d < n; ++d) {
      if (d == rd) continue;
      for (const Entry& e : *lists[d])
        for (index_t j = 0; j < e.c[1]; ++j) {
          if (d == r2) {  // a progression: its first piece stands for it
            pieces[d].push_back({e.size, point_at(axes[d].data(), e.p.x + j * e.step[1].x)});
            prog.push_back({d, e.c[0], e.step[0]});
            continue;
          }
          for (index_t i = 0; i < e.c[0]; ++i)
            pieces[d].push_back({e.size, point_at(axes[d].data(), e.p.x + i * e.step[0].x + j * e.step[1].x)});
        }
    }
    std::vector<size_t> idx(n, 0);
    std::vector<Piece> cur(n);
    while (true) {
      for (int d = 0; d < n; ++d)
        if (d != rd) cur[d] = pieces[d][idx[d]];
      for (const Entry& e : *lists[rd]) {
        cur[rd] = {e.size, e.p};
        const Level l0{rd, e.c[0], e.step[0]}, l1{rd, e.c[1], e.step[1]};
        const Level* p = r2 >= 0 ? &prog[idx[r2]] : nullptr;
        if (!p || p->c == 1) {
          f(cur, std::array<Level, 2>{l0, l1});
        } else if (e.c[1] == 1) {  // the lower dimension inner: smaller steps in storage on both sides
          f(cur, r2 < rd ? std::array<Level, 2>{*p, l0} : std::array<Level, 2>{l0, *p});
        } else {  // both have two levels: r2's pieces one by one
          const Piece first = cur[r2];
          for (index_t i = 0; i < p->c; ++i) {
            cur[r2] = {first.size, point_at(axes[r2].data(), first.p.x + i * p->step.x)};
            f(cur, std::array<Level, 2>{l0, l1});
          }
          cur[r2] = first;
        }
      }
      int d = 0;
      for (; d < n; ++d) {
        if (d == rd) continue;
        if (++idx[d] < pieces[d].size()) break;
        idx[d] = 0;
      }
      if (d == n) return;
    }
  };

  // Address of the run's first segment on side s, and its steps (the source
  // side's tile and offset in its own order of dimensions, its strides in the
  // target's).
  auto locate = [&](const LocalIndex& li, int s, const std::vector<Piece>& cur, const std::array<Level, 2>& lv,
                    Coord& shape, Address& at, std::array<index_t, 2>& step) {
    Coord lt(n), w(n);
    shape = Coord(n);
    const auto dim = [&](int d) { return s == kSrc ? sd[d] : d; };
    for (int d = 0; d < n; ++d) {
      lt[dim(d)] = cur[d].p.l[s];
      w[dim(d)] = cur[d].p.w[s];
      shape[d] = cur[d].size;
    }
    at = li.local_address(lt, w);
    if (s == kSrc) {
      const Coord own = at.strides;
      for (int d = 0; d < n; ++d) at.strides[d] = own[sd[d]];
    }
    for (int k = 0; k < 2; ++k) {
      step[k] = 0;
      if (lv[k].c == 1) continue;
      // From the level's second segment itself: on a seamless side a level
      // repeats a step in the local index only, not in (tile, offset), and r2's
      // progression serves every piece of its entry with the first one's step
      // (after a ragged first tile, (+1 tile, +0) from one piece is (+1 tile, -1)
      // from the next).
      const int d = lv[k].dim;
      const Pt next = point_at(axes[d].data(), cur[d].p.x + lv[k].step.x);
      Coord lt2 = lt, w2 = w;
      lt2[dim(d)] = next.l[s];
      w2[dim(d)] = next.w[s];
      step[k] = li.local_address(lt2, w2).offset - at.offset;
    }
  };

  // f(peer, 1-D lists per dimension) for the ranks of the other side's grid
  // (`other`: the target layout when this rank sends, the source when it
  // receives) that exchange data with this rank: along each dimension the
  // coordinates peer_coords finds (every coordinate with `every_pair`), so the
  // cost follows this rank's pieces, not the other grid's size. A dimension's
  // list depends only on the other side's coordinate along it: built once.
  auto for_each_pair = [&](const Layout& other, bool send_side, auto&& f) {
    const Ownership& own = other.ownership();
    const Coord& grid = own.bc().grid;
    Coord c(n);  // the other side's grid coordinate (odometer)
    auto next = [&](const std::vector<std::vector<index_t>>& coords, std::vector<size_t>& idx) {
      for (int d = 0; d < n; ++d) {
        if (++idx[d] < coords[d].size()) return true;
        idx[d] = 0;
      }
      return false;
    };
    std::vector<std::vector<index_t>> coords(n);
    std::vector<size_t> idx(n, 0);
    if (own.ranks_needed() > nranks) {  // name the first rank outside, in grid order
      for (int d = 0; d < n; ++d) {
        coords[d].resize(static_cast<size_t>(grid[d]));
        std::iota(coords[d].begin(), coords[d].end(), 0);
      }
      do {
        for (int d = 0; d < n; ++d) c[d] = coords[d][idx[d]];
        if (const int peer = own.rank_at(c); peer >= nranks)
          fail(send_side ? "target" : "source", " ownership gives tiles to rank ", peer,
               ", outside the communicator of ", nranks, " ranks");
      } while (next(coords, idx));
    }
    // Per target dimension d: the other side's coordinates along its own
    // dimension (d on the target, sd[d] on the source).
    const auto other_dim = [&](int d) { return send_side ? d : sd[d]; };
    std::vector<std::vector<std::vector<Entry>>> per_coord(n);
    for (int d = 0; d < n; ++d) {
      const int s = send_side ? kSrc : kDst;
      const index_t me = send_side ? my_s[sd[d]] : my_t[d];
      if (every_pair) {
        coords[d].resize(static_cast<size_t>(grid[other_dim(d)]));
        std::iota(coords[d].begin(), coords[d].end(), 0);
      } else {
        coords[d] = peer_coords(axes[d].data(), region.size[d], s, me);
      }
      if (coords[d].empty()) return;
      per_coord[d].resize(coords[d].size());
      for (size_t i = 0; i < coords[d].size(); ++i)
        pair_list(axes[d].data(), region.size[d], send_side ? me : coords[d][i], send_side ? coords[d][i] : me,
                  per_coord[d][i], !every_pair);
    }
    std::vector<const std::vector<Entry>*> lists(n);
    do {
      for (int d = 0; d < n; ++d) c[other_dim(d)] = coords[d][idx[d]], lists[d] = &per_coord[d][idx[d]];
      f(own.rank_at(c), lists);
    } while (next(coords, idx));
  };

  // Receive side and local copies.
  if (in_dst)
    for_each_pair(src, false, [&](int peer, const std::vector<const std::vector<Entry>*>& lists) {
      const bool local = peer == rank;
      PeerPlan pp{peer, 0, {}};
      for_each_run(lists, [&](const std::vector<Piece>& cur, const std::array<Level, 2>& lv) {
        Segment g;
        locate(dst_local, kDst, cur, lv, g.shape, g.at, g.step);
        g.count = {lv[0].c, lv[1].c};
        const index_t bytes = g.elements() * es;
        if (local) {
          LocalCopy c;
          Coord shape;
          locate(src_local, kSrc, cur, lv, shape, c.from, c.from_step);
          c.shape = g.shape;
          c.to = g.at;
          c.to_step = g.step;
          c.count = g.count;
          c.run = std::min(contiguous_run(c.shape, c.from.strides), contiguous_run(c.shape, c.to.strides));
          plan.locals.push_back(c);
          plan.stats.bytes_local += bytes;
          plan.stats.local_copies += c.segments();
        } else {
          g.run = contiguous_run(g.shape, g.at.strides);
          pp.segments.push_back(g);
          pp.bytes += bytes;
          plan.stats.bytes_received += bytes;
          plan.stats.segments_received += g.segments();
        }
      });
      if (!pp.segments.empty()) plan.receives.push_back(std::move(pp));
    });
  // Send side.
  if (in_src)
    for_each_pair(dst, true, [&](int peer, const std::vector<const std::vector<Entry>*>& lists) {
      if (peer == rank) return;
      PeerPlan pp{peer, 0, {}};
      for_each_run(lists, [&](const std::vector<Piece>& cur, const std::array<Level, 2>& lv) {
        Segment g;
        locate(src_local, kSrc, cur, lv, g.shape, g.at, g.step);
        g.count = {lv[0].c, lv[1].c};
        g.run = contiguous_run(g.shape, g.at.strides);
        const index_t bytes = g.elements() * es;
        pp.segments.push_back(g);
        pp.bytes += bytes;
        plan.stats.bytes_sent += bytes;
        plan.stats.segments_sent += g.segments();
      });
      if (!pp.segments.empty()) plan.sends.push_back(std::move(pp));
    });
  order_by_distance(plan.receives, rank, nranks, false);
  order_by_distance(plan.sends, rank, nranks, true);

  // Paper 000's segments per target tile (before merging): per dimension, the
  // source tiles each of this rank's target tiles in the region overlaps; the
  // tiles are the product of the dimensions, so are the counts.
  if (in_dst) {
    index_t tiles = 1, total = 1, most_per_tile = 1;
    for (int d = 0; d < n; ++d) {
      const TileCounts c = tile_counts(axes[d][kSrc], axes[d][kDst], dst_local, d, region.size[d]);
      tiles *= c.tiles, total *= c.pieces, most_per_tile *= c.most;
    }
    plan.stats.target_tiles = tiles;
    plan.stats.segments_per_tile_total = tiles ? total : 0;
    plan.stats.max_segments_per_tile = tiles ? most_per_tile : 0;
  }
  return true;
}

}  // namespace redist::detail
