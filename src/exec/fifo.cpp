#include "exec/fifo.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <span>

#include "exec/pack.hpp"
#include "exec/remote.hpp"
#include "exec/threads.hpp"
#include "kernels/copy.hpp"
#include "mpi/agree.hpp"
#include "plan/pieces.hpp"

namespace redist::detail {
namespace {

constexpr index_t kCtlBytes = 256;  // head at 0, tail at 128: lines of their own
constexpr size_t kNameBytes = 64;
constexpr int kRingsOff = -1;  // a sender's answer: its rings are off

// What a receiver tells each sender about its ring.
struct Offer {
  std::int64_t ok = 0;  // 1: the ring exists
  std::int64_t offset = 0, region_bytes = 0, slot_bytes = 0, slot_stride = 0;
  std::uint64_t columns = 0;  // not 0: column order asked for; the receiver's runs' signature
  std::int64_t source = 0;    // 1: the sender's source order asked for (before column order)
  char name[kNameBytes] = {};
};
// A sender's answer: 0, errno of a failed mapping, or kRingsOff; and the pair's
// message order.
enum Order : int { kPlanOrder = 0, kColumnOrder = 1, kSourceOrder = 2 };
struct Reply {
  int error = -1, order = kPlanOrder;
};

// A run that column order splits: 2-D, repeated down (count[0] > 1), several columns.
bool splits(const Segment& g) { return g.shape.ndim() == 2 && g.count[0] > 1 && g.shape[1] > 1; }

// What both sides of a pair must share for column order: each run's shape and
// counts, in order (FNV-1a; never 0).
std::uint64_t signature(const std::vector<Segment>& segs) {
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  mix(segs.size());
  for (const Segment& g : segs) {
    mix(static_cast<std::uint64_t>(g.shape.ndim()));
    for (index_t e : g.shape) mix(static_cast<std::uint64_t>(e));
    mix(static_cast<std::uint64_t>(g.count[0])), mix(static_cast<std::uint64_t>(g.count[1]));
  }
  return h | 1;
}

// A run of a 2-D box of R x C repeated I x J times, as J runs of one column:
// box R x 1 repeated I times down (step[0]) and C times across (the storage's
// column stride), so that the message holds column c of every repetition down
// before column c + 1. The same split on both sides of a pair gives the same
// element order (each side with its own storage).
std::vector<Segment> column_order(const std::vector<Segment>& in) {
  std::vector<Segment> out;
  for (const Segment& g : in) {
    if (!splits(g)) {
      out.push_back(g);
      continue;
    }
    for (index_t j = 0; j < g.count[1]; ++j) {
      Segment h = g;
      h.shape = Coord{g.shape[0], 1};
      h.at.offset = g.at.offset + j * g.step[1];
      h.run = std::min(g.run, g.shape[0]);
      h.count = {g.count[0], g.shape[1]};
      h.step = {g.step[0], g.at.strides[1]};
      out.push_back(h);
    }
  }
  return out;
}

// Source order (fifo.hpp): the rows of a pair's segments, contiguous on both
// sides; `where`: for a receiver, the sender's records (where each segment lies in
// the sender's source), null for a sender (its own segments are the source).
// Calls f(src_block, src_off, dst_block, dst_off, bytes) per row (byte offsets).
template <class F>
void pair_rows(const std::vector<Segment>& segs, const std::vector<std::int64_t>* where, int ndim, index_t es, F&& f) {
  const size_t per = record_size(ndim);
  for (size_t k = 0; k < segs.size(); ++k) {
    const Segment& s = segs[k];
    std::int64_t sb = s.at.block, so = s.at.offset;
    Coord fs = s.at.strides;
    std::array<index_t, 2> fstep = s.step;
    index_t run = s.run;
    if (where != nullptr) {
      const SenderView v = sender_view(&(*where)[k * per], ndim);
      sb = v.block, so = v.offset, fs = v.strides, fstep = v.step;
      run = run_both(s, &(*where)[k * per]);
    }
    for_each_row(s.shape, run, es, s.count, so, fs, fstep, s.at.offset, s.at.strides, s.step,
                 [&](index_t from, index_t to, index_t row) { f(sb, from, static_cast<std::int64_t>(s.at.block), to, row); });
  }
}

}  // namespace

bool source_order_suits(const std::vector<Segment>& segs, const std::vector<std::int64_t>* where, int ndim,
                        index_t bytes) {
  const size_t per = record_size(ndim);
  index_t rows = 0;
  for (size_t k = 0; k < segs.size(); ++k) {
    const Segment& s = segs[k];
    if (where == nullptr) {
      rows += run_rows(s.shape, s.run, s.count, s.step, s.step).rows;
    } else {
      const SenderView v = sender_view(&(*where)[k * per], ndim);
      rows += run_rows(s.shape, run_both(s, &(*where)[k * per]), s.count, v.step, s.step).rows;
    }
  }
  return rows > 0 && rows <= kSourceOrderRows && bytes / rows >= kWalkRowMin && bytes / rows <= kWalkRowMax;
}

namespace {

// A pair's rows in source order, numbered in the message; each row's place on
// this side: the target for a receiver (`where` given), the source for a sender.
std::vector<Fifos::MsgRow> source_rows(const std::vector<Segment>& segs, const std::vector<std::int64_t>* where,
                                       int ndim, index_t es) {
  struct Raw {
    std::int64_t sb, so, db, dof, bytes;
  };
  std::vector<Raw> raw;
  pair_rows(segs, where, ndim, es, [&](std::int64_t sb, std::int64_t so, std::int64_t db, std::int64_t dof, index_t n) {
    raw.push_back({sb, so, db, dof, n});
  });
  std::sort(raw.begin(), raw.end(), [](const Raw& a, const Raw& b) { return a.sb != b.sb ? a.sb < b.sb : a.so < b.so; });
  std::vector<Fifos::MsgRow> rows;
  std::int64_t msg = 0;
  for (const Raw& r : raw) {
    const std::int64_t block = where ? r.db : r.sb, off = where ? r.dof : r.so;
    if (!rows.empty()) {
      Fifos::MsgRow& last = rows.back();
      const Raw& prev = raw[static_cast<size_t>(&r - raw.data()) - 1];
      if (prev.sb == r.sb && prev.so + prev.bytes == r.so && last.block == block && last.off + last.bytes == off) {
        last.bytes += r.bytes, msg += r.bytes;
        continue;
      }
    }
    rows.push_back({off, msg, r.bytes, block});
    msg += r.bytes;
  }
  return rows;
}

bool columns_disabled() {
  return env_off("REDIST_FIFO_COLUMNS");
}

index_t round_up(index_t n, index_t to) { return (n + to - 1) / to * to; }

}  // namespace

index_t fifo_slot_limit() {
  const char* v = std::getenv("REDIST_FIFO_SLOT_BYTES");
  const long long k = v ? std::strtoll(v, nullptr, 10) : 0;
  return k >= 1 && k <= kFifoSlotBytes ? static_cast<index_t>(k) : kFifoSlotBytes;
}

namespace {

struct SlotSize {
  index_t bytes, stride, region;
};
// A receiver's ring for a message of `bytes`: kFifoSlots slots of whole elements,
// each at most fifo_slot_limit() and a quarter of the message, lines apart, after
// the control lines; the region page-aligned (the sender maps its own).
SlotSize slot_size(index_t bytes, index_t es) {
  const index_t per = std::min(fifo_slot_limit(), (bytes + kFifoSlots - 1) / kFifoSlots);
  SlotSize z;
  z.bytes = std::max(es, per / es * es);
  z.stride = round_up(z.bytes, 64);
  z.region = round_up(kCtlBytes + kFifoSlots * z.stride, static_cast<index_t>(sysconf(_SC_PAGESIZE)));
  return z;
}

std::uint64_t load(std::uint64_t* w) { return std::atomic_ref<std::uint64_t>(*w).load(std::memory_order_acquire); }
void store(std::uint64_t* w, std::uint64_t v) {
  std::atomic_ref<std::uint64_t>(*w).store(v, std::memory_order_release);
}

// Calls f(piece, at) for the pieces of bytes [c.done, c.done + n) of a pair's
// message (`at`: the piece's first element from c.done), starting the walk at the
// segment the cursor reached.
template <class Cursor, class F>
void walk(const std::vector<Segment>& segs, Cursor& c, index_t es, index_t n, F&& f) {
  while (c.seg < segs.size() && c.base + segs[c.seg].elements() * es <= c.done) c.base += segs[c.seg++].elements() * es;
  for_range(std::span<const Segment>(segs).subspan(c.seg), (c.done - c.base) / es, (c.done + n - c.base) / es, f);
}

// Calls f(row, within, n, at) for the bytes [c.done, c.done + n) of a pair in
// source order: n bytes from `within` into the row, at `at` in the slot; the
// cursor's seg is the row reached.
template <class Cursor, class F>
void walk_rows(const std::vector<Fifos::MsgRow>& rows, Cursor& c, index_t n, F&& f) {
  const index_t end = c.done + n;
  while (c.seg < rows.size() && rows[c.seg].msg < end) {
    const Fifos::MsgRow& r = rows[c.seg];
    const index_t a = std::max<index_t>(r.msg, c.done), b = std::min<index_t>(r.msg + r.bytes, end);
    f(r, a - r.msg, b - a, a - c.done);
    if (b < r.msg + r.bytes) return;
    ++c.seg;
  }
}

}  // namespace

index_t fifo_ring_bytes(index_t bytes, index_t es) { return bytes > 0 ? slot_size(bytes, es).region : 0; }

bool fifo_disabled() {
  return env_off("REDIST_SHM_FIFO");
}

// Why the slots' stores are chosen by timing: fifo.hpp, SlotChoice; the
// measurements in docs/shm.md ("Slots in memory", "Slots by timing").
int fifo_stream_forced() {
  const char* v = std::getenv("REDIST_FIFO_STREAM");
  if (v && std::strcmp(v, "0") == 0) return 0;
  if (v && std::strcmp(v, "1") == 0) return 1;
  return -1;
}

bool SlotChoice::mode(std::int64_t n) const {
  if (n == 0) return true;
  if (n <= kTrials) return n % 2 == 0;
  return n == next_ ? !chosen_ : chosen_;
}

void SlotChoice::record(std::int64_t n, double seconds) {
  double& e = est_[mode(n) ? 1 : 0];
  if (n == 0 || seconds <= 0) return;
  if (n <= kTrials) e = e > 0 ? std::min(e, seconds) : seconds;
  else if (n == next_) e = seconds;
  else e = 0.75 * e + 0.25 * seconds;
}

void SlotChoice::decide(std::int64_t n, const double slowest[2]) {
  const bool was = chosen_;
  if (slowest[0] > 0 && slowest[1] > 0) chosen_ = slowest[1] < slowest[0];
  if (n != next_) return;  // the trials' decision: the first exploration stays at kExplore
  gap_ = chosen_ == was ? std::min(2 * gap_, kExploreMax) : kExplore;
  next_ = n + gap_;
}

void Fifos::decide_slots(const PlanCore& p, std::int64_t n) {
  double est[2] = {slots_.estimate(false), slots_.estimate(true)};
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, est, 2, MPI_DOUBLE, MPI_MAX, p.comm), "MPI_Allreduce", p.comm);
  slots_.decide(n, est);
}

Fifos::~Fifos() {
  for (Ring& r : send_)
    if (r.map) munmap(r.map, r.map_bytes);
  if (own_map_) munmap(own_map_, own_bytes_);
}

void Fifos::setup(PlanCore& p, const std::vector<char>& recv_with, const std::vector<char>& send_with,
                  const std::vector<std::vector<std::int64_t>>& src_where, int tag) {
  const size_t nr = p.rp.receives.size(), ns = p.rp.sends.size();
  recv_.assign(nr, {}), send_.assign(ns, {});
  const bool off = fifo_disabled();  // this rank's rings, as receiver and sender
  if (off) why_not_ = "REDIST_SHM_FIFO=0";
  const index_t es = p.rp.elem_size;
  // The receiver's rings: one region per sender (slot_size).
  std::vector<Offer> offers(nr);
  index_t total = 0;
  for (size_t i = 0; i < nr; ++i) {
    if (!recv_with[i] || p.rp.receives[i].bytes == 0 || off) continue;
    const SlotSize z = slot_size(p.rp.receives[i].bytes, es);
    Offer& o = offers[i];
    o.slot_bytes = z.bytes, o.slot_stride = z.stride, o.region_bytes = z.region;
    o.offset = total;
    total += o.region_bytes;
  }
  std::string name;
  if (total > 0) {
    static std::atomic<unsigned> serial{0};
    name = cat("/redist-fifo-", getpid(), "-", serial++);
    const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) {
      why_not_ = cat("shm_open: ", std::strerror(errno));
    } else {
      // The pages reserved now: a tmpfs too small for them (a container's 64 MB
      // /dev/shm) refuses here, instead of a SIGBUS when a slot is first touched.
      const int e = posix_fallocate(fd, 0, static_cast<off_t>(total));
      if (e != 0) {
        why_not_ = cat("posix_fallocate of ", total, " bytes in /dev/shm: ", std::strerror(e));
      } else {
        void* m = mmap(nullptr, static_cast<size_t>(total), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) why_not_ = cat("mmap: ", std::strerror(errno));
        else own_map_ = static_cast<std::byte*>(m), own_bytes_ = static_cast<size_t>(total);
      }
      close(fd);
      if (!own_map_) shm_unlink(name.c_str()), name.clear();
    }
  }
  const bool columns_off = columns_disabled(), arithmetic = arithmetic_of(p) != nullptr;
  for (size_t i = 0; i < nr; ++i) {
    Offer& o = offers[i];
    if (!own_map_ || o.slot_bytes == 0) continue;
    o.ok = 1;
    if (!columns_off && columns_help(p.rp.receives[i].segments)) o.columns = signature(p.rp.receives[i].segments);
    o.source = !columns_off && !arithmetic && i < src_where.size() && !src_where[i].empty() &&
               source_order_suits(p.rp.receives[i].segments, &src_where[i], p.rp.ndim, p.rp.receives[i].bytes);
    std::memcpy(o.name, name.c_str(), std::min(name.size(), kNameBytes - 1));
  }
  // Offers out, the senders' outcomes back.
  std::vector<Offer> got(ns);
  std::vector<Reply> mapped(ns), replies(nr);
  rsegs_.assign(nr, {}), ssegs_.assign(ns, {});
  rrows_.assign(nr, {}), srows_.assign(ns, {});
  std::vector<MPI_Request> req;
  std::vector<std::string> role;
  for (size_t i = 0; i < nr; ++i) {
    if (!recv_with[i]) continue;
    const int peer = p.rp.receives[i].peer;
    req.emplace_back(), role.push_back(cat("send to rank ", peer));
    check_mpi(MPI_Isend(&offers[i], sizeof(Offer), MPI_BYTE, peer, tag, p.comm, &req.back()), "MPI_Isend", p.comm,
              "send to", peer);
  }
  for (size_t i = 0; i < ns; ++i) {
    if (!send_with[i]) continue;
    const int peer = p.rp.sends[i].peer;
    check_mpi(MPI_Recv(&got[i], sizeof(Offer), MPI_BYTE, peer, tag, p.comm, MPI_STATUS_IGNORE), "MPI_Recv", p.comm,
              "receive from", peer);
    const Offer& o = got[i];
    if (!o.ok) continue;
    if (off) {  // this rank's rings are off, as a sender too
      mapped[i].error = kRingsOff;
      continue;
    }
    const int fd = shm_open(o.name, O_RDWR, 0);
    mapped[i].error = errno;
    if (fd < 0) continue;
    void* m = mmap(nullptr, static_cast<size_t>(o.region_bytes), PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                   static_cast<off_t>(o.offset));
    mapped[i].error = m == MAP_FAILED ? errno : 0;
    close(fd);
    if (m == MAP_FAILED) continue;
    if (o.source && source_order_suits(p.rp.sends[i].segments, nullptr, p.rp.ndim, p.rp.sends[i].bytes)) {
      mapped[i].order = kSourceOrder;
      srows_[i] = source_rows(p.rp.sends[i].segments, nullptr, p.rp.ndim, es);
    } else if (o.columns != 0 && o.columns == signature(p.rp.sends[i].segments) &&
               columns_read_along(p.rp.sends[i].segments)) {
      mapped[i].order = kColumnOrder;
      ssegs_[i] = column_order(p.rp.sends[i].segments);
    }
    Ring& r = send_[i];
    r.map = static_cast<std::byte*>(m), r.map_bytes = static_cast<size_t>(o.region_bytes);
    r.head = reinterpret_cast<std::uint64_t*>(r.map), r.tail = reinterpret_cast<std::uint64_t*>(r.map + 128);
    r.slots = r.map + kCtlBytes, r.slot_bytes = o.slot_bytes, r.slot_stride = o.slot_stride;
  }
  for (size_t i = 0; i < ns; ++i) {
    if (!send_with[i]) continue;
    const int peer = p.rp.sends[i].peer;
    req.emplace_back(), role.push_back(cat("send to rank ", peer));
    check_mpi(MPI_Isend(&mapped[i], 2, MPI_INT, peer, tag, p.comm, &req.back()), "MPI_Isend", p.comm, "send to", peer);
  }
  for (size_t i = 0; i < nr; ++i) {
    if (!recv_with[i]) continue;
    const int peer = p.rp.receives[i].peer;
    req.emplace_back(), role.push_back(cat("receive from rank ", peer));
    check_mpi(MPI_Irecv(&replies[i], 2, MPI_INT, peer, tag, p.comm, &req.back()), "MPI_Irecv", p.comm, "receive from",
              peer);
  }
  std::vector<MPI_Status> status(req.size());
  check_wait(MPI_Waitall(static_cast<int>(req.size()), req.data(), status.data()), "MPI_Waitall", p.comm,
             status.data(), static_cast<int>(req.size()), nullptr, [&](int k) { return role[static_cast<size_t>(k)]; });
  if (!name.empty()) shm_unlink(name.c_str());  // every sender has mapped it or given up
  for (size_t i = 0; i < nr; ++i) {
    const Offer& o = offers[i];
    if (!o.ok) continue;
    if (replies[i].error != 0) {
      const int peer = p.rp.receives[i].peer;
      if (why_not_.empty())
        why_not_ = replies[i].error == kRingsOff
                       ? cat("rank ", peer, " has its rings off, REDIST_SHM_FIFO=0")
                       : cat("rank ", peer, " could not map the ring: ", std::strerror(replies[i].error));
      continue;
    }
    if (replies[i].order == kColumnOrder) rsegs_[i] = column_order(p.rp.receives[i].segments);
    if (replies[i].order == kSourceOrder) rrows_[i] = source_rows(p.rp.receives[i].segments, &src_where[i], p.rp.ndim, es);
    Ring& r = recv_[i];
    std::byte* at = own_map_ + o.offset;
    r.head = reinterpret_cast<std::uint64_t*>(at), r.tail = reinterpret_cast<std::uint64_t*>(at + 128);
    r.slots = at + kCtlBytes, r.slot_bytes = o.slot_bytes, r.slot_stride = o.slot_stride;
  }
}

const std::vector<Segment>& Fifos::recv_segments(const PlanCore& p, size_t i) const {
  return recv_columns(i) ? rsegs_[i] : p.rp.receives[i].segments;
}

const std::vector<Segment>& Fifos::send_segments(const PlanCore& p, size_t i) const {
  return i < ssegs_.size() && !ssegs_[i].empty() ? ssegs_[i] : p.rp.sends[i].segments;
}

bool Fifos::pack_some(const PlanCore& p, size_t i, const SrcBlocks& src) {
  Ring& r = send_[i];
  Cursor& c = scur_[i];
  const index_t es = p.rp.elem_size;
  const std::uint64_t tail = load(r.tail);
  bool moved = false;
  while (r.mine - tail < static_cast<std::uint64_t>(kFifoSlots) && c.done < c.total) {
    const index_t n = std::min(r.slot_bytes, c.total - c.done);
    std::byte* slot = r.slots + static_cast<index_t>(r.mine % kFifoSlots) * r.slot_stride;
    if (!srows_[i].empty())
      walk_rows(srows_[i], c, n, [&](const MsgRow& w, index_t within, index_t len, index_t at) {
        const std::byte* from = static_cast<const std::byte*>(src.ptr[static_cast<size_t>(w.block)]) + w.off + within;
        if (stream_slots_) copy_row_chained(slot + at, from, static_cast<size_t>(len));  // rows follow in the slot
        else copy_row(slot + at, from, static_cast<size_t>(len), false);
      });
    else
      walk(send_segments(p, i), c, es, n,
           [&](const Segment& s, index_t at) { pack_run(s, src.at(s.at, es), slot + at * es, es, stream_slots_); });
    if (stream_slots_) stream_fence();  // the slot's streamed stores before its release
    store(r.head, ++r.mine);
    c.done += n, moved = true;
  }
  return moved;
}

bool Fifos::unpack_some(const PlanCore& p, size_t i, const DstBlocks& dst, bool stream) {
  Ring& r = recv_[i];
  Cursor& c = rcur_[i];
  const index_t es = p.rp.elem_size;
  const Arithmetic* a = arithmetic_of(p);
  const std::uint64_t head = load(r.head);
  bool moved = false;
  while (r.mine < head && c.done < c.total) {
    const index_t n = std::min(r.slot_bytes, c.total - c.done);
    const std::byte* slot = r.slots + static_cast<index_t>(r.mine % kFifoSlots) * r.slot_stride;
    if (!rrows_[i].empty())  // never with arithmetic (setup)
      walk_rows(rrows_[i], c, n, [&](const MsgRow& w, index_t within, index_t len, index_t at) {
        copy_row(static_cast<std::byte*>(dst.ptr[static_cast<size_t>(w.block)]) + w.off + within, slot + at,
                 static_cast<size_t>(len), stream);
      });
    else
      walk(recv_segments(p, i), c, es, n,
           [&](const Segment& s, index_t at) { unpack_run(s, slot + at * es, dst.at(s.at, es), es, stream, a); });
    store(r.tail, ++r.mine);
    c.done += n, moved = true;
  }
  return moved;
}

void Fifos::begin(const PlanCore& p, const std::vector<char>& recv_on, const std::vector<char>& send_on,
                  const std::vector<char>& walked, std::int64_t execute) {
  rcur_.assign(recv_.size(), {}), scur_.assign(send_.size(), {});
  walked_.assign(send_.size(), 0);
  left_ = 0;
  for (size_t i = 0; i < recv_.size(); ++i)
    if (recv_on[i]) rcur_[i].total = p.rp.receives[i].bytes, left_ += rcur_[i].total > 0;
  for (size_t i = 0; i < send_.size(); ++i)
    if (send_on[i]) {
      scur_[i].total = p.rp.sends[i].bytes, left_ += scur_[i].total > 0;
      walked_[i] = i < walked.size() && walked[i];
    }
  stream_ = stream_for(p.rp.stats.bytes_received);
  const int forced = fifo_stream_forced();
  timed_ = forced < 0 && stream_for(p.rp.stats.bytes_sent);
  execute_ = execute;
  stream_slots_ = forced >= 0 ? forced == 1 : timed_ && slots_.mode(execute);
  if (timed_) began_ = std::chrono::steady_clock::now();
  spins_ = 0;
}

std::byte* Fifos::claim(size_t i) {
  Ring& r = send_[i];
  if (r.mine - load(r.tail) >= static_cast<std::uint64_t>(kFifoSlots)) return nullptr;
  return r.slots + static_cast<index_t>(r.mine % kFifoSlots) * r.slot_stride;
}

void Fifos::commit(size_t i, index_t n) {
  Ring& r = send_[i];
  if (stream_slots_) stream_fence();
  store(r.head, ++r.mine);
  if ((scur_[i].done += n) == scur_[i].total) --left_;
  spins_ = 0;
}

bool Fifos::poll(const PlanCore& p, const SrcBlocks& src, const DstBlocks& dst) {
  bool moved = false;
  for (size_t i = 0; i < send_.size(); ++i)
    if (!walked_[i] && scur_[i].done < scur_[i].total && pack_some(p, i, src))
      moved = true, left_ -= scur_[i].done == scur_[i].total;
  for (size_t i = 0; i < recv_.size(); ++i)
    if (rcur_[i].done < rcur_[i].total && unpack_some(p, i, dst, stream_))
      moved = true, left_ -= rcur_[i].done == rcur_[i].total;
  if (moved) spins_ = 0;
  return moved;
}

void Fifos::wait(const PlanCore& p) {
  // Nothing to do until a peer moves: spin a while, then give the core away
  // (ranks may share cores: tests run 4 ranks on 2).
  if (++spins_ < 256) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    return;
  }
  // And let MPI progress: this rank's messages to other nodes, or a header
  // still queued, may need it for a peer to reach its ring (shm.cpp's run).
  int flag = 0;
  check_mpi(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, p.comm, &flag, MPI_STATUS_IGNORE), "MPI_Iprobe", p.comm);
  sched_yield();
}

void Fifos::finish(const PlanCore& p, const SrcBlocks& src, const DstBlocks& dst, const std::function<bool()>& idle) {
  bool idle_work = true;
  while (left_ > 0)
    if (!poll(p, src, dst) && !(idle_work && (idle_work = idle()))) wait(p);
  while (idle_work && (idle_work = idle())) {
  }
  if (stream_) stream_fence();
  if (timed_) slots_.record(execute_, std::chrono::duration<double>(std::chrono::steady_clock::now() - began_).count());
}

bool columns_read_along(const std::vector<Segment>& segs) {
  return std::all_of(segs.begin(), segs.end(), [](const Segment& g) { return !splits(g) || g.at.strides[0] == 1; });
}

bool columns_help(const std::vector<Segment>& segs) {
  index_t stacked = 0, other = 0;
  for (const Segment& g : segs)
    if (splits(g)) (g.step[0] == g.shape[0] && g.at.strides[0] == 1 ? stacked : other) += g.elements();
  return stacked > 0 && stacked >= 3 * other;
}

}  // namespace redist::detail
