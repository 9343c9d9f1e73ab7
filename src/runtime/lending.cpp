#include "lending.hpp"

#include <climits>
#include <cstring>
#include <span>

#include "mpi/agree.hpp"
#include "places.hpp"

namespace redist::runtime::detail {

LendMaps lend_maps(const TaskGraph& graph, MPI_Comm comm, int rank, int ranks) {
  LendMaps m;
  const auto n = static_cast<std::size_t>(ranks);
  m.mine.assign(n, 0), m.theirs.assign(n, 0);
  for (int r = 0; r < ranks; ++r)
    for (int c = 0; c < graph.num_collections() && c < 64 && r != rank; ++c)
      if (!graph.collection(c).storage_of(r).empty()) m.mine[static_cast<std::size_t>(r)] |= std::uint64_t{1} << c;
  ::redist::detail::check_mpi(
      MPI_Alltoall(m.mine.data(), 1, MPI_UINT64_T, m.theirs.data(), 1, MPI_UINT64_T, comm), "MPI_Alltoall");
  for (int i = 1; i < ranks; ++i) {
    const auto r = static_cast<std::size_t>((rank + i) % ranks);
    if (m.mine[r] | m.theirs[r]) m.peers.push_back(static_cast<int>(r));
  }
  return m;
}

bool append_lent_flows(const TaskGraph& graph, const LendMaps& maps, int rank, int borrower, const ReadyTask& t,
                       std::vector<std::int64_t>& msg) {
  const auto b = static_cast<std::size_t>(borrower);
  const std::size_t start = msg.size();
  for (const Data& d : t.flows) {
    if (d.empty()) {
      msg.insert(msg.end(), {0, -1});
      continue;
    }
    bool found = false;
    for (int c = 0; c < graph.num_collections() && c < 64 && !found && !d.is_typed(); ++c)
      for (int r : {rank, borrower}) {
        // This rank's storage, where the borrower maps it; the borrower's, where this rank does.
        if (!(((r == rank ? maps.theirs[b] : maps.mine[b]) >> c) & 1)) continue;
        const std::int64_t offset = offset_in(graph.collection(c).storage_of(r), d);
        if (offset < 0) continue;
        msg.insert(msg.end(), {static_cast<std::int64_t>(d.size()), c, r, offset});
        found = true;
        break;
      }
    if (!found) {
      msg.resize(start);
      return false;
    }
  }
  return true;
}

std::vector<Data> lent_flows(const TaskGraph& graph, const TaskClass& cls, const Params& p, int rank, int lender,
                             const std::vector<std::int64_t>& msg, std::size_t& at) {
  std::vector<Data> flows(static_cast<std::size_t>(cls.num_flows()));
  for (Data& d : flows) {
    const auto size = static_cast<std::size_t>(msg[at]);
    if (msg[at + 1] < 0) {
      at += 2;
      continue;
    }
    const auto c = static_cast<int>(msg[at + 1]);
    const auto r = static_cast<int>(msg[at + 2]);
    const std::int64_t offset = msg[at + 3];
    at += 4;
    if (c >= graph.num_collections() || (r != rank && r != lender))
      fail("internal error: a task lent by rank ", lender, " names collection ", c, " of rank ", r);
    const std::span<const std::byte> s = graph.collection(c).storage_of(r);
    if (s.empty() || !fits(s, offset, size))
      fail(graph.collection(c).describe(), ": rank ", lender, " lent ", cls.describe(p),
           " with ", size, " bytes at ", offset, " of rank ", r, "'s storage, which rank ", rank,
           " does not map (DataCollection::storage_of must be symmetric)");
    d = view_at(s, offset, size);
  }
  return flows;
}

void append_returned_flows(const TaskClass& cls, const Params& p, const std::vector<const std::byte*>& at,
                           const std::vector<Data>& flows, std::vector<std::int64_t>& msg) {
  for (std::size_t f = 0; f < flows.size(); ++f) {
    const Data& d = flows[f];
    const bool made = d.bytes() != at[f];
    msg.insert(msg.end(), {static_cast<std::int64_t>(d.size()), made ? 1 : 0});
    if (!made || d.size() == 0) continue;
    if (d.is_typed() || d.size() > static_cast<std::size_t>(INT_MAX / 2))
      fail("output ", cls.flow_at(static_cast<int>(f)).name, " of ", cls.describe(p),
           ", run on a borrowing rank, is a typed view or above ", INT_MAX / 2, " bytes: it cannot go back to its owner");
    const std::size_t words = (d.size() + 7) / 8, start = msg.size();
    msg.resize(start + words);
    std::memcpy(msg.data() + start, d.bytes(), d.size());
  }
}

void returned_flows(const std::vector<std::int64_t>& msg, std::size_t& at, std::vector<Data>& flows) {
  for (Data& d : flows) {
    const auto size = static_cast<std::size_t>(msg[at]);
    const bool made = msg[at + 1] != 0;
    at += 2;
    if (made) {
      d = Data::allocate(size);
      if (size) std::memcpy(d.bytes(), msg.data() + at, size);
      at += (size + 7) / 8;
    } else if (!d.empty() && d.size() != size) {
      d.set_size(size);
    }
  }
}

}  // namespace redist::runtime::detail
