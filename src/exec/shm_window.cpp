#include "exec/shm_window.hpp"

#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <span>
#include <string>

#include "mpi/agree.hpp"
#include "redist/shm.hpp"

namespace redist {
namespace detail {
namespace {

constexpr index_t kPage = 4096;

// One window of shared_allocate: every member's part, mapped in this process.
struct Window {
  MPI_Win win = MPI_WIN_NULL;
  MPI_Comm comm = MPI_COMM_NULL;    // the node's ranks (freed with the window)
  std::vector<int> world;           // members' ranks in MPI_COMM_WORLD
  std::vector<std::byte*> base;     // member's part, in this process
  std::vector<index_t> bytes;       // member's part size
  int me = 0;
};

struct Registry {
  std::mutex mu;
  std::map<std::uint64_t, Window> windows;  // by serial
  std::map<const void*, std::uint64_t> mine;  // this rank's part -> serial
  std::uint64_t next = 1;
};
Registry& registry_of_windows() {
  static Registry r;
  return r;
}

// Collective over `node`: why the node's parts (`asked` bytes here, as
// MPI_Win_allocate_shared is asked) do not fit where MPI keeps shared windows, or "". Open MPI puts a node's window in one
// file of $OMPI_MCA_osc_sm_backing_directory (default /dev/shm); where it had not
// the room, MPI_Win_allocate_shared printed a warning and hung (Open MPI 4.1, a
// 64 MB /dev/shm as Docker gives, 256 MB asked), or the pages would fault with
// SIGBUS when first touched. $REDIST_SHM_FREE_BYTES stands for the free bytes
// (tests). A directory that cannot be queried is not checked.
std::string backing_room(MPI_Comm node, index_t asked) {
  std::int64_t need = asked;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &need, 1, MPI_INT64_T, MPI_SUM, node), "MPI_Allreduce", node);
  if (need == 0) return {};
  const char* dir = std::getenv("OMPI_MCA_osc_sm_backing_directory");
  if (!dir || !*dir) dir = "/dev/shm";
  std::int64_t free = -1;
  if (const char* fake = std::getenv("REDIST_SHM_FREE_BYTES"); fake && *fake) {
    free = std::strtoll(fake, nullptr, 10);
  } else {
    struct statvfs st {};
    if (statvfs(dir, &st) != 0) return {};
    free = static_cast<std::int64_t>(st.f_bavail) * static_cast<std::int64_t>(st.f_frsize);
  }
  need += index_t{64} << 10;  // the window's own header and rounding (Open MPI asked 256,012,552 for 2 x 128e6)
  if (need <= free) return {};
  return cat("shared_allocate: the shared windows of this node need ", need, " bytes in ", dir, ", which has ", free,
             " free: give the job more shared memory (docker run --shm-size, or a larger tmpfs there), or keep the "
             "arrays on the heap");
}

}  // namespace

MPI_Comm node_comm(MPI_Comm comm, int node_size) {
  // The node size every rank asks for (Options::node_size, else its own
  // $REDIST_NODE_SIZE), agreed: a malformed value on one rank is the same error
  // everywhere (not a throw there while the others wait in the split), and
  // different values are refused (each rank would cut its node at its own size).
  std::string err;
  int k = 0;
  try {
    k = node_size_from(node_size);
  } catch (const Error& e) {
    err = e.what();
  }
  agree(comm, err);
  int v[2] = {k, -k};
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_INT, MPI_MIN, comm), "MPI_Allreduce", comm);
  if (v[0] != -v[1])
    fail_mismatch("redist: ranks asked for different node sizes (", v[0], " and ", -v[1],
                  " ranks per node; 0: the whole node), from Options::node_size or $REDIST_NODE_SIZE; every rank "
                  "must ask for the same");
  MPI_Comm shared, node;
  check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared), "MPI_Comm_split_type", comm);
  if (k <= 0) return shared;
  int r = 0;
  check_mpi(MPI_Comm_rank(shared, &r), "MPI_Comm_rank", comm);
  check_mpi(MPI_Comm_split(shared, r / k, r, &node), "MPI_Comm_split", comm);
  check_mpi(MPI_Comm_free(&shared), "MPI_Comm_free", comm);
  return node;
}

std::vector<int> node_leaders(MPI_Comm comm, int node_size) {
  MPI_Comm node = node_comm(comm, node_size);
  int rank = 0, size = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank", comm);
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size", comm);
  int leader = rank;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, node), "MPI_Allreduce", comm);
  check_mpi(MPI_Comm_free(&node), "MPI_Comm_free", comm);
  std::vector<int> leaders(static_cast<size_t>(size));
  check_mpi(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm), "MPI_Allgather", comm);
  return leaders;
}

WindowRef find_window(const void* p, index_t bytes, const std::vector<int>** members) {
  Registry& reg = registry_of_windows();
  std::lock_guard<std::mutex> lock(reg.mu);
  const auto* b = static_cast<const std::byte*>(p);
  for (auto& [serial, w] : reg.windows)
    for (size_t r = 0; r < w.base.size(); ++r)
      if (w.base[r] && b >= w.base[r] && b + bytes <= w.base[r] + w.bytes[r]) {
        if (members) *members = &w.world;
        return {serial, static_cast<std::int64_t>(r), b - w.base[r]};
      }
  if (members) *members = nullptr;
  return {};
}

std::byte* window_address(const WindowRef& ref, index_t bytes, int world_rank) {
  Registry& reg = registry_of_windows();
  std::lock_guard<std::mutex> lock(reg.mu);
  const auto it = reg.windows.find(ref.serial);
  if (it == reg.windows.end() || ref.owner < 0 || ref.owner >= static_cast<std::int64_t>(it->second.base.size()))
    return nullptr;
  const Window& w = it->second;
  const auto r = static_cast<size_t>(ref.owner);
  if (ref.offset < 0 || bytes < 0 || ref.offset + bytes > w.bytes[r]) return nullptr;
  if (world_rank >= 0 && w.world[r] != world_rank) return nullptr;
  return w.base[r] + ref.offset;
}

}  // namespace detail

std::vector<std::span<const std::byte>> shared_ranges(MPI_Comm comm, const void* p, index_t bytes) {
  detail::agree(comm, bytes < 0 ? detail::cat("shared_ranges: bytes must be >= 0, got ", bytes) : std::string());
  const detail::WindowRef ref = bytes > 0 ? detail::find_window(p, bytes, nullptr) : detail::WindowRef{};
  int world = 0, ranks = 1;
  detail::check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &world), "MPI_Comm_rank", comm);
  detail::check_mpi(MPI_Comm_size(comm, &ranks), "MPI_Comm_size", comm);
  constexpr int kWords = 5;
  const std::int64_t mine[kWords] = {static_cast<std::int64_t>(ref.serial), ref.owner, ref.offset, bytes, world};
  std::vector<std::int64_t> all(static_cast<std::size_t>(ranks) * kWords);
  detail::check_mpi(MPI_Allgather(mine, kWords, MPI_INT64_T, all.data(), kWords, MPI_INT64_T, comm),
                    "MPI_Allgather");
  std::vector<std::span<const std::byte>> out(static_cast<std::size_t>(ranks));
  for (std::size_t r = 0; r < out.size(); ++r) {
    const std::int64_t* e = all.data() + r * kWords;
    if (e[1] < 0) continue;  // not in a window
    if (std::byte* at = detail::window_address({static_cast<std::uint64_t>(e[0]), e[1], e[2]}, e[3],
                                               static_cast<int>(e[4])))
      out[r] = {at, static_cast<std::size_t>(e[3])};
  }
  return out;
}

int node_size_from(int requested) {
  if (requested > 0) return requested;
  if (requested < 0) throw Error(detail::cat("node size must be >= 0 (0: the whole node), got ", requested));
  const char* env = std::getenv("REDIST_NODE_SIZE");
  if (!env || !*env) return 0;
  char* end = nullptr;
  const long v = std::strtol(env, &end, 10);
  if (*end || v < 0 || v > (1 << 30))
    throw Error(detail::cat("REDIST_NODE_SIZE=", env, ": expected a number of ranks per node >= 0 (0: the whole node)"));
  return static_cast<int>(v);
}

void* shared_allocate(MPI_Comm comm, index_t bytes, int node_size, bool zero) {
  using namespace detail;
  if (comm == MPI_COMM_NULL) throw Error("redist: shared_allocate needs a communicator, got MPI_COMM_NULL");
  if (std::string e = outside_mpi("shared_allocate", kWindowNeedsMpi); !e.empty()) throw Error(e);  // Open MPI aborted the job
  if (std::string e = intercomm_problem(comm, "redist: shared_allocate"); !e.empty()) throw Error(e);
  std::string err;
  if (bytes < 0) err = cat("shared_allocate: bytes must be >= 0, got ", bytes);
  int k = 0;
  if (err.empty()) try {
      k = node_size_from(node_size);
    } catch (const Error& e) {
      err = e.what();
    }
  agree(comm, err);
  // MPI aligns the parts to 8 bytes only (Open MPI 4.1: 264 bytes past a page
  // boundary); a page more for each part puts it on a page boundary, as a heap
  // allocation of this size would be. OpenBLAS's results depend on the alignment
  // of their operands (the tile QR differed in the last bits between parts at 8 and
  // at 16 bytes), so a window must not change them.
  const index_t asked = bytes > 0 ? bytes + kPage : 0;
  Window w;
  w.comm = node_comm(comm, k);
  try {
    agree(comm, backing_room(w.comm, asked));
  } catch (const Error&) {
    check_mpi(MPI_Comm_free(&w.comm), "MPI_Comm_free", comm);
    throw;
  }
  MPI_Info info;
  check_mpi(MPI_Info_create(&info), "MPI_Info_create", comm);
  // Each part on pages of its own, first touched by its rank (NUMA placement).
  check_mpi(MPI_Info_set(info, "alloc_shared_noncontig", "true"), "MPI_Info_set", comm);
  void* mine = nullptr;
  // unchecked here: a failure is agreed below, so every rank throws the same error
  const int rc = MPI_Win_allocate_shared(static_cast<MPI_Aint>(asked), 1, info, w.comm, &mine, &w.win);
  check_mpi(MPI_Info_free(&info), "MPI_Info_free", comm);
  err = rc == MPI_SUCCESS ? std::string() : cat("shared_allocate: MPI_Win_allocate_shared of ", bytes, " bytes failed");
  agree(comm, err);
  int n = 0;
  check_mpi(MPI_Comm_size(w.comm, &n), "MPI_Comm_size", comm);
  check_mpi(MPI_Comm_rank(w.comm, &w.me), "MPI_Comm_rank", comm);
  w.base.resize(static_cast<size_t>(n));
  w.bytes.resize(static_cast<size_t>(n));
  // Each member's padding to its page boundary, as it maps the window (the same
  // everywhere on Linux, where the segment is mapped at a page boundary in every
  // process; exchanged so that nothing depends on it).
  const auto page = static_cast<std::uintptr_t>(kPage);
  const auto pad = asked > 0 ? static_cast<std::int64_t>((page - reinterpret_cast<std::uintptr_t>(mine) % page) % page) : 0;
  std::vector<std::int64_t> pads(static_cast<size_t>(n));
  check_mpi(MPI_Allgather(&pad, 1, MPI_INT64_T, pads.data(), 1, MPI_INT64_T, w.comm), "MPI_Allgather", comm);
  for (int r = 0; r < n; ++r) {
    MPI_Aint size = 0;
    int disp = 1;
    void* base = nullptr;
    check_mpi(MPI_Win_shared_query(w.win, r, &size, &disp, &base), "MPI_Win_shared_query", comm);
    const auto ru = static_cast<size_t>(r);
    w.base[ru] = size > 0 ? static_cast<std::byte*>(base) + pads[ru] : static_cast<std::byte*>(base);
    w.bytes[ru] = size > 0 ? size - kPage : 0;
  }
  if (asked > 0) mine = static_cast<std::byte*>(mine) + pad;
  MPI_Group node_group, world_group;
  check_mpi(MPI_Comm_group(w.comm, &node_group), "MPI_Comm_group", comm);
  check_mpi(MPI_Comm_group(MPI_COMM_WORLD, &world_group), "MPI_Comm_group", comm);
  std::vector<int> ranks(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) ranks[static_cast<size_t>(r)] = r;
  w.world.resize(static_cast<size_t>(n));
  check_mpi(MPI_Group_translate_ranks(node_group, n, ranks.data(), world_group, w.world.data()),
            "MPI_Group_translate_ranks", comm);
  check_mpi(MPI_Group_free(&node_group), "MPI_Group_free", comm);
  check_mpi(MPI_Group_free(&world_group), "MPI_Group_free", comm);
  // Loads and stores of other ranks through the window: a passive epoch for its
  // lifetime (MPI_Win_sync orders them; the shm strategy's messages synchronize).
  check_mpi(MPI_Win_lock_all(MPI_MODE_NOCHECK, w.win), "MPI_Win_lock_all", comm);
  if (bytes > 0 && zero) std::memset(mine, 0, static_cast<size_t>(bytes));
  // A serial every member knows the window by: the number its first member (rank 0
  // of the node) takes from its own counter, with that member's world rank above
  // it. Unique in every process although several threads may make windows over
  // other communicators at once: an agreed maximum of the members' counters was
  // not (two threads' windows got the same serial, and the second one's
  // shared_free found no window: a crash).
  Registry& reg = registry_of_windows();
  std::uint64_t serial = 0;
  if (w.me == 0) {
    // A member outside MPI_COMM_WORLD (spawned or connected processes): its process
    // id instead, with the top bit set (the members share a node: distinct ids).
    const std::uint64_t who = w.world[0] >= 0 ? static_cast<std::uint64_t>(w.world[0])
                                               : (std::uint64_t{1} << 23) | (static_cast<std::uint64_t>(getpid()) & 0x7fffff);
    std::lock_guard<std::mutex> lock(reg.mu);
    serial = (who << 40) | reg.next++;
  }
  check_mpi(MPI_Bcast(&serial, 1, MPI_UINT64_T, 0, w.comm), "MPI_Bcast", comm);
  std::lock_guard<std::mutex> lock(reg.mu);
  // A part of 0 bytes has no address of its own: key this rank's part by a
  // unique dummy so shared_free still finds the window.
  void* key = mine && bytes > 0 ? mine : static_cast<void*>(new char[1]);
  if (reg.windows.count(serial)) {  // cannot happen (above); never drop a window silently
    if (key != mine) delete[] static_cast<char*>(key);
    throw Error(cat("shared_allocate: internal error: window serial ", serial, " taken twice"));
  }
  reg.mine[key] = serial;
  reg.windows.emplace(serial, std::move(w));
  return key;
}

void shared_free(void* p) {
  using namespace detail;
  if (!p) return;
  if (std::string e = outside_mpi("shared_free", kWindowNeedsMpi); !e.empty()) throw Error(e);  // Open MPI aborted the job
  Registry& reg = registry_of_windows();
  Window w;
  {
    std::lock_guard<std::mutex> lock(reg.mu);
    const auto it = reg.mine.find(p);
    if (it == reg.mine.end()) throw Error("redist: shared_free: the pointer did not come from redist::shared_allocate");
    const auto wi = reg.windows.find(it->second);
    if (wi == reg.windows.end()) throw Error(cat("redist: shared_free: internal error: no window of serial ", it->second));
    w = std::move(wi->second);
    const bool dummy = w.bytes[static_cast<size_t>(w.me)] == 0;
    reg.windows.erase(wi);
    reg.mine.erase(it);
    if (dummy) delete[] static_cast<char*>(p);
  }
  check_mpi(MPI_Win_unlock_all(w.win), "MPI_Win_unlock_all", w.comm);
  check_mpi(MPI_Win_free(&w.win), "MPI_Win_free", w.comm);
  check_mpi(MPI_Comm_free(&w.comm), "MPI_Comm_free", MPI_COMM_WORLD);
}

}  // namespace redist
