#include "remote_io.hpp"

namespace redist::runtime::detail {
namespace {

std::uint64_t mix(std::uint64_t h, std::int64_t v) {
  return (h ^ static_cast<std::uint64_t>(v)) * 0xff51afd7ed558ccdull;
}

}  // namespace

std::size_t TileKeyHash::operator()(const TileKey& k) const {
  const std::uint64_t h = mix(mix(0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(k.coll + 1), k.tile.m), k.tile.n);
  return static_cast<std::size_t>(h ^ (h >> 29));
}

std::size_t RemoteIo::SendKeyHash::operator()(const SendKey& k) const {
  return TileKeyHash{}(k.key) ^ (static_cast<std::size_t>(k.dest) * 0x9e3779b97f4a7c15ull);
}

std::string RemoteIo::visit(const TaskClass& c, const Params& p, int runner) {
  for (int f = 0; f < c.num_flows(); ++f) {
    const Flow& flow = c.flow_at(f);
    if (const Dep* in = active_in(flow, p); in && in->end.collection) {
      const TileKey key{in->collection_index, in->end.tile(p)};
      const int owner = in->end.collection->rank_of(key.tile);
      if (runner == rank_ && owner != rank_) {
        readers_[key].push_back(Reader{&c, p, f});
      } else if (runner != rank_ && owner == rank_) {
        if (sent_.insert(SendKey{key, runner}).second) sends_.push_back(Send{runner, key});
      } else if (owner == rank_ && flow.access == Access::read_write) {
        modified_.insert(key);  // read in place: the task may change it
      }
    }
    for (const Dep& out : flow.outs) {
      if (!out.end.collection || !guard_holds(out, p)) continue;
      const TileKey key{out.collection_index, out.end.tile(p)};
      if (out.end.collection->rank_of(key.tile) != rank_) continue;  // its owner checks it
      auto [it, first] = written_.try_emplace(key, Writer{&c, p, f});
      if (!first) {
        const Writer& w = it->second;
        return cat("invalid task graph: tile (", key.tile.m, ", ", key.tile.n, ") of ",
                   out.end.collection->describe(), " is written by ", w.cls->describe(w.params), ".",
                   w.cls->flow_at(w.flow).name, " and by ", c.describe(p), ".", flow.name,
                   "; a run writes a tile at most once");
      }
      modified_.insert(key);
      if (runner != rank_) ++incoming_writes_;
    }
  }
  return {};
}

}  // namespace redist::runtime::detail
