// libredist_scalapack against Debian's ScaLAPACK (the oracle, the same routine
// of the next library in link order, reached by redist_scalapack_set_native(1)):
// random descriptor cases for each type (s, d, c, z, i), through the Fortran and
// the C entry points alike. Grids of every shape that fits (sub-grids, ranks in
// any order through Cblacs_gridmap, processes outside a grid passing CTXT = -1
// and nothing else that counts), RSRC/CSRC, tiny and ragged blocks and blocks
// larger than the matrix, each process's own LLD above its local rows, empty,
// single-element and edge submatrices. After each call the whole local array of
// B (its padding rows included) must equal ScaLAPACK's bit for bit, and A must
// be untouched. REDIST_CASES=N sets the cases per type (default 1000).
#include <gtest/gtest.h>

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../common/env_count.hpp"
#include "redist/blacs.h"
#include "redist/scalapack.h"

namespace {

using Rng = std::mt19937_64;
int uniform(Rng& r, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(r); }

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}
bool all_ok(bool ok) {
  int v = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&v, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

// One BLACS grid: its context here (-1 outside it) and its shape.
struct Grid {
  int ctxt = -1, rows = 1, cols = 1;
};

// Every grid shape rows x cols <= P, each twice: once with ranks in row-major
// order from 0 (Cblacs_gridinit), once with a random subset of ranks in random
// order (Cblacs_gridmap). Every process calls every gridinit/gridmap.
std::vector<Grid> make_grids(Rng& rng) {
  const int p = world_size();
  std::vector<Grid> grids;
  for (int rows = 1; rows <= p; ++rows)
    for (int cols = 1; rows * cols <= p; ++cols)
      for (int mapped = 0; mapped < 2; ++mapped) {
        Grid g{0, rows, cols};
        Cblacs_get(0, 0, &g.ctxt);
        if (!mapped) {
          Cblacs_gridinit(&g.ctxt, "R", rows, cols);
        } else {
          std::vector<int> ranks(static_cast<size_t>(p));
          for (int i = 0; i < p; ++i) ranks[i] = i;
          std::shuffle(ranks.begin(), ranks.end(), rng);  // the same on every process (same seed)
          Cblacs_gridmap(&g.ctxt, ranks.data(), rows, rows, cols);
        }
        grids.push_back(g);
      }
  return grids;
}

// One side of a case on this process: descriptor and local array (bytes).
struct Side {
  int m = 0, n = 0;  // the matrix's shape, known to every process (the descriptor's only inside the grid)
  int desc[9] = {};
  std::vector<unsigned char> data;
};

// Element `e` of type `t` as bytes: finite values (ScaLAPACK moves floating
// point values as such), distinct per process, side and position.
void fill(Side& s, char t, int rank, std::uint64_t salt) {
  const size_t comp = t == 'd' || t == 'z' ? 8 : 4;  // bytes per real component
  for (size_t i = 0; i * comp < s.data.size(); ++i) {
    const std::uint64_t h = (salt * 1000003u + static_cast<std::uint64_t>(rank) * 7919u + i) * 2654435761u;
    if (t == 'i') {
      const std::int32_t v = static_cast<std::int32_t>(h >> 7);
      std::memcpy(&s.data[i * 4], &v, 4);
    } else if (comp == 4) {
      const float v = 1.0f + static_cast<float>(h % 1048576) / 1048576.0f;
      std::memcpy(&s.data[i * 4], &v, 4);
    } else {
      const double v = 1.0 + static_cast<double>(h % 4503599627370496ull) / 4503599627370496.0;
      std::memcpy(&s.data[i * 8], &v, 8);
    }
  }
}

size_t elem_bytes(char t) { return t == 'd' || t == 'c' ? 8 : t == 'z' ? 16 : 4; }

// A random matrix on grid g: M, N, blocks, sources, and this process's LLD.
Side make_side(Rng& rng, Rng& local, const Grid& g, char t) {
  Side s;
  const int m = uniform(rng, 1, 40), n = uniform(rng, 1, 40);
  const int mb = uniform(rng, 0, 4) ? uniform(rng, 1, 8) : uniform(rng, 1, m + 4);
  const int nb = uniform(rng, 0, 4) ? uniform(rng, 1, 8) : uniform(rng, 1, n + 4);
  const int rsrc = uniform(rng, 0, g.rows - 1), csrc = uniform(rng, 0, g.cols - 1);
  s.m = m, s.n = n;
  s.desc[0] = 1, s.desc[1] = g.ctxt, s.desc[2] = m, s.desc[3] = n, s.desc[4] = mb, s.desc[5] = nb;
  s.desc[6] = rsrc, s.desc[7] = csrc;
  if (g.ctxt < 0) {  // outside the grid: CTXT -1; the rest must not count (garbage here)
    for (int i = 2; i < 9; ++i) s.desc[i] = -7777;
    return s;
  }
  int nprow, npcol, myrow, mycol;
  Cblacs_gridinfo(g.ctxt, &nprow, &npcol, &myrow, &mycol);
  const int rows = numroc_(&m, &mb, &myrow, &rsrc, &nprow), cols = numroc_(&n, &nb, &mycol, &csrc, &npcol);
  s.desc[8] = std::max(1, rows) + (uniform(local, 0, 2) ? uniform(local, 0, 3) : 0);  // this process's own LLD
  s.data.resize(static_cast<size_t>(s.desc[8]) * static_cast<size_t>(cols) * elem_bytes(t));
  return s;
}

// Calls p<t>gemr2d through the Fortran (fortran = true) or the C entry point.
void call(char t, bool fortran, int m, int n, Side& a, int ia, int ja, Side& b, int ib, int jb, int gctxt) {
  static unsigned char dummy[16];
  void* pa = a.data.empty() ? dummy : a.data.data();
  void* pb = b.data.empty() ? dummy : b.data.data();
  if (fortran) {
    switch (t) {
      case 's': psgemr2d_(&m, &n, (float*)pa, &ia, &ja, a.desc, (float*)pb, &ib, &jb, b.desc, &gctxt); break;
      case 'd': pdgemr2d_(&m, &n, (double*)pa, &ia, &ja, a.desc, (double*)pb, &ib, &jb, b.desc, &gctxt); break;
      case 'c': pcgemr2d_(&m, &n, pa, &ia, &ja, a.desc, pb, &ib, &jb, b.desc, &gctxt); break;
      case 'z': pzgemr2d_(&m, &n, pa, &ia, &ja, a.desc, pb, &ib, &jb, b.desc, &gctxt); break;
      case 'i': pigemr2d_(&m, &n, (int*)pa, &ia, &ja, a.desc, (int*)pb, &ib, &jb, b.desc, &gctxt); break;
    }
  } else {
    switch (t) {
      case 's': Cpsgemr2d(m, n, (float*)pa, ia, ja, a.desc, (float*)pb, ib, jb, b.desc, gctxt); break;
      case 'd': Cpdgemr2d(m, n, (double*)pa, ia, ja, a.desc, (double*)pb, ib, jb, b.desc, gctxt); break;
      case 'c': Cpcgemr2d(m, n, pa, ia, ja, a.desc, pb, ib, jb, b.desc, gctxt); break;
      case 'z': Cpzgemr2d(m, n, pa, ia, ja, a.desc, pb, ib, jb, b.desc, gctxt); break;
      case 'i': Cpigemr2d(m, n, (int*)pa, ia, ja, a.desc, (int*)pb, ib, jb, b.desc, gctxt); break;
    }
  }
}

// REDIST_CASES, else 1000 scaled by REDIST_CASE_PERCENT (tests/common/env_count.hpp).
int cases_per_type() {
  using redist::testing::env_number, redist::testing::scaled_count;
  return static_cast<int>(env_number("REDIST_CASES", scaled_count(1000)));
}

// The first byte where two local arrays differ, or -1.
long first_difference(const std::vector<unsigned char>& x, const std::vector<unsigned char>& y) {
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i] != y[i]) return static_cast<long>(i);
  return x.size() == y.size() ? -1 : static_cast<long>(x.size());
}

// One random case of p?gemr2d or p?trmr2d: A on one grid, B on another, an m x n
// submatrix at (ia, ja) -> (ib, jb), and this process's local arrays.
struct Case {
  Side a, b;
  int m = 0, n = 0, ia = 1, ja = 1, ib = 1, jb = 1;
  bool fortran = false;
  const Grid* ga = nullptr;
  const Grid* gb = nullptr;
};

Case make_case(Rng& rng, Rng& local, const std::vector<Grid>& grids, char t) {
  Case k;
  k.ga = &grids[static_cast<size_t>(uniform(rng, 0, static_cast<int>(grids.size()) - 1))];
  k.gb = &grids[static_cast<size_t>(uniform(rng, 0, static_cast<int>(grids.size()) - 1))];
  k.a = make_side(rng, local, *k.ga, t), k.b = make_side(rng, local, *k.gb, t);
  const int dims[4] = {k.a.m, k.a.n, k.b.m, k.b.n};
  const int kind = uniform(rng, 0, 9);
  k.m = uniform(rng, 1, std::min(dims[0], dims[2])), k.n = uniform(rng, 1, std::min(dims[1], dims[3]));
  if (kind == 0) k.m = 0;                     // empty
  if (kind == 1) k.m = k.n = 1;               // one element
  if (kind == 2) k.m = std::min(dims[0], dims[2]), k.n = std::min(dims[1], dims[3]);  // largest
  k.ia = uniform(rng, 1, dims[0] - k.m + 1), k.ja = uniform(rng, 1, dims[1] - k.n + 1);
  k.ib = kind == 3 ? dims[2] - k.m + 1 : uniform(rng, 1, dims[2] - k.m + 1);  // at the far edge
  k.jb = kind == 3 ? dims[3] - k.n + 1 : uniform(rng, 1, dims[3] - k.n + 1);
  k.fortran = uniform(rng, 0, 1);
  return k;
}

// Runs `call(a, b)` natively on copies (ScaLAPACK is given what it is given in
// practice outside a grid: CTXT -1, zeros; redist gets garbage there, which must
// not count), then on redist; empty when B's whole local array is ScaLAPACK's and
// A is unchanged, else what differs.
template <class Call>
std::string against_native(Case& k, Call call) {
  const Side a0 = k.a;
  Side a_nat = k.a, b_native = k.b;
  if (k.ga->ctxt < 0) std::memset(a_nat.desc + 2, 0, 7 * sizeof(int));
  if (k.gb->ctxt < 0) std::memset(b_native.desc + 2, 0, 7 * sizeof(int));
  redist_scalapack_set_native(1);
  call(a_nat, b_native);
  redist_scalapack_set_native(0);
  call(k.a, k.b);
  const long db = first_difference(k.b.data, b_native.data), da = first_difference(k.a.data, a0.data);
  if (db >= 0) return "B differs from ScaLAPACK's at byte " + std::to_string(db);
  if (da >= 0) return "A changed at byte " + std::to_string(da);
  return {};
}

std::string describe(const Case& k) {
  std::ostringstream os;
  os << "m=" << k.m << " n=" << k.n << " ia=" << k.ia << " ja=" << k.ja << " ib=" << k.ib << " jb=" << k.jb
     << (k.fortran ? " (Fortran)" : " (C)");
  for (const Side* s : {&k.a, &k.b}) {
    const Grid& g = s == &k.a ? *k.ga : *k.gb;
    os << "\n  desc" << (s == &k.a ? "A " : "B ") << s->desc[2] << "x" << s->desc[3] << " blocks " << s->desc[4]
       << "x" << s->desc[5] << " src " << s->desc[6] << "," << s->desc[7] << " grid " << g.rows << "x" << g.cols
       << " lld " << s->desc[8];
  }
  return os.str();
}

// The grids of a test and the union context (every process, 1 x P), freed at the end.
struct Contexts {
  std::vector<Grid> grids;
  int line = 0;
  explicit Contexts(Rng& rng) : grids(make_grids(rng)) {
    Cblacs_get(0, 0, &line);
    Cblacs_gridinit(&line, "R", 1, world_size());
  }
  ~Contexts() {
    for (const Grid& g : grids)
      if (g.ctxt >= 0) Cblacs_freebuff(g.ctxt, 1), Cblacs_gridexit(g.ctxt);
    Cblacs_freebuff(line, 1);
    Cblacs_gridexit(line);
  }
};

class DropIn : public ::testing::TestWithParam<char> {};

TEST_P(DropIn, SameBytesAsScaLAPACK) {
  const char t = GetParam();
  const int rank = world_rank();
  Rng rng(4242 + t);                           // the same on every process: grids and cases
  Rng local(99 + t + 1000u * rank);            // this process's own: its LLDs
  Contexts ctx(rng);
  const int ncases = cases_per_type();
  int failures = 0;
  for (int c = 0; c < ncases && failures == 0; ++c) {
    Case k = make_case(rng, local, ctx.grids, t);
    fill(k.a, t, rank, 2 * c + 1);
    fill(k.b, t, rank, 2 * c + 2);
    const std::string err = against_native(k, [&](Side& a, Side& b) {
      call(t, k.fortran, k.m, k.n, a, k.ia, k.ja, b, k.ib, k.jb, ctx.line);
    });
    const bool ok = all_ok(err.empty());
    EXPECT_TRUE(err.empty()) << "type " << t << " case " << c << " rank " << rank << ": " << err << "\n  "
                             << describe(k);
    if (!ok) ++failures;
  }
}

INSTANTIATE_TEST_SUITE_P(Types, DropIn, ::testing::Values('s', 'd', 'c', 'z', 'i'),
                         [](const auto& info) { return std::string(1, info.param); });

// Calls p<t>trmr2d through the Fortran (fortran = true) or the C entry point.
void call_tr(char t, bool fortran, char uplo, char diag, int m, int n, Side& a, int ia, int ja, Side& b, int ib,
             int jb, int gctxt) {
  static unsigned char dummy[16];
  void* pa = a.data.empty() ? dummy : a.data.data();
  void* pb = b.data.empty() ? dummy : b.data.data();
  char u[2] = {uplo, 0}, d[2] = {diag, 0};
  if (fortran) {
    switch (t) {
      case 's': pstrmr2d_(u, d, &m, &n, (float*)pa, &ia, &ja, a.desc, (float*)pb, &ib, &jb, b.desc, &gctxt); break;
      case 'd': pdtrmr2d_(u, d, &m, &n, (double*)pa, &ia, &ja, a.desc, (double*)pb, &ib, &jb, b.desc, &gctxt); break;
      case 'c': pctrmr2d_(u, d, &m, &n, pa, &ia, &ja, a.desc, pb, &ib, &jb, b.desc, &gctxt); break;
      case 'z': pztrmr2d_(u, d, &m, &n, pa, &ia, &ja, a.desc, pb, &ib, &jb, b.desc, &gctxt); break;
      case 'i': pitrmr2d_(u, d, &m, &n, (int*)pa, &ia, &ja, a.desc, (int*)pb, &ib, &jb, b.desc, &gctxt); break;
    }
  } else {
    switch (t) {
      case 's': Cpstrmr2d(u, d, m, n, (float*)pa, ia, ja, a.desc, (float*)pb, ib, jb, b.desc, gctxt); break;
      case 'd': Cpdtrmr2d(u, d, m, n, (double*)pa, ia, ja, a.desc, (double*)pb, ib, jb, b.desc, gctxt); break;
      case 'c': Cpctrmr2d(u, d, m, n, pa, ia, ja, a.desc, pb, ib, jb, b.desc, gctxt); break;
      case 'z': Cpztrmr2d(u, d, m, n, pa, ia, ja, a.desc, pb, ib, jb, b.desc, gctxt); break;
      case 'i': Cpitrmr2d(u, d, m, n, (int*)pa, ia, ja, a.desc, (int*)pb, ib, jb, b.desc, gctxt); break;
    }
  }
}

// p?trmr2d against ScaLAPACK's on the cases of p?gemr2d (half as many per rank
// count: 2,000 per type over 1-4 ranks), uplo 'U'/'L' and diag 'N'/'U' in
// either case; the submatrix as often taller as wider than square.
class DropInTrmr2d : public ::testing::TestWithParam<char> {};

TEST_P(DropInTrmr2d, SameBytesAsScaLAPACK) {
  const char t = GetParam();
  const int rank = world_rank();
  Rng rng(8484 + t), local(199 + t + 1000u * rank);
  Contexts ctx(rng);
  const int ncases = std::max(1, cases_per_type() / 2);
  int failures = 0;
  for (int c = 0; c < ncases && failures == 0; ++c) {
    Case k = make_case(rng, local, ctx.grids, t);
    const char uplo = "UuLl"[uniform(rng, 0, 3)], diag = "NnUu"[uniform(rng, 0, 3)];
    fill(k.a, t, rank, 2 * c + 1);
    fill(k.b, t, rank, 2 * c + 2);
    const std::string err = against_native(k, [&](Side& a, Side& b) {
      call_tr(t, k.fortran, uplo, diag, k.m, k.n, a, k.ia, k.ja, b, k.ib, k.jb, ctx.line);
    });
    const bool ok = all_ok(err.empty());
    EXPECT_TRUE(err.empty()) << "type " << t << " case " << c << " rank " << rank << ": " << err << "\n  uplo="
                             << uplo << " diag=" << diag << " " << describe(k);
    if (!ok) ++failures;
  }
}

INSTANTIATE_TEST_SUITE_P(Types, DropInTrmr2d, ::testing::Values('s', 'd', 'c', 'z', 'i'),
                         [](const auto& info) { return std::string(1, info.param); });

// PBLAS's p?tran against ScaLAPACK's: sub(C) := beta * sub(C) + alpha * op(sub(A))
// with op the transpose (p?tran, p?tranu) or the conjugate transpose (p?tranc),
// A and C on one grid (PBLAS's rule) with their own blocks, sources and LLDs,
// alpha and beta among 0, 1, -1, 2.5, 0.75 and complex values. The whole local
// array of C must equal ScaLAPACK's bit for bit (the same products and sums, each
// rounded), A untouched. `routine`: s, d, c (tranu), C (tranc), z, Z. As many
// cases per routine as p?gemr2d's per type: 1,000 per rank count.
void call_tran(char routine, int m, int n, const double* alpha, Side& a, int ia, int ja, const double* beta, Side& c,
               int ic, int jc) {
  static unsigned char dummy[16];
  void* pa = a.data.empty() ? dummy : a.data.data();
  void* pc = c.data.empty() ? dummy : c.data.data();
  const float fa[2] = {static_cast<float>(alpha[0]), static_cast<float>(alpha[1])};
  const float fb[2] = {static_cast<float>(beta[0]), static_cast<float>(beta[1])};
  switch (routine) {
    case 's': pstran_(&m, &n, fa, pa, &ia, &ja, a.desc, fb, pc, &ic, &jc, c.desc); break;
    case 'd': pdtran_(&m, &n, alpha, pa, &ia, &ja, a.desc, beta, pc, &ic, &jc, c.desc); break;
    case 'c': pctranu_(&m, &n, fa, pa, &ia, &ja, a.desc, fb, pc, &ic, &jc, c.desc); break;
    case 'C': pctranc_(&m, &n, fa, pa, &ia, &ja, a.desc, fb, pc, &ic, &jc, c.desc); break;
    case 'z': pztranu_(&m, &n, alpha, pa, &ia, &ja, a.desc, beta, pc, &ic, &jc, c.desc); break;
    case 'Z': pztranc_(&m, &n, alpha, pa, &ia, &ja, a.desc, beta, pc, &ic, &jc, c.desc); break;
  }
}

// The first element where C differs from ScaLAPACK's beyond `ulps` units in the
// last place of its largest term (per real component), or -1. ScaLAPACK's
// p?tran computes alpha * a + beta * c with ?axpy when alpha is not 0 or +-1 and
// beta is not 0 (after ?scal), and scales by a complex beta with ?scal; OpenBLAS
// fuses those multiply-adds on CPUs with FMA. redist rounds each product and the
// sum (the result of ScaLAPACK's own loops, used everywhere else): those cases
// agree to rounding only.
long first_difference_beyond(const std::vector<unsigned char>& x, const std::vector<unsigned char>& y, char t,
                             double ulps) {
  if (x.size() != y.size()) return static_cast<long>(std::min(x.size(), y.size()));
  const size_t comp = t == 'd' || t == 'z' ? 8 : 4;
  const double eps = comp == 8 ? 2.220446049250313e-16 : 1.1920928955078125e-7;
  for (size_t i = 0; i + comp <= x.size(); i += comp) {
    if (std::memcmp(&x[i], &y[i], comp) == 0) continue;
    double a, b;
    if (comp == 8) {
      std::memcpy(&a, &x[i], 8), std::memcpy(&b, &y[i], 8);
    } else {
      float fa, fb;
      std::memcpy(&fa, &x[i], 4), std::memcpy(&fb, &y[i], 4);
      a = fa, b = fb;
    }
    const double scale = std::max({1.0, std::fabs(a), std::fabs(b)}) * 8.0;  // |alpha a| + |beta c| <= 8 here
    if (!(std::fabs(a - b) <= ulps * eps * scale)) return static_cast<long>(i);
  }
  return -1;
}

class DropInTran : public ::testing::TestWithParam<char> {};

TEST_P(DropInTran, SameBytesAsScaLAPACK) {
  const char routine = GetParam();
  const char t = routine == 'C' ? 'c' : routine == 'Z' ? 'z' : routine;  // the element type
  const bool cplx = t == 'c' || t == 'z';
  const int rank = world_rank();
  Rng rng(777 + routine), local(55 + routine + 1000u * rank);
  Contexts ctx(rng);
  const std::vector<Grid>& grids = ctx.grids;
  const double reals[] = {0.0, 1.0, -1.0, 2.5, 0.75};
  const double complexes[][2] = {{0.5, -2.0}, {0.0, 1.0}, {-1.25, 0.5}};
  const int ncases = cases_per_type();  // 1,000 per routine and rank count
  int failures = 0;
  for (int c = 0; c < ncases && failures == 0; ++c) {
    const Grid& g = grids[static_cast<size_t>(uniform(rng, 0, static_cast<int>(grids.size()) - 1))];
    Side a = make_side(rng, local, g, t), cs = make_side(rng, local, g, t);
    // op(sub(A)) is m x n: sub(A) is n x m inside A's a.m x a.n.
    int m = uniform(rng, 1, std::min(a.n, cs.m)), n = uniform(rng, 1, std::min(a.m, cs.n));
    const int kind = uniform(rng, 0, 9);
    if (kind == 0) n = 0;
    if (kind == 1) m = n = 1;
    const int ia = uniform(rng, 1, a.m - n + 1), ja = uniform(rng, 1, a.n - m + 1);
    const int ic = uniform(rng, 1, cs.m - m + 1), jc = uniform(rng, 1, cs.n - n + 1);
    double alpha[2] = {0, 0}, beta[2] = {0, 0};
    for (double* x : {alpha, beta}) {
      if (cplx && uniform(rng, 0, 2) == 0) {
        const double* z = complexes[uniform(rng, 0, 2)];
        x[0] = z[0], x[1] = z[1];
      } else {
        x[0] = reals[uniform(rng, 0, 4)];
      }
    }
    fill(a, t, rank, 2 * c + 1);
    fill(cs, t, rank, 2 * c + 2);
    const Side a0 = a;
    Side c_native = cs;
    redist_scalapack_set_native(1);
    if (g.ctxt >= 0) call_tran(routine, m, n, alpha, a, ia, ja, beta, c_native, ic, jc);
    redist_scalapack_set_native(0);
    if (g.ctxt >= 0) call_tran(routine, m, n, alpha, a, ia, ja, beta, cs, ic, jc);
    std::string err;
    // Bit for bit unless ScaLAPACK takes ?axpy or ?scal (OpenBLAS may fuse their
    // multiply-adds): alpha not 0 or +-1 with beta not 0, or a complex beta.
    const bool plain_alpha = alpha[1] == 0 && (alpha[0] == 0 || alpha[0] == 1 || alpha[0] == -1);
    const bool exact = (plain_alpha && beta[1] == 0) || (beta[0] == 0 && beta[1] == 0);
    const long dc = exact ? first_difference(cs.data, c_native.data)
                          : first_difference_beyond(cs.data, c_native.data, t, 2.0);
    const long da = first_difference(a.data, a0.data);
    if (dc >= 0) err = std::string(exact ? "" : "beyond rounding: ") + "C differs from ScaLAPACK's at byte " + std::to_string(dc);
    else if (da >= 0) err = "A changed at byte " + std::to_string(da);
    const bool ok = all_ok(err.empty());
    EXPECT_TRUE(err.empty()) << "routine " << routine << " case " << c << " rank " << rank << ": " << err
                             << "\n  m=" << m << " n=" << n << " ia=" << ia << " ja=" << ja << " ic=" << ic
                             << " jc=" << jc << " alpha=" << alpha[0] << "," << alpha[1] << " beta=" << beta[0]
                             << "," << beta[1] << "\n  descA " << a.desc[2] << "x" << a.desc[3] << " blocks "
                             << a.desc[4] << "x" << a.desc[5] << " src " << a.desc[6] << "," << a.desc[7]
                             << " grid " << g.rows << "x" << g.cols << "\n  descC " << cs.desc[2] << "x"
                             << cs.desc[3] << " blocks " << cs.desc[4] << "x" << cs.desc[5] << " src "
                             << cs.desc[6] << "," << cs.desc[7];
    if (!ok) ++failures;
  }
}

INSTANTIATE_TEST_SUITE_P(Routines, DropInTran, ::testing::Values('s', 'd', 'c', 'C', 'z', 'Z'),
                         [](const auto& info) {
                           const char r = info.param;
                           return std::string(r == 'C' ? "ctranc" : r == 'Z' ? "ztranc" : r == 'c' ? "ctranu"
                                              : r == 'z' ? "ztranu" : std::string(1, r) + "tran");
                         });

// A repeated call plans once: the second and third calls hit the cache on every
// process (the count of plans does not grow), and move the same bytes. A call
// whose LLD differs on one process only plans again on every process (else the
// others would wait in a make_plan that process never enters).
TEST(DropInCache, RepeatedCallsPlanOnce) {
  const int rank = world_rank(), p = world_size();
  int line = 0, grid = 0;
  Cblacs_get(0, 0, &line);
  Cblacs_gridinit(&line, "R", 1, p);
  Cblacs_get(0, 0, &grid);
  Cblacs_gridinit(&grid, "C", p, 1);
  Grid g{grid, p, 1}, l{line, 1, p};
  Rng rng(5), local(6 + rank);
  Side a = make_side(rng, local, g, 'd'), b = make_side(rng, local, l, 'd');
  const int m = std::min(a.m, b.m), n = std::min(a.n, b.n);
  fill(a, 'd', rank, 1);
  const int before = redist_scalapack_cached_plans();
  std::vector<unsigned char> first;
  for (int rep = 0; rep < 3; ++rep) {
    fill(b, 'd', rank, 2);
    call('d', rep % 2 == 0, m, n, a, 1, 1, b, 1, 1, line);
    if (rep == 0) first = b.data;
    EXPECT_EQ(b.data, first) << "rep " << rep;
    EXPECT_EQ(redist_scalapack_cached_plans(), before + 1) << "rep " << rep;
  }
  // Only the last process changes its LLD (more padding): every process plans again.
  if (rank == p - 1) {
    const int cols = static_cast<int>(b.data.size() / 8 / static_cast<size_t>(b.desc[8]));
    b.desc[8] += 2;
    b.data.assign(static_cast<size_t>(b.desc[8]) * static_cast<size_t>(cols) * 8, 0);
  }
  fill(b, 'd', rank, 2);
  Side b_native = b;
  redist_scalapack_set_native(1);
  call('d', true, m, n, a, 1, 1, b_native, 1, 1, line);
  redist_scalapack_set_native(0);
  call('d', true, m, n, a, 1, 1, b, 1, 1, line);
  EXPECT_EQ(b.data, b_native.data);
  EXPECT_EQ(redist_scalapack_cached_plans(), before + 2);
  Cblacs_freebuff(grid, 1);
  Cblacs_gridexit(grid);
  Cblacs_freebuff(line, 1);
  Cblacs_gridexit(line);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  MPI_Finalize();
  return rc;
}
