// Dense linear algebra with a redistribution round trip (paper 000, sec. 8.7): the
// caller's matrix in ANY layout (ScaLAPACK local_array, any tile size, any grid or
// ownership) is redistributed to a layout the algorithm runs well on, factored by
// a tiled algorithm on the task runtime, and redistributed back in place. The
// round trip is invisible to the caller, except in the phase times it reports.
//
//   redist::Layout user = redist::Layout::parse(
//       "6000x6000 tile=1280x1280 block_cyclic grid=1x2 storage=local_array");
//   redist::apps::Report r = redist::apps::potrf(user, my_local_array, MPI_COMM_WORLD);
//   // r.to_seconds, r.compute_seconds, r.back_seconds; r.work: the layout it ran on
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "redist/layout.hpp"
#include "redist/runtime/collection.hpp"
#include "redist/runtime/runtime.hpp"

namespace redist::apps {

// Whether a fresh working copy on the heap is put in transparent huge pages
// (madvise(MADV_HUGEPAGE)): its faults then cost a page per 2 MiB, not per 4 KiB
// (72 MB faulted in 2.9-4.6 ms against 8.8-11.0 here once the machine's memory was
// in use; the round trip's move in at N = 6000 on 2 ranks 0.030 s against 0.040,
// docs/apps.md "Huge pages for the working copy").
enum class HugePages {
  // Where the kernel gives huge pages on madvise, except where a virtio balloon
  // reports free memory to the hypervisor (as on this VM: a huge page taken from a
  // reported block faults its memory in again on the host, 256 MB in 0.53 s
  // against 0.03), and only while the node's free memory in blocks of a huge page
  // covers the copy for every rank of the node (no compaction on the fault).
  automatic,
  never,   // the base pages (4 KiB; MADV_NOHUGEPAGE where the kernel would give huge ones unasked)
  always,  // madvise them wherever the kernel offers them, for copies of two huge pages or more (it
           // may compact memory for them, or the host fault them in again)
};

// Working storage a caller keeps across calls (LAPACK's work arrays): a call given
// a workspace (Options::workspace) takes its working copies from it and leaves them
// there, so a repeated call of the same size or smaller pays no page faults for
// them (the move in of a fresh N = 8000 working copy was mostly first-touch page
// faults here, docs/apps.md). Holds up to one buffer per matrix of a call (gemm:
// A, B, C; on one rank gemm packs A and B tile by tile and keeps only C here)
// until release() or destruction. One call at a time per workspace.
// With Options::shared_work the working copies are shared windows, kept here too
// (a repeated call makes no window and faults no page): then every rank of the
// call passes a workspace (agreed), always over the same ranks (a window is freed
// collectively by the ranks that made it: another communicator is an agreed
// error), and release() and the destructor are collective over those ranks and
// belong before MPI_Finalize (after it the windows are left to MPI's end).
class Workspace {
 public:
  Workspace() = default;
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  ~Workspace();  // release(); an error freeing a window is not thrown from here
  // Bytes held on this rank.
  std::size_t bytes() const;
  // Frees the buffers (the next call allocates fresh ones); collective where it
  // holds shared windows (above).
  void release();
  // 64-byte aligned storage of at least `bytes` for matrix `slot` of a call; keeps
  // the buffer when it is large enough, else replaces it (in huge pages as `huge`
  // says). Null when allocation fails. `fresh` is set when the memory was newly
  // allocated (never written).
  std::byte* take(int slot, std::size_t bytes, bool& fresh, HugePages huge = HugePages::automatic);
  // The same in a shared window (redist::shared_allocate, not zeroed), collective
  // over `comm`: kept when it is large enough on every rank, else replaced on every
  // rank. Throws redist::Error, the same on every rank, when `comm` holds other
  // ranks than the call that made the windows held.
  std::byte* take_shared(int slot, std::size_t bytes, MPI_Comm comm, bool& fresh);

 private:
  struct Buffer {
    std::byte* data = nullptr;
    std::size_t bytes = 0;
  };
  std::vector<Buffer> buffers_, shared_;
  MPI_Group shared_group_ = MPI_GROUP_NULL;  // the ranks of shared_'s windows
};

struct Options {
  // Tile size (rows and columns) of the working layout; 0: model_tile(); one
  // above the matrix's extent is that extent.
  index_t tile = 0;
  // Inner blocking of the QR kernels (DGEQRT/DTPQRT's NB); 0: min(32, tile);
  // one above the tile is the tile.
  index_t inner = 0;
  // Process grid PxQ of the working layout; empty: the closest to square, P <= Q.
  Coord grid{};
  // Task runtime worker threads per rank (OpenBLAS single-threaded per task); also
  // the threads of the moves in and back (one plan each, with MPI_THREAD_MULTIPLE).
  int threads = 1;
  // How the runtime's workers reach MPI (runtime::CommMode). workers (default): no
  // communication thread, so 2 ranks x 1 thread on 2 cores run 2 threads, not 4
  // (docs/apps.md). Where MPI was initialized below MPI_THREAD_MULTIPLE and the
  // mode needs it (multiple; workers with threads > 1), the call runs funneled.
  runtime::CommMode comm_mode = runtime::CommMode::workers;
  // runtime::Options::push: the producer of a tile above the eager limit posts its
  // send with the activation, no GET round trip. true (default): 2 ranks x 1 thread
  // no longer wait for the producer to see the GET between two tasks (docs/apps.md).
  bool push = true;
  // runtime::Options::read_in_place: where the matrix the algorithm runs on lies in
  // shared windows (the caller's storage from redist::shared_allocate, when it is
  // already in the working layout), tasks read the tiles other ranks of their node
  // produced where they lie instead of receiving copies (docs/apps.md).
  bool read_in_place = true;
  // runtime::Options::lend: where the matrix lies in shared windows, a rank with
  // nothing to run borrows ready tasks of another rank of its node and runs them on
  // that rank's tiles (docs/runtime.md, "Lending tasks"). Default off.
  bool lend = false;
  // Where a moved working copy lives: false (default), the heap; true, MPI shared
  // windows (redist::shared_allocate over the call's communicator, a window per call
  // freed at its end, or kept in the workspace: then every rank passes one, see
  // Workspace), so that with read_in_place the tasks read the tiles of the other
  // ranks of their node in place whatever the caller's storage (docs/apps.md). The
  // same on every rank (agreed).
  bool shared_work = false;
  // The redistribution strategy of both moves (any name of redist::strategies(), or
  // "auto"). shm (on a node: one copy per byte into or out of shared windows, else
  // rings in shared memory or cross-memory attach; messages to other nodes): its
  // first-call moves took 0.0072-0.0099 s in where direct's took 0.0095-0.032 s at
  // N = 2000, and the same or less at 4000 and 6000 (docs/apps.md, 1 Dec); direct
  // had moved N = 6000 in 0.10 s + 0.03 s against p2p's 0.16 s + 0.08 s.
  std::string strategy = "shm";
  // Whether a fresh working copy on the heap (not in shared windows) is put in
  // transparent huge pages (HugePages above). Ranks may differ.
  HugePages huge_pages = HugePages::automatic;
  // Where the working copies live: null, fresh memory each call (freed at its end);
  // else the caller's Workspace, reused across calls (see Workspace). Ranks may
  // differ (one with a workspace, one without); results are the same either way.
  Workspace* workspace = nullptr;
};

// A submatrix of the caller's matrix, the part a call works on (ScaLAPACK's IA, JA
// and sizes): rows [at[0], at[0] + size[0]) and columns [at[1], at[1] + size[1]) of
// the layout's matrix, 0-based (ScaLAPACK's IA = at[0] + 1, JA = at[1] + 1). Empty
// `at`: 0, 0; empty `size`: the rest of the matrix from `at`. The default is the
// whole matrix. The elements outside it are neither read nor written.
struct Submatrix {
  Coord at{};
  Coord size{};
};

// What a call did, on this rank. Times are this rank's wall clock; the time of a
// distributed run is the slowest rank's (reduce with MPI_MAX).
struct Report {
  std::string work;            // spec of the layout the algorithm ran on
  bool moved = false;          // false: the caller's layout was the working one (no copies)
  bool packed = false;         // gemm: A and B packed tile by tile by READ tasks (not moved in)
  double to_seconds = 0;       // make_plan + execute, caller's layout -> working layout
  double compute_seconds = 0;  // the task graph (the factorization or product)
  double back_seconds = 0;     // make_plan + execute, working layout -> caller's layout
  std::int64_t tasks = 0;      // tasks run on this rank
  std::int64_t lent = 0;       // this rank's tasks run by other ranks (Options::lend)
  double busy_seconds = 0;     // this rank's time in task bodies (runtime::Stats::busy_seconds)
  double seconds() const { return to_seconds + compute_seconds + back_seconds; }
};

// The tile size potrf and geqrf choose when Options::tile is 0, for an n x n
// problem on `cores` cores (ranks x threads): enough tiles for every core (n / tile
// >= 3 x cores + 2: more tiles per core kept 2 ranks x 1 thread closer to 1 rank x
// 2 threads, docs/apps.md), rounded down to a multiple of 32, within [128, 640]
// (DGEMM runs well on tiles from about 128; 640 was the best tile for the Cholesky
// at N >= 8000 here, docs/runtime.md), at most n.
index_t model_tile(index_t n, int cores);
// The tile gemm chooses when Options::tile is 0 (n: the largest of m, n, k): as
// model_tile with n / tile >= 2 x cores + 2, the choice before model_tile's (GEMM
// has no panel chain to shorten; an earlier session measured the smaller tile at
// 0.88 of pdgemm at N = 4000 on 1 rank x 2 threads, this one saw no difference:
// docs/apps.md).
index_t gemm_model_tile(index_t n, int cores);

// The working layout for an m x n matrix of doubles on `ranks` ranks: tile size
// options.tile (or model_tile), block-cyclic on options.grid (or the closest to
// square grid), tile storage. Throws redist::Error for a grid that is not `ranks`.
Layout work_layout(index_t m, index_t n, int ranks, const Options& options = {});
// The working layout geqrf chooses: work_layout's, but where the library chose
// a 1 x Q grid (options.grid empty, Q > 1), the tile columns' owners come from
// qr::column_owners (apps/qr/qr.hpp): block-cyclic columns leave a rank idle where
// the columns are few (2 ranks, N = 2000, 9 columns: one rank busy 81-84% against
// 93-97% with the chosen owners, docs/apps.md); an ownership `table` then, else
// work_layout's block-cyclic one. An explicit options.grid is block-cyclic.
Layout qr_work_layout(index_t m, index_t n, int ranks, const Options& options = {});

// What potrf throws, on every rank, when the matrix is not positive definite (a
// redist::Error: catching Error still catches it). order() is LAPACK dpotrf's info
// for the whole matrix: the order of the first leading minor that is not positive
// definite (1-based; the message says it too).
class NotPositiveDefinite : public Error {
 public:
  NotPositiveDefinite(const std::string& what, index_t order) : Error(what), order_(order) {}
  index_t order() const { return order_; }

 private:
  index_t order_;
};

// Cholesky A = L L^T of the symmetric positive definite n x n matrix in `data`
// (this rank's storage of `layout`, doubles): the lower triangle is overwritten by
// L, the strict upper triangle is left as it was (LAPACK dpotrf 'L'): neither read
// nor written (only the working layout's tiles on and below the diagonal travel,
// half the bytes of the whole matrix each way). Collective
// over `comm`. The result is bit for bit the same whatever the caller's layout,
// for the same working layout (options, ranks). Throws redist::Error, the same on
// every rank and with `data` untouched, on bad input (not a square matrix of
// doubles, an invalid layout or option, null data where this rank stores
// elements) and, as NotPositiveDefinite, when the matrix is not positive definite (then, where `layout` is
// the working layout and nothing is copied, `data` is left partly factored, as
// LAPACK's dpotrf leaves it). Below
// MPI_THREAD_MULTIPLE, a comm_mode that needs it runs funneled (Options::comm_mode).
Report potrf(const Layout& layout, void* data, MPI_Comm comm, const Options& options = {});
// The same on the n x n submatrix `sub` of the caller's matrix (pdpotrf's A(IA, JA)):
// the working layout is that of an n x n matrix, and the caller's elements outside
// `sub` (and its strict upper triangle) are neither read nor written. `sub` must lie
// in the matrix, be square, and be the same on every rank.
Report potrf(const Layout& layout, void* data, const Submatrix& sub, MPI_Comm comm, const Options& options = {});

// The factors of a tile QR that the overwritten matrix does not hold: the
// triangular T of every elementary block reflector (PLASMA's tile QR), one
// inner x tile block per tile of the working layout (runtime collection over
// qr::t_layout(work, inner)). Q is the product over k of the reflectors of
// column k, each applied as DGEMQRT (diagonal tile) then DTPMQRT (tiles below).
struct QrFactors {
  Report report;
  Layout work;                                   // the working layout
  index_t inner = 0;                             // inner blocking (T's rows per tile)
  std::unique_ptr<runtime::LayoutCollection> t;  // the T blocks, on the working layout's owners
};

// Tile QR A = Q R of the m x n matrix in `data` (PLASMA's algorithm: DGEQRT,
// DTPQRT, DGEMQRT, DTPMQRT as tasks): R overwrites the upper triangle; below it,
// the Householder vectors of the tile algorithm, tile by tile in the working
// layout's tiles (not LAPACK dgeqrf's format; with the T blocks returned they
// define Q). Collective; bit for bit the same whatever the caller's layout, for
// the same working layout. Errors as potrf (not a matrix of doubles, ...).
QrFactors geqrf(const Layout& layout, void* data, MPI_Comm comm, const Options& options = {});
// The same on the m x n submatrix `sub` of the caller's matrix (pdgeqrf's A(IA,
// JA)); the elements outside it are neither read nor written.
QrFactors geqrf(const Layout& layout, void* data, const Submatrix& sub, MPI_Comm comm, const Options& options = {});

// C = alpha A B + beta C for A m x k, B k x n, C m x n, each in its own layout
// (any layouts; doubles): A and B are moved to the working layouts (A m x k, B
// k x n, C m x n: one tile size and grid), the tiled product runs on the task
// runtime (one DGEMM task per C tile and k tile, in k order), and C is moved
// back. Where A and B both need moving and every working tile of each lies on one
// rank of the caller's layout (always on one rank; on several, e.g., ScaLAPACK
// tiles a multiple of the working tile), they are not copied whole: READ tasks on
// those ranks pack each tile from the caller's storage when its step comes (the
// packing counts in compute_seconds; Report::to_seconds is C's move alone). With
// beta = 0 C is not moved in (nor zeroed). A and B are not changed. With m = 0 or
// n = 0 nothing is done (C is empty). With k = 0
// or alpha = 0 there is no product: C := beta C in the caller's storage (BLAS's
// quick return: C written, not read, when beta = 0), nothing moved. Collective;
// errors as potrf (shapes that do not match, ...).
Report gemm(double alpha, const Layout& a_layout, const void* a, const Layout& b_layout, const void* b,
            double beta, const Layout& c_layout, void* c, MPI_Comm comm, const Options& options = {});
// The same on submatrices (pdgemm's A(IA, JA), B(IB, JB), C(IC, JC)): A is the m x k
// submatrix `a_sub` of the caller's A, and so on; the elements outside them are
// neither read nor written. A and B may be submatrices of C's own storage (the same
// pointer and layout) when neither overlaps C's submatrix; other storage C shares with
// A or B is refused, as above.
Report gemm(double alpha, const Layout& a_layout, const void* a, const Submatrix& a_sub, const Layout& b_layout,
            const void* b, const Submatrix& b_sub, double beta, const Layout& c_layout, void* c,
            const Submatrix& c_sub, MPI_Comm comm, const Options& options = {});

}  // namespace redist::apps
