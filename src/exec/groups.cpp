// make_group_plan: a transfer between two process groups (paper 002, CDT) made
// into an ordinary plan on the union of the groups. The groups are checked and
// agreed on; the leaders exchange the layouts, each broadcasts the other side's
// to the ranks of its group that lack it (sec. 2.3: "designated master
// processes on each side exchange data distribution information. This
// information is then broadcast"; 1 + max(log2 S, log2 R) messages at most);
// the receiver layout is renumbered to union ranks; make_plan does the rest.
#include "redist/groups.hpp"

#include <algorithm>
#include <climits>
#include <string>

#include "exec/groups_union.hpp"
#include "exec/strategy.hpp"
#include "mpi/agree.hpp"

namespace redist {

using detail::agree;
using detail::cat;
using detail::check_mpi;

namespace {

constexpr int kExchangeTag = 11;  // on the union communicator, before the plan's own duplicate exists

// This rank's membership, gathered over the union: group ranks (-1: not in it)
// and the sizes its communicators report.
struct Member {
  int srank = -1, ssize = 0, rrank = -1, rsize = 0;
};

// Every rank of a group numbered 0 .. n-1 once, every member reporting n: the
// union ranks of the group, in group order. Empty string: fine.
std::string group_order(const std::vector<Member>& m, bool send, std::vector<int>& order) {
  const char* name = send ? "sender" : "receiver";
  int n = -1;
  for (size_t u = 0; u < m.size(); ++u) {
    const int r = send ? m[u].srank : m[u].rrank, s = send ? m[u].ssize : m[u].rsize;
    if (r < 0) continue;
    if (n >= 0 && s != n)
      return cat("the ", name, " group's communicator has ", n, " ranks on one member and ", s,
                 " on another (union rank ", u, "): every member must pass the same group");
    n = s;
  }
  if (n <= 0) return cat("the ", name, " group is empty: no rank passed a ", name, " communicator or layout");
  order.assign(static_cast<size_t>(n), -1);
  for (size_t u = 0; u < m.size(); ++u) {
    const int r = send ? m[u].srank : m[u].rrank;
    if (r < 0) continue;
    if (order[static_cast<size_t>(r)] >= 0)
      return cat("rank ", r, " of the ", name, " group is two processes (union ranks ", order[static_cast<size_t>(r)],
                 " and ", u, "): the groups must be communicators, each process once");
    order[static_cast<size_t>(r)] = static_cast<int>(u);
  }
  for (int r = 0; r < n; ++r)
    if (order[static_cast<size_t>(r)] < 0)
      return cat("the ", name, " group has ", n, " ranks but its rank ", r,
                 " did not call make_group_plan with the others (it is outside the parent communicator)");
  return {};
}

// The binomial tree over `ranks` (root first): the ranks this one forwards to
// and the one it hears from (-1 at the root).
void tree(const std::vector<int>& ranks, int me, int& from, std::vector<int>& to) {
  from = -1, to.clear();
  const auto it = std::find(ranks.begin(), ranks.end(), me);
  if (it == ranks.end()) return;
  const size_t i = static_cast<size_t>(it - ranks.begin()), n = ranks.size();
  size_t high = 1;  // the lowest power of two above i: i's children are i + 2^k, 2^k >= high
  while (high <= i) high <<= 1;
  if (i > 0) from = ranks[i - high / 2];
  for (size_t k = high; i + k < n; k <<= 1) to.push_back(ranks[i + k]);
}

void send_text(const std::string& t, int to, MPI_Comm comm) {
  check_mpi(MPI_Send(t.data(), static_cast<int>(t.size()), MPI_CHAR, to, kExchangeTag, comm), "MPI_Send", comm,
            "send to", to);
}

std::string recv_text(int from, MPI_Comm comm) {
  MPI_Status st;
  check_mpi(MPI_Probe(from, kExchangeTag, comm, &st), "MPI_Probe", comm, "receive from", from);
  int n = 0;
  check_mpi(MPI_Get_count(&st, MPI_CHAR, &n), "MPI_Get_count", comm);
  std::string t(static_cast<size_t>(n), '\0');
  check_mpi(MPI_Recv(t.data(), n, MPI_CHAR, from, kExchangeTag, comm, MPI_STATUS_IGNORE), "MPI_Recv", comm,
            "receive from", from);
  return t;
}

// A layout as the other side reads it: its spec without the per-rank `ld=`.
std::string shared_spec(const Layout& l) {
  if (l.storage().ld == 0) return l.spec();
  return Layout(l.shape(), l.partitions(), l.ownership(), Storage{l.storage().kind, 0}, l.elem_size()).spec();
}

// Two specs in one message: "<length of the first>:<first><second>".
std::string pack2(const std::string& a, const std::string& b) { return cat(a.size(), ":", a, b); }
void unpack2(const std::string& t, std::string& a, std::string& b) {
  const size_t colon = t.find(':');
  const size_t n = std::stoul(t.substr(0, colon));
  a = t.substr(colon + 1, n);
  b = t.substr(colon + 1 + n);
}

// The union of the groups, senders first (union rank s = sender rank s), then
// the receivers that do not send; MPI_COMM_NULL on a rank in neither group.
// Every rank of the parent (or both sides of the intercommunicator) calls it.
MPI_Comm make_union(const Groups& g, const GroupLayouts& l, Member& me) {
  MPI_Comm u = MPI_COMM_NULL;
  if (g.inter != MPI_COMM_NULL) {
    int is_inter = 0;
    check_mpi(MPI_Comm_test_inter(g.inter, &is_inter), "MPI_Comm_test_inter", g.inter);
    if (!is_inter) throw Error("redist: make_group_plan: groups.inter is not an intercommunicator");
    // A rank's side is the layout it passes; a side that passes both or neither is
    // caught after the merge (its ranks are in no group, or in both: numbered twice).
    const bool send = l.send.has_value() && !l.receive.has_value();
    check_mpi(MPI_Intercomm_merge(g.inter, send ? 0 : 1, &u), "MPI_Intercomm_merge", g.inter);
    int rank = 0, size = 0;
    check_mpi(MPI_Comm_rank(g.inter, &rank), "MPI_Comm_rank", g.inter);
    check_mpi(MPI_Comm_size(g.inter, &size), "MPI_Comm_size", g.inter);
    if (l.send) me.srank = rank, me.ssize = size;
    if (l.receive) me.rrank = rank, me.rsize = size;
    return u;
  }
  if (g.senders != MPI_COMM_NULL) {
    check_mpi(MPI_Comm_rank(g.senders, &me.srank), "MPI_Comm_rank", g.senders);
    check_mpi(MPI_Comm_size(g.senders, &me.ssize), "MPI_Comm_size", g.senders);
  }
  if (g.receivers != MPI_COMM_NULL) {
    check_mpi(MPI_Comm_rank(g.receivers, &me.rrank), "MPI_Comm_rank", g.receivers);
    check_mpi(MPI_Comm_size(g.receivers, &me.rsize), "MPI_Comm_size", g.receivers);
  }
  const bool member = me.srank >= 0 || me.rrank >= 0;
  const int key = me.srank >= 0 ? me.srank : (1 << 30) + me.rrank;
  check_mpi(MPI_Comm_split(g.parent, member ? 0 : MPI_UNDEFINED, key, &u), "MPI_Comm_split", g.parent);
  return u;
}

}  // namespace

// exec/groups_union.hpp.
Layout detail::renumber_to_union(const Layout& l, const std::vector<int>& ranks, int union_size, const std::string& spec) {
  bool identity = true;
  for (size_t r = 0; r < ranks.size(); ++r) identity = identity && ranks[r] == static_cast<int>(r);
  if (identity) return l;
  const Ownership& o = l.ownership();
  Ownership renamed;
  if (o.kind() == Ownership::Kind::block_cyclic) {
    BlockCyclicParams p = o.bc();
    const index_t n = p.grid.volume();
    std::vector<int> map(static_cast<size_t>(n));
    for (index_t lin = 0; lin < n; ++lin) {  // column-major grid coordinates, as BlockCyclicParams::map
      Coord c(p.grid.ndim());
      index_t x = lin;
      for (int d = 0; d < c.ndim(); ++d) c[d] = x % p.grid[d], x /= p.grid[d];
      map[static_cast<size_t>(lin)] = ranks[static_cast<size_t>(o.rank_at(c))];
    }
    p.map = std::make_shared<const std::vector<int>>(std::move(map));
    p.order = GridOrder::row;
    p.first_rank = 0;
    renamed = Ownership::block_cyclic(p);
  } else {
    const Coord nt = l.ntiles();
    std::uint64_t h = std::hash<std::string>{}(spec);  // not Layout::hash: it includes the rank's own ld=
    for (int r : ranks) h = h * 1000003u ^ static_cast<std::uint64_t>(r);
    renamed = Ownership::function(cat("group_", std::hex, h), union_size,
                                  [o, nt, ranks](const Coord& t) { return ranks[static_cast<size_t>(o.owner(t, nt))]; });
  }
  return Layout(l.shape(), l.partitions(), renamed, l.storage(), l.elem_size());
}


Plan make_group_plan(const Groups& g, const GroupLayouts& l, const Options& options) {
  // 1. Arguments this rank can check alone, agreed over the parent (the union does
  // not exist yet). With an intercommunicator there is no common communicator
  // before the merge: those checks are agreed right after it.
  std::string err;
  if (g.inter == MPI_COMM_NULL) {
    if (g.parent == MPI_COMM_NULL)
      throw Error("redist: make_group_plan needs groups.parent (a communicator holding both groups) or groups.inter");
    if (g.senders != MPI_COMM_NULL && !l.send)
      err = "this rank is in the sender group (groups.senders) but passed no sender layout (layouts.send)";
    else if (g.senders == MPI_COMM_NULL && l.send)
      err = "this rank passed a sender layout (layouts.send) but is not in the sender group (groups.senders is null)";
    else if (g.receivers != MPI_COMM_NULL && !l.receive)
      err = "this rank is in the receiver group (groups.receivers) but passed no receiver layout (layouts.receive)";
    else if (g.receivers == MPI_COMM_NULL && l.receive)
      err = "this rank passed a receiver layout (layouts.receive) but is not in the receiver group "
            "(groups.receivers is null)";
    agree(g.parent, err);
  }
  Member me;
  MPI_Comm u = make_union(g, l, me);
  if (u == MPI_COMM_NULL) return Plan();  // in neither group
  struct Free {  // the union is only needed until make_plan has its own duplicate
    MPI_Comm& c;
    ~Free() { MPI_Comm_free(&c); }  // unchecked: cleanup, also on the error path
  } free_union{u};
  check_mpi(MPI_Comm_set_errhandler(u, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", u);
  int urank = 0, usize = 0;
  check_mpi(MPI_Comm_rank(u, &urank), "MPI_Comm_rank", u);
  check_mpi(MPI_Comm_size(u, &usize), "MPI_Comm_size", u);
  if (g.inter != MPI_COMM_NULL && l.send.has_value() == l.receive.has_value())
    err = "with groups.inter a rank passes exactly one layout: layouts.send on the sender side, layouts.receive on "
          "the receiver side";
  agree(u, err);

  // 2. The groups, from every rank's membership (the same data on every rank, so
  // every rank reaches the same verdict without another agreement).
  std::vector<Member> all(static_cast<size_t>(usize));
  check_mpi(MPI_Allgather(&me, 4, MPI_INT, all.data(), 4, MPI_INT, u), "MPI_Allgather", u);
  std::vector<int> senders, receivers;
  std::string bad = group_order(all, true, senders);
  if (bad.empty()) bad = group_order(all, false, receivers);
  if (!bad.empty()) throw Error("redist: make_group_plan: " + bad);
  const int S = static_cast<int>(senders.size()), R = static_cast<int>(receivers.size());
  if (l.send) err = l.send->check(S), err = err.empty() ? err : cat("sender layout (a group of ", S, " ranks): ", err);
  if (err.empty() && l.receive)
    err = l.receive->check(R), err = err.empty() ? err : cat("receiver layout (a group of ", R, " ranks): ", err);
  agree(u, err);

  // 3. The exchange: A = the ranks that lack the receiver layout, and the sender
  // leader; B = those that lack the sender layout, and the receiver leader.
  const int ls = senders[0], lr = receivers[0];
  std::vector<int> a{ls}, b{lr};
  for (int u2 = 0; u2 < usize; ++u2) {
    const Member& m = all[static_cast<size_t>(u2)];
    if (m.rrank < 0 && u2 != ls) a.push_back(u2);
    if (m.srank < 0 && u2 != lr) b.push_back(u2);
  }
  std::string src_text = l.send ? shared_spec(*l.send) : "", dst_text = l.receive ? shared_spec(*l.receive) : "";
  int from = -1;
  std::vector<int> to;
  if (ls != lr) {
    // The leaders swap what the other lacks (the sender leader sends first), then
    // two trees, disjoint: a rank lacks one layout at most, and a leader has its own.
    const bool lr_lacks = all[static_cast<size_t>(lr)].srank < 0, ls_lacks = all[static_cast<size_t>(ls)].rrank < 0;
    if (urank == ls && lr_lacks) send_text(src_text, lr, u);
    if (urank == lr && lr_lacks) src_text = recv_text(ls, u);
    if (urank == lr && ls_lacks) send_text(dst_text, ls, u);
    if (urank == ls && ls_lacks) dst_text = recv_text(lr, u);
    for (const auto& [ranks, text] : {std::pair{&a, &dst_text}, std::pair{&b, &src_text}}) {
      tree(*ranks, urank, from, to);
      if (from >= 0) *text = recv_text(from, u);
      for (int t : to) send_text(*text, t, u);
    }
  } else {  // one leader of both groups: one tree over everyone who lacks a layout
    std::vector<int> c = a;
    c.insert(c.end(), b.begin() + 1, b.end());
    tree(c, urank, from, to);
    std::string both = urank == ls ? pack2(src_text, dst_text) : "";
    if (from >= 0) both = recv_text(from, u);
    for (int t : to) send_text(both, t, u);
    if (from >= 0) {
      std::string s2, d2;
      unpack2(both, s2, d2);
      if (!l.send) src_text = s2;
      if (!l.receive) dst_text = d2;
    }
  }

  // 4. Both layouts on every rank (its own where it passed one: its `ld=`, its
  // owner function), the region, and the plan on the union.
  Layout src, dst;
  err.clear();
  try {
    src = l.send ? *l.send : Layout::parse(src_text);
    dst = l.receive ? *l.receive : Layout::parse(dst_text);
  } catch (const Error& e) {
    err = cat("the other group's layout does not parse here: ", e.what());
  }
  if (err.empty() && !l.region && src.shape() != dst.shape())
    err = cat("the sender array is ", src.shape().str(), " and the receiver array ", dst.shape().str(),
              ": give layouts.region (the same on every rank) to move part of one into the other");
  agree(u, err);
  const Region region = l.region ? *l.region : Region::whole(src.shape());
  Options o = options;  // the budget is checked once the plan knows its groups (set_groups)
  if (o.max_buffer_bytes > 0) o.max_buffer_bytes = 0;
  // The union communicator is freed on return: the plan works on its own duplicate
  // whatever the caller asked (with duplicate_comm false it kept the freed handle
  // and its first execute crashed).
  o.duplicate_comm = true;
  Plan plan = make_plan(detail::renumber_to_union(src, senders, usize, shared_spec(src)),
                        detail::renumber_to_union(dst, receivers, usize, shared_spec(dst)),
                        region, u, o);
  detail::PlanAccess::set_groups(plan, std::move(senders), std::move(receivers), options.max_buffer_bytes);
  return plan;
}

GroupRanks group_ranks(const Plan& plan) {
  const detail::PlanCore& core = detail::PlanAccess::core(plan);
  return {core.group_senders(), core.group_receivers()};
}

}  // namespace redist
