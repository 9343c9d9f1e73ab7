#include "dep_table.hpp"

#include "redist/error.hpp"

namespace redist::runtime::detail {

std::int64_t prepare_inputs(const TaskClass& cls, const Params& p, int rank, std::vector<Data>& flows) {
  flows.assign(cls.num_flows(), Data{});
  std::int64_t count = 0;
  for (int f = 0; f < cls.num_flows(); ++f) {
    const Dep* in = active_in(cls.flow_at(f), p);
    if (!in) continue;
    if (in->end.collection) {
      const Tile t = in->end.tile(p);
      if (in->end.collection->rank_of(t) == rank)
        flows[f] = in->end.collection->data_of(t);
      else
        ++count;  // its owner sends it (RemoteIo)
    } else {
      count += in->end.targets(p).size();
    }
  }
  return count;
}

bool DepTable::deliver(const TaskClass& cls, const Params& p, int flow, const Data& data,
                       ReadyTask& ready) {
  TaskKey key{cls.id(), p};
  Shard& s = shards_[TaskKeyHash{}(key) % shards_.size()];
  std::lock_guard lock(s.mutex);
  auto [it, fresh] = s.map.try_emplace(key);
  Entry& e = it->second;
  if (fresh) e.remaining = prepare_inputs(cls, p, rank_, e.flows);
  if (e.remaining <= 0)  // the graph was validated: this is an engine bug
    fail("internal error: input ", cls.flow_at(flow).name, " delivered to ", cls.describe(p),
         ", which expects no more inputs");
  if (!cls.flow_at(flow).control) e.flows[flow] = data;
  if (--e.remaining > 0) return false;
  ready.cls = &cls;
  ready.params = p;
  ready.priority = cls.priority_of(p);
  ready.flows = std::move(e.flows);
  s.map.erase(it);
  return true;
}

}  // namespace redist::runtime::detail
