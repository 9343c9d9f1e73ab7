// redist::apps::gemm: C = alpha A B + beta C with a redistribution round trip (paper
// 000, sec. 8.7.2, Fig. 18): A, B and C moved to working layouts with one tile size
// and grid (A and B packed tile by tile by READ tasks instead where each working
// tile lies on one rank), the tiled GEMM (apps/gemm) on the task runtime, C moved back.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

#include "gemm/gemm.hpp"
#include "mpi/agree.hpp"
#include "redist/runtime/runtime.hpp"
#include "roundtrip/roundtrip.hpp"

namespace redist::apps {

namespace {
// Copies tile (i, j) of `work` (the shape of the caller's submatrix at `at`) from
// this rank's storage `data` of `user`, which must hold all of it, into `dst`
// (column-major, leading dimension the tile's rows): one memcpy per column of each
// of the caller's tiles it crosses (a tile's column is contiguous in `tile` and
// `local_array` storage).
class Packer {
 public:
  Packer(const Layout& user, const void* data, const Layout& work, const Coord& at, int rank)
      : user_(user), work_(work), at_(at), local_(std::make_shared<LocalIndex>(user, rank)),
        data_(static_cast<const double*>(data)) {}
  void operator()(std::int64_t i, std::int64_t j, double* dst) const {
    Box w = work_.tile_box(Coord{i, j});
    for (int d = 0; d < 2; ++d) w.lo[d] += at_[d];  // where it lies in the caller's matrix
    const DimPartition &rows = user_.partition(0), &cols = user_.partition(1);
    const index_t r1 = w.lo[0] + w.size[0], c1 = w.lo[1] + w.size[1];
    for (index_t c = w.lo[1]; c < c1;) {
      const index_t tc = cols.tile_of(c), ce = std::min(c1, cols.tile_lo(tc) + cols.tile_size(tc));
      for (index_t r = w.lo[0]; r < r1;) {
        const index_t tr = rows.tile_of(r), re = std::min(r1, rows.tile_lo(tr) + rows.tile_size(tr));
        const Address a = local_->address(Coord{tr, tc}, Coord{r, c});
        for (index_t x = c; x < ce; ++x)
          std::memcpy(dst + (r - w.lo[0]) + (x - w.lo[1]) * w.size[0], data_ + a.offset + (x - c) * a.strides[1],
                      static_cast<std::size_t>(re - r) * sizeof(double));
        r = re;
      }
      c = ce;
    }
  }

 private:
  Layout user_, work_;
  Coord at_;
  std::shared_ptr<const LocalIndex> local_;
  const double* data_;
};

// The rank of `user` that holds all of each tile of `work` (the shape of the
// caller's submatrix at `at`), in a table i + j * (work's tile rows), or nothing
// when some tile of `work` spans tiles of `user` on two ranks (it stops at the
// first) or when `user` has far more tiles than `work` (then its tiles are small and
// mostly cyclic: not worth the scan).
std::optional<std::vector<int>> holders(const Layout& user, const Layout& work, const Coord& at) {
  const DimPartition &ur = user.partition(0), &uc = user.partition(1);
  const DimPartition &wr = work.partition(0), &wc = work.partition(1);
  const index_t mt = wr.ntiles(), nt = wc.ntiles();
  if (ur.ntiles() * uc.ntiles() > 64 * std::max<index_t>(1, mt * nt)) return std::nullopt;
  std::vector<int> out(static_cast<std::size_t>(mt * nt));
  for (index_t j = 0; j < nt; ++j)
    for (index_t i = 0; i < mt; ++i) {
      const index_t r = at[0] + wr.tile_lo(i), c = at[1] + wc.tile_lo(j);
      const index_t r0 = ur.tile_of(r), r1 = ur.tile_of(r + wr.tile_size(i) - 1);
      const index_t c0 = uc.tile_of(c), c1 = uc.tile_of(c + wc.tile_size(j) - 1);
      const int who = user.owner(Coord{r0, c0});
      for (index_t tc = c0; tc <= c1; ++tc)
        for (index_t tr = r0; tr <= r1; ++tr)
          if (user.owner(Coord{tr, tc}) != who) return std::nullopt;
      out[static_cast<std::size_t>(i + j * mt)] = who;
    }
  return out;
}

// BLAS's quick return (k = 0 or alpha = 0: there is no product to add): C :=
// beta C on the submatrix `sub` in the caller's storage, tile by tile, nothing
// moved; with beta = 0 C is written, not read (NaN there becomes 0), with beta = 1
// it is left alone. The caller's storage is one block (as every round trip's
// execute needs); a layout of several blocks on some rank is the same error on
// every rank.
void scale_in_place(const Layout& layout, void* data, const Box& sub, double beta, MPI_Comm comm, int rank) {
  const LocalIndex local(layout, rank);
  const std::string blocks =
      local.nblocks() > 1 ? redist::detail::cat("gemm: C ('", layout.spec(), "') is stored in ", local.nblocks(),
                                                " blocks on rank ", rank, "; the call takes one per rank")
                          : std::string();
  redist::detail::agree(comm, blocks);
  if (beta == 1.0) return;
  auto* c = static_cast<double*>(data);
  for (index_t o = 0; o < local.ntiles(); ++o) {
    const Coord t = local.tile(o);
    const Box b = intersect(layout.tile_box(t), sub);
    if (b.empty()) continue;
    const Address at = local.address(t, b.lo);
    for (index_t j = 0; j < b.size[1]; ++j) {
      double* col = c + at.offset + j * at.strides[1];
      for (index_t i = 0; i < b.size[0]; ++i) {
        double& x = col[i * at.strides[0]];
        x = beta == 0.0 ? 0.0 : beta * x;
      }
    }
  }
}
}  // namespace

Report gemm(double alpha, const Layout& a_layout, const void* a, const Layout& b_layout, const void* b, double beta,
            const Layout& c_layout, void* c, MPI_Comm comm, const Options& options) {
  return gemm(alpha, a_layout, a, Submatrix{}, b_layout, b, Submatrix{}, beta, c_layout, c, Submatrix{}, comm, options);
}

Report gemm(double alpha, const Layout& a_layout, const void* a, const Submatrix& a_sub, const Layout& b_layout,
            const void* b, const Submatrix& b_sub, double beta, const Layout& c_layout, void* c,
            const Submatrix& c_sub, MPI_Comm comm, const Options& options) {
  const int rank = detail::rank_of(comm), ranks = detail::size_of(comm);
  std::string error = detail::check_matrix("gemm: A", a_layout, a, rank, ranks);
  if (error.empty()) error = detail::check_matrix("gemm: B", b_layout, b, rank, ranks);
  if (error.empty()) error = detail::check_matrix("gemm: C", c_layout, c, rank, ranks);
  Box ab, bb, cb;
  if (error.empty()) error = detail::resolve("gemm: A", a_layout, a_sub, ab);
  if (error.empty()) error = detail::resolve("gemm: B", b_layout, b_sub, bb);
  if (error.empty()) error = detail::resolve("gemm: C", c_layout, c_sub, cb);
  if (error.empty() && (ab.size[0] != cb.size[0] || bb.size[1] != cb.size[1] || ab.size[1] != bb.size[0])) {
    const auto what = [](const Layout& l, const Box& b) {
      return detail::whole(l, b) ? redist::detail::cat("'", l.spec(), "'")
                                 : redist::detail::cat(b.size.str(), " at ", b.lo.str(), " of '", l.spec(), "'");
    };
    error = "gemm: the shapes must be A m x k, B k x n, C m x n; got A " + what(a_layout, ab) + ", B " +
            what(b_layout, bb) + ", C " + what(c_layout, cb);
  }
  if (error.empty()) error = detail::check_options("gemm", options, ranks);
  if (error.empty()) {  // C written while A and B are read: no element in common (as BLAS asks)
    // addresses as integers: < between unrelated objects is unspecified in C++
    const auto bytes = [&](const Layout& l) {
      return static_cast<std::uintptr_t>(detail::local_elements(l, rank)) * sizeof(double);
    };
    const auto pc = reinterpret_cast<std::uintptr_t>(c);
    const std::uintptr_t nc = bytes(c_layout);
    for (const auto& [name, p, l, box] :
         {std::tuple{"A", a, &a_layout, &ab}, std::tuple{"B", b, &b_layout, &bb}}) {
      const auto q = reinterpret_cast<std::uintptr_t>(p);
      const std::uintptr_t nq = bytes(*l);
      if (!pc || !q || nc == 0 || nq == 0 || pc >= q + nq || q >= pc + nc) continue;
      // The same storage and layout: submatrices of one matrix, apart when their
      // boxes are (C is written only after A and B are read, or moved in).
      if (pc == q && *l == c_layout) {
        if (intersect(*box, cb).empty()) continue;
        error = redist::detail::cat("gemm: C's submatrix ", cb.size.str(), " at ", cb.lo.str(), " overlaps ", name,
                                    "'s ", box->size.str(), " at ", box->lo.str(),
                                    " in the same matrix: C must not overlap A or B");
      } else {
        error = redist::detail::cat("gemm: C and ", name, " share storage on rank ", rank,
                                    ": C must not overlap A or B");
      }
      break;
    }
  }
  detail::agree(comm, error, {&a_layout, &b_layout, &c_layout}, {ab, bb, cb}, options, {alpha, beta});

  const index_t m = cb.size[0], n = cb.size[1], k = ab.size[1];
  if (m == 0 || n == 0) {  // BLAS's quick return: C is empty, nothing to read or write
    Report r;
    r.work = c_layout.spec();
    return r;
  }
  if (k == 0 || alpha == 0.0) {  // no product: C := beta C where it lies (A and B not read)
    Report r;
    r.work = c_layout.spec();
    const double t0 = MPI_Wtime();
    scale_in_place(c_layout, c, cb, beta, comm, rank);
    r.compute_seconds = MPI_Wtime() - t0;
    return r;
  }
  Options o = options;  // one tile size for the three working layouts
  if (o.tile == 0) o.tile = gemm_model_tile(std::max({m, n, k}), ranks * o.threads);
  const Layout wa = work_layout(m, k, ranks, o), wb = work_layout(k, n, ranks, o), wc = work_layout(m, n, ranks, o);
  Report r;
  r.work = wc.spec();
  // Where A and B would both move, they are not copied whole when every working
  // tile of each lies on one rank of the caller's layout (always on one rank; on
  // several, e.g. ScaLAPACK tiles a multiple of the working tile): the READ tasks
  // run on those ranks and pack each tile from the caller's storage when its step
  // comes, into the runtime's pooled buffers, which the runtime sends where the
  // GEMMs are (a fresh whole copy was mostly page faults: at N = 8000 on 2 ranks
  // the first call's move in took 0.79 s, a repeated one 0.22 s; the packing is
  // then part of compute_seconds). Else A and B move in first. The layouts are
  // agreed, so every rank decides alike.
  const bool packable = !detail::in_place(a_layout, ab, wa) && !detail::in_place(b_layout, bb, wb) &&
                        a_layout.storage().kind != StorageKind::tile_pointers &&
                        b_layout.storage().kind != StorageKind::tile_pointers;
  std::optional<std::vector<int>> on_a, on_b;
  if (packable && ranks > 1) on_a = holders(a_layout, wa, ab.lo);
  if (on_a) on_b = holders(b_layout, wb, bb.lo);
  if (packable && (ranks == 1 || on_b)) {
    detail::WorkMatrix C(c_layout, c, cb, wc, comm, o, beta != 0.0, 2, r.to_seconds);
    r.moved = true;
    r.packed = true;
    gemm::Ranks rank_a, rank_b;
    if (on_b) {
      const auto a_rows = wa.partition(0).ntiles(), b_rows = wb.partition(0).ntiles();
      rank_a = [t = std::move(*on_a), a_rows](std::int64_t i, std::int64_t j) {
        return t[static_cast<std::size_t>(i + j * a_rows)];
      };
      rank_b = [t = std::move(*on_b), b_rows](std::int64_t i, std::int64_t j) {
        return t[static_cast<std::size_t>(i + j * b_rows)];
      };
    }
    runtime::TaskGraph g = gemm::task_graph(alpha, wa.partition(1), Packer(a_layout, a, wa, ab.lo, rank),
                                            Packer(b_layout, b, wb, bb.lo, rank), beta, C.collection(), rank_a, rank_b);
    detail::run_and_store(g, C, comm, o, r);
    return r;
  }
  // A and B are only read: const_cast is safe, neither is stored back.
  detail::WorkMatrix A(a_layout, const_cast<void*>(a), ab, wa, comm, o, true, 0, r.to_seconds);
  detail::WorkMatrix B(b_layout, const_cast<void*>(b), bb, wb, comm, o, true, 1, r.to_seconds);
  detail::WorkMatrix C(c_layout, c, cb, wc, comm, o, beta != 0.0, 2, r.to_seconds);
  r.moved = A.moved() || B.moved() || C.moved();
  runtime::TaskGraph g = gemm::task_graph(alpha, A.collection(), B.collection(), beta, C.collection());
  detail::run_and_store(g, C, comm, o, r);
  return r;
}

}  // namespace redist::apps
