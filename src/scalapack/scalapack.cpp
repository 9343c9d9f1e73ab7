// libredist_scalapack (include/redist/scalapack.h, docs/scalapack.md): ScaLAPACK's
// p?gemr2d on redist. A front end over exec holding no redistribution logic: it
// turns two descriptors into two layouts (block_cyclic, local_array, the grid's
// rank map, each process's own LLD) and a region, and keeps the plans.
//
// One call, on every process of the union context `gcontext`:
//  1. ONE collective, a BLACS sum over the context (Cigsum2d) that gathers from
//     every process what it passes and knows: its MPI_COMM_WORLD rank, m, n, ia,
//     ja, ib, jb (uplo, diag), and for each grid it is in, the descriptor, its
//     own LLD, the grid's shape and its coordinates (a process outside a grid
//     passes CTXT = -1 and nothing else that counts). Every process then holds
//     the same table and draws the same conclusions from it, without another
//     message: arguments that differ, members of a grid that disagree, a grid
//     with no process are errors, the same on every process; each grid's rank
//     map (the process at each grid coordinate: any BLACS grid, Cblacs_gridinit
//     or Cblacs_gridmap);
//  2. the union's communicator: the world ranks in the table make a
//     communicator of exactly those processes (MPI_Comm_create_group), kept per
//     member list;
//  3. the plan: looked up by the whole table (every process's LLDs and
//     coordinates included) and the operation, so the key, and with the same
//     history of calls the hit, is the same on every process; planned
//     (make_plan, collective) on a miss;
//  4. the plan moves the bytes (elements are bytes to redist: s, d, c, z, i differ
//     only in their size).
// A cached call is one BLACS collective and the move; a first call adds
// make_plan's one MPI_Allreduce (and, for a new union, MPI_Comm_create_group).
// Errors: p?gemr2d has no INFO argument and ScaLAPACK stops the program on bad
// arguments; so does this library, after the first process of the union printed
// the agreed message ("redist pdgemr2d: ...") once: MPI_Abort on the union.
#include "redist/scalapack.h"

#include <dlfcn.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "mpi/agree.hpp"
#include "redist/blacs.h"
#include "redist/redist.hpp"

namespace redist::scalapack {
namespace {

// ScaLAPACK descriptor entries (0-based).
enum { DTYPE, CTXT, M, N, MB, NB, RSRC, CSRC, LLD, kDescLen };

// ------------------------------------------------------------ native forwarding
int native_mode = -1;  // -1: not read from the environment yet

bool native() {
  if (native_mode < 0) {
    const char* v = std::getenv("REDIST_SCALAPACK");
    const std::string s = v ? v : "";
    if (s != "" && s != "native" && s != "redist") {
      std::fprintf(stderr, "redist_scalapack: REDIST_SCALAPACK='%s' is not understood; allowed: native (forward "
                           "every call to ScaLAPACK), redist (the default)\n", s.c_str());
      std::abort();
    }
    native_mode = s == "native";
  }
  return native_mode == 1;
}

// The routine of this name in the next library in link order (the real ScaLAPACK).
void* next_symbol(const char* name) {
  void* f = dlsym(RTLD_NEXT, name);
  if (!f) {
    std::fprintf(stderr, "redist_scalapack: REDIST_SCALAPACK=native, but no library after libredist_scalapack "
                         "defines %s: link ScaLAPACK after it (-lredist_scalapack -lscalapack-openmpi)\n", name);
    std::abort();
  }
  return f;
}

// ------------------------------------------------------------ state per process
// Plans are looked up by every argument that shapes them: the gathered table
// (every process's arguments, LLDs and coordinates) and the operation. The key
// is the same on every process of the union.
struct Key {
  std::vector<int> table;
  std::vector<std::int64_t> op;
  bool operator==(const Key&) const = default;
};

constexpr size_t kMaxPlans = 32;

// Small calls send their messages in pieces of at most kEagerPiece bytes. Open
// MPI's shared-memory transport (vader, Debian's 4.1) sends a message of up to
// its 4 KB eager limit (header included) by copying it through shared memory,
// and a larger one by a single copy from the sender's pages
// (process_vm_readv), whose fixed cost here (pinning pages: 2.7 us of a 7.0 us
// cached 100x100 call) outweighs the second copy up to hundreds of KB: 2
// ranks, pdgemr2d_ 32x32 -> 25x25 blocks, cached calls 6.9 -> 5.0 us on 100x100
// doubles, 21.5 -> 11.8 us on 128x128, 57 -> 41 us on 256x256
// (docs/scalapack.md). Larger calls keep whole messages (one single copy moves
// MBs at ~10 GB/s).
constexpr index_t kEagerPiece = 3968;
constexpr index_t kSmallCallBytes = index_t{512} << 10;  // the submatrix's bytes

struct Union {
  MPI_Comm comm = MPI_COMM_NULL;
  std::list<std::pair<Key, Plan>> plans;  // most recently used first
};

struct State {
  std::map<std::vector<int>, Union> unions;  // by the members' MPI_COMM_WORLD ranks, in grid order
  int keyval = MPI_KEYVAL_INVALID;
};
State* state = nullptr;
// Calls of redist_scalapack_free_plans() on this process: the processes of a
// union compare theirs in each call (their plan lists are alike only if they
// freed alike).
int frees = 0;

// MPI_Finalize deletes MPI_COMM_SELF's attributes first: plans and communicators
// are released while MPI still runs.
int release_all(MPI_Comm, int, void*, void*) {
  if (!state) return MPI_SUCCESS;
  for (auto& [members, u] : state->unions) {
    u.plans.clear();
    if (u.comm != MPI_COMM_NULL) MPI_Comm_free(&u.comm);  // unchecked: finalizing, nothing to report to
  }
  int keyval = state->keyval;
  delete state;
  state = nullptr;
  MPI_Comm_free_keyval(&keyval);  // unchecked: finalizing, nothing to report to
  return MPI_SUCCESS;
}

State& the_state() {
  if (!state) {
    state = new State;
    detail::check_mpi(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, release_all, &state->keyval, nullptr),
                      "MPI_Comm_create_keyval");
    detail::check_mpi(MPI_Comm_set_attr(MPI_COMM_SELF, state->keyval, nullptr), "MPI_Comm_set_attr");
  }
  return *state;
}

// Step 2: the union's communicator, of the processes with these MPI_COMM_WORLD
// ranks, ranked in this order (the context's row-major grid order). Every
// process has the same list (gathered), so the lookup hits on every process or
// on none (MPI_Comm_create_group is collective).
Union& union_for(const std::vector<int>& ranks) {
  State& st = the_state();
  auto it = st.unions.find(ranks);
  if (it != st.unions.end()) return it->second;
  MPI_Group world = MPI_GROUP_NULL, members = MPI_GROUP_NULL;
  detail::check_mpi(MPI_Comm_group(MPI_COMM_WORLD, &world), "MPI_Comm_group");
  detail::check_mpi(MPI_Group_incl(world, static_cast<int>(ranks.size()), ranks.data(), &members), "MPI_Group_incl");
  Union u;
  detail::check_mpi(MPI_Comm_create_group(MPI_COMM_WORLD, members, 7301, &u.comm), "MPI_Comm_create_group");
  detail::check_mpi(MPI_Group_free(&members), "MPI_Group_free");
  detail::check_mpi(MPI_Group_free(&world), "MPI_Group_free");
  return st.unions.emplace(ranks, std::move(u)).first->second;
}

// ------------------------------------------------------------ one call
// What one side (A or B) looks like on this process.
struct Side {
  const int* desc;
  bool member = false;
  int nprow = 0, npcol = 0, myrow = -1, mycol = -1;
};

Side side_of(const int* desc) {
  Side s{desc};
  if (desc[CTXT] < 0) return s;
  Cblacs_gridinfo(desc[CTXT], &s.nprow, &s.npcol, &s.myrow, &s.mycol);
  s.member = s.myrow >= 0 && s.mycol >= 0;
  return s;
}

// Fields a grid's members must agree on: DTYPE, M, N, MB, NB, RSRC, CSRC, shape.
constexpr int kGridFields = 8;

// What every process passes: m, n, ia, ja, ib, jb, and p?trmr2d's uplo and diag
// (upper-cased characters; 0 for the other routines).
constexpr int kArgs = 8;
using Args = std::array<std::int64_t, kArgs>;

// Step 1's table: one row of ints per process of the union, at its row-major
// index in the context. A row: the process's MPI_COMM_WORLD rank, how many times
// it freed the plans, the kArgs arguments, then per grid (A, B): whether it is
// in the grid, the grid fields (kGridFields, the shape's rows last), the grid's
// columns, its LLD and its coordinates (the fields are 0 outside the grid).
enum Column { kWorld, kFrees, kArg0, kSide0 = kArg0 + kArgs };
enum SideColumn { kMember, kGrid0, kCols = kGrid0 + kGridFields, kLld, kMyRow, kMyCol, kSideColumns };
constexpr int kRow = kSide0 + 2 * kSideColumns;

// Collective over the context: every process's row, the same table everywhere.
std::vector<int> gather(int gcontext, int count, int me, int frees, const Args& args, const Side& a, const Side& b) {
  std::vector<int> table(static_cast<size_t>(count) * kRow, 0);
  int* row = table.data() + static_cast<size_t>(me) * kRow;
  detail::check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &row[kWorld]), "MPI_Comm_rank");
  row[kFrees] = frees;
  for (int i = 0; i < kArgs; ++i) row[kArg0 + i] = static_cast<int>(args[static_cast<size_t>(i)]);
  for (int s = 0; s < 2; ++s) {
    const Side& side = s == 0 ? a : b;
    int* f = row + kSide0 + s * kSideColumns;
    if (!side.member) continue;
    const int* d = side.desc;
    const int grid[kGridFields] = {d[DTYPE], d[M], d[N], d[MB], d[NB], d[RSRC], d[CSRC], side.nprow};
    f[kMember] = 1;
    std::copy(grid, grid + kGridFields, f + kGrid0);
    f[kCols] = side.npcol, f[kLld] = d[LLD], f[kMyRow] = side.myrow, f[kMyCol] = side.mycol;
  }
  // The sum of rows that are 0 but on their own process: every process's row.
  Cigsum2d(gcontext, "All", " ", kRow, count, table.data(), kRow, -1, -1);
  return table;
}

struct Agreed {
  Args args{};
  std::array<std::int64_t, kGridFields> a{}, b{};
  std::int64_t npcol_a = 0, npcol_b = 0;
  std::vector<int> ranks;  // the union's MPI_COMM_WORLD ranks, in the context's row-major order
};

// The arguments every process agrees on, read from the table (the same on every
// process, and so are the conclusions). Returns the error, or empty.
std::string agree_arguments(const std::vector<int>& table, int count, Agreed& out) {
  auto row = [&](int r) { return table.data() + static_cast<size_t>(r) * kRow; };
  // The minimum and maximum of column c over the processes where `in` holds.
  auto range = [&](int c, int in) {
    std::int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (int r = 0; r < count; ++r)
      if (in < 0 || row(r)[in] != 0) lo = std::min<std::int64_t>(lo, row(r)[c]), hi = std::max<std::int64_t>(hi, row(r)[c]);
    return std::pair{lo, hi};
  };
  out.ranks.resize(static_cast<size_t>(count));
  for (int r = 0; r < count; ++r) out.ranks[static_cast<size_t>(r)] = row(r)[kWorld];
  const char* arg_names[] = {"m", "n", "ia", "ja", "ib", "jb", "uplo", "diag"};
  for (int i = 0; i < kArgs; ++i) {
    const auto [lo, hi] = range(kArg0 + i, -1);
    if (lo != hi)
      return i < 6 ? detail::cat("the processes of the union context pass different ", arg_names[i], " (from ", lo,
                                 " to ", hi, "); every process passes the same")
                   : detail::cat("the processes of the union context pass different ", arg_names[i], " ('",
                                 static_cast<char>(lo), "' and '", static_cast<char>(hi),
                                 "'); every process passes the same");
    out.args[static_cast<size_t>(i)] = lo;
  }
  const char* field_names[] = {"DTYPE", "M", "N", "MB", "NB", "RSRC", "CSRC", "the grid's rows", "the grid's columns"};
  for (int s = 0; s < 2; ++s) {
    const char* name = s == 0 ? "A" : "B";
    const int side = kSide0 + s * kSideColumns;
    for (int f = 0; f <= kGridFields; ++f) {
      const auto [lo, hi] = range(side + kGrid0 + f, side + kMember);
      if (lo > hi)
        return detail::cat("no process of the union context is in the grid of ", name, " (desc", name,
                           "[CTXT] is -1, or no BLACS grid's context, on every process): one grid needs at least "
                           "one process, and desc", name, "[CTXT] is the context blacs_gridinit made");
      if (lo != hi)
        return detail::cat("the processes of ", name, "'s grid disagree on ", field_names[f], " of desc", name,
                           " (from ", lo, " to ", hi, ")");
      if (f < kGridFields) (s == 0 ? out.a : out.b)[static_cast<size_t>(f)] = lo;
      else (s == 0 ? out.npcol_a : out.npcol_b) = lo;
    }
  }
  // ScaLAPACK's rule for each process's own LLD (DESCINIT's): LLD >= max(1, its
  // local rows), the rows NUMROC gives it of M in blocks of MB from RSRC.
  for (int s = 0; s < 2; ++s) {
    const auto& d = s == 0 ? out.a : out.b;
    const std::int64_t rows = d[1], mb = d[3], rsrc = d[5], nprow = d[7];
    // refused by check_arguments, which names them (an RSRC outside the grid made
    // every LLD look wrong here)
    if (mb < 1 || nprow < 1 || rows < 0 || rsrc < 0 || rsrc >= nprow) continue;
    for (int r = 0; r < count; ++r) {
      const int* f = row(r) + kSide0 + s * kSideColumns;
      if (!f[kMember]) continue;
      const std::int64_t dist = ((f[kMyRow] - rsrc) % nprow + nprow) % nprow, blocks = rows / mb;
      const std::int64_t extra = dist < blocks % nprow ? mb : dist == blocks % nprow ? rows % mb : 0;
      const std::int64_t local = blocks / nprow * mb + extra;
      if (f[kLld] < std::max<std::int64_t>(1, local))
        return detail::cat("desc", s == 0 ? "A" : "B", "[LLD] = ", f[kLld], " on the process at grid row ", f[kMyRow],
                           ", column ", f[kMyCol], " is below max(1, its ", local, " local rows) (LLD >= max(1, "
                           "NUMROC(M, MB, myrow, RSRC, NPROW)), as DESCINIT requires)");
    }
  }
  const auto [flo, fhi] = range(kFrees, -1);
  if (flo != fhi)
    return detail::cat("redist_scalapack_free_plans() was called on some processes of the union context only (",
                       flo, " to ", fhi, " times): every process calls it alike, between calls");
  return {};
}

// What a call computes beyond moving: p?tran's transpose and arithmetic
// (C := beta * C + alpha * op(A)); p?gemr2d's is none. `trapezoid`: p?trmr2d
// (the shape is in the agreed uplo and diag).
struct Op {
  bool transpose = false;
  bool trapezoid = false;
  Arithmetic arith;
};

// ScaLAPACK's own checks of the agreed values (its pdgemr2d reports these and
// stops). With `transpose` A's submatrix is n x m (p?tran: op(A) is m x n).
std::string check_arguments(const Agreed& g, const Op& op) {
  const bool transpose = op.transpose;
  const auto [m, n, ia, ja, ib, jb, uplo, diag] = g.args;
  if (op.trapezoid && uplo != 'U' && uplo != 'L')
    return detail::cat("uplo = '", static_cast<char>(uplo), "': allowed are 'U' (copy the upper trapezoid) and 'L' "
                       "(the lower one)");
  if (op.trapezoid && diag != 'U' && diag != 'N')
    return detail::cat("diag = '", static_cast<char>(diag), "': allowed are 'N' (copy the diagonal) and 'U' (unit: "
                       "leave it)");
  if (m < 0 || n < 0) return detail::cat("m = ", m, " and n = ", n, " must be >= 0");
  for (int s = 0; s < 2; ++s) {
    const auto& d = s == 0 ? g.a : g.b;  // DTYPE, M, N, MB, NB, RSRC, CSRC, grid rows
    const char* name = s == 0 ? "A" : "B";
    const char* lower = s == 0 ? "a" : "b";
    const std::int64_t i0 = s == 0 ? ia : ib, j0 = s == 0 ? ja : jb;
    const std::int64_t sm = s == 0 && transpose ? n : m, sn = s == 0 && transpose ? m : n;
    const std::int64_t rows = d[7], cols = s == 0 ? g.npcol_a : g.npcol_b;
    if (d[0] != 1) return detail::cat("desc", name, "[DTYPE] = ", d[0], ": only 1 (dense block-cyclic) is allowed");
    if (d[1] < 0 || d[2] < 0) return detail::cat("desc", name, ": M = ", d[1], ", N = ", d[2], " must be >= 0");
    if (d[3] < 1 || d[4] < 1) return detail::cat("desc", name, ": MB = ", d[3], ", NB = ", d[4], " must be >= 1");
    if (d[5] < 0 || d[5] >= rows) return detail::cat("desc", name, "[RSRC] = ", d[5], " must lie in [0, ", rows, ")");
    if (d[6] < 0 || d[6] >= cols) return detail::cat("desc", name, "[CSRC] = ", d[6], " must lie in [0, ", cols, ")");
    if (m > 0 && n > 0 && (i0 < 1 || j0 < 1 || i0 - 1 + sm > d[1] || j0 - 1 + sn > d[2]))
      return detail::cat("the ", sm, "x", sn, " submatrix at i", lower, " = ", i0, ", j", lower, " = ", j0,
                         " does not fit ", name, " (", d[1], "x", d[2], ", indices from 1)");
  }
  return {};
}

// p?trmr2d's trapezoid as boxes (Regions) moved by one plan. ScaLAPACK's shape,
// in the m x n submatrix's own indices: 'U' copies (i, j) with
// i <= j + max(0, m - n) - unit, 'L' those with i >= j - max(0, n - m) + unit
// (unit: diag = 'U'); so the diagonal starts at the top left corner, except in
// an upper trapezoid taller than wide and a lower one wider than tall, where
// it ends at the bottom right corner. Column j holds rows [lo(j), hi(j)), both
// nondecreasing in j. Columns are cut into bands at B's column-block
// boundaries: each band is one box of the rows every column of it holds, plus
// one or two pieces per column along the diagonal. Boxes of full bands next to
// each other with the same rows are merged. Empty: nothing to copy.
std::vector<Region> trapezoid(const Agreed& g) {
  const std::int64_t m = g.args[0], n = g.args[1], ia = g.args[2], ja = g.args[3], ib = g.args[4], jb = g.args[5];
  const bool upper = g.args[6] == 'U';
  const std::int64_t unit = g.args[7] == 'U', nbb = g.b[4];
  auto lo = [&](std::int64_t j) { return upper ? 0 : std::clamp<std::int64_t>(j - std::max<std::int64_t>(0, n - m) + unit, 0, m); };
  auto hi = [&](std::int64_t j) { return upper ? std::clamp<std::int64_t>(j + std::max<std::int64_t>(0, m - n) - unit + 1, 0, m) : m; };
  std::vector<Region> out;
  bool last_whole = false;  // the last box is a band's with no pieces beside it
  auto box = [&](std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
    if (r1 > r0 && c1 > c0) out.push_back({{r1 - r0, c1 - c0}, {ia - 1 + r0, ja - 1 + c0}, {ib - 1 + r0, jb - 1 + c0}});
  };
  for (std::int64_t c0 = 0; c0 < n;) {
    const std::int64_t c1 = std::min(n, c0 + nbb - (jb - 1 + c0) % nbb);  // B's next column-block boundary
    const std::int64_t rlo = lo(c1 - 1), rhi = hi(c0);  // the rows every column of the band holds
    bool pieces = false;
    for (std::int64_t j = c0; j < c1; ++j) pieces = pieces || lo(j) != rlo || hi(j) != rhi;
    Region* prev = last_whole ? &out.back() : nullptr;
    if (!pieces && prev && prev->dst_offset[0] == ib - 1 + rlo && prev->size[0] == rhi - rlo) {
      prev->size[1] += c1 - c0;  // the same rows as the band before: one box
    } else {
      box(rlo, rhi, c0, c1);
      for (std::int64_t j = c0; j < c1 && pieces; ++j) {
        if (rlo >= rhi) {
          box(lo(j), hi(j), j, j + 1);
        } else {
          box(lo(j), rlo, j, j + 1);
          box(rhi, hi(j), j, j + 1);
        }
      }
    }
    last_whole = !pieces && rhi > rlo;
    c0 = c1;
  }
  return out;
}

// Each grid's rank map (the union rank at each coordinate, column-major like
// BLACS's usermap), read from the table. Returns the error, or empty.
std::string rank_maps(const std::vector<int>& table, int count, const Agreed& g, std::vector<int>& map_a,
                      std::vector<int>& map_b) {
  for (int s = 0; s < 2; ++s) {
    std::vector<int>& map = s == 0 ? map_a : map_b;
    const std::int64_t rows = s == 0 ? g.a[7] : g.b[7], cols = s == 0 ? g.npcol_a : g.npcol_b;
    map.assign(static_cast<size_t>(rows * cols), -1);
    for (int r = 0; r < count; ++r) {
      const int* f = table.data() + static_cast<size_t>(r) * kRow + kSide0 + s * kSideColumns;
      if (f[kMember] && f[kMyRow] < rows && f[kMyCol] < cols)  // BLACS's own coordinates: in the agreed shape
        map[static_cast<size_t>(f[kMyRow] + f[kMyCol] * rows)] = r;
    }
    for (size_t i = 0; i < map.size(); ++i)
      if (map[i] < 0)
        return detail::cat("process (", static_cast<std::int64_t>(i) % rows, ", ", static_cast<std::int64_t>(i) / rows,
                           ") of ", s == 0 ? "A" : "B", "'s grid is not in the union context, or passed a desc",
                           s == 0 ? "A" : "B", " whose CTXT is not that grid: gcontext must hold every process of "
                           "both grids, each passing its grid's context");
  }
  return {};
}

Layout layout_of(const std::array<std::int64_t, kGridFields>& d, std::int64_t npcol, std::vector<int> map,
                 std::int64_t ld, index_t esize) {
  BlockCyclicParams p;
  p.grid = Coord{d[7], npcol};
  p.source = Coord{d[5], d[6]};
  p.super = Coord{1, 1};
  p.map = std::make_shared<const std::vector<int>>(std::move(map));
  return Layout(Coord{d[1], d[2]}, {DimPartition::regular(d[1], d[3]), DimPartition::regular(d[2], d[4])},
                Ownership::block_cyclic(p), Storage{StorageKind::local_array, ld}, esize);
}

[[noreturn]] void stop(const char* routine, MPI_Comm comm, const std::string& message, bool print) {
  if (print) std::fprintf(stderr, "redist %s: %s\n", routine, message.c_str());
  std::fflush(stderr);
  MPI_Abort(comm == MPI_COMM_NULL ? MPI_COMM_WORLD : comm, 1);  // unchecked: it does not return
  std::abort();
}

// One call of p?gemr2d (op: none), p?trmr2d (uplo, diag: upper-cased) or p?tran (B is C).
void move(const char* routine, index_t esize, const Op& op, int m, int n, const void* a, int ia, int ja,
          const int* desca, void* b, int ib, int jb, const int* descb, int gcontext, char uplo = 0, char diag = 0) {
  int nprow = 0, npcol = 0, myrow = -1, mycol = -1;
  Cblacs_gridinfo(gcontext, &nprow, &npcol, &myrow, &mycol);
  if (myrow < 0 || mycol < 0) {
    // Not in the union context: nothing to do, unless the process is in a grid
    // (then the others would wait for it forever; ScaLAPACK 2.2.1 crashes).
    const bool in_a = desca && side_of(desca).member, in_b = descb && side_of(descb).member;
    if (in_a || in_b)
      stop(routine, MPI_COMM_NULL,
           detail::cat("this process is in ", in_a && in_b ? "A's and B's grids" : in_a ? "A's grid" : "B's grid",
                       " but not in the union context (gcontext = ", gcontext,
                       "): gcontext must hold every process of both grids"),
           true);
    return;
  }
  MPI_Comm comm = MPI_COMM_NULL;
  const int count = nprow * npcol, me = myrow * npcol + mycol;  // me: the rank in the union's communicator
  try {
    const Side sa = side_of(desca), sb = side_of(descb);
    const std::vector<int> table =
        gather(gcontext, count, me, frees, {m, n, ia, ja, ib, jb, uplo, diag}, sa, sb);
    Agreed g;
    std::string err = agree_arguments(table, count, g);
    if (err.empty()) err = check_arguments(g, op);
    Union& u = union_for(g.ranks);
    comm = u.comm;
    if (!err.empty()) stop(routine, comm, err, me == 0);
    if (m == 0 || n == 0) return;
    [[maybe_unused]] const auto [mm, nn, i0, j0, i1, j1, up, dg] = g.args;
    std::vector<Region> regions;
    if (op.trapezoid) regions = trapezoid(g);
    else regions.push_back({{mm, nn}, {i0 - 1, j0 - 1}, {i1 - 1, j1 - 1}, op.transpose ? Coord{1, 0} : Coord()});
    if (regions.empty()) return;  // a trapezoid with nothing in it (every process knows)
    std::vector<int> map_a, map_b;
    err = rank_maps(table, count, g, map_a, map_b);
    if (!err.empty()) stop(routine, comm, err, me == 0);

    // The key: the table (every process's arguments, LLDs and coordinates, so a
    // call whose LLD changed on one process plans again on all of them), the
    // element size and the operation; the same on every process, and so is the
    // hit: every process of the union made the same calls (and freed its plans
    // as often, checked above), so its list holds the same keys in the same order.
    Key key{table, {esize, op.transpose, op.trapezoid, static_cast<std::int64_t>(op.arith.type), op.arith.conjugate}};
    for (double x : {op.arith.alpha.real(), op.arith.alpha.imag(), op.arith.beta.real(), op.arith.beta.imag()}) {
      std::int64_t bits;
      std::memcpy(&bits, &x, sizeof bits);
      key.op.push_back(bits);
    }
    auto hit = std::find_if(u.plans.begin(), u.plans.end(), [&](const auto& e) { return e.first == key; });
    if (hit == u.plans.end()) {
      const Layout src = layout_of(g.a, g.npcol_a, std::move(map_a), sa.member ? desca[LLD] : 0, esize);
      const Layout dst = layout_of(g.b, g.npcol_b, std::move(map_b), sb.member ? descb[LLD] : 0, esize);
      Options opt;
      if (const char* s = std::getenv("REDIST_STRATEGY"); s && *s) opt.strategy = s;  // empty: unset
      opt.arithmetic = op.arith;
      if (mm * nn * esize <= kSmallCallBytes) opt.max_message_bytes = kEagerPiece;
      opt.duplicate_comm = false;  // the union's communicator is this library's, used one call at a time
      Plan plan = make_plan(src, dst, regions, comm, opt);
      u.plans.emplace_front(std::move(key), std::move(plan));
      if (u.plans.size() > kMaxPlans) u.plans.pop_back();
    } else {
      u.plans.splice(u.plans.begin(), u.plans, hit);  // most recently used first, the same order everywhere
    }
    Plan& plan = u.plans.front().second;
    const void* src_block[1] = {sa.member ? a : nullptr};
    void* dst_block[1] = {sb.member ? b : nullptr};
    plan.execute(std::span<const void* const>(src_block), std::span<void* const>(dst_block));
  } catch (const Error& e) {
    // make_plan's errors are agreed (every process throws the same); an MPI
    // failure in execute is local: every process that has one prints it.
    const bool agreed = dynamic_cast<const MpiError*>(&e) == nullptr;
    stop(routine, comm, e.what(), !agreed || me == 0);
  } catch (const std::exception& e) {
    stop(routine, comm, e.what(), true);
  }
}

}  // namespace
}  // namespace redist::scalapack

// ------------------------------------------------------------ entry points
using redist::scalapack::move;
using redist::scalapack::Op;
using redist::scalapack::native;
using redist::scalapack::next_symbol;

namespace {
Op trapezoid_op() {
  Op op;
  op.trapezoid = true;
  return op;
}
// uplo and diag upper-cased, as ScaLAPACK reads them (a null pointer: '?', refused).
char upper_char(const char* c) { return c ? static_cast<char>(std::toupper(static_cast<unsigned char>(*c))) : '?'; }
}  // namespace

extern "C" {

void redist_scalapack_set_native(int on) { redist::scalapack::native_mode = on ? 1 : 0; }
int redist_scalapack_native(void) { return native() ? 1 : 0; }
void redist_scalapack_free_plans(void) {
  ++redist::scalapack::frees;
  if (redist::scalapack::state)
    for (auto& [members, u] : redist::scalapack::state->unions) u.plans.clear();
}
int redist_scalapack_cached_plans(void) {
  int n = 0;
  if (redist::scalapack::state)
    for (const auto& [members, u] : redist::scalapack::state->unions) n += static_cast<int>(u.plans.size());
  return n;
}

// X(prefix, C type, element bytes): the Fortran and the C entry point of one type.
#define REDIST_GEMR2D(p, T, bytes)                                                                              \
  void p##gemr2d_(const int* m, const int* n, const T* a, const int* ia, const int* ja, const int* desca, T* b,  \
                  const int* ib, const int* jb, const int* descb, const int* ictxt) {                           \
    if (native()) {                                                                                             \
      using F = void (*)(const int*, const int*, const T*, const int*, const int*, const int*, T*, const int*,  \
                         const int*, const int*, const int*);                                                   \
      static const F f = reinterpret_cast<F>(next_symbol(#p "gemr2d_"));                                        \
      return f(m, n, a, ia, ja, desca, b, ib, jb, descb, ictxt);                                                \
    }                                                                                                           \
    move(#p "gemr2d", bytes, Op{}, *m, *n, a, *ia, *ja, desca, b, *ib, *jb, descb, *ictxt);                         \
  }                                                                                                             \
  void C##p##gemr2d(int m, int n, T* a, int ia, int ja, int* desca, T* b, int ib, int jb, int* descb,          \
                    int gcontext) {                                                                             \
    if (native()) {                                                                                             \
      using F = void (*)(int, int, T*, int, int, int*, T*, int, int, int*, int);                                \
      static const F f = reinterpret_cast<F>(next_symbol("C" #p "gemr2d"));                                     \
      return f(m, n, a, ia, ja, desca, b, ib, jb, descb, gcontext);                                             \
    }                                                                                                           \
    move("C" #p "gemr2d", bytes, Op{}, m, n, a, ia, ja, desca, b, ib, jb, descb, gcontext);                         \
  }

REDIST_GEMR2D(ps, float, 4)
REDIST_GEMR2D(pd, double, 8)
REDIST_GEMR2D(pc, void, 8)
REDIST_GEMR2D(pz, void, 16)
REDIST_GEMR2D(pi, int, 4)

// ScaLAPACK's p?trmr2d: the upper or lower trapezoid of the m x n submatrix,
// with or without its diagonal. ScaLAPACK's own entry points take uplo and diag
// as char pointers, the Fortran one ignoring the hidden lengths after ictxt.
#define REDIST_TRMR2D(p, T, bytes)                                                                              \
  void p##trmr2d_(const char* uplo, const char* diag, const int* m, const int* n, const T* a, const int* ia,    \
                  const int* ja, const int* desca, T* b, const int* ib, const int* jb, const int* descb,        \
                  const int* ictxt) {                                                                           \
    if (native()) {                                                                                             \
      using F = void (*)(const char*, const char*, const int*, const int*, const T*, const int*, const int*,    \
                         const int*, T*, const int*, const int*, const int*, const int*);                       \
      static const F f = reinterpret_cast<F>(next_symbol(#p "trmr2d_"));                                        \
      return f(uplo, diag, m, n, a, ia, ja, desca, b, ib, jb, descb, ictxt);                                    \
    }                                                                                                           \
    move(#p "trmr2d", bytes, trapezoid_op(), *m, *n, a, *ia, *ja, desca, b, *ib, *jb, descb, *ictxt,            \
         upper_char(uplo), upper_char(diag));                                                                   \
  }                                                                                                             \
  void C##p##trmr2d(char* uplo, char* diag, int m, int n, T* a, int ia, int ja, int* desca, T* b, int ib,       \
                    int jb, int* descb, int gcontext) {                                                         \
    if (native()) {                                                                                             \
      using F = void (*)(char*, char*, int, int, T*, int, int, int*, T*, int, int, int*, int);                  \
      static const F f = reinterpret_cast<F>(next_symbol("C" #p "trmr2d"));                                     \
      return f(uplo, diag, m, n, a, ia, ja, desca, b, ib, jb, descb, gcontext);                                 \
    }                                                                                                           \
    move("C" #p "trmr2d", bytes, trapezoid_op(), m, n, a, ia, ja, desca, b, ib, jb, descb, gcontext,            \
         upper_char(uplo), upper_char(diag));                                                                   \
  }

REDIST_TRMR2D(ps, float, 4)
REDIST_TRMR2D(pd, double, 8)
REDIST_TRMR2D(pc, void, 8)
REDIST_TRMR2D(pz, void, 16)
REDIST_TRMR2D(pi, int, 4)

// PBLAS's p?tran: sub(C) := beta * sub(C) + alpha * op(sub(A)), op(A) = A^T
// (p?tran, p?tranu) or A^H (p?tranc); sub(C) is m x n at (ic, jc), sub(A) n x m
// at (ia, ja); A and C in one context (the union). R: the real type of a
// component; alpha and beta point to 1 (real) or 2 (complex) components.
#define REDIST_TRAN(name, R, etype, conj)                                                                           \
  void name##_(const int* m, const int* n, const R* alpha, const void* a, const int* ia, const int* ja,           \
               const int* desca, const R* beta, void* c, const int* ic, const int* jc, const int* descc) {       \
    if (native()) {                                                                                              \
      using F = void (*)(const int*, const int*, const R*, const void*, const int*, const int*, const int*,      \
                         const R*, void*, const int*, const int*, const int*);                                   \
      static const F f = reinterpret_cast<F>(next_symbol(#name "_"));                                            \
      return f(m, n, alpha, a, ia, ja, desca, beta, c, ic, jc, descc);                                           \
    }                                                                                                            \
    Op op;                                                                                                       \
    op.transpose = true;                                                                                         \
    op.arith.type = redist::ElementType::etype;                                                                  \
    const bool cplx = redist::is_complex(op.arith.type);                                                         \
    op.arith.alpha = {static_cast<double>(alpha[0]), cplx ? static_cast<double>(alpha[1]) : 0.0};               \
    op.arith.beta = {static_cast<double>(beta[0]), cplx ? static_cast<double>(beta[1]) : 0.0};                  \
    op.arith.conjugate = conj;                                                                                   \
    const redist::index_t bytes = redist::element_type_size(op.arith.type);                                      \
    move(#name, bytes, op, *m, *n, a, *ia, *ja, desca, c, *ic, *jc, descc, desca[1]);                            \
  }

REDIST_TRAN(pstran, float, f32, false)
REDIST_TRAN(pdtran, double, f64, false)
REDIST_TRAN(pctranu, float, c64, false)
REDIST_TRAN(pctranc, float, c64, true)
REDIST_TRAN(pztranu, double, c128, false)
REDIST_TRAN(pztranc, double, c128, true)

}  // extern "C"
