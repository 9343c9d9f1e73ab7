// Collective executors, the MPI baselines: `alltoallv` (pack, one MPI_Alltoallv,
// unpack) and `alltoallw` (MPI derived datatypes built from the plan's segments, so
// MPI reads and writes user memory directly; paper 000 sec. 3.2 explains why
// per-shape datatypes are usually slower than packing: we measure it).
#include <climits>
#include <numeric>

#include "copy.hpp"
#include "plan_impl.hpp"

namespace redist {
namespace {

// A contiguous run of `bytes` bytes as one datatype (MPI counts are int: above
// 2^31 bytes the run is built from 1 GiB blocks plus a remainder).
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
  MPI_Type_free(&gib);
  MPI_Type_free(&parts[0]);
  MPI_Type_free(&parts[1]);
  return t;
}

// An N-D box of elements with element strides `st` (dimension 0 contiguous).
MPI_Datatype box_type(const Coord& shape, const Coord& st, index_t es) {
  MPI_Datatype t = byte_run(shape[0] * es);
  for (int d = 1; d < shape.ndim(); ++d) {
    if (shape[d] > INT_MAX)
      detail::fail("alltoallw: a segment spans ", shape[d], " indices in dimension ", d,
                   ", more than an MPI count holds; use the p2p executor");
    MPI_Datatype next;
    check_mpi(MPI_Type_create_hvector(static_cast<int>(shape[d]), 1, static_cast<MPI_Aint>(st[d] * es), t, &next),
              "MPI_Type_create_hvector");
    MPI_Type_free(&t);
    t = next;
  }
  return t;
}

// One committed datatype for pieces at absolute addresses (used with MPI_BOTTOM).
MPI_Datatype struct_of(std::vector<MPI_Datatype>& types, std::vector<MPI_Aint>& addr) {
  std::vector<int> ones(types.size(), 1);
  MPI_Datatype t;
  check_mpi(MPI_Type_create_struct(static_cast<int>(types.size()), ones.data(), addr.data(), types.data(), &t),
            "MPI_Type_create_struct");
  check_mpi(MPI_Type_commit(&t), "MPI_Type_commit");
  for (MPI_Datatype& x : types) MPI_Type_free(&x);
  return t;
}

MPI_Aint address_of(const void* p) {
  MPI_Aint a;
  MPI_Get_address(p, &a);
  return a;
}

// Runs MPI_Alltoallw with one type per peer (count 1), MPI_BYTE/0 elsewhere.
void alltoallw_bottom(PlanImpl& p) {
  const size_t n = static_cast<size_t>(p.size);
  p.w_sc.assign(n, 0);  // assign on vectors of the right capacity: no allocation after the first
  p.w_rc.assign(n, 0);
  p.w_zero.assign(n, 0);
  p.w_st.assign(n, MPI_BYTE);
  p.w_rt.assign(n, MPI_BYTE);
  for (size_t i = 0; i < p.rp.sends.size(); ++i) {
    p.w_sc[p.rp.sends[i].peer] = 1;
    p.w_st[p.rp.sends[i].peer] = p.w_send_types[i];
  }
  for (size_t i = 0; i < p.rp.receives.size(); ++i) {
    p.w_rc[p.rp.receives[i].peer] = 1;
    p.w_rt[p.rp.receives[i].peer] = p.w_recv_types[i];
  }
  check_mpi(MPI_Alltoallw(MPI_BOTTOM, p.w_sc.data(), p.w_zero.data(), p.w_st.data(), MPI_BOTTOM, p.w_rc.data(),
                          p.w_zero.data(), p.w_rt.data(), p.comm),
            "MPI_Alltoallw");
}

// Packed buffers described as one byte range per peer (alltoallv fallback when a
// count or displacement does not fit an int in any common unit).
void build_packed_types(PlanImpl& p) {
  if (p.w_packed_mode) return;  // the packed buffers belong to the plan: addresses are stable
  p.free_types();
  auto build = [](const std::vector<PeerPlan>& peers, const std::vector<index_t>& off, std::byte* buf,
                  std::vector<MPI_Datatype>& out) {
    for (size_t i = 0; i < peers.size(); ++i) {
      std::vector<MPI_Datatype> t{byte_run(peers[i].bytes)};
      std::vector<MPI_Aint> a{address_of(buf + off[i])};
      out.push_back(struct_of(t, a));
    }
  };
  build(p.rp.sends, p.send_offset, p.send_buffer(), p.w_send_types);
  build(p.rp.receives, p.recv_offset, p.recv_buffer(), p.w_recv_types);
  p.w_packed_mode = true;
}

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

}  // namespace

void PlanImpl::free_types() {
  for (MPI_Datatype& t : w_send_types) MPI_Type_free(&t);
  for (MPI_Datatype& t : w_recv_types) MPI_Type_free(&t);
  w_send_types.clear();
  w_recv_types.clear();
  w_src_key.clear();
  w_dst_key.clear();
  w_packed_mode = false;
}

void run_alltoallv(PlanImpl& p, const SrcBlocks& src, const DstBlocks& dst) {
  std::byte* sbuf = p.send_buffer();
  std::byte* rbuf = p.recv_buffer();
  if (p.v_mode == 0) {
    // Each side counts in its own unit (the gcd of its counts and displacements): the
    // type signatures are all bytes, so units may differ between sender and receiver.
    const index_t su = gcd_all(p.rp.sends, p.send_offset), ru = gcd_all(p.rp.receives, p.recv_offset);
    if (fits_int(p.rp.sends, p.send_offset, su) && fits_int(p.rp.receives, p.recv_offset, ru)) {
      const size_t n = static_cast<size_t>(p.size);
      p.v_sc.assign(n, 0), p.v_sd.assign(n, 0), p.v_rc.assign(n, 0), p.v_rd.assign(n, 0);
      for (size_t i = 0; i < p.rp.sends.size(); ++i) {
        p.v_sc[p.rp.sends[i].peer] = static_cast<int>(p.rp.sends[i].bytes / su);
        p.v_sd[p.rp.sends[i].peer] = static_cast<int>(p.send_offset[i] / su);
      }
      for (size_t i = 0; i < p.rp.receives.size(); ++i) {
        p.v_rc[p.rp.receives[i].peer] = static_cast<int>(p.rp.receives[i].bytes / ru);
        p.v_rd[p.rp.receives[i].peer] = static_cast<int>(p.recv_offset[i] / ru);
      }
      p.v_send_unit = byte_run(su);
      p.v_recv_unit = byte_run(ru);
      MPI_Type_commit(&p.v_send_unit);
      MPI_Type_commit(&p.v_recv_unit);
      p.v_mode = 1;
    } else {
      p.v_mode = 2;
    }
  }
  for (size_t i = 0; i < p.rp.sends.size(); ++i) pack_peer(p, static_cast<int>(i), src, sbuf + p.send_offset[i]);
  copy_locals(p, src, dst);
  if (p.v_mode == 1) {
    check_mpi(MPI_Alltoallv(sbuf, p.v_sc.data(), p.v_sd.data(), p.v_send_unit, rbuf, p.v_rc.data(), p.v_rd.data(),
                            p.v_recv_unit, p.comm),
              "MPI_Alltoallv");
  } else {
    build_packed_types(p);
    alltoallw_bottom(p);
  }
  for (size_t i = 0; i < p.rp.receives.size(); ++i)
    unpack_peer(p, static_cast<int>(i), rbuf + p.recv_offset[i], dst);
}

void run_alltoallw(PlanImpl& p, const SrcBlocks& src, const DstBlocks& dst) {
  const index_t es = p.rp.elem_size;
  const bool same = !p.w_packed_mode && !p.w_src_key.empty() &&
                    std::equal(p.w_src_key.begin(), p.w_src_key.end(), src.ptr.begin(), src.ptr.end()) &&
                    std::equal(p.w_dst_key.begin(), p.w_dst_key.end(), dst.ptr.begin(), dst.ptr.end());
  if (!same) {
    p.free_types();
    auto build = [&](const std::vector<PeerPlan>& peers, auto&& at, std::vector<MPI_Datatype>& out) {
      for (const PeerPlan& pp : peers) {
        std::vector<MPI_Datatype> t;
        std::vector<MPI_Aint> a;
        for (const Segment& s : pp.segments) {
          t.push_back(box_type(s.shape, s.at.strides, es));
          a.push_back(address_of(at(s.at)));
        }
        out.push_back(struct_of(t, a));
      }
    };
    build(p.rp.sends, [&](const Address& a) { return src.at(a, es); }, p.w_send_types);
    build(p.rp.receives, [&](const Address& a) { return dst.at(a, es); }, p.w_recv_types);
    p.w_src_key.assign(src.ptr.begin(), src.ptr.end());
    p.w_dst_key.assign(dst.ptr.begin(), dst.ptr.end());
  }
  copy_locals(p, src, dst);
  alltoallw_bottom(p);
}

}  // namespace redist
