#include <algorithm>
#include <climits>
#include <map>
#include <mutex>

#include "layout/placement.hpp"
#include "redist/layout.hpp"

namespace redist {
namespace {

std::mutex registry_mutex;
std::map<std::string, OwnerFunction>& registry() {
  static std::map<std::string, OwnerFunction> r;
  return r;
}

}  // namespace

Ownership::Ownership() : v_(BlockCyclicParams{}) {}

Ownership Ownership::block_cyclic(BlockCyclicParams p) {
  Ownership o;
  o.v_ = std::move(p);
  return o;
}

Ownership Ownership::random(RandomParams p) {
  Ownership o;
  o.v_ = p;
  return o;
}

Ownership Ownership::band(index_t width, Ownership near, Ownership far) {
  Ownership o;
  o.v_ = BandParams{width, std::make_shared<const Ownership>(std::move(near)),
                    std::make_shared<const Ownership>(std::move(far))};
  return o;
}

Ownership Ownership::table(std::vector<int> owners) {
  Ownership o;
  o.v_ = TableParams{std::make_shared<const std::vector<int>>(std::move(owners))};
  return o;
}

Ownership Ownership::function(std::string name, int ranks, OwnerFunction fn) {
  Ownership o;
  o.v_ = FunctionParams{std::move(name), ranks, std::move(fn)};
  return o;
}

index_t Ownership::coord_of_tile(int d, index_t t) const {
  const auto& p = bc();
  index_t k = d < p.super.ndim() ? p.super[d] : 1;
  index_t s = d < p.source.ndim() ? p.source[d] : 0;
  return (t / k + s) % p.grid[d];
}

int Ownership::owner(const Coord& tile, const Coord& ntiles) const {
  switch (kind()) {
    case Kind::block_cyclic: {
      Coord c(tile.ndim());
      for (int d = 0; d < tile.ndim(); ++d) c[d] = coord_of_tile(d, tile[d]);
      return rank_at(c);
    }
    case Kind::random: {
      const auto& p = rnd();
      std::uint64_t h = mix64(p.seed ^ mix64(static_cast<std::uint64_t>(linear_index(tile, ntiles))));
      return p.first_rank + static_cast<int>(h % static_cast<std::uint64_t>(p.ranks));
    }
    case Kind::band: {
      const auto& p = bnd();
      index_t dist = tile[0] > tile[1] ? tile[0] - tile[1] : tile[1] - tile[0];
      return (dist <= p.width ? *p.near : *p.far).owner(tile, ntiles);
    }
    case Kind::table:
      return (*tbl().owners)[linear_index(tile, ntiles)];
    case Kind::function:
      // A user callable: whatever it throws becomes a redist::Error, so that
      // make_plan can agree on it like any other (an escaping exception on one
      // rank would leave the others waiting in a collective).
      try {
        return fun().fn(tile);
      } catch (const Error&) {
        throw;
      } catch (const std::exception& e) {
        detail::fail("owner function '", fun().name, "' threw for tile ", tile.str(), ": ", e.what());
      } catch (...) {
        detail::fail("owner function '", fun().name, "' threw for tile ", tile.str(),
                     " (an exception that is not a std::exception)");
      }
    case Kind::placement:
      return detail::placement_owners(plc())[static_cast<size_t>(linear_index(tile, ntiles))];
  }
  return -1;
}

int Ownership::ranks_needed() const {
  switch (kind()) {
    case Kind::block_cyclic: {
      if (bc().map) {
        int m = -1;
        for (int r : *bc().map) m = std::max(m, r);
        return m + 1;
      }
      index_t n = 1;
      for (index_t g : bc().grid) n *= g;
      return static_cast<int>(n) + bc().first_rank;
    }
    case Kind::random:
      return rnd().first_rank + rnd().ranks;
    case Kind::band:
      return std::max(bnd().near->ranks_needed(), bnd().far->ranks_needed());
    case Kind::table: {
      int m = -1;
      for (int r : *tbl().owners) m = std::max(m, r);
      return m + 1;
    }
    case Kind::function:
      return fun().ranks;
    case Kind::placement:
      return plc().of ? plc().of->ownership().ranks_needed() : 1;
  }
  return 0;
}

int Ownership::rank_at(const Coord& c) const {
  const auto& p = bc();
  const int n = c.ndim();
  index_t r = 0;
  if (p.map) {
    for (int d = n - 1; d >= 0; --d) r = r * p.grid[d] + c[d];
    return (*p.map)[static_cast<size_t>(r)];
  }
  if (p.order == GridOrder::row)
    for (int d = 0; d < n; ++d) r = r * p.grid[d] + c[d];
  else
    for (int d = n - 1; d >= 0; --d) r = r * p.grid[d] + c[d];
  return static_cast<int>(r) + p.first_rank;
}

bool Ownership::grid_coord(int rank, Coord& out) const {
  const auto& p = bc();
  const int n = p.grid.ndim();
  if (p.map) {  // called once per storage map and plan: a scan is enough
    const auto it = std::find(p.map->begin(), p.map->end(), rank);
    if (it == p.map->end()) return false;
    index_t r = it - p.map->begin();
    out = Coord(n);
    for (int d = 0; d < n; ++d) out[d] = r % p.grid[d], r /= p.grid[d];
    return true;
  }
  index_t r = rank - p.first_rank;
  if (r < 0) return false;
  out = Coord(n);
  if (p.order == GridOrder::row)
    for (int d = n - 1; d >= 0; --d) out[d] = r % p.grid[d], r /= p.grid[d];
  else
    for (int d = 0; d < n; ++d) out[d] = r % p.grid[d], r /= p.grid[d];
  return r == 0;
}

std::string Ownership::check(int ndim, const Coord& ntiles) const {
  using detail::cat;
  switch (kind()) {
    case Kind::block_cyclic: {
      const auto& p = bc();
      if (p.grid.ndim() != ndim)
        return cat("block_cyclic grid has ", p.grid.ndim(), " dimensions, the layout has ", ndim);
      if (p.source.ndim() != 0 && p.source.ndim() != ndim)
        return cat("block_cyclic src has ", p.source.ndim(), " dimensions, the layout has ", ndim);
      if (p.super.ndim() != 0 && p.super.ndim() != ndim)
        return cat("block_cyclic super has ", p.super.ndim(), " dimensions, the layout has ", ndim);
      index_t prod = 1;
      for (int d = 0; d < ndim; ++d) {
        if (p.grid[d] <= 0) return cat("block_cyclic grid=", p.grid.str(), ": every entry must be >= 1");
        if (p.source.ndim() && (p.source[d] < 0 || p.source[d] >= p.grid[d]))
          return cat("block_cyclic src=", p.source.str(), " must lie inside grid=", p.grid.str());
        if (p.super.ndim() && p.super[d] <= 0)
          return cat("block_cyclic super=", p.super.str(), ": every entry must be >= 1");
        if (!fits_mul(prod, p.grid[d], prod) || prod > (1 << 30))
          return cat("block_cyclic grid=", p.grid.str(), " is too large: at most 2^30 (", index_t{1} << 30,
                     ") grid coordinates in all");
      }
      if (p.first_rank < 0) return cat("block_cyclic first=", p.first_rank, " must be >= 0");
      if (p.map) {
        const std::vector<int>& m = *p.map;
        if (p.first_rank != 0 || p.order != GridOrder::row)
          return "block_cyclic map= places every rank itself: it excludes first= and order=";
        if (static_cast<index_t>(m.size()) != prod)
          return cat("block_cyclic map= lists ", m.size(), " ranks, grid=", p.grid.str(), " has ", prod,
                     " coordinates (one rank per coordinate, column-major)");
        std::vector<int> sorted(m);
        std::sort(sorted.begin(), sorted.end());
        if (sorted.front() < 0) return cat("block_cyclic map= names rank ", sorted.front(), ", ranks are >= 0");
        if (sorted.back() == INT_MAX)
          return cat("block_cyclic map= names rank ", INT_MAX, ", more than any communicator has");
        for (size_t i = 1; i < sorted.size(); ++i)
          if (sorted[i] == sorted[i - 1])
            return cat("block_cyclic map= names rank ", sorted[i], " twice; a rank has one grid coordinate");
        return {};
      }
      // ranks_needed() is an int: beyond INT_MAX it would wrap and pass the
      // communicator-size check.
      if (prod + p.first_rank > INT_MAX)
        return cat("block_cyclic grid=", p.grid.str(), " first=", p.first_rank, " needs ",
                   prod + p.first_rank, " ranks, more than any communicator has (at most ", INT_MAX, ")");
      return {};
    }
    case Kind::random:
      if (rnd().ranks <= 0) return cat("random ranks=", rnd().ranks, " must be >= 1");
      if (rnd().first_rank < 0) return cat("random first=", rnd().first_rank, " must be >= 0");
      if (index_t{rnd().first_rank} + rnd().ranks > INT_MAX)
        return cat("random first=", rnd().first_rank, " ranks=", rnd().ranks, " needs ",
                   index_t{rnd().first_rank} + rnd().ranks, " ranks, more than any communicator has (at most ",
                   INT_MAX, ")");
      return {};
    case Kind::band: {
      if (ndim < 2) return cat("band ownership needs at least 2 dimensions, the layout has ", ndim);
      if (bnd().width < 0) return cat("band width=", bnd().width, " must be >= 0");
      std::string e = bnd().near->check(ndim, ntiles);
      if (e.empty()) e = bnd().far->check(ndim, ntiles);
      return e;
    }
    case Kind::table: {
      const auto& o = *tbl().owners;
      index_t want = 1;
      for (index_t x : ntiles)
        if (!fits_mul(want, x, want)) return "table ownership: tile count overflows 64 bits";
      if (static_cast<index_t>(o.size()) != want)
        return cat("table ownership lists ", o.size(), " owners, the layout has ", want,
                   " tiles (", ntiles.str(), ")");
      for (size_t i = 0; i < o.size(); ++i) {
        if (o[i] < 0) return cat("table owner of tile ", i, " is ", o[i], ", must be >= 0");
        if (o[i] == INT_MAX)  // ranks_needed() = owner + 1 would wrap
          return cat("table owner of tile ", i, " is ", o[i], ", needs ", index_t{o[i]} + 1,
                     " ranks, more than any communicator has (at most ", INT_MAX, ")");
      }
      return {};
    }
    case Kind::function:
      if (!fun().fn) return cat("function ownership '", fun().name, "' has no callable");
      if (fun().ranks <= 0) return cat("function ranks=", fun().ranks, " must be >= 1");
      return {};
    case Kind::placement:  // the rest is Layout::check's (it needs the layout's shape)
      if (!plc().cache) return "a greedy or balanced placement must be a layout's own ownership, not nested";
      return {};
  }
  return {};
}

bool Ownership::operator==(const Ownership& o) const {
  if (kind() != o.kind()) return false;
  switch (kind()) {
    case Kind::block_cyclic: {
      const auto &a = bc(), &b = o.bc();
      auto norm = [](const Coord& c, int n, index_t fill) { return c.ndim() ? c : Coord(n, fill); };
      int n = a.grid.ndim();
      const bool same_map = !a.map == !b.map && (!a.map || *a.map == *b.map);
      return a.grid == b.grid && a.order == b.order && a.first_rank == b.first_rank && same_map &&
             norm(a.source, n, 0) == norm(b.source, n, 0) && norm(a.super, n, 1) == norm(b.super, n, 1);
    }
    case Kind::random:
      return rnd().seed == o.rnd().seed && rnd().ranks == o.rnd().ranks &&
             rnd().first_rank == o.rnd().first_rank;
    case Kind::band:
      return bnd().width == o.bnd().width && *bnd().near == *o.bnd().near && *bnd().far == *o.bnd().far;
    case Kind::table:
      return *tbl().owners == *o.tbl().owners;
    case Kind::function:
      return fun().name == o.fun().name && fun().ranks == o.fun().ranks;
    case Kind::placement:
      return plc().rule == o.plc().rule &&
             (plc().of == o.plc().of || (plc().of && o.plc().of && *plc().of == *o.plc().of));
  }
  return false;
}

void register_owner_function(const std::string& name, OwnerFunction fn) {
  // The name must be writable in a spec string: `function name=NAME`.
  if (name.empty() || name.find_first_of(" \t\n()=") != std::string::npos)
    detail::fail("owner function name '", name, "' must be non-empty without spaces, '(', ')' or '='");
  std::lock_guard<std::mutex> lock(registry_mutex);
  registry()[name] = std::move(fn);
}

OwnerFunction find_owner_function(const std::string& name) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  auto it = registry().find(name);
  return it == registry().end() ? OwnerFunction{} : it->second;
}

}  // namespace redist
