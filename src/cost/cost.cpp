// The machine model: measured curves, the blocks of the strategies' time models
// (paper 000 sec. 7, Eq. 1-5; paper 002 Eq. 1), and the paper's Eq. 3 and Eq. 5.
#include "cost/model.hpp"
#include "kernels/copy.hpp"

#include <algorithm>
#include <cmath>

namespace redist {

double Curve::at(double v) const {
  if (x.empty()) return 0;
  if (v <= x.front()) return y.front();
  if (v >= x.back()) return y.back();
  const size_t i = static_cast<size_t>(std::upper_bound(x.begin(), x.end(), v) - x.begin());
  const double f = (std::log(v) - std::log(x[i - 1])) / (std::log(x[i]) - std::log(x[i - 1]));
  return y[i - 1] + f * (y[i] - y[i - 1]);
}

// Paper 002 Eq. 1 per message: t_m + t_w * D. Between measured sizes the time is
// interpolated linearly in bytes; beyond the largest, the last bandwidth holds.
double Machine::net_time(double bytes) const {
  const auto& x = pingpong.x;
  const auto& y = pingpong.y;
  if (x.empty()) return startup + (bnet > 0 ? bytes / bnet : 0);
  if (bytes <= x.front()) return y.front();
  if (bytes >= x.back()) return y.back() * bytes / x.back();
  const size_t i = static_cast<size_t>(std::upper_bound(x.begin(), x.end(), bytes) - x.begin());
  return y[i - 1] + (bytes - x[i - 1]) / (x[i] - x[i - 1]) * (y[i] - y[i - 1]);
}

double Machine::exchange_time(double bytes) const {
  const auto& x = exchange.x;
  const auto& y = exchange.y;
  if (x.empty()) return net_time(bytes);
  if (bytes <= x.front()) return std::max(startup, y.front() * bytes / x.front());
  if (bytes >= x.back()) return y.back() * bytes / x.back();
  const size_t i = static_cast<size_t>(std::upper_bound(x.begin(), x.end(), bytes) - x.begin());
  return y[i - 1] + (bytes - x[i - 1]) / (x[i] - x[i - 1]) * (y[i] - y[i - 1]);
}

double Machine::net_bandwidth(double bytes) const {
  const double t = net_time(bytes);
  return t > 0 ? bytes / t : bnet;
}

namespace detail {

namespace {
// The rows the kernel's walk copies (loops_of: run_rows, and whether it walks across).
Runs runs_of(const Loops& l, index_t es) {
  return {static_cast<double>(l.row), static_cast<double>(l.rr.rows), l.cross, static_cast<double>(es)};
}
}  // namespace

Runs runs_of(const Segment& s, index_t es) {
  const std::array<index_t, 2> packed = packed_steps(s.shape, s.count);
  return runs_of(loops_of(s.shape, s.run, es, s.count, s.at.strides, s.step, packed_strides(s.shape), packed), es);
}

Runs runs_of(const LocalCopy& c, index_t es) {
  return runs_of(loops_of(c.shape, c.run, es, c.count, c.from.strides, c.from_step, c.to.strides, c.to_step), es);
}

double Rate::at(double row) const {
  if (large->empty()) return fallback;
  if (small->empty()) return large->at(row);
  return w * large->at(row) + (1 - w) * small->at(row);
}

double Rate::across(double elem_bytes) const {
  if (!cross_large || cross_large->empty()) return at(elem_bytes);
  if (!cross_small || cross_small->empty()) return cross_large->at(elem_bytes);
  return w * cross_large->at(elem_bytes) + (1 - w) * cross_small->at(elem_bytes);
}

// The footprint f: bytes read from the source plus bytes written to the target;
// strategies that pack also write and read their send and receive buffers. The
// model predicts an execute among other work, as applications and the
// interleaved repetitions of `redist run` and `redist bench` run it: a byte is
// used again after 2f bytes (one other execute of this size in between), while
// the footprint curve is measured back to back (after f). So the fraction from
// memory is read at 2f. (Read at f, the fine suite was predicted 0.64x its
// measured time, pooled over two launches; all from memory, 1.05x but 1.2-1.55x
// on its 8 MB cases.)
Rates rates(const RankPlan& rp, const Machine& m, bool packs) {
  const PlanStats& st = rp.stats;
  const double f = static_cast<double>((packs ? 2 : 1) * (st.bytes_sent + st.bytes_received) + 2 * st.bytes_local);
  double w = 1;
  if (m.footprint.x.size() >= 2) {
    Curve c = m.footprint;  // made non-decreasing: the measured points jitter by 10-20%
    for (size_t i = 1; i < c.y.size(); ++i) c.y[i] = std::max(c.y[i], c.y[i - 1]);
    const double lo = c.y.front(), hi = c.y.back();
    w = hi > lo ? std::clamp((c.at(2 * f) - lo) / (hi - lo), 0.0, 1.0) : 1;
  } else if (m.small_footprint > 0 && m.large_footprint > m.small_footprint)
    w = std::clamp(std::log(std::max(f, 1.0) / m.small_footprint) / std::log(m.large_footprint / m.small_footprint),
                   0.0, 1.0);
  const double inv_mem = m.bmemcpy > 0 ? 1 / m.bmemcpy : 0;
  const double inv_net = m.bnet > 0 ? 1 / m.bnet : inv_mem;
  // process_vm_readv reads what another core wrote, so `direct` is charged the
  // from-memory curve at every footprint: blending in the in-cache curve as for the
  // other strategies predicted it 15-30% fast at 8-40 MB footprints and made auto pick
  // it wrongly in the blocksize suite (docs/strategies.md, "How auto decides").
  return {{&m.copy, &m.copy_small, w, inv_mem, &m.transpose, &m.transpose_small},
          {&m.datatype, &m.datatype_small, w, inv_net + 2 * inv_mem, &m.datatype_transpose, nullptr},
          {&m.vm_read, &m.vm_read_small, 1, inv_mem}};
}

double local_copy_time(const RankPlan& rp, const Rates& rt) {
  double t = 0;
  for (const LocalCopy& c : rp.locals) t += rt.copy.time(runs_of(c, rp.elem_size));
  return t;
}

double pack_time(const std::vector<PeerPlan>& peers, index_t es, const Rates& rt) {
  double t = 0;
  for (const PeerPlan& p : peers)
    for (const Segment& g : p.segments) t += rt.copy.time(runs_of(g, es));
  return t;
}

bool one_run(const Segment& g) {
  return g.elements() > 0 && run_rows(g.shape, g.run, g.count, g.step, packed_steps(g.shape, g.count)).rows == 1;
}

StorageRun storage_run(const PeerPlan& pp) {
  StorageRun r;
  index_t next = 0;  // where the next segment must begin
  for (const Segment& g : pp.segments) {
    if (g.elements() == 0) continue;
    if (!one_run(g) || (r.block >= 0 && (g.at.block != r.block || g.at.offset != next))) return {};
    if (r.block < 0) r = {g.at.block, g.at.offset};
    next = g.at.offset + g.elements();
  }
  return r;
}

std::vector<index_t> packed_messages(const RankPlan& rp, bool arithmetic) {
  std::vector<index_t> b;
  for (const PeerPlan& q : rp.sends)
    if (q.bytes > 0 && storage_run(q).block < 0) b.push_back(q.bytes);
  for (const PeerPlan& q : rp.receives)
    if (q.bytes > 0 && (arithmetic || storage_run(q).block < 0)) b.push_back(q.bytes);
  return b;
}

index_t p2p_packed_bytes(const RankPlan& rp, bool arithmetic) {
  index_t n = 0;
  for (index_t b : packed_messages(rp, arithmetic)) n += b;
  return n;
}

index_t largest_packed_message(const std::vector<PeerPlan>& peers, bool all) {
  index_t m = 0;
  for (const PeerPlan& p : peers)
    if (all || storage_run(p).block < 0) m = std::max(m, p.bytes);
  return m;
}

index_t segment_packed_bytes(const std::vector<PeerPlan>& peers, index_t elem_size, bool all) {
  index_t n = 0;
  for (const PeerPlan& p : peers)
    for (const Segment& g : p.segments)
      if (all || !one_run(g)) n += g.elements() * elem_size;
  return n;
}

double p2p_copy_time(const RankPlan& rp, const Rates& rt) {
  // Summed in packed_copy_time's order (sends, receives, local copies): the same
  // figure where no message is one run.
  double sends = 0, receives = 0;
  auto packed = [&](const PeerPlan& p, double& t) {
    for (const Segment& g : p.segments) t += rt.copy.time(runs_of(g, rp.elem_size));
  };
  for (const PeerPlan& p : rp.sends)
    if (storage_run(p).block < 0) packed(p, sends);
  for (const PeerPlan& p : rp.receives)
    if (storage_run(p).block < 0) packed(p, receives);
  return sends + receives + local_copy_time(rp, rt);
}

double segment_copy_time(const RankPlan& rp, const Rates& rt) {
  double sends = 0, receives = 0;  // summed as packed_copy_time (see p2p_copy_time)
  for (const PeerPlan& p : rp.sends)
    for (const Segment& g : p.segments)
      if (!one_run(g)) sends += rt.copy.time(runs_of(g, rp.elem_size));
  for (const PeerPlan& p : rp.receives)
    for (const Segment& g : p.segments)
      if (!one_run(g)) receives += rt.copy.time(runs_of(g, rp.elem_size));
  return sends + receives + local_copy_time(rp, rt);
}

double message_time(const std::vector<PeerPlan>& peers, const Machine& m) {
  double t = 0;
  for (const PeerPlan& p : peers) t += m.exchange_time(static_cast<double>(p.bytes));
  return t;
}

index_t segment_count(const std::vector<PeerPlan>& peers) {
  index_t n = 0;
  for (const PeerPlan& p : peers) n += static_cast<index_t>(p.segments.size());
  return n;
}

double stream_cost(const Machine& m, index_t in_flight) {
  return m.stream.empty() ? m.startup : m.stream.at(static_cast<double>(in_flight));
}

double datatype_engine_time(const std::vector<PeerPlan>& peers, index_t es, const Rates& rt, const Machine& m) {
  double t = 0;
  for (const PeerPlan& pp : peers) {
    const double wire = m.exchange_time(static_cast<double>(pp.bytes)) / static_cast<double>(pp.bytes);
    for (const Segment& g : pp.segments) {
      const Runs r = runs_of(g, es);
      t += std::max(0.0, rt.datatype.time(r) - wire * r.rows * r.row_bytes) / 2;
    }
  }
  return t;
}

}  // namespace detail

double achieved_bandwidth(index_t max_remote_bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(max_remote_bytes) / seconds : 0;
}

double bound_bandwidth(const Machine& m, index_t remote, index_t local) {
  if (remote <= 0 || m.bnet <= 0 || m.bmemcpy <= 0) return 0;
  const double r = static_cast<double>(local) / static_cast<double>(remote);
  return m.bnet * m.bmemcpy / ((2 + r) * m.bnet + m.bmemcpy);
}

double bound_bandwidth(const Machine& m, index_t remote, index_t local, index_t message_bytes) {
  Machine at = m;
  if (!m.pingpong.empty()) at.bnet = m.net_bandwidth(static_cast<double>(std::max<index_t>(message_bytes, 1)));
  return bound_bandwidth(at, remote, local);
}

}  // namespace redist
