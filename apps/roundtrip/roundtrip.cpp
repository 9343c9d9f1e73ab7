// The parts of the round trip (paper 000, sec. 8.7) that every algorithm shares:
// collective checks, the working layout, and the moves to it and back.
#include "roundtrip/roundtrip.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "mpi/agree.hpp"
#include "redist/error.hpp"

namespace redist::apps {

index_t model_tile(index_t n, int cores) {
  const index_t want = n / (2 * std::max(cores, 1) + 2);
  const index_t tile = std::clamp<index_t>(want / 32 * 32, 128, 640);
  return std::max<index_t>(1, std::min(tile, n));
}

Layout work_layout(index_t m, index_t n, int ranks, const Options& options) {
  Coord grid = options.grid;
  if (grid.ndim() == 0) {
    index_t p = 1;
    for (index_t d = 1; d * d <= ranks; ++d)
      if (ranks % d == 0) p = d;
    grid = Coord{p, ranks / p};
  }
  if (grid.ndim() != 2 || grid[0] < 1 || grid[1] < 1 || grid[0] * grid[1] != ranks)
    redist::detail::fail("apps: the grid of the working layout must be PxQ with P x Q = ", ranks,
                         " ranks, got ", grid.ndim() == 2 ? std::to_string(grid[0]) + "x" + std::to_string(grid[1])
                                                          : std::string("a grid of ") + std::to_string(grid.ndim()) +
                                                                " dimensions");
  const index_t tile = options.tile > 0 ? options.tile
                                        : model_tile(std::max(m, n), ranks * std::max(options.threads, 1));
  return block_cyclic_layout({m, n}, {std::max<index_t>(1, std::min(tile, m)), std::max<index_t>(1, std::min(tile, n))},
                             grid);
}

namespace detail {

int rank_of(MPI_Comm comm) {
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
  else if (std::string e = layout.check(ranks); !e.empty())
    os << what << ": " << e;
  else {
    try {
      if (!data && local_elements(layout, rank) > 0)
        os << what << ": rank " << rank << " stores elements of '" << layout.spec() << "' but passed null data";
    } catch (const Error& e) {
      os << what << ": " << e.what();
    }
  }
  return os.str();
}

std::string check_options(const char* call, const Options& o, int ranks) {
  std::ostringstream os;
  if (o.tile < 0) os << call << ": options.tile must be >= 0 (0: the model's choice), got " << o.tile;
  else if (o.inner < 0) os << call << ": options.inner must be >= 0 (0: min(32, tile)), got " << o.inner;
  else if (o.threads < 1) os << call << ": options.threads must be >= 1, got " << o.threads;
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
           const Options& options) {
  redist::detail::agree(comm, error);
  std::vector<redist::detail::Same> items;
  for (const Layout* l : layouts) items.push_back({"layout differs", same_text(*l)});
  std::ostringstream o;
  o << options.tile << ' ' << options.inner << ' ' << options.threads << ' ' << options.strategy << ' '
    << (options.grid.ndim() == 2 ? options.grid[0] * 100000 + options.grid[1] : -1);
  items.push_back({"options differ", o.str()});
  redist::detail::agree_same(comm, items, "every rank must pass the same layouts and options");
}

runtime::Options runtime_options(const Options& options) {
  runtime::Options o;
  o.threads = options.threads;
  int level = MPI_THREAD_SINGLE;
  redist::detail::check_mpi(MPI_Query_thread(&level), "MPI_Query_thread");
  o.comm_mode = level >= MPI_THREAD_MULTIPLE ? runtime::CommMode::multiple : runtime::CommMode::funneled;
  return o;
}

WorkMatrix::WorkMatrix(const Layout& user, void* data, const Layout& work, MPI_Comm comm, const Options& options,
                       bool load, double& seconds)
    : user_(user), work_(work), data_(data), comm_(comm) {
  exec_.strategy = options.strategy;
  const double t0 = MPI_Wtime();
  if (!moved()) {
    const std::size_t bytes = static_cast<std::size_t>(local_elements(work, rank_of(comm))) * sizeof(double);
    collection_.emplace(work, comm, data, bytes);
    return;
  }
  // Not zeroed when the move fills it (it writes every element): on this VM the page
  // faults of a fresh N^2/P array cost more than the copy into it, and zeroing adds
  // a pass. (Transparent huge pages, madvise'd, were 3x slower here: the kernel
  // compacts memory on the fault; docs/apps.md.)
  const std::size_t bytes = static_cast<std::size_t>(local_elements(work, rank_of(comm))) * sizeof(double);
  const std::size_t rounded = std::max<std::size_t>(64, (bytes + 63) / 64 * 64);
  storage_.reset(static_cast<std::byte*>(std::aligned_alloc(64, rounded)));
  redist::detail::agree(comm, storage_ ? std::string() : "apps: cannot allocate " + std::to_string(bytes) +
                                                         " bytes for the working layout '" + work.spec() + "'");
  if (!load) std::memset(storage_.get(), 0, bytes);
  collection_.emplace(work, comm, storage_.get(), bytes);
  if (load) {
    Plan to = make_plan(user_, work_, Region::whole(user_.shape()), comm_, exec_);
    to.execute(data_, collection_->storage());
  }
  seconds += MPI_Wtime() - t0;
}

void WorkMatrix::Free::operator()(std::byte* p) const { std::free(p); }

void WorkMatrix::store_back(double& seconds) {
  if (!moved()) return;
  const double t0 = MPI_Wtime();
  Plan back = make_plan(work_, user_, Region::whole(user_.shape()), comm_, exec_);
  back.execute(collection_->storage(), data_);
  seconds += MPI_Wtime() - t0;
}

void run_and_store(runtime::TaskGraph& graph, WorkMatrix& result, MPI_Comm comm, const Options& options, Report& r) {
  const double t0 = MPI_Wtime();
  r.tasks = runtime::run(graph, comm, runtime_options(options)).tasks;
  r.compute_seconds = MPI_Wtime() - t0;
  result.store_back(r.back_seconds);
}

}  // namespace detail
}  // namespace redist::apps
