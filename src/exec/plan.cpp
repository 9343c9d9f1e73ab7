// make_plan and Plan: collective validation, planning, buffer checks, dispatch.
#include <algorithm>
#include <climits>

#include "plan_impl.hpp"
#include "redist/cost.hpp"

namespace redist {
namespace {

std::string local_checks(const Layout& src, const Layout& dst, const Region& region, int size) {
  using detail::cat;
  std::string e = src.check(size);
  if (!e.empty()) return "source layout: " + e;
  e = dst.check(size);
  if (!e.empty()) return "target layout: " + e;
  if (src.ndim() != dst.ndim())
    return cat("dimension mismatch: source has ", src.ndim(), " dimensions, target has ", dst.ndim());
  if (src.elem_size() != dst.elem_size())
    return cat("element size mismatch: source esize=", src.elem_size(), ", target esize=",
               dst.elem_size());
  return region.check(src.shape(), dst.shape());
}

std::string ld_check(const Layout& l, const LocalIndex& li, const char* side) {
  if (l.storage().kind != StorageKind::local_array || l.storage().ld == 0) return {};
  if (li.elements() > 0 && l.storage().ld < li.local_extent()[0])
    return detail::cat(side, " layout: leading dimension ld=", l.storage().ld,
                       " is smaller than this rank's ", li.local_extent()[0], " local rows");
  return {};
}

// Splits each peer's bytes into messages of at most `max` bytes (MPI counts are int).
std::vector<Chunk> chunk_peers(const std::vector<PeerPlan>& peers, std::vector<index_t>& offsets,
                               index_t max) {
  std::vector<Chunk> chunks;
  offsets.assign(peers.size() + 1, 0);
  for (size_t i = 0; i < peers.size(); ++i) {
    offsets[i + 1] = offsets[i] + peers[i].bytes;
    for (index_t off = 0; off < peers[i].bytes; off += max)
      chunks.push_back({static_cast<int>(i), peers[i].peer, offsets[i] + off,
                        std::min(max, peers[i].bytes - off)});
  }
  return chunks;
}

void check_side(const char* side, size_t given, const LocalIndex& li, const Layout& l,
                const void* const* ptr, std::string& err) {
  if (!err.empty()) return;
  if (static_cast<index_t>(given) != li.nblocks()) {
    err = l.storage().kind == StorageKind::tile_pointers
              ? detail::cat(side, " storage=tile_pointers: expected one pointer per local tile (",
                            li.nblocks(), "), got ", given)
              : detail::cat(side, ": expected one buffer, got ", given, " pointers");
    return;
  }
  for (size_t b = 0; b < given; ++b)
    if (!ptr[b] && li.block_elements(static_cast<index_t>(b)) > 0) {
      err = detail::cat(side, " buffer ", b, " is null but this rank stores ",
                        li.block_elements(static_cast<index_t>(b)), " elements there");
      return;
    }
}

// Source and target memory must be disjoint (no in-place redistribution).
std::string overlap_check(const PlanImpl& p, std::span<const void* const> s, std::span<void* const> d) {
  const char* kOverlap = "source and target buffers overlap; redistribution is not in place: use separate buffers";
  const index_t es = p.src.elem_size();
  if (s.size() == 1 && d.size() == 1) {  // one buffer per side: no sort, no allocation
    const auto sl = reinterpret_cast<std::uintptr_t>(s[0]), dl = reinterpret_cast<std::uintptr_t>(d[0]);
    const auto sh = sl + static_cast<std::uintptr_t>(p.src_local->elements() * es);
    const auto dh = dl + static_cast<std::uintptr_t>(p.dst_local->elements() * es);
    return s[0] && d[0] && sh > sl && dh > dl && sl < dh && dl < sh ? kOverlap : "";
  }
  struct Range { std::uintptr_t lo, hi; int side; };
  std::vector<Range> r;
  for (size_t b = 0; b < s.size(); ++b)
    if (s[b]) {
      auto lo = reinterpret_cast<std::uintptr_t>(s[b]);
      r.push_back({lo, lo + static_cast<std::uintptr_t>(p.src_local->block_elements(b) * es), 0});
    }
  for (size_t b = 0; b < d.size(); ++b)
    if (d[b]) {
      auto lo = reinterpret_cast<std::uintptr_t>(d[b]);
      r.push_back({lo, lo + static_cast<std::uintptr_t>(p.dst_local->block_elements(b) * es), 1});
    }
  std::sort(r.begin(), r.end(), [](const Range& a, const Range& b) { return a.lo < b.lo; });
  std::uintptr_t max_hi[2] = {0, 0};
  for (const Range& x : r) {
    if (x.hi > x.lo && x.lo < max_hi[1 - x.side]) return kOverlap;
    max_hi[x.side] = std::max(max_hi[x.side], x.hi);
  }
  return {};
}

// Every rank must describe the same redistribution: compare with rank 0 by a hash
// of the canonical strings (every rank runs the same binary, so std::hash agrees).
// Options count too: another max_message_bytes splits messages differently on
// sender and receiver, another default executor pairs different message schemes;
// both would hang or truncate instead of failing. Rank 0's text is broadcast
// only when some rank differs, so the error can show both values.
void agree_same_everywhere(PlanImpl& p, const Layout& src, const Layout& dst, const Region& region,
                           const Options& options) {
  constexpr int n = 4;
  const char* what[n] = {"source layout", "target layout", "region", "options"};
  const std::string mine[n] = {
      src.spec(), dst.spec(), region.str(),
      detail::cat("executor=", to_string(options.executor), " max_message_bytes=", options.max_message_bytes)};
  std::uint64_t h[n], h0[n];
  for (int i = 0; i < n; ++i)
    h[i] = h0[i] = std::hash<std::string>{}(mine[i]);  // the spec strings, built once
  check_mpi(MPI_Bcast(h0, n, MPI_UINT64_T, 0, p.comm), "MPI_Bcast");
  // Lowest differing rank and its first differing item, in one reduction.
  long long key = LLONG_MAX, first = LLONG_MAX;
  for (int i = 0; i < n && key == LLONG_MAX; ++i)
    if (h[i] != h0[i]) key = static_cast<long long>(p.rank) * n + i;
  check_mpi(MPI_Allreduce(&key, &first, 1, MPI_LONG_LONG, MPI_MIN, p.comm), "MPI_Allreduce");
  if (first == LLONG_MAX) return;
  const int who = static_cast<int>(first / n), item = static_cast<int>(first % n);
  std::string ref = mine[item];
  long long len = static_cast<long long>(ref.size());
  check_mpi(MPI_Bcast(&len, 1, MPI_LONG_LONG, 0, p.comm), "MPI_Bcast");
  ref.resize(static_cast<size_t>(len));
  check_mpi(MPI_Bcast(ref.data(), static_cast<int>(len), MPI_CHAR, 0, p.comm), "MPI_Bcast");
  std::string err;
  if (p.rank == who)
    err = detail::cat(what[item], item == 3 ? " differ" : " differs", " between ranks: rank 0 has '", ref,
                      "', rank ", who, " has '", mine[item], "'; every rank must pass the same");
  agree(p.comm, err);  // every rank gets here and throws `who`'s message
}

// execute's one agreement: the lowest rank with a bad argument, and whether every
// rank asked for the same executor (different ones would pair different message
// schemes and hang), in a single MPI_Allreduce.
void agree_execute(const PlanImpl& p, const std::string& err, Executor executor) {
  const int e = static_cast<int>(executor);
  int v[3] = {err.empty() ? INT_MAX : p.rank, e, -e}, r[3];
  check_mpi(MPI_Allreduce(v, r, 3, MPI_INT, MPI_MIN, p.comm), "MPI_Allreduce");
  if (r[0] != INT_MAX) agree(p.comm, err);  // taken on every rank; throws the lowest rank's error
  if (r[1] != -r[2])
    detail::fail("redist: ranks called execute with different executors (", to_string(Executor(r[1])),
                 " and ", to_string(Executor(-r[2])), "); every rank must use the same one");
}

}  // namespace

PlanImpl::PlanImpl(const Layout& s, const Layout& d, const Region& r, MPI_Comm user_comm,
                   const Options& o)
    : src(s), dst(d), region(r), options(o) {
  if (user_comm == MPI_COMM_NULL) throw Error("redist: make_plan needs a communicator, got MPI_COMM_NULL");
  // Own communicator: private tag space, errors returned instead of aborting.
  check_mpi(MPI_Comm_dup(user_comm, &comm), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
}

PlanImpl::~PlanImpl() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  free_types();
  if (v_send_unit != MPI_DATATYPE_NULL) MPI_Type_free(&v_send_unit);
  if (v_recv_unit != MPI_DATATYPE_NULL) MPI_Type_free(&v_recv_unit);
  if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
}

std::byte* PlanImpl::send_buffer() {
  if (!send_buf && rp.stats.bytes_sent > 0) send_buf.reset(new std::byte[rp.stats.bytes_sent]);
  return send_buf.get();
}

std::byte* PlanImpl::recv_buffer() {
  if (!recv_buf && rp.stats.bytes_received > 0) recv_buf.reset(new std::byte[rp.stats.bytes_received]);
  return recv_buf.get();
}

Plan make_plan(const Layout& src, const Layout& dst, const Region& region, MPI_Comm comm,
               const Options& options) {
  auto p = std::make_unique<PlanImpl>(src, dst, region, comm, options);
  std::string err = local_checks(src, dst, region, p->size);
  if (err.empty() && options.max_message_bytes < 1)
    err = detail::cat("options.max_message_bytes must be >= 1, got ", options.max_message_bytes);
  agree(p->comm, err);

  agree_same_everywhere(*p, src, dst, region, options);

  try {
    p->src_local = std::make_unique<LocalIndex>(p->src, p->rank);
    p->dst_local = std::make_unique<LocalIndex>(p->dst, p->rank);
    err = ld_check(p->src, *p->src_local, "source");
    if (err.empty()) err = ld_check(p->dst, *p->dst_local, "target");
    if (err.empty())
      p->rp = plan_rank(p->src, p->dst, *p->src_local, *p->dst_local, p->region, p->rank, p->size);
  } catch (const Error& e) {
    err = e.what();
  }
  agree(p->comm, err);
  p->send_chunks = chunk_peers(p->rp.sends, p->send_offset, options.max_message_bytes);
  p->recv_chunks = chunk_peers(p->rp.receives, p->recv_offset, options.max_message_bytes);
  return Plan(std::move(p));
}

Plan::Plan() = default;
Plan::Plan(std::unique_ptr<PlanImpl> impl) : impl_(std::move(impl)) {}
Plan::Plan(Plan&&) noexcept = default;
Plan& Plan::operator=(Plan&&) noexcept = default;
Plan::~Plan() = default;

const RankPlan& Plan::rank_plan() const { return impl_->rp; }
const PlanStats& Plan::stats() const { return impl_->rp.stats; }
const Layout& Plan::source() const { return impl_->src; }
const Layout& Plan::target() const { return impl_->dst; }
const Region& Plan::region() const { return impl_->region; }
MPI_Comm Plan::comm() const { return impl_->comm; }
Executor Plan::auto_choice() const { return impl_->auto_choice; }

void Plan::execute(const void* src, void* dst) { execute(src, dst, impl_->options.executor); }

void Plan::execute(const void* src, void* dst, Executor executor) {
  const void* s[1] = {src};
  void* d[1] = {dst};
  execute(std::span<const void* const>(s, 1), std::span<void* const>(d, 1), executor);
}

void Plan::execute(std::span<const void* const> src_blocks, std::span<void* const> dst_blocks,
                   Executor executor) {
  if (!impl_) throw Error("redist: execute on an empty Plan (use make_plan)");
  PlanImpl& p = *impl_;
  std::string err;
  check_side("source", src_blocks.size(), *p.src_local, p.src, src_blocks.data(), err);
  check_side("target", dst_blocks.size(), *p.dst_local, p.dst,
             const_cast<const void* const*>(dst_blocks.data()), err);
  if (err.empty()) err = overlap_check(p, src_blocks, dst_blocks);
  // An enum value outside the list would match no case below and silently move nothing.
  if (err.empty() && (static_cast<int>(executor) < 0 || executor > Executor::auto_))
    err = detail::cat("unknown executor ", static_cast<int>(executor),
                      "; allowed: p2p, segment, alltoallv, alltoallw, direct, auto");
  agree_execute(p, err, executor);  // nothing has moved yet: the target is untouched on error
  if (executor == Executor::auto_) {
    // Collective once per plan (every rank asked for auto_, checked above): the
    // same machine figures everywhere, predictions reduced with MPI_MAX.
    if (p.auto_choice == Executor::auto_) p.auto_choice = choose_executor(p.rp, machine_for(p.comm), p.comm);
    executor = p.auto_choice;
  }

  const SrcBlocks s{src_blocks};
  const DstBlocks d{dst_blocks};
  switch (executor) {
    case Executor::p2p: return run_p2p(p, s, d);
    case Executor::segment: return run_segment(p, s, d);
    case Executor::alltoallv: return run_alltoallv(p, s, d);
    case Executor::alltoallw: return run_alltoallw(p, s, d);
    case Executor::direct: return run_direct(p, s, d);
    case Executor::auto_: return;  // resolved above
  }
}

std::string to_string(Executor e) {
  switch (e) {
    case Executor::p2p: return "p2p";
    case Executor::segment: return "segment";
    case Executor::alltoallv: return "alltoallv";
    case Executor::alltoallw: return "alltoallw";
    case Executor::direct: return "direct";
    case Executor::auto_: return "auto";
  }
  return "?";
}

std::vector<Executor> all_executors() {
  return {Executor::p2p, Executor::segment, Executor::alltoallv, Executor::alltoallw, Executor::direct};
}

Executor parse_executor(const std::string& name) {
  for (Executor e : all_executors())
    if (to_string(e) == name) return e;
  if (name == "auto") return Executor::auto_;
  detail::fail("unknown executor '", name, "'; allowed: p2p, segment, alltoallv, alltoallw, direct, auto");
}

}  // namespace redist
