// The parts of the round trip (paper 000, sec. 8.7) that every algorithm shares:
// collective checks, the working layout, and the moves to it and back.
#include "roundtrip/roundtrip.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <sstream>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "kernels/pages.hpp"
#include "roundtrip/huge_pages.hpp"
#include "mpi/agree.hpp"
#include "qr/qr.hpp"
#include "redist/error.hpp"
#include "redist/shm.hpp"

namespace redist::apps {

namespace {
// n / (per_core x cores + 2) rounded down to a multiple of 32, within [128, 640], at most n.
index_t tile_for(index_t n, int cores, int per_core) {
  const index_t want = n / (per_core * std::max(cores, 1) + 2);
  const index_t tile = std::clamp<index_t>(want / 32 * 32, 128, 640);
  return std::max<index_t>(1, std::min(tile, n));
}
}  // namespace

index_t model_tile(index_t n, int cores) { return tile_for(n, cores, 3); }
index_t gemm_model_tile(index_t n, int cores) { return tile_for(n, cores, 2); }

namespace {
// options.grid, or the closest to square P x Q = ranks with P <= Q.
Coord work_grid(int ranks, const Options& options) {
  if (options.grid.ndim() != 0) return options.grid;
  index_t p = 1;
  for (index_t d = 1; d * d <= ranks; ++d)
    if (ranks % d == 0) p = d;
  return Coord{p, ranks / p};
}
}  // namespace

Layout work_layout(index_t m, index_t n, int ranks, const Options& options) {
  const Coord grid = work_grid(ranks, options);
  if (grid.ndim() != 2 || grid[0] < 1 || grid[1] < 1 || grid[0] * grid[1] != ranks)
    redist::detail::fail("the grid of the working layout must be PxQ with P x Q = ", ranks,
                         " ranks (options.grid), got ", grid.ndim() == 2 ? std::to_string(grid[0]) + "x" + std::to_string(grid[1])
                                                          : std::string("a grid of ") + std::to_string(grid.ndim()) +
                                                                " dimensions");
  const index_t tile = options.tile > 0 ? options.tile
                                        : model_tile(std::max(m, n), ranks * std::max(options.threads, 1));
  return block_cyclic_layout({m, n}, {std::max<index_t>(1, std::min(tile, m)), std::max<index_t>(1, std::min(tile, n))},
                             grid);
}

Layout qr_work_layout(index_t m, index_t n, int ranks, const Options& options) {
  Layout cyclic = work_layout(m, n, ranks, options);
  const Coord grid = work_grid(ranks, options);
  if (options.grid.ndim() != 0 || grid[0] != 1 || grid[1] < 2) return cyclic;
  const std::vector<int> columns = qr::column_owners(cyclic, static_cast<int>(grid[1]));
  bool moved = false;
  for (size_t j = 0; j < columns.size(); ++j)
    moved = moved || columns[j] != static_cast<int>(static_cast<index_t>(j) % grid[1]);
  if (!moved) return cyclic;
  const index_t mt = cyclic.ntiles()[0];
  std::vector<int> owners;  // column-major tile order, as `table` takes them
  owners.reserve(static_cast<size_t>(mt) * columns.size());
  for (int c : columns) owners.insert(owners.end(), static_cast<size_t>(mt), c);
  return Layout(cyclic.shape(), cyclic.partitions(), Ownership::table(std::move(owners)), cyclic.storage(),
                cyclic.elem_size());
}

Workspace::~Workspace() {
  try {
    release();
  } catch (const std::exception&) {
    // A destructor must not throw: a window MPI failed to free is left to MPI's end.
  }
}

std::size_t Workspace::bytes() const {
  std::size_t sum = 0;
  for (const Buffer& b : buffers_) sum += b.bytes;
  for (const Buffer& b : shared_) sum += b.bytes;
  return sum;
}

void Workspace::release() {
  for (Buffer& b : buffers_) detail::free_fresh(b.data, b.bytes);
  buffers_.clear();
  int finalized = 0;
  MPI_Finalized(&finalized);  // unchecked: callable at any time
  if (!finalized) {
    for (Buffer& b : shared_)  // collective, in slot order on every rank of the windows
      if (b.data) shared_free(b.data);
    if (shared_group_ != MPI_GROUP_NULL) MPI_Group_free(&shared_group_);  // unchecked: a destructor's
  }
  shared_.clear();
  shared_group_ = MPI_GROUP_NULL;
}

std::byte* Workspace::take_shared(int slot, std::size_t bytes, MPI_Comm comm, bool& fresh) {
  using redist::detail::check_mpi;
  if (slot < 0) redist::detail::fail("apps::Workspace::take_shared: slot must be >= 0, got ", slot);
  // The same ranks as the windows held (their frees are collective over them): the
  // first call's group is kept (a group outlives its communicator).
  MPI_Group group = MPI_GROUP_NULL;
  check_mpi(MPI_Comm_group(comm, &group), "MPI_Comm_group", comm);
  int other = 0;
  if (shared_group_ == MPI_GROUP_NULL) {
    shared_group_ = group;
  } else {
    int cmp = MPI_UNEQUAL;
    check_mpi(MPI_Group_compare(group, shared_group_, &cmp), "MPI_Group_compare", comm);
    other = cmp != MPI_IDENT;
    check_mpi(MPI_Group_free(&group), "MPI_Group_free", comm);
  }
  redist::detail::agree(comm, other ? std::string("apps::Workspace: its shared windows were made by other ranks "
                                                  "than this call's communicator holds (with Options::shared_work a "
                                                  "workspace serves one set of ranks: release() it first, on those "
                                                  "ranks)")
                                    : std::string());
  if (shared_.size() <= static_cast<std::size_t>(slot)) shared_.resize(static_cast<std::size_t>(slot) + 1);
  Buffer& b = shared_[static_cast<std::size_t>(slot)];
  int fits = b.data != nullptr && b.bytes >= bytes, all = 0;
  check_mpi(MPI_Allreduce(&fits, &all, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce", comm);
  fresh = !all;
  if (fresh) {
    if (b.data) shared_free(b.data);  // every rank holds one here: made together, by the same calls
    b = {};
    b.data = static_cast<std::byte*>(shared_allocate(comm, static_cast<index_t>(bytes), 0, false));
    b.bytes = bytes;
  }
  return b.data;
}

std::byte* Workspace::take(int slot, std::size_t bytes, bool& fresh, HugePages huge) {
  if (slot < 0) redist::detail::fail("apps::Workspace::take: slot must be >= 0, got ", slot);
  if (buffers_.size() <= static_cast<std::size_t>(slot)) buffers_.resize(static_cast<std::size_t>(slot) + 1);
  Buffer& b = buffers_[static_cast<std::size_t>(slot)];
  fresh = b.data == nullptr || b.bytes < bytes;
  if (fresh) {
    detail::free_fresh(b.data, b.bytes);
    b = {};
    if (std::byte* p = detail::allocate_fresh(bytes, huge)) b = {p, bytes};
  }
  return b.data;
}

namespace detail {

int rank_of(MPI_Comm comm) {
  // Local (no communicator to agree over), as make_plan's: before, MPI_Comm_rank
  // met MPI_ERRORS_ARE_FATAL and ended the job.
  if (comm == MPI_COMM_NULL)
    throw Error("redist::apps: comm is MPI_COMM_NULL: the calls are collective over a communicator");
  int r = 0;
  redist::detail::check_mpi(MPI_Comm_rank(comm, &r), "MPI_Comm_rank", comm);
  return r;
}
int size_of(MPI_Comm comm) {
  int s = 0;
  redist::detail::check_mpi(MPI_Comm_size(comm, &s), "MPI_Comm_size", comm);
  return s;
}

index_t local_elements(const Layout& layout, int rank) { return LocalIndex(layout, rank).elements(); }

std::string check_matrix(const char* what, const Layout& layout, const void* data, int rank, int ranks) {
  std::ostringstream os;
  if (layout.ndim() != 2)
    os << what << " must be a 2-D layout, got '" << layout.spec() << "'";
  else if (layout.elem_size() != static_cast<index_t>(sizeof(double)))
    os << what << " must hold doubles (esize=8), got '" << layout.spec() << "'";
  else if (layout.storage().kind == StorageKind::tile_pointers)  // one buffer per rank: data
    os << what << " is one buffer per rank: storage=tile or local_array, got storage=tile_pointers in '"
       << layout.spec() << "'";
  else if (std::string e = layout.check(ranks); !e.empty())
    os << what << ": " << e;
  else {
    try {  // this rank's storage map: an ld= below its local rows throws here, named for the matrix
      if (const index_t n = local_elements(layout, rank); !data && n > 0)
        os << what << ": rank " << rank << " stores elements of '" << layout.spec() << "' but passed null data";
    } catch (const Error& e) {
      os << what << ": " << e.what();
    }
  }
  return os.str();
}

std::string resolve(const char* what, const Layout& layout, const Submatrix& sub, Box& box) {
  const Coord shape = layout.shape();
  const Coord at = sub.at.ndim() ? sub.at : Coord{0, 0};
  std::ostringstream os;
  if (at.ndim() != 2 || (sub.size.ndim() != 0 && sub.size.ndim() != 2)) {
    os << what << ": the submatrix's at and size must have 2 dimensions (or none), got at "
       << (sub.at.ndim() ? sub.at.str() : "(none)") << " and size " << (sub.size.ndim() ? sub.size.str() : "(none)");
    return os.str();
  }
  for (int d = 0; d < 2; ++d)
    if (at[d] < 0 || at[d] > shape[d]) {  // before the rest is computed from it (no overflow)
      os << what << ": the submatrix at " << at.str() << " must start in the matrix " << shape.str()
         << " (0 <= at <= the matrix's extent in each dimension)";
      return os.str();
    }
  Coord size = sub.size;
  if (size.ndim() == 0) size = Coord{shape[0] - at[0], shape[1] - at[1]};
  for (int d = 0; d < 2; ++d) {
    index_t end = 0;
    if (at[d] < 0 || size[d] < 0 || !fits_add(at[d], size[d], end) || end > shape[d]) {
      os << what << ": the submatrix " << size.str() << " at " << at.str() << " must lie in the matrix "
         << shape.str() << " (at >= 0, size >= 0, at + size <= the matrix's extent in each dimension)";
      return os.str();
    }
  }
  box = Box{at, size};
  return {};
}

bool whole(const Layout& layout, const Box& box) { return box == Box{Coord{0, 0}, layout.shape()}; }

bool in_place(const Layout& user, const Box& box, const Layout& work) { return user == work && whole(user, box); }

std::string check_options(const char* call, const Options& o, int ranks) {
  std::ostringstream os;
  if (o.tile < 0) os << call << ": options.tile must be >= 0 (0: the model's choice), got " << o.tile;
  else if (o.inner < 0) os << call << ": options.inner must be >= 0 (0: min(32, tile)), got " << o.inner;
  else if (o.threads < 1) os << call << ": options.threads must be >= 1, got " << o.threads;
  else if (o.comm_mode != runtime::CommMode::multiple && o.comm_mode != runtime::CommMode::funneled &&
           o.comm_mode != runtime::CommMode::workers)
    os << call << ": options.comm_mode must be runtime::CommMode::multiple, funneled or workers, got "
       << static_cast<int>(o.comm_mode);
  else if (o.huge_pages != HugePages::automatic && o.huge_pages != HugePages::never &&
           o.huge_pages != HugePages::always)
    os << call << ": options.huge_pages must be HugePages::automatic, never or always, got "
       << static_cast<int>(o.huge_pages);
  else {
    try {
      check_strategy(o.strategy);
      work_layout(1, 1, ranks, o);  // the grid
    } catch (const Error& e) {
      os << call << ": " << e.what();
    }
  }
  return os.str();
}

namespace {
// The layout with ld= cleared: ranks may pass different leading dimensions.
std::string same_text(const Layout& l) {
  if (l.storage().kind != StorageKind::local_array || l.storage().ld == 0) return l.spec();
  return Layout(l.shape(), l.partitions(), l.ownership(), Storage{StorageKind::local_array, 0}, l.elem_size()).spec();
}
}  // namespace

void agree(MPI_Comm comm, const std::string& error, const std::vector<const Layout*>& layouts,
           const std::vector<Box>& boxes, const Options& options, const std::vector<double>& scalars) {
  redist::detail::agree(comm, error);
  std::vector<redist::detail::Same> items;
  for (const Layout* l : layouts) items.push_back({"layout differs", same_text(*l)});
  for (const Box& b : boxes) items.push_back({"submatrix differs", b.size.str() + " at " + b.lo.str()});
  std::ostringstream o;  // each field named, as the message shows both ranks' texts
  o << "tile=" << options.tile << " inner=" << options.inner << " threads=" << options.threads
    << " strategy=" << options.strategy << " grid=" << (options.grid.ndim() ? options.grid.str() : std::string("auto"))
    << " comm_mode="
    << (options.comm_mode == runtime::CommMode::multiple   ? "multiple"
        : options.comm_mode == runtime::CommMode::funneled ? "funneled"
        : options.comm_mode == runtime::CommMode::workers  ? "workers"
                                                           : std::to_string(static_cast<int>(options.comm_mode)))
    << " push=" << options.push
    << " read_in_place=" << options.read_in_place << " lend=" << options.lend
    << " shared_work=" << options.shared_work;
  // With shared_work the workspace's windows are made and freed collectively: every rank has one or none.
  if (options.shared_work) o << " workspace=" << (options.workspace != nullptr);
  items.push_back({"options differ", o.str()});
  if (!scalars.empty()) {
    std::ostringstream v;  // exact: hexadecimal floating point
    for (double x : scalars) v << std::hexfloat << x << ' ';
    items.push_back({"alpha and beta differ", v.str()});
  }
  redist::detail::agree_same(comm, items, "every rank must pass the same layouts, options and scalars");
}

runtime::Options runtime_options(const Options& options) {
  runtime::Options o;
  o.threads = options.threads;
  int level = MPI_THREAD_SINGLE;
  redist::detail::check_mpi(MPI_Query_thread(&level), "MPI_Query_thread");
  o.comm_mode = options.comm_mode;
  o.push = options.push;
  o.read_in_place = options.read_in_place;
  o.lend = options.lend;
  // The runtime's requirement (runtime::run): multiple, and workers with more than one
  // thread, need MPI_THREAD_MULTIPLE; funneled works at any level.
  if (level < MPI_THREAD_MULTIPLE && (o.comm_mode == runtime::CommMode::multiple ||
                                      (o.comm_mode == runtime::CommMode::workers && o.threads > 1)))
    o.comm_mode = runtime::CommMode::funneled;
  return o;
}

namespace {
// Runs fn(lo, hi) over `parts` contiguous pieces of [0, bytes), on parts - 1
// threads and the caller (page-aligned pieces).
template <class Fn>
void in_parts(std::size_t bytes, int parts, Fn fn) {
  const std::size_t kPage = redist::detail::page_bytes();
  const std::size_t per = (bytes / static_cast<std::size_t>(parts) + kPage - 1) / kPage * kPage;
  std::vector<std::thread> helpers;
  for (int i = 1; i < parts; ++i) {
    const std::size_t lo = std::min(bytes, per * static_cast<std::size_t>(i)), hi = std::min(bytes, lo + per);
    if (lo >= hi) continue;
    try {
      helpers.emplace_back(fn, lo, hi);
    } catch (const std::system_error&) {
      fn(lo, hi);  // no thread to be had: the caller does that piece (never an error on one rank)
    }
  }
  fn(std::size_t{0}, std::min(bytes, per));
  for (std::thread& t : helpers) t.join();
}

// The regions of the working layout's tiles on and below the diagonal of a square
// matrix: one per tile column, from its diagonal tile down.
std::vector<Region> lower_regions(const Layout& work) {
  const index_t n = work.shape()[0], t = work.partition(1).tile();
  std::vector<Region> out;
  for (index_t j = 0; j < n; j += t) {
    Region r;
    r.size = Coord{n - j, std::min(t, n - j)};
    r.src_offset = r.dst_offset = Coord{j, j};
    out.push_back(r);
  }
  return out;
}

// This rank's byte ranges of the working layout's tiles in tile columns [c0, c1]
// (tile storage), only those on and below the diagonal when `lower`, merged where
// they touch.
std::vector<std::pair<std::size_t, std::size_t>> tile_bytes(const Layout& work, int rank, bool lower,
                                                            index_t c0 = 0, index_t c1 = -1) {
  const LocalIndex local(work, rank);
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (index_t o = 0; o < local.ntiles(); ++o) {
    const Coord t = local.tile(o);
    if ((lower && t[0] < t[1]) || t[1] < c0 || (c1 >= 0 && t[1] > c1)) continue;
    const Box b = work.tile_box(t);
    const auto lo = static_cast<std::size_t>(local.address(t, b.lo).offset) * sizeof(double);
    const auto hi = lo + static_cast<std::size_t>(b.size.volume()) * sizeof(double);
    if (!out.empty() && out.back().second == lo)
      out.back().second = hi;
    else
      out.emplace_back(lo, hi);
  }
  return out;
}

// Faults in the pages of [storage + lo, storage + hi) (kernels/pages.hpp).
void populate(std::byte* storage, std::size_t lo, std::size_t hi) {
  if (lo < hi) redist::detail::populate_for_write(storage + lo, hi - lo);
}

// Faults in the pages of `ranges` of `storage`.
void touch(std::byte* storage, const std::vector<std::pair<std::size_t, std::size_t>>& ranges) {
  for (const auto& [a, b] : ranges) populate(storage, a, b);
}
}  // namespace

namespace {
// What travels, as `parts` groups for one plan each: the working layout's tile
// columns of `regions` (Part::lower's regions already are one per tile column; a
// whole matrix is cut at its tile columns) in groups of consecutive columns with
// about equal volume. One group (the regions as they are) when parts is 1.
std::vector<std::vector<Region>> split(std::vector<Region> regions, const Layout& work, int parts) {
  if (parts <= 1) return {std::move(regions)};
  if (regions.size() == 1) {
    const index_t m = work.shape()[0], n = work.shape()[1], t = work.partition(1).tile();
    regions.clear();
    for (index_t j = 0; j < n; j += t) {
      Region r;
      r.size = Coord{m, std::min(t, n - j)};
      r.src_offset = r.dst_offset = Coord{0, j};
      regions.push_back(r);
    }
  }
  index_t total = 0;
  for (const Region& r : regions) total += r.size.volume();
  std::vector<std::vector<Region>> out(1);
  index_t done = 0;
  for (std::size_t i = 0; i < regions.size(); ++i) {
    out.back().push_back(regions[i]);
    done += regions[i].size.volume();
    // This group holds its share: the next region starts the next group.
    if (i + 1 < regions.size() && static_cast<int>(out.size()) < parts &&
        done * parts >= total * static_cast<index_t>(out.size()))
      out.emplace_back();
  }
  return out;
}

bool thread_multiple() {
  int level = MPI_THREAD_SINGLE;
  redist::detail::check_mpi(MPI_Query_thread(&level), "MPI_Query_thread");
  return level >= MPI_THREAD_MULTIPLE;
}
}  // namespace

WorkMatrix::WorkMatrix(const Layout& user, void* data, const Box& sub, const Layout& work, MPI_Comm comm,
                       const Options& options, bool load, int slot, double& seconds, Part part)
    : user_(user),
      work_(work),
      at_(sub.lo),
      moved_(!in_place(user, sub, work)),
      data_(data),
      comm_(comm) {
  exec_.strategy = options.strategy;
  const double t0 = MPI_Wtime();
  const std::size_t bytes = static_cast<std::size_t>(local_elements(work, rank_of(comm))) * sizeof(double);
  if (!moved()) {
    collection_.emplace(work, comm, data, bytes);
    // In shared windows, tasks read each other's tiles in place (runtime::Options::read_in_place;
    // the options are the same on every rank, so every rank takes part or none).
    if (options.read_in_place) collection_->share(shared_ranges(comm, data, static_cast<index_t>(bytes)));
    return;
  }
  // Several plans at once need MPI_THREAD_MULTIPLE (each execute is collective on
  // its plan's own communicator); every rank sees the same level and threads.
  const int parts = std::max(1, options.threads);
  const bool parallel = parts > 1 && thread_multiple();
  groups_ = split(part == Part::lower ? lower_regions(work) : std::vector<Region>{Region::whole(work.shape())}, work,
                  parallel ? parts : 1);
  bool fresh = true;
  std::byte* storage = nullptr;
  if (options.shared_work && options.workspace) {
    storage = options.workspace->take_shared(slot, bytes, comm, fresh);  // collective (every rank has one: agreed)
  } else if (options.shared_work) {
    // Collective; not zeroed: fresh, its pages faulted below as the heap's are (a
    // rank without tiles gets a non-null dummy, freed alike).
    shared_.reset(static_cast<std::byte*>(shared_allocate(comm, static_cast<index_t>(bytes), 0, false)));
    storage = shared_.get();
  } else if (options.workspace) {
    storage = options.workspace->take(slot, bytes, fresh, options.huge_pages);
  } else {
    owned_ = std::unique_ptr<std::byte, Free>(allocate_fresh(bytes, options.huge_pages), Free{bytes});
    storage = owned_.get();
  }
  redist::detail::agree(comm, storage ? std::string() : "apps: cannot allocate " + std::to_string(bytes) +
                                                        " bytes for the working layout '" + work.spec() + "'");
  // Fresh memory is not zeroed when the move fills it (it writes every element): the
  // page faults of a fresh N^2/P array cost more than the copy into it here, and
  // zeroing adds a pass. With several worker threads the move runs as that many
  // plans at once, one per thread, so that the threads' cores take the faults and
  // do the copies in parallel (a 256 MB copy into fresh pages: 0.10 s on one
  // thread, 0.05 s on two, 0.015 s into touched pages; docs/apps.md). Without
  // MPI_THREAD_MULTIPLE the threads only fault the pages first, in parallel, and one
  // plan copies. With one thread the calling thread faults them first too: on 2
  // ranks x 1 thread the move in then took 0.050 s instead of 0.055 s (potrf, N =
  // 6000) and 0.84 s instead of 1.09 s (gemm), medians of 4 launches each (the move's
  // own faults, taken while it copies from the other rank, are slower). In huge
  // pages where options.huge_pages says so (huge_pages.hpp). Not loaded (gemm's
  // C with beta = 0): not touched here at all; the GEMM tasks that write it fault
  // its pages on the runtime's workers.
  if (load && fresh && !parallel && part == Part::whole)
    in_parts(bytes, parts, [storage](std::size_t lo, std::size_t hi) { populate(storage, lo, hi); });
  else if (load && fresh && !parallel) {
    // Only the pages of the tiles that travel: [0, sum) numbers their bytes in order.
    const auto ranges = tile_bytes(work, rank_of(comm), true);
    std::size_t sum = 0;
    for (const auto& r : ranges) sum += r.second - r.first;
    in_parts(sum, parts, [storage, &ranges](std::size_t lo, std::size_t hi) {
      std::size_t at = 0;  // bytes of the ranges before range i
      for (const auto& [a, b] : ranges) {
        const std::size_t from = std::max(lo, at), to = std::min(hi, at + (b - a));
        populate(storage, a + (from - at), a + (to - at));  // nothing when from >= to
        at += b - a;
        if (at >= hi) break;
      }
    });
  }
  // The parallel move: each thread first faults the pages of its own tiles, then
  // copies into them (copying straight into fresh pages, the faults inside the
  // copy, was no faster than one thread faulting and one copying: docs/apps.md).
  std::vector<std::vector<std::pair<std::size_t, std::size_t>>> pages;
  if (load && fresh && groups_.size() > 1) {
    const index_t t = work.partition(1).tile();
    for (const std::vector<Region>& g : groups_)
      pages.push_back(tile_bytes(work, rank_of(comm), part == Part::lower, g.front().dst_offset[1] / t,
                                 (g.back().dst_offset[1] + g.back().size[1] - 1) / t));
  }
  collection_.emplace(work, comm, storage, bytes);
  // Tasks read the tiles of their node's ranks in place in the shared working copy.
  if (options.shared_work && options.read_in_place)
    collection_->share(shared_ranges(comm, storage, static_cast<index_t>(bytes)));
  if (load) move(true, pages);
  seconds += MPI_Wtime() - t0;
}

void WorkMatrix::Free::operator()(std::byte* p) const { free_fresh(p, bytes); }
void WorkMatrix::SharedFree::operator()(std::byte* p) const {
  try {
    shared_free(p);
  } catch (const std::exception&) {
    // A destructor must not throw (an MPI failure freeing the window, then, is
    // not the call's error: its results are in the caller's storage already).
  }
}

void WorkMatrix::move(bool in, const std::vector<std::vector<std::pair<std::size_t, std::size_t>>>& pages) {
  const void* src = in ? data_ : collection_->storage();
  void* dst = in ? collection_->storage() : data_;
  std::vector<Plan> plans;
  for (std::vector<Region> g : groups_) {
    for (Region& r : g) {  // the caller's side lies at at_ in its matrix
      Coord& user_side = in ? r.src_offset : r.dst_offset;
      for (int d = 0; d < 2; ++d) user_side[d] += at_[d];
    }
    plans.push_back(in ? make_plan(user_, work_, g, comm_, exec_) : make_plan(work_, user_, g, comm_, exec_));
  }
  if (plans.size() == 1) {
    plans[0].execute(src, dst);
    return;
  }
  std::vector<std::exception_ptr> errors(plans.size());
  auto run = [&](std::size_t i) {
    try {
      if (i < pages.size()) touch(static_cast<std::byte*>(dst), pages[i]);
      plans[i].execute(src, dst);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  std::vector<std::thread> helpers;
  for (std::size_t i = 1; i < plans.size(); ++i) {
    try {
      helpers.emplace_back(run, i);
    } catch (const std::system_error&) {
      run(i);  // no thread to be had: the caller runs that plan (each has its own communicator)
    }
  }
  run(0);
  for (std::thread& t : helpers) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

void WorkMatrix::store_back(double& seconds) {
  if (!moved()) return;
  const double t0 = MPI_Wtime();
  move(false, {});
  seconds += MPI_Wtime() - t0;
}

void run_graph(runtime::TaskGraph& graph, MPI_Comm comm, const Options& options, Report& r) {
  const double t0 = MPI_Wtime();
  const runtime::Stats stats = runtime::run(graph, comm, runtime_options(options));
  r.lent = stats.lent;
  r.tasks = stats.tasks;
  r.busy_seconds = stats.busy_seconds;
  r.compute_seconds = MPI_Wtime() - t0;
}

void run_and_store(runtime::TaskGraph& graph, WorkMatrix& result, MPI_Comm comm, const Options& options, Report& r) {
  run_graph(graph, comm, options, r);
  result.store_back(r.back_seconds);
}

}  // namespace detail
}  // namespace redist::apps
