#include "exec/datatypes.hpp"

#include <algorithm>
#include <climits>

#include "mpi/agree.hpp"

namespace redist::detail {

MPI_Datatype byte_run(index_t bytes) {
  MPI_Datatype t;
  if (bytes <= INT_MAX) {
    check_mpi(MPI_Type_contiguous(static_cast<int>(bytes), MPI_BYTE, &t), "MPI_Type_contiguous");
    return t;
  }
  const index_t block = index_t{1} << 30;
  MPI_Datatype gib, parts[2];
  check_mpi(MPI_Type_contiguous(static_cast<int>(block), MPI_BYTE, &gib), "MPI_Type_contiguous");
  check_mpi(MPI_Type_contiguous(static_cast<int>(bytes / block), gib, &parts[0]), "MPI_Type_contiguous");
  check_mpi(MPI_Type_contiguous(static_cast<int>(bytes % block), MPI_BYTE, &parts[1]), "MPI_Type_contiguous");
  int len[2] = {1, 1};
  MPI_Aint disp[2] = {0, static_cast<MPI_Aint>(bytes / block * block)};
  check_mpi(MPI_Type_create_struct(2, len, disp, parts, &t), "MPI_Type_create_struct");
  check_mpi(MPI_Type_free(&gib), "MPI_Type_free");
  check_mpi(MPI_Type_free(&parts[0]), "MPI_Type_free");
  check_mpi(MPI_Type_free(&parts[1]), "MPI_Type_free");
  return t;
}

std::string type_count_error(std::string_view strategy, const Coord& shape, const Coord& st,
                             const std::array<index_t, 2>& count) {
  const bool contiguous0 = st[0] == 1 || shape[0] == 1;  // as box_type decides
  for (int d = contiguous0 ? 1 : 0; d < shape.ndim(); ++d)
    if (shape[d] > INT_MAX)
      return cat(strategy, ": a segment spans ", shape[d], " indices in dimension ", d,
                 ", more than an MPI count holds (", INT_MAX, "); use the p2p strategy");
  for (int k = 0; k < 2; ++k)
    if (count[k] > INT_MAX)
      return cat(strategy, ": a run repeats a segment ", count[k], " times, more than an MPI count holds (", INT_MAX,
                 "); use the p2p strategy");
  return {};
}

std::string type_count_error(std::string_view strategy, const PlanCore& p) {
  for (const auto* peers : {&p.rp.sends, &p.rp.receives})
    for (const PeerPlan& pp : *peers)
      for (const Segment& s : pp.segments)
        if (std::string e = type_count_error(strategy, s.shape, s.at.strides, s.count); !e.empty()) return e;
  return {};
}

MPI_Datatype box_type(std::string_view strategy, const Coord& shape, const Coord& st, index_t es) {
  // Dimension 0 is contiguous unless a permuting region (Region::axes) gave it
  // the stride of another source dimension: then one element per index.
  const bool contiguous0 = st[0] == 1 || shape[0] == 1;
  if (std::string e = type_count_error(strategy, shape, st, {1, 1}); !e.empty()) fail(e);
  MPI_Datatype t = byte_run(contiguous0 ? shape[0] * es : es);
  for (int d = contiguous0 ? 1 : 0; d < shape.ndim(); ++d) {
    MPI_Datatype next;
    check_mpi(MPI_Type_create_hvector(static_cast<int>(shape[d]), 1, static_cast<MPI_Aint>(st[d] * es), t, &next),
              "MPI_Type_create_hvector");
    check_mpi(MPI_Type_free(&t), "MPI_Type_free");
    t = next;
  }
  return t;
}

MPI_Datatype run_type(std::string_view strategy, const Coord& shape, const Coord& st,
                      const std::array<index_t, 2>& count, const std::array<index_t, 2>& step, index_t es) {
  if (std::string e = type_count_error(strategy, shape, st, count); !e.empty()) fail(e);
  MPI_Datatype t = box_type(strategy, shape, st, es);
  for (int k = 0; k < 2; ++k) {
    if (count[k] == 1) continue;
    MPI_Datatype next;
    check_mpi(MPI_Type_create_hvector(static_cast<int>(count[k]), 1, static_cast<MPI_Aint>(step[k] * es), t, &next),
              "MPI_Type_create_hvector");
    check_mpi(MPI_Type_free(&t), "MPI_Type_free");
    t = next;
  }
  return t;
}

MPI_Datatype run_type(std::string_view strategy, const Segment& s, index_t es) {
  return run_type(strategy, s.shape, s.at.strides, s.count, s.step, es);
}

MPI_Datatype struct_of(std::vector<MPI_Datatype>& types, std::vector<MPI_Aint>& addr) {
  std::vector<int> ones(types.size(), 1);
  MPI_Datatype t;
  check_mpi(MPI_Type_create_struct(static_cast<int>(types.size()), ones.data(), addr.data(), types.data(), &t),
            "MPI_Type_create_struct");
  check_mpi(MPI_Type_commit(&t), "MPI_Type_commit");
  for (MPI_Datatype& x : types) check_mpi(MPI_Type_free(&x), "MPI_Type_free");
  return t;
}

MPI_Aint address_of(const void* p) {
  MPI_Aint a;
  check_mpi(MPI_Get_address(p, &a), "MPI_Get_address");
  return a;
}

void AlltoallwCall::run(const PlanCore& p, const std::vector<MPI_Datatype>& send_types,
                        const std::vector<MPI_Datatype>& recv_types) {
  const size_t n = static_cast<size_t>(p.size);
  sc_.assign(n, 0);  // assign on vectors of the right capacity: no allocation after the first
  rc_.assign(n, 0);
  zero_.assign(n, 0);
  st_.assign(n, MPI_BYTE);
  rt_.assign(n, MPI_BYTE);
  for (size_t i = 0; i < p.rp.sends.size(); ++i) {
    sc_[p.rp.sends[i].peer] = 1;
    st_[p.rp.sends[i].peer] = send_types[i];
  }
  for (size_t i = 0; i < p.rp.receives.size(); ++i) {
    rc_[p.rp.receives[i].peer] = 1;
    rt_[p.rp.receives[i].peer] = recv_types[i];
  }
  check_mpi(MPI_Alltoallw(MPI_BOTTOM, sc_.data(), zero_.data(), st_.data(), MPI_BOTTOM, rc_.data(), zero_.data(),
                          rt_.data(), p.comm),
            "MPI_Alltoallw", p.comm);
}

const PeerTypes& PeerTypesAt::get(const PlanCore& p, const SrcBlocks& src, const DstBlocks& dst) {
  const bool same = !src_key_.empty() &&
                    std::equal(src_key_.begin(), src_key_.end(), src.ptr.begin(), src.ptr.end()) &&
                    std::equal(dst_key_.begin(), dst_key_.end(), dst.ptr.begin(), dst.ptr.end());
  if (same) return types_;
  if (!checked_) {  // collective, once: every rank calls get() in the strategy's run
    agree(p.comm, type_count_error(strategy_, p));
    checked_ = true;
  }
  types_.reset();
  const index_t es = p.rp.elem_size;
  auto build = [es, this](const std::vector<PeerPlan>& peers, auto&& at, std::vector<MPI_Datatype>& out) {
    for (const PeerPlan& pp : peers) {
      std::vector<MPI_Datatype> t;
      std::vector<MPI_Aint> a;
      for (const Segment& s : pp.segments) {
        t.push_back(run_type(strategy_, s, es));
        a.push_back(address_of(at(s.at)));
      }
      out.push_back(struct_of(t, a));
    }
  };
  build(p.rp.sends, [&](const Address& a) { return src.at(a, es); }, types_.send);
  build(p.rp.receives, [&](const Address& a) { return dst.at(a, es); }, types_.recv);
  src_key_.assign(src.ptr.begin(), src.ptr.end());
  dst_key_.assign(dst.ptr.begin(), dst.ptr.end());
  return types_;
}

PeerTypes::~PeerTypes() { reset(); }

// Frees unchecked: reset() runs in destructors, and a type that cannot be freed
// leaves nothing to do.
void PeerTypes::reset() {
  int finalized = 0;
  MPI_Finalized(&finalized);  // unchecked (above)
  if (!finalized) {
    for (MPI_Datatype& t : send) MPI_Type_free(&t);  // unchecked (above)
    for (MPI_Datatype& t : recv) MPI_Type_free(&t);  // unchecked (above)
  }
  send.clear();
  recv.clear();
}

}  // namespace redist::detail
