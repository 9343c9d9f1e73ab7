// `alltoallv`: pack every peer, one MPI_Alltoallv on bytes, unpack every peer
// (the MPI baseline). Counts and displacements are int: each side counts in its
// own unit (the gcd of its counts and displacements; the type signatures are all
// bytes, so units may differ between sender and receiver); when even that does
// not fit, the packed buffers are described by one byte-run datatype per peer and
// moved by MPI_Alltoallw.
#include <climits>
#include <numeric>

#include "cost/model.hpp"
#include "exec/datatypes.hpp"
#include "exec/pack.hpp"
#include "mpi/agree.hpp"

namespace redist::detail {
namespace {

index_t gcd_all(const std::vector<PeerPlan>& peers, const std::vector<index_t>& off) {
  index_t g = 0;
  for (size_t i = 0; i < peers.size(); ++i) g = std::gcd(std::gcd(g, peers[i].bytes), off[i]);
  return g == 0 ? 1 : g;
}

bool fits_int(const std::vector<PeerPlan>& peers, const std::vector<index_t>& off, index_t unit) {
  for (size_t i = 0; i < peers.size(); ++i)
    if (peers[i].bytes / unit > INT_MAX || off[i] / unit > INT_MAX) return false;
  return true;
}

// Per-rank counts and displacements in `unit`s.
void counts(const std::vector<PeerPlan>& peers, const std::vector<index_t>& off, index_t unit, std::vector<int>& c,
            std::vector<int>& d) {
  for (size_t i = 0; i < peers.size(); ++i) {
    c[peers[i].peer] = static_cast<int>(peers[i].bytes / unit);
    d[peers[i].peer] = static_cast<int>(off[i] / unit);
  }
}

class Alltoallv final : public Strategy {
 public:
  explicit Alltoallv(PlanCore& p) : Strategy(p) {
    const index_t su = gcd_all(p.rp.sends, p.send_offset), ru = gcd_all(p.rp.receives, p.recv_offset);
    int_counts_ = fits_int(p.rp.sends, p.send_offset, su) && fits_int(p.rp.receives, p.recv_offset, ru);
    if (int_counts_) {
      const size_t n = static_cast<size_t>(p.size);
      sc_.assign(n, 0), sd_.assign(n, 0), rc_.assign(n, 0), rd_.assign(n, 0);
      counts(p.rp.sends, p.send_offset, su, sc_, sd_);
      counts(p.rp.receives, p.recv_offset, ru, rc_, rd_);
      send_unit_ = byte_run(su);
      recv_unit_ = byte_run(ru);
      check_mpi(MPI_Type_commit(&send_unit_), "MPI_Type_commit", p.comm);
      check_mpi(MPI_Type_commit(&recv_unit_), "MPI_Type_commit", p.comm);
    } else {
      // The packed buffers belong to the plan: their addresses are stable.
      auto build = [](const std::vector<PeerPlan>& peers, const std::vector<index_t>& off, std::byte* buf,
                      std::vector<MPI_Datatype>& out) {
        for (size_t i = 0; i < peers.size(); ++i) {
          std::vector<MPI_Datatype> t{byte_run(peers[i].bytes)};
          std::vector<MPI_Aint> a{address_of(buf + off[i])};
          out.push_back(struct_of(t, a));
        }
      };
      build(p.rp.sends, p.send_offset, p.send_scratch(), packed_.send);
      build(p.rp.receives, p.recv_offset, p.recv_scratch(), packed_.recv);
    }
  }

  ~Alltoallv() override {  // the frees unchecked: a destructor, nothing to do on failure
    int finalized = 0;
    MPI_Finalized(&finalized);  // unchecked (above)
    if (finalized) return;
    if (send_unit_ != MPI_DATATYPE_NULL) MPI_Type_free(&send_unit_);  // unchecked (above)
    if (recv_unit_ != MPI_DATATYPE_NULL) MPI_Type_free(&recv_unit_);  // unchecked (above)
  }

  void run(const SrcBlocks& src, const DstBlocks& dst) override {
    PlanCore& p = plan_;
    std::byte* sbuf = p.send_scratch();
    std::byte* rbuf = p.recv_scratch();
    for (size_t i = 0; i < p.rp.sends.size(); ++i) pack_peer(p, static_cast<int>(i), src, sbuf + p.send_offset[i]);
    copy_locals(p, src, dst);
    if (int_counts_)
      check_mpi(MPI_Alltoallv(sbuf, sc_.data(), sd_.data(), send_unit_, rbuf, rc_.data(), rd_.data(), recv_unit_,
                              p.comm),
                "MPI_Alltoallv", p.comm);
    else
      call_.run(p, packed_.send, packed_.recv);
    for (size_t i = 0; i < p.rp.receives.size(); ++i) unpack_peer(p, static_cast<int>(i), rbuf + p.recv_offset[i], dst);
  }

 private:
  bool int_counts_ = false;
  std::vector<int> sc_, sd_, rc_, rd_;
  MPI_Datatype send_unit_ = MPI_DATATYPE_NULL, recv_unit_ = MPI_DATATYPE_NULL;
  PeerTypes packed_;  // the fallback: one byte run per peer in the packed buffers
  AlltoallwCall call_;
};

// As p2p, plus t_m per peer for the collective's synchronisation (T_runtime).
Prediction predict(const RankPlan& rp, const Machine& m) {
  const Rates rt = rates(rp, m, true);
  Prediction p;
  p.comm = std::max(message_time(rp.sends, m), message_time(rp.receives, m));
  p.memcpy = packed_copy_time(rp, rt);
  p.runtime = m.startup * static_cast<double>(std::max(rp.sends.size(), rp.receives.size()));
  return p;
}

}  // namespace

StrategyEntry alltoallv_strategy() {
  StrategyEntry e = entry<Alltoallv>("alltoallv", "pack, one MPI_Alltoallv on bytes, unpack", predict);
  e.arithmetic = true;
  return e;
}

}  // namespace redist::detail
