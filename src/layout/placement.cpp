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
//            it costs >= 0). Nodes are the ranks, a hub H and a sink T:
//              a -> b  move one patch p from a to b, cost ov(p,a) - ov(p,b),
//                      kept per pair as the cheapest patch (b among p's parts);
//              a -> H -> b  move a's cheapest patch to any rank, cost ov(p,a);
//              a -> T  a takes one of the n mod R "f+1" slots, T -> a gives it back.
//            A rank's excess is load - f - slot; units move along shortest paths
//            from the ranks with excess to the nearest ranks (or T) with a deficit,
//            in phases (primal-dual): Dijkstra on reduced costs (node potentials)
//            up to the nearest deficit, then every path of zero reduced cost
//            found depth-first.
//            When no excess is left every load is f or f+1 and the flow is min-cost.
//            tests/unit/test_placement.cpp checks optimality by brute force.
// Pure, no MPI: every rank computes the same table from the spec.
#include <algorithm>
#include <array>
#include <climits>
#include <queue>
#include <limits>

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
    }
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
  };
  const Layout& src_;
  int n_ = 0;
  bool bc_ = false;
  Coord snt_;
  std::array<std::vector<index_t>, kMaxDims> start_;
  std::array<std::vector<Item>, kMaxDims> items_;
};

// Largest part, ties to the lowest rank (parts are in ascending rank order);
// rank 0 for an empty patch.
int largest(const std::vector<Part>& parts) {
  int best = parts.empty() ? 0 : parts[0].rank;
  index_t vol = -1;
  for (const Part& p : parts)
    if (p.volume > vol) vol = p.volume, best = p.rank;
  return best;
}

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

// The balanced assignment: successive shortest paths from the greedy one (header).
// The cheapest patch of each arc comes from a heap with lazy deletion (an entry
// is stale when its patch has left the rank), so a move costs O(parts log n).
class Balancer {
 public:
  Balancer(std::vector<index_t> start, std::vector<Part> parts, std::vector<int> owner, int R)
      : start_(std::move(start)), parts_(std::move(parts)), owner_(std::move(owner)), R_(R) {
    const index_t n = static_cast<index_t>(owner_.size());
    f_ = n / R_;
    extra_ = n % R_;
    load_.assign(R_, 0);
    slot_.assign(R_, 0);
    hub_.resize(R_);
    out_.resize(R_);
    pi_.assign(R_ + 2, 0);
    for (index_t p = 0; p < n; ++p) add(p, owner_[p]);
  }

  std::vector<int> run() {
    while (phase()) {
    }
    return std::move(owner_);
  }

 private:
  static constexpr index_t kInf = std::numeric_limits<index_t>::max() / 4;
  struct Entry {  // a patch and the cost of moving it along one arc
    index_t cost, patch;
    bool operator>(const Entry& o) const { return cost != o.cost ? cost > o.cost : patch > o.patch; }
  };
  using Heap = std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>>;
  struct Out {  // moves from one rank to rank `to` (a part of the patch lies there)
    int to;
    Heap heap;
  };
  std::vector<index_t> start_;
  std::vector<Part> parts_;
  std::vector<int> owner_;
  int R_;
  index_t f_ = 0, extra_ = 0, used_ = 0;
  std::vector<index_t> load_;
  std::vector<char> slot_;
  std::vector<Heap> hub_;               // each rank's patches by the elements they keep there
  std::vector<std::vector<Out>> out_;   // each rank's direct moves, per destination
  std::vector<index_t> pi_;  // potentials (ranks, H, T)
  std::vector<char> dead_, on_path_;
  int hub_cursor_ = 0, slot_cursor_ = 0;
  std::vector<int> path_;

  index_t ov(index_t p, int r) const {
    for (index_t i = start_[p]; i < start_[p + 1]; ++i)
      if (parts_[i].rank == r) return parts_[i].volume;
    return 0;
  }
  index_t excess(int r) const { return load_[r] - f_ - slot_[r]; }
  void add(index_t p, int r) {
    owner_[p] = r;
    ++load_[r];
    const index_t keep = ov(p, r);
    hub_[r].push({keep, p});
    for (index_t i = start_[p]; i < start_[p + 1]; ++i) {
      const int b = parts_[i].rank;
      if (b == r) continue;
      auto it = std::find_if(out_[r].begin(), out_[r].end(), [b](const Out& o) { return o.to == b; });
      if (it == out_[r].end()) {
        out_[r].push_back({b, {}});
        it = out_[r].end() - 1;
      }
      it->heap.push({keep - parts_[i].volume, p});
    }
  }
  // The cheapest patch still on rank r in heap h (stale entries dropped), or null.
  const Entry* top(Heap& h, int r) {
    while (!h.empty() && owner_[h.top().patch] != r) h.pop();
    return h.empty() ? nullptr : &h.top();
  }

  // One phase of the primal-dual method. Potentials pi keep every residual arc's
  // reduced cost c(u,v) + pi(u) - pi(v) >= 0 (all 0 at the start: every move
  // from greedy costs >= 0). Dijkstra on reduced costs from the ranks with excess
  // (their pi stays 0: they are sources in every phase) stops at the first
  // deficit popped, at reduced distance Dr; pi(v) += min(dr(v), Dr) keeps the
  // reduced costs >= 0 and makes every arc of a shortest path to a deficit
  // cost 0. Then units move along zero-cost paths, found depth-first, until none
  // is left: each is a shortest path, and its reverse arcs cost 0 again.
  bool phase() {
    const int N = R_ + 2;
    std::vector<index_t> dr(N, kInf);
    std::vector<char> done(N, 0);
    using Item = std::pair<index_t, int>;
    std::priority_queue<Item, std::vector<Item>, std::greater<Item>> q;
    for (int r = 0; r < R_; ++r)
      if (excess(r) > 0) dr[r] = 0, q.push({0, r});
    if (q.empty()) return false;
    index_t Dr = kInf;
    int target = -1;
    std::vector<int> pred(N, -1);
    while (!q.empty()) {
      // Not a structured binding: clang 14 (the fuzz build) cannot capture one in a lambda.
      const auto top = q.top();
      const auto d = top.first;
      const auto u = top.second;
      q.pop();
      if (done[u] || d != dr[u]) continue;
      if (deficit(u)) {
        Dr = d, target = u;
        break;
      }
      done[u] = 1;
      for_each_arc(u, [&](int v, index_t c) {
        const index_t nd = d + c + pi_[u] - pi_[v];
        REDIST_ASSERT(nd >= d, "balanced placement: negative reduced cost ", u, " -> ", v);
        if (nd < dr[v]) dr[v] = nd, pred[v] = u, q.push({nd, v});
        return false;
      });
    }
    REDIST_ASSERT(Dr < kInf, "balanced placement: no deficit reachable");
    for (int v = 0; v < N; ++v) pi_[v] += std::min(dr[v], Dr);
    // Depth-first search with dead nodes can miss a path (a node given up while
    // its way on was on the stack): the phase then moves one unit along the
    // shortest path Dijkstra found, so every phase makes progress.
    bool any = false;
    for (bool moved = true; moved; any = any || moved) {
      moved = false;
      dead_.assign(N, 0);
      on_path_.assign(N, 0);
      hub_cursor_ = slot_cursor_ = 0;
      for (int s = 0; s < R_; ++s)
        while (excess(s) > 0 && !dead_[s]) {
          path_.clear();
          if (!admissible_path(s)) break;
          std::reverse(path_.begin(), path_.end());
          apply();
          moved = true;
        }
    }
    if (!any) {
      path_.assign(1, target);
      while (pred[path_.back()] >= 0) path_.push_back(pred[path_.back()]);
      std::reverse(path_.begin(), path_.end());
      apply();
    }
    return true;
  }

  int H() const { return R_; }
  int T() const { return R_ + 1; }
  bool deficit(int v) const { return v == T() ? used_ < extra_ : v < R_ && excess(v) < 0; }

  // f(v, cost) for each residual arc out of u; stops when f returns true.
  template <class F>
  bool for_each_arc(int u, F&& f) {
    if (u < R_) {
      for (size_t i = 0; i < out_[u].size(); ++i)
        if (const Entry* e = top(out_[u][i].heap, u); e && f(out_[u][i].to, e->cost)) return true;
      if (const Entry* e = top(hub_[u], u); e && f(H(), e->cost)) return true;
      if (extra_ > 0 && !slot_[u] && f(T(), 0)) return true;
    } else if (u == H()) {
      for (int b = 0; b < R_; ++b)
        if (f(b, 0)) return true;
    } else {
      for (int b = 0; b < R_; ++b)
        if (slot_[b] && f(b, 0)) return true;
    }
    return false;
  }

  // Depth-first along zero-reduced-cost arcs to a deficit; path_ gets the nodes
  // (reversed). A node found to lead nowhere stays dead for the rest of the phase.
  bool admissible_path(int u) {
    if (deficit(u)) {
      path_.push_back(u);
      return true;
    }
    on_path_[u] = 1;
    auto try_arc = [&](int v, index_t c) {
      if (dead_[v] || on_path_[v] || c + pi_[u] - pi_[v] != 0) return false;
      return admissible_path(v);
    };
    bool found = false;
    if (u < R_) {
      found = for_each_arc(u, try_arc);
    } else {
      // H and T reach every rank: a cursor per pass skips the ranks already found
      // dead or not admissible (both hold for the rest of the pass).
      int& cursor = u == H() ? hub_cursor_ : slot_cursor_;
      for (int b = cursor; b < R_ && !found; ++b) {
        if (dead_[b] || pi_[u] != pi_[b]) {  // for the rest of the pass
          if (b == cursor) ++cursor;
          continue;
        }
        if (on_path_[b] || (u == T() && !slot_[b])) continue;
        found = try_arc(b, 0);
        if (!found && b == cursor) ++cursor;  // try_arc marked it dead
      }
    }
    on_path_[u] = 0;
    if (found) path_.push_back(u);
    else dead_[u] = 1;
    return found;
  }

  // Moves one unit along path_ (source first). The patches are picked first:
  // a move changes the heaps of the ranks it touches.
  void apply() {
    std::vector<std::pair<index_t, int>> moves;  // patch, destination
    const std::vector<int>& path = path_;
    for (size_t i = 0; i + 1 < path.size(); ++i) {
      const int u = path[i], v = path[i + 1];
      if (u == H()) continue;  // handled with the arc into H
      if (v == T()) {
        slot_[u] = 1, ++used_;
      } else if (u == T()) {
        slot_[v] = 0, --used_;
      } else {
        const Entry* e = nullptr;
        if (v == H()) e = top(hub_[u], u);
        else
          for (Out& o : out_[u])
            if (o.to == v) e = top(o.heap, u);
        REDIST_ASSERT(e != nullptr, "balanced placement: no patch on the arc ", u, " -> ", v);
        moves.emplace_back(e->patch, v == H() ? path[i + 2] : v);
      }
    }
    for (auto [p, to] : moves) {
      --load_[owner_[p]];
      add(p, to);
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
  const Coord np = patch_counts(c.patches);
  std::vector<int> owner(static_cast<size_t>(np.volume()));
  std::vector<Part> tmp;
  if (p.rule == PlacementRule::greedy) {
    for_each_patch(np, [&](index_t lin, const Coord& t) {
      parts.of(t, tmp);
      check_ranks(tmp, R, src);
      owner[lin] = largest(tmp);
    });
    return owner;
  }
  std::vector<index_t> start{0};
  std::vector<Part> all;
  start.reserve(owner.size() + 1);
  for_each_patch(np, [&](index_t lin, const Coord& t) {
    parts.of(t, tmp);
    check_ranks(tmp, R, src);
    owner[lin] = largest(tmp);
    all.insert(all.end(), tmp.begin(), tmp.end());
    start.push_back(static_cast<index_t>(all.size()));
  });
  return Balancer(std::move(start), std::move(all), std::move(owner), R).run();
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
  s.load.assign(R, 0);
  s.load_elements.assign(R, 0);
  std::vector<detail::Part> tmp;
  detail::for_each_patch(l.ntiles(), [&](index_t lin, const Coord& t) {
    parts.of(t, tmp);
    const index_t vol = l.tile_box(t).size.volume();
    index_t kept = 0;
    for (const detail::Part& x : tmp)
      if (x.rank == owner[lin]) kept = x.volume;
    ++s.patches;
    s.shared_patches += tmp.size() > 1;
    s.total_elements += vol;
    s.moved_elements += vol - kept;
    ++s.load[owner[lin]];
    s.load_elements[owner[lin]] += vol;
  });
  return s;
}

}  // namespace redist
