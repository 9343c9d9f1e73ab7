// Placement ownerships (paper 003, sec. I): an imposed patch grid over a source
// layout; each patch goes whole to one rank.
//
//  greedy:   the rank holding the patch's largest part (ties: the lowest rank).
//            Each patch independently keeps the most it can, so no assignment
//            moves less data.
//  balanced: every rank gets f = floor(n/R) or f+1 patches (exactly n mod R get
//            f+1), and among those assignments one that keeps the most elements
//            in place: a min-cost flow solved by successive shortest paths
//            (Ahuja, Magnanti, Orlin, "Network Flows", ch. 9) started from the
//            greedy assignment, which is a min-cost pseudoflow (every move from
//            it costs >= 0). Patches with equal parts are interchangeable: the
//            flow moves counts of patch classes (PatchParts::class_of; 32,768
//            classes for 6.6 million patches at 6000^3 / 32^3 on 16^3 ranks).
//            Nodes are the ranks (ranks holding no part share one node until
//            given a patch: Balancer), a hub H and a sink T:
//              a -> b  move one patch of class c from a to b, cost ov(c,a) - ov(c,b),
//                      kept per pair as the cheapest class (b among c's parts);
//              a -> H -> b  move a patch of class c to any rank, cost ov(c,a);
//              a -> T  a takes one of the n mod R "f+1" slots, T -> a gives it back.
//            A rank's excess is load - f - slot; patches move along shortest
//            paths from the ranks with excess to ranks (or T) with a deficit, as
//            many at once as the path's classes, excess and deficit allow, in
//            phases (primal-dual): Dijkstra on reduced costs (node potentials)
//            until every deficit is reached, then every path of zero reduced
//            cost found depth-first.
//            When no excess is left every load is f or f+1 and the flow is min-cost.
//            tests/unit/test_placement.cpp checks optimality by brute force and
//            against an independent min-cost flow on the patch x rank network.
// Pure, no MPI: every rank computes the same table from the spec.
#include <algorithm>
#include <array>
#include <climits>
#include <queue>
#include <limits>
#include <map>

#include "layout/placement.hpp"

namespace redist {
namespace detail {
namespace {

using detail::cat;

constexpr index_t kMaxPatches = index_t{1} << 30;  // one int per patch in the owner table
constexpr index_t kMaxWork = index_t{1} << 32;     // patch x source-tile pieces walked
constexpr int kMaxRanks = 1 << 24;

struct Part {
  int rank;
  index_t volume;
};

// Elements of each patch per source rank, walked patch by patch in column-major
// order. Per dimension, the source pieces of every patch interval are listed once
// (keyed by the source tile, or by the grid coordinate for block_cyclic sources,
// which merges the pieces a cyclic rank holds); a patch is their product.
class PatchParts {
 public:
  PatchParts(const Layout& src, const std::vector<DimPartition>& patches) : src_(src) {
    n_ = src.ndim();
    bc_ = src.ownership().per_dimension();
    snt_ = src.ntiles();
    nsig_ = Coord(n_);
    for (int d = 0; d < n_; ++d) {
      const DimPartition& sp = src.partition(d);
      const DimPartition& pp = patches[d];
      std::vector<index_t>& start = start_[d];
      std::vector<Item>& items = items_[d];
      start.push_back(0);
      for (index_t t = 0; t < pp.ntiles(); ++t) {
        const Interval iv = pp.tile_interval(t);
        const size_t first = items.size();
        if (!iv.empty())
          for (index_t s = sp.tile_of(iv.lo), last = sp.tile_of(iv.hi() - 1); s <= last; ++s) {
            const index_t key = bc_ ? src.ownership().coord_of_tile(d, s) : s;
            const index_t len = intersect(sp.tile_interval(s), iv).size;
            auto it = std::find_if(items.begin() + static_cast<std::ptrdiff_t>(first), items.end(),
                                   [key](const Item& x) { return x.key == key; });
            if (bc_ && it != items.end()) it->len += len;
            else items.push_back({key, len});
          }
        start.push_back(static_cast<index_t>(items.size()));
      }
      // Signatures: intervals with equal item lists (keys and lengths) get one id.
      std::map<std::vector<Item>, index_t> seen;
      sig_[d].resize(static_cast<size_t>(pp.ntiles()));
      for (index_t t = 0; t < pp.ntiles(); ++t) {
        std::vector<Item> key(items.begin() + start[t], items.begin() + start[t + 1]);
        const auto ins = seen.emplace(std::move(key), static_cast<index_t>(rep_[d].size()));
        if (ins.second) rep_[d].push_back(t), mult_[d].push_back(0);
        sig_[d][t] = ins.first->second;
        ++mult_[d][ins.first->second];
      }
      nsig_[d] = static_cast<index_t>(rep_[d].size());
    }
  }

  // Patch classes. Two patches whose intervals have equal item lists in every
  // dimension have equal parts; a class is such a tuple of per-dimension
  // signatures (column-major). There are at most as many classes as patches,
  // and on a regular patch grid over even blocks a few per rank.
  const Coord& nclasses() const { return nsig_; }
  index_t class_of(const Coord& t) const {
    index_t c = 0;
    for (int d = n_ - 1; d >= 0; --d) c = c * nsig_[d] + sig_[d][t[d]];
    return c;
  }
  // A patch of the class with signature tuple s, and the number of its patches.
  Coord representative(const Coord& s) const {
    Coord t(n_);
    for (int d = 0; d < n_; ++d) t[d] = rep_[d][s[d]];
    return t;
  }
  index_t count(const Coord& s) const {
    index_t c = 1;
    for (int d = 0; d < n_; ++d) c *= mult_[d][s[d]];
    return c;
  }

  // Parts of patch `t` (ranks ascending, each once).
  void of(const Coord& t, std::vector<Part>& out) const {
    out.clear();
    std::array<index_t, kMaxDims> lo{}, hi{}, idx{};
    for (int d = 0; d < n_; ++d) {
      lo[d] = idx[d] = start_[d][t[d]];
      hi[d] = start_[d][t[d] + 1];
      if (lo[d] == hi[d]) return;
    }
    Coord key(n_);
    while (true) {
      index_t vol = 1;
      for (int d = 0; d < n_; ++d) {
        const Item& it = items_[d][idx[d]];
        key[d] = it.key;
        vol *= it.len;
      }
      const int r = bc_ ? src_.ownership().rank_at(key) : src_.ownership().owner(key, snt_);
      auto it = std::find_if(out.begin(), out.end(), [r](const Part& p) { return p.rank == r; });
      if (it != out.end()) it->volume += vol;
      else out.push_back({r, vol});
      int d = 0;
      for (; d < n_; ++d) {
        if (++idx[d] < hi[d]) break;
        idx[d] = lo[d];
      }
      if (d == n_) break;
    }
    std::sort(out.begin(), out.end(), [](const Part& a, const Part& b) { return a.rank < b.rank; });
  }

 private:
  struct Item {
    index_t key, len;
    bool operator<(const Item& o) const { return key != o.key ? key < o.key : len < o.len; }
  };
  const Layout& src_;
  int n_ = 0;
  bool bc_ = false;
  Coord snt_, nsig_;
  std::array<std::vector<index_t>, kMaxDims> start_;
  std::array<std::vector<Item>, kMaxDims> items_;
  std::array<std::vector<index_t>, kMaxDims> sig_;   // per patch interval: its signature
  std::array<std::vector<index_t>, kMaxDims> rep_;   // per signature: its first interval
  std::array<std::vector<index_t>, kMaxDims> mult_;  // per signature: its intervals
};

// Calls f(linear patch index, patch coordinate) in column-major order.
template <class F>
void for_each_patch(const Coord& npatch, F&& f) {
  const int n = npatch.ndim();
  const index_t total = npatch.volume();
  Coord t(n, 0);
  for (index_t lin = 0; lin < total; ++lin) {
    f(lin, t);
    for (int d = 0; d < n && ++t[d] == npatch[d]; ++d) t[d] = 0;
  }
}

Coord patch_counts(const std::vector<DimPartition>& patches) {
  Coord n(static_cast<int>(patches.size()));
  for (int d = 0; d < n.ndim(); ++d) n[d] = patches[d].ntiles();
  return n;
}

void check_ranks(const std::vector<Part>& parts, int R, const Layout& src) {
  for (const Part& p : parts)
    if (p.rank < 0 || p.rank >= R)
      fail("placement source layout ", src.spec(), " gives an element to rank ", p.rank, ", outside [0, ", R, ")");
}

// The parts of every patch class (PatchParts::nclasses), flattened: class c's
// parts are parts[start[c] .. start[c+1]), its patches count[c].
struct Classes {
  std::vector<index_t> start{0};
  std::vector<Part> parts;
  std::vector<index_t> count;

  index_t size() const { return static_cast<index_t>(count.size()); }
  index_t ov(index_t c, int r) const {  // elements of a class-c patch on rank r
    for (index_t i = start[c]; i < start[c + 1]; ++i)
      if (parts[i].rank == r) return parts[i].volume;
    return 0;
  }
};

Classes classes_of(const PatchParts& pp, int R, const Layout& src) {
  Classes k;
  std::vector<Part> tmp;
  for_each_patch(pp.nclasses(), [&](index_t, const Coord& s) {
    pp.of(pp.representative(s), tmp);
    check_ranks(tmp, R, src);
    k.parts.insert(k.parts.end(), tmp.begin(), tmp.end());
    k.start.push_back(static_cast<index_t>(k.parts.size()));
    k.count.push_back(pp.count(s));
  });
  return k;
}

int largest(const Classes& k, index_t c) {
  int best = k.start[c] == k.start[c + 1] ? 0 : k.parts[k.start[c]].rank;
  index_t vol = -1;
  for (index_t i = k.start[c]; i < k.start[c + 1]; ++i)
    if (k.parts[i].volume > vol) vol = k.parts[i].volume, best = k.parts[i].rank;
  return best;
}

// The balanced assignment: successive shortest paths from the greedy one (header),
// on patch classes: a rank holds a count of patches of each class, and a move
// carries as many patches of one class along one path as every arc, the source's
// excess and the end's deficit allow.
//
// Nodes are not all R ranks: a rank that holds no part of any patch and has not
// been given one (a "free" rank) has no arc but H -> it and it -> T, the same
// load, slot and potential as every other such rank, so one node V stands for
// them all. A path through V gives a patch or a slot to the lowest free rank,
// which then becomes a node of its own (take()). So the graph has the ranks
// holding parts, the ranks given patches, V, H and T: a placement of 16 patches
// over a source grid of 2^24 ranks walks 16-odd nodes per phase, not 2^24.
class Balancer {
 public:
  struct Hold {
    index_t cls, count;
  };
  struct RankHolds {
    int rank;
    std::vector<Hold> holds;
  };

  Balancer(const Classes& k, int R) : k_(k), R_(R) {
    index_t n = 0;
    for (index_t c = 0; c < k_.size(); ++c) n += k_.count[c];
    f_ = n / R_;
    extra_ = n % R_;
    // Rank 0 too: it takes the patches with no part (largest()).
    holders_.push_back(0);
    for (const Part& p : k_.parts) holders_.push_back(p.rank);
    std::sort(holders_.begin(), holders_.end());
    holders_.erase(std::unique(holders_.begin(), holders_.end()), holders_.end());
    free_left_ = R_ - static_cast<index_t>(holders_.size());
    for (int node = 0; node < kFirst; ++node) new_node(-1);
    for (int r : holders_) new_node(r);
    part_node_.reserve(k_.parts.size());
    for (const Part& p : k_.parts) part_node_.push_back(holder_node(p.rank));
    for (index_t c = 0; c < k_.size(); ++c)
      if (k_.count[c] > 0) add(c, holder_node(largest(k_, c)), k_.count[c]);
  }

  // The ranks given patches, ascending, with the patches of each class they get.
  std::vector<RankHolds> run() {
    while (phase()) {
    }
    std::vector<RankHolds> out;
    for (int u = kFirst; u < nodes(); ++u)
      if (!hold_[u].empty()) out.push_back({rank_[u], std::move(hold_[u])});
    std::sort(out.begin(), out.end(), [](const RankHolds& a, const RankHolds& b) { return a.rank < b.rank; });
    return out;
  }

 private:
  static constexpr index_t kInf = std::numeric_limits<index_t>::max() / 4;
  static constexpr int kH = 0, kT = 1, kV = 2, kFirst = 3;  // then one node per rank
  struct Arc {  // from a rank: to a node, its cost, the class it moves
    int to;
    index_t cost, cls;
  };
  struct Step {  // a node of a path and the class its arc onward carries (-1: none)
    int node;
    index_t cls;
  };
  const Classes& k_;
  int R_;
  index_t f_ = 0, extra_ = 0, used_ = 0;
  std::vector<int> holders_;    // ranks holding a part, ascending: nodes kFirst + i
  std::vector<int> part_node_;  // per k_.parts entry, its rank's node
  index_t free_left_ = 0;       // free ranks V stands for
  int free_rank_ = 0;           // no free rank below it is left
  // Per node:
  std::vector<int> rank_;
  std::vector<index_t> load_;
  std::vector<char> slot_;
  std::vector<std::vector<Hold>> hold_;  // its classes with a count > 0
  std::vector<std::vector<Arc>> arcs_;   // its arcs (arcs()) when not dirty
  std::vector<char> dirty_;
  std::vector<index_t> pi_;              // potentials
  std::vector<char> dead_, on_path_;
  int hub_cursor_ = 0, slot_cursor_ = 0;
  std::vector<Step> path_;

  int nodes() const { return static_cast<int>(rank_.size()); }
  bool is_rank(int v) const { return v >= kFirst; }
  bool has_free() const { return free_left_ > 0; }
  index_t excess(int v) const { return load_[v] - f_ - slot_[v]; }
  bool deficit(int v) const {
    if (v == kT) return used_ < extra_;
    if (v == kV) return has_free() && f_ > 0;
    return is_rank(v) && excess(v) < 0;
  }

  int new_node(int rank) {
    rank_.push_back(rank);
    load_.push_back(0);
    slot_.push_back(0);
    hold_.emplace_back();
    arcs_.emplace_back();
    dirty_.push_back(1);
    pi_.push_back(rank < 0 ? 0 : pi_[kV]);  // a free rank's potential is V's
    dead_.push_back(0);
    on_path_.push_back(0);
    return nodes() - 1;
  }
  int holder_node(int rank) const {
    const auto it = std::lower_bound(holders_.begin(), holders_.end(), rank);
    REDIST_ASSERT(it != holders_.end() && *it == rank, "balanced placement: rank ", rank, " holds no part");
    return kFirst + static_cast<int>(it - holders_.begin());
  }
  // The lowest free rank, as a node of its own from now on.
  int take() {
    REDIST_ASSERT(has_free(), "balanced placement: no free rank left");
    for (auto it = std::lower_bound(holders_.begin(), holders_.end(), free_rank_);
         it != holders_.end() && *it == free_rank_; ++it)
      ++free_rank_;
    --free_left_;
    return new_node(free_rank_++);
  }

  Hold* find(int r, index_t c) {
    for (Hold& h : hold_[r])
      if (h.cls == c) return &h;
    return nullptr;
  }
  void add(index_t c, int r, index_t m) {
    load_[r] += m;
    dirty_[r] = 1;
    if (Hold* h = find(r, c)) h->count += m;
    else hold_[r].push_back({c, m});
  }
  void remove(index_t c, int r, index_t m) {
    load_[r] -= m;
    dirty_[r] = 1;
    Hold* h = find(r, c);
    REDIST_ASSERT(h && h->count >= m, "balanced placement: rank ", rank_[r], " lacks ", m, " patches of class ", c);
    if ((h->count -= m) == 0) {
      *h = hold_[r].back();
      hold_[r].pop_back();
    }
  }

  // f(v, cost, class) for each residual arc out of u; stops when f returns true.
  // From a rank u, per class c it holds: u -> b for each other rank b holding a
  // part of c, cost ov(c,u) - ov(c,b); u -> H (to any rank), cost ov(c,u); and
  // u -> T (take a slot), cost 0. H -> every rank (V first) and T -> every rank
  // with a slot (give it back) cost 0; V -> T cost 0. A rank's arcs to one node
  // are kept as one, the cheapest (arcs(u), rebuilt when its holdings change).
  template <class F>
  bool for_each_arc(int u, F&& f) {
    if (is_rank(u)) {
      for (const Arc& a : arcs(u))
        if (f(a.to, a.cost, a.cls)) return true;
      if (extra_ > 0 && !slot_[u] && f(kT, 0, index_t{-1})) return true;
    } else if (u == kV) {
      if (extra_ > 0 && f(kT, 0, index_t{-1})) return true;
    } else if (u == kH) {
      for (int b = has_free() ? kV : kFirst; b < nodes(); ++b)
        if (f(b, 0, index_t{-1})) return true;
    } else {
      for (int b = kFirst; b < nodes(); ++b)
        if (slot_[b] && f(b, 0, index_t{-1})) return true;
    }
    return false;
  }

  const std::vector<Arc>& arcs(int u) {
    std::vector<Arc>& out = arcs_[u];
    if (!dirty_[u]) return out;
    dirty_[u] = 0;
    out.clear();
    auto keep_cheapest = [&out](int to, index_t cost, index_t cls) {
      for (Arc& a : out)
        if (a.to == to) {
          if (cost < a.cost) a.cost = cost, a.cls = cls;
          return;
        }
      out.push_back({to, cost, cls});
    };
    for (const Hold& h : hold_[u]) {
      const index_t keep = k_.ov(h.cls, rank_[u]);
      for (index_t i = k_.start[h.cls]; i < k_.start[h.cls + 1]; ++i)
        if (k_.parts[i].rank != rank_[u]) keep_cheapest(part_node_[i], keep - k_.parts[i].volume, h.cls);
      keep_cheapest(kH, keep, h.cls);
    }
    return out;
  }

  // One phase of the primal-dual method. Potentials pi keep every residual arc's
  // reduced cost c(u,v) + pi(u) - pi(v) >= 0 (all 0 at the start: every move
  // from greedy costs >= 0). A Dijkstra on reduced costs from all ranks with
  // excess (pi stays 0 there) runs until it has reached every deficit, the last
  // at reduced distance D; pi(v) += min(dr(v), D) keeps every reduced cost >= 0
  // and makes every arc of the shortest-path tree up to D cost 0. Then patches
  // move along paths of zero reduced cost from an excess to any deficit (not
  // only the nearest), found depth-first, until none is left: a move along such
  // a path keeps every reduced cost >= 0 (its reverse arcs cost 0), so when no
  // excess is left the flow is min-cost.
  bool phase() {
    const int N = nodes();
    std::vector<index_t> dr(N, kInf);
    std::vector<int> pred(N, -1);
    std::vector<index_t> pred_cls(N, -1);
    using Item = std::pair<index_t, int>;
    std::priority_queue<Item, std::vector<Item>, std::greater<Item>> q;
    for (int r = kFirst; r < N; ++r)
      if (excess(r) > 0) dr[r] = 0, q.push({0, r});
    if (q.empty()) return false;
    int target = -1, deficits = 0;
    for (int v = 0; v < N; ++v) deficits += deficit(v);
    index_t dmax = 0;
    while (!q.empty() && deficits > 0) {
      // Not a structured binding: clang 14 (the fuzz build) cannot capture one in a lambda.
      const auto top = q.top();
      const auto d = top.first;
      const auto u = top.second;
      q.pop();
      if (d != dr[u]) continue;
      dmax = d;
      if (deficit(u)) {
        if (target < 0) target = u;
        if (--deficits == 0) break;  // beyond the last deficit no path is needed this phase
      }
      for_each_arc(u, [&](int v, index_t c, index_t cls) {
        const index_t nd = d + c + pi_[u] - pi_[v];
        REDIST_ASSERT(nd >= d, "balanced placement: negative reduced cost ", u, " -> ", v);
        if (nd < dr[v]) dr[v] = nd, pred[v] = u, pred_cls[v] = cls, q.push({nd, v});
        return false;
      });
    }
    REDIST_ASSERT(target >= 0, "balanced placement: no deficit reachable");
    for (int v = 0; v < N; ++v) pi_[v] += std::min(dr[v], dmax);
    // Depth-first search with dead nodes can miss a path (a node given up while
    // its way on was on the stack): the phase then moves along the shortest path
    // Dijkstra found to the nearest deficit, so every phase makes progress.
    bool any = false;
    for (bool moved = true; moved; any = any || moved) {
      moved = false;
      dead_.assign(dead_.size(), 0);
      on_path_.assign(on_path_.size(), 0);
      hub_cursor_ = slot_cursor_ = has_free() ? kV : kFirst;
      for (int s = kFirst; s < nodes(); ++s)  // nodes taken on the way have no excess
        while (excess(s) > 0 && !dead_[s]) {
          path_.clear();
          if (!admissible_path(s)) break;
          std::reverse(path_.begin(), path_.end());
          apply();
          moved = true;
        }
    }
    if (!any) {
      path_.assign(1, {target, -1});
      while (pred[path_.back().node] >= 0) path_.push_back({pred[path_.back().node], pred_cls[path_.back().node]});
      std::reverse(path_.begin(), path_.end());
      apply();
    }
    return true;
  }

  // Depth-first along zero-reduced-cost arcs to a deficit; path_ gets the steps
  // (reversed). A node found to lead nowhere stays dead for the rest of the pass.
  bool admissible_path(int u) {
    if (deficit(u)) {
      path_.push_back({u, -1});
      return true;
    }
    on_path_[u] = 1;
    index_t via = -1;
    auto try_arc = [&](int v, index_t c, index_t cls) {
      if (dead_[v] || on_path_[v] || c + pi_[u] - pi_[v] != 0) return false;
      via = cls;
      return admissible_path(v);
    };
    bool found = false;
    if (u != kH && u != kT) {
      found = for_each_arc(u, try_arc);
    } else {
      // H and T reach every rank: a cursor per pass skips the ranks already found
      // dead or not admissible (both hold for the rest of the pass). V stays at
      // its place while free ranks are left (a path through it takes one).
      int& cursor = u == kH ? hub_cursor_ : slot_cursor_;
      for (int b = cursor; b < nodes() && !found; ++b) {
        if (b == kV && !has_free()) {
          if (b == cursor) ++cursor;
          continue;
        }
        if (dead_[b] || pi_[u] != pi_[b]) {  // for the rest of the pass
          if (b == cursor) ++cursor;
          continue;
        }
        if (on_path_[b] || (u == kT && !slot_[b])) continue;
        found = try_arc(b, 0, -1);
        if (!found && b == cursor) ++cursor;  // try_arc marked it dead
      }
    }
    on_path_[u] = 0;
    if (found) path_.push_back({u, via});
    else dead_[u] = 1;
    return found;
  }

  // Moves patches along path_ (source first): as many as the source's excess,
  // the end's deficit, each arc's class count on its rank and the slots allow.
  // A path through V first takes the free rank it stands for.
  void apply() {
    std::vector<Step>& path = path_;
    for (Step& s : path)
      if (s.node == kV) s.node = take();
    index_t m = excess(path.front().node);
    const int end = path.back().node;
    m = std::min(m, end == kT ? index_t{1} : -excess(end));
    for (size_t i = 0; i + 1 < path.size(); ++i) {
      const int u = path[i].node;
      if (u == kT || path[i + 1].node == kT) m = 1;
      else if (u != kH) m = std::min(m, find(u, path[i].cls)->count);
    }
    REDIST_ASSERT(m > 0, "balanced placement: an empty move");
    for (size_t i = 0; i + 1 < path.size(); ++i) {
      const int u = path[i].node, v = path[i + 1].node;
      if (u == kH) continue;  // handled with the arc into H
      if (v == kT) {
        slot_[u] = 1, ++used_;
      } else if (u == kT) {
        slot_[v] = 0, --used_;
      } else {
        remove(path[i].cls, u, m);
        add(path[i].cls, v == kH ? path[i + 2].node : v, m);
      }
    }
  }
};

std::vector<int> compute(const PlacementParams& p) {
  const Layout& src = *p.of;
  const PlacementCache& c = *p.cache;
  if (std::string e = src.check(INT_MAX); !e.empty()) fail("placement source layout: ", e);
  if (!(src.shape() == c.shape))
    fail("placement source layout has shape ", src.shape().str(), ", the patches ", c.shape.str());
  const int R = src.ownership().ranks_needed();
  const PatchParts parts(src, c.patches);
  const Classes k = classes_of(parts, R, src);
  // Per class, the ranks its patches go to in ascending order, with their counts;
  // the patches of a class are handed out in column-major order.
  std::vector<index_t> first(static_cast<size_t>(k.size() + 1), 0);
  std::vector<std::pair<int, index_t>> to;  // rank, patches
  if (p.rule == PlacementRule::greedy) {
    for (index_t cl = 0; cl < k.size(); ++cl) {
      to.push_back({largest(k, cl), k.count[cl]});
      first[cl + 1] = cl + 1;
    }
  } else {
    const std::vector<Balancer::RankHolds> hold = Balancer(k, R).run();
    for (const Balancer::RankHolds& hr : hold)
      for (const Balancer::Hold& h : hr.holds) ++first[h.cls + 1];
    for (index_t cl = 0; cl < k.size(); ++cl) first[cl + 1] += first[cl];
    to.resize(static_cast<size_t>(first.back()));
    std::vector<index_t> fill(first.begin(), first.end() - 1);
    for (const Balancer::RankHolds& hr : hold)
      for (const Balancer::Hold& h : hr.holds) to[fill[h.cls]++] = {hr.rank, h.count};
  }
  const Coord np = patch_counts(c.patches);
  std::vector<int> owner(static_cast<size_t>(np.volume()));
  std::vector<index_t> next(first.begin(), first.end() - 1);  // per class, its current entry
  for_each_patch(np, [&](index_t lin, const Coord& t) {
    const index_t cl = parts.class_of(t);
    std::pair<int, index_t>& e = to[next[cl]];
    owner[lin] = e.first;
    if (--e.second == 0) ++next[cl];
  });
  return owner;
}

}  // namespace

std::shared_ptr<PlacementCache> placement_cache(const Coord& shape, const std::vector<DimPartition>& patches) {
  auto c = std::make_shared<PlacementCache>();
  c->shape = shape;
  c->patches = patches;
  return c;
}

const std::vector<int>& placement_owners(const PlacementParams& p) {
  REDIST_ASSERT(p.of && p.cache, "placement ownership without a layout");
  std::call_once(p.cache->once, [&p] { p.cache->owners = compute(p); });
  return p.cache->owners;
}

std::string check_placement(const Layout& l) {
  const PlacementParams& p = l.ownership().plc();
  const char* rule = p.rule == PlacementRule::greedy ? "greedy" : "balanced";
  if (!p.of) return cat(rule, " placement has no source layout (of=)");
  if (std::string e = p.of->check(INT_MAX); !e.empty()) return cat(rule, " placement source layout (of=): ", e);
  if (!(p.of->shape() == l.shape()))
    return cat(rule, " placement source layout (of=) has shape ", p.of->shape().str(), ", the layout has ",
               l.shape().str(), "; they must be equal");
  if (p.of->ownership().ranks_needed() > kMaxRanks)
    return cat(rule, " placement over ", p.of->ownership().ranks_needed(), " ranks; at most ", kMaxRanks);
  index_t patches = 1, work = 1;
  for (int d = 0; d < l.ndim(); ++d) {
    const index_t np = l.partition(d).ntiles(), ns = p.of->partition(d).ntiles();
    if (!fits_mul(patches, np, patches) || patches > kMaxPatches)
      return cat(rule, " placement of ", l.ntiles().str(), " patches: at most ", kMaxPatches, " patches");
    if (!fits_mul(work, np + ns, work) || work > kMaxWork)
      return cat(rule, " placement of ", l.ntiles().str(), " patches over ", p.of->ntiles().str(),
                 " source tiles is too large to compute (at most ", kMaxWork, " patch x tile pieces)");
  }
  return {};
}

}  // namespace detail

Ownership Ownership::placement(PlacementRule rule, Layout of) {
  Ownership o;
  o.v_ = PlacementParams{rule, std::make_shared<const Layout>(std::move(of)), nullptr};
  return o;
}

PlacementSummary placement_summary(const Layout& l) {
  if (l.ownership().kind() != Ownership::Kind::placement)
    detail::fail("placement_summary: ", l.spec(), " is not a greedy or balanced placement");
  if (std::string e = l.check(INT_MAX); !e.empty()) detail::fail("invalid layout ", l.spec(), ": ", e);
  const PlacementParams& p = l.ownership().plc();
  const std::vector<int>& owner = detail::placement_owners(p);
  const Layout& src = *p.of;
  const detail::PatchParts parts(src, l.partitions());
  PlacementSummary s;
  const int R = src.ownership().ranks_needed();
  const detail::Classes k = detail::classes_of(parts, R, src);
  s.load.assign(R, 0);
  s.load_elements.assign(R, 0);
  detail::for_each_patch(l.ntiles(), [&](index_t lin, const Coord& t) {
    const index_t cl = parts.class_of(t);
    const index_t vol = l.tile_box(t).size.volume();
    const index_t kept = k.ov(cl, owner[lin]);
    ++s.patches;
    s.shared_patches += k.start[cl + 1] - k.start[cl] > 1;
    s.total_elements += vol;
    s.moved_elements += vol - kept;
    ++s.load[owner[lin]];
    s.load_elements[owner[lin]] += vol;
  });
  return s;
}

}  // namespace redist
