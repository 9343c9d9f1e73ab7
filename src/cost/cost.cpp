// The per-executor time model (paper 000 sec. 7, Eq. 1-5; paper 002 Eq. 1).
#include "redist/cost.hpp"

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

namespace {

// Bytes of the longest contiguous run of a box in storage with `strides`
// (leading dimensions merged, as copy_box and direct do) and how many runs.
struct Runs {
  double row_bytes, rows;
};
Runs runs(const Coord& shape, const Coord& strides, index_t es) {
  const int n = shape.ndim();
  index_t run = n ? shape[0] : 1;
  int d = 1;
  while (d < n && strides[d] == run) run *= shape[d++];
  const double vol = static_cast<double>(shape.volume());
  return {static_cast<double>(run * es), run ? vol / static_cast<double>(run) : 0};
}

// Seconds per byte at a row size: the cache-resident and the from-memory curves
// blended by the rank's footprint (bytes it touches per execute), in log scale.
struct Rate {
  const Curve* large;
  const Curve* small;
  double w;  // 1: all from memory
  double fallback;
  double at(double row) const {
    if (large->empty()) return fallback;
    if (small->empty()) return large->at(row);
    return w * large->at(row) + (1 - w) * small->at(row);
  }
  double time(Runs r) const { return r.rows * r.row_bytes * at(r.row_bytes); }
};

struct Rates {
  Rate copy, datatype, vm;
};

// The footprint: bytes read from the source plus bytes written to the target;
// executors that pack also write and read their send and receive buffers.
Rates rates(const RankPlan& rp, const Machine& m, bool packs) {
  const PlanStats& st = rp.stats;
  const double f = static_cast<double>((packs ? 2 : 1) * (st.bytes_sent + st.bytes_received) + 2 * st.bytes_local);
  double w = 1;
  if (m.small_footprint > 0 && m.large_footprint > m.small_footprint)
    w = std::clamp(std::log(std::max(f, 1.0) / m.small_footprint) / std::log(m.large_footprint / m.small_footprint),
                   0.0, 1.0);
  const double inv_mem = m.bmemcpy > 0 ? 1 / m.bmemcpy : 0;
  const double inv_net = m.bnet > 0 ? 1 / m.bnet : inv_mem;
  // process_vm_readv reads what another core wrote, so `direct` is charged the
  // from-memory curve at every footprint: blending in the in-cache curve as for the
  // other executors predicted it 15-30% fast at 8-40 MB footprints and made auto pick
  // it wrongly in the blocksize suite (docs/executors.md, "How auto decides").
  return {{&m.copy, &m.copy_small, w, inv_mem},
          {&m.datatype, &m.datatype_small, w, inv_net + 2 * inv_mem},
          {&m.vm_read, &m.vm_read_small, 1, inv_mem}};
}

struct Side {
  double copy = 0;      // pack (or unpack) with memcpy, seconds
  double datatype = 0;  // the same rows moved by MPI's datatype engine, seconds
  double vm = 0;        // direct: rows read with process_vm_readv, short ones packed, seconds
  double vm_pack = 0;   // direct, sending side: packing the short rows, seconds
  double msgs = 0;      // seconds of one message per peer
  double seg_msgs = 0;  // seconds of one message per segment
};

Side side(const std::vector<PeerPlan>& peers, index_t es, const Machine& m, const Rates& rt) {
  index_t nseg = 0;
  for (const PeerPlan& p : peers) nseg += static_cast<index_t>(p.segments.size());
  // Per message in a stream (matching costs grow with the messages in flight; the
  // segment executor keeps at most kSegmentWindow in flight each way).
  const double per_msg =
      m.stream.empty() ? m.startup : m.stream.at(static_cast<double>(std::min<index_t>(nseg, kSegmentWindow)));
  Side s;
  for (const PeerPlan& p : peers) {
    s.msgs += m.exchange_time(static_cast<double>(p.bytes));
    s.datatype += m.startup;
    for (const Segment& g : p.segments) {
      const Runs r = runs(g.shape, g.at.strides, es);
      const double copy = rt.copy.time(r);
      s.copy += copy;
      s.datatype += rt.datatype.time(r);
      if (r.row_bytes < static_cast<double>(kDirectPackBelow)) {  // packed, read as one run, unpacked
        s.vm_pack += copy;
        s.vm += copy + rt.vm.time({r.row_bytes * r.rows, 1});
      } else {
        s.vm += rt.vm.time(r);
      }
    }
  }
  // One message per segment: the volume moves as in p2p, plus each message's share
  // of a stream of nseg.
  s.seg_msgs = s.msgs + static_cast<double>(nseg) * per_msg;
  return s;
}

}  // namespace

// Per rank, per execute (the plan is made once, so T_index = 0 here):
//   local copies   L = sum over local copies of rows * row bytes * copy(row bytes)
//   p2p            T_comm = max(sum_send x(bytes_peer), sum_recv x(bytes_peer)),
//                  T_memcpy = pack(send rows) + unpack(receive rows) + L
//   alltoallv      as p2p; T_runtime = t_m per peer (the collective's synchronisation)
//   segment        as p2p, plus n * s(min(n, 64)) for its n messages (one per
//                  segment, 64 in flight), s(k) the measured cost per message in a
//                  stream of k
//   alltoallw      T_comm = max over directions of (t_m per peer + rows moved by the
//                  datatype engine, measured per byte by row size), T_memcpy = L
//   direct         T_comm = 2 t_m per peer (pointers, done); T_memcpy = L + the
//                  rows this rank reads at the measured process_vm_readv cost per
//                  row size; rows under kDirectPackBelow: packed by the sender
//                  (charged to it), read as one run, unpacked; p2p without it.
// x(n) is the measured time of an exchange of n bytes each way, both ranks at once
// (paper 002 Eq. 1, t_m + t_w n, with t_w read from the curve). Row costs are
// per byte at the row size (contiguous run), blended between the in-cache and the
// from-memory curves by the bytes the rank touches.
Prediction predict(const RankPlan& rp, Executor e, const Machine& m) {
  const index_t es = rp.elem_size;
  if (e == Executor::direct && m.vm_read.empty()) e = Executor::p2p;  // direct falls back
  const Rates rt = rates(rp, m, e != Executor::alltoallw && e != Executor::direct);
  double local = 0;
  for (const LocalCopy& c : rp.locals) {
    Runs a = runs(c.shape, c.from.strides, es), b = runs(c.shape, c.to.strides, es);
    local += rt.copy.time(a.row_bytes < b.row_bytes ? a : b);
  }
  const Side snd = side(rp.sends, es, m, rt), rcv = side(rp.receives, es, m, rt);
  const double peers = static_cast<double>(std::max(rp.sends.size(), rp.receives.size()));
  Prediction p;
  switch (e) {
    case Executor::p2p:
    case Executor::alltoallv:
    case Executor::segment:
      p.comm = e == Executor::segment ? std::max(snd.seg_msgs, rcv.seg_msgs) : std::max(snd.msgs, rcv.msgs);
      p.memcpy = snd.copy + rcv.copy + local;
      if (e == Executor::alltoallv) p.runtime = m.startup * peers;
      break;
    case Executor::alltoallw:
      p.comm = std::max(snd.datatype, rcv.datatype);
      p.memcpy = local;
      break;
    case Executor::direct:
      p.comm = 2 * m.startup * peers;
      p.memcpy = local + snd.vm_pack + rcv.vm;
      break;
    case Executor::auto_:
      break;
  }
  return p;
}

Executor choose_executor(const RankPlan& rp, const Machine& m, MPI_Comm comm, std::vector<double>* predicted) {
  const std::vector<Executor> ex = all_executors();
  std::vector<double> t;
  for (Executor e : ex) t.push_back(predict(rp, e, m).total());
  // Paper 000 Eq. 2: the slowest rank decides; MAX makes the vector identical on every
  // rank, so the argmin (first on ties) is too.
  MPI_Allreduce(MPI_IN_PLACE, t.data(), static_cast<int>(t.size()), MPI_DOUBLE, MPI_MAX, comm);
  if (predicted) *predicted = t;
  return ex[static_cast<size_t>(std::min_element(t.begin(), t.end()) - t.begin())];
}

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
