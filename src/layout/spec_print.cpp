// Layout::spec: prints the canonical spec string (docs/spec.md) that
// Layout::parse (spec.cpp) reads back to an equal layout.
#include <string>

#include "redist/layout.hpp"

namespace redist {
namespace {

using detail::cat;

template <class Range>
std::string join(const Range& r, const char* sep) {
  std::string s;
  for (const auto& x : r) s += cat(s.empty() ? "" : sep, x);
  return s;
}

bool all_equal(const Coord& c, index_t v) {
  for (index_t x : c)
    if (x != v) return false;
  return true;
}

// Only non-default options, except the defining ones (grid, seed and ranks of random).
std::string ownership_spec(const Ownership& o) {
  switch (o.kind()) {
    case Ownership::Kind::block_cyclic: {
      const auto& p = o.bc();
      std::string s = cat("block_cyclic grid=", p.grid.str());
      if (p.order == GridOrder::col) s += " order=col";
      if (!all_equal(p.source, 0)) s += cat(" src=", p.source.str());
      if (!all_equal(p.super, 1)) s += cat(" super=", p.super.str());
      if (p.first_rank != 0) s += cat(" first=", p.first_rank);
      if (p.map) s += cat(" map=", join(*p.map, ","));
      return s;
    }
    case Ownership::Kind::random: {
      const auto& p = o.rnd();
      std::string s = cat("random seed=", p.seed, " ranks=", p.ranks);
      if (p.first_rank != 0) s += cat(" first=", p.first_rank);
      return s;
    }
    case Ownership::Kind::band: {
      const auto& p = o.bnd();
      std::string s = "band";
      if (p.width != 0) s += cat(" width=", p.width);
      return s + cat(" near=(", ownership_spec(*p.near), ") far=(", ownership_spec(*p.far), ")");
    }
    case Ownership::Kind::table:
      return o.tbl().owners->empty() ? "table" : cat("table owners=", join(*o.tbl().owners, ","));
    case Ownership::Kind::function:
      return cat("function name=", o.fun().name, o.fun().ranks != 1 ? cat(" ranks=", o.fun().ranks) : "");
    case Ownership::Kind::placement:
      return cat(o.plc().rule == PlacementRule::greedy ? "greedy" : "balanced", " of=(",
                 o.plc().of ? o.plc().of->spec() : "", ")");
  }
  return {};
}

}  // namespace

std::string Layout::spec() const {
  const size_t n = std::min(static_cast<size_t>(ndim()), partition_.size());
  std::string s = shape_.str() + " tile=";
  bool any_offset = false;
  for (size_t d = 0; d < n; ++d) {
    const DimPartition& p = partition_[d];
    if (d) s += 'x';
    s += p.is_regular() ? std::to_string(p.tile()) : cat("[", join(p.bounds(), ","), "]");
    any_offset |= p.is_regular() && p.offset() != 0;
  }
  if (any_offset) {
    s += " offset=";
    for (size_t d = 0; d < n; ++d)
      s += cat(d ? "x" : "", partition_[d].is_regular() ? partition_[d].offset() : 0);
  }
  if (elem_size_ != 8) s += cat(" esize=", elem_size_);
  if (storage_.kind == StorageKind::local_array) s += " storage=local_array";
  if (storage_.kind == StorageKind::tile_pointers) s += " storage=tile_pointers";
  if (storage_.ld != 0) s += cat(" ld=", storage_.ld);
  return s + " " + ownership_spec(ownership_);
}

}  // namespace redist
