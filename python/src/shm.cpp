// Storage in shared windows for DistArray (docs/python.md, "Storage"): numpy
// arrays over redist::shared_allocate, so that `shm` copies each element once
// between the ranks of a node (issue 14: the Python front end allocates there by
// default).
//
// A window is freed collectively, and Python frees objects when their last
// reference goes, at a different moment on every rank: a window cannot be freed
// by its array's destructor. The destructor only marks its window unused on this
// rank; the windows made over a communicator are freed at the next collective
// call that allocates over the same communicator (or reclaim_shared), once every
// rank marked them unused. Every rank made the same windows over a communicator
// in the same order, and frees only what all agree on, so the windows alive are
// the same everywhere. The bookkeeping hangs on the communicator as an MPI
// attribute: a communicator freed with windows alive leaves them to the process's
// end (their arrays must not outlive it, as any MPI object's).
#include <nanobind/ndarray.h>

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "common.hpp"
#include "mpi/agree.hpp"
#include "redist/shm.hpp"

namespace redist::python {
namespace {

struct CommWindows {
  std::mutex mu;
  std::int64_t next = 0;                 // the next window's number (the same on every rank)
  std::map<std::int64_t, void*> live;    // number -> shared_allocate's pointer
  std::set<std::int64_t> unused;         // windows whose arrays are gone on this rank
};
using State = std::shared_ptr<CommWindows>;

// The communicator freed: its record goes (arrays still alive keep it, through
// their owners, until they go; their windows are left to the process's end).
int delete_state(MPI_Comm /*comm*/, int /*keyval*/, void* value, void* /*extra*/) {
  delete static_cast<State*>(value);
  return MPI_SUCCESS;
}

int keyval() {
  static const int k = [] {
    int kv = MPI_KEYVAL_INVALID;
    // MPI_COMM_NULL_COPY_FN: a duplicate of the communicator starts with no windows.
    detail::check_mpi(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &delete_state, &kv, nullptr),
                      "MPI_Comm_create_keyval");
    return kv;
  }();
  return k;
}

// The windows made over `comm` (none yet: a new, empty record).
State state_of(MPI_Comm comm) {
  void* value = nullptr;
  int found = 0;
  detail::check_mpi(MPI_Comm_get_attr(comm, keyval(), &value, &found), "MPI_Comm_get_attr", comm);
  if (found) return *static_cast<State*>(value);
  auto* s = new State(std::make_shared<CommWindows>());
  detail::check_mpi(MPI_Comm_set_attr(comm, keyval(), s), "MPI_Comm_set_attr", comm);
  return *s;
}

// Collective over `comm`: frees the windows every rank marked unused; how many.
std::int64_t reclaim(MPI_Comm comm, CommWindows& s) {
  std::vector<std::int64_t> numbers;
  std::vector<int> unused;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    for (const auto& [n, p] : s.live) numbers.push_back(n), unused.push_back(s.unused.count(n) ? 1 : 0);
  }
  std::int64_t count[2] = {static_cast<std::int64_t>(numbers.size()), -static_cast<std::int64_t>(numbers.size())};
  detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, count, 2, MPI_INT64_T, MPI_MIN, comm), "MPI_Allreduce", comm);
  if (count[0] != -count[1])  // only if a rank allocated or freed alone: a bug here, not the caller's
    throw MpiError(detail::cat("redist: the ranks hold different numbers of shared windows over one communicator (",
                               count[0], " and ", -count[1], ")"),
                   MPI_ERR_OTHER);
  if (numbers.empty()) return 0;
  detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, unused.data(), static_cast<int>(unused.size()), MPI_INT, MPI_MIN, comm),
                    "MPI_Allreduce", comm);
  std::int64_t freed = 0;
  for (size_t i = 0; i < numbers.size(); ++i) {
    if (!unused[i]) continue;
    void* p = nullptr;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      p = s.live.at(numbers[i]);
      s.live.erase(numbers[i]);
      s.unused.erase(numbers[i]);
    }
    shared_free(p);  // collective over the window's node: every rank frees the same windows in this order
    ++freed;
  }
  return freed;
}

// What keeps a window's array alive: its destructor marks the window unused.
struct Owner {
  State state;
  std::int64_t number;
};

}  // namespace

void bind_shm(nb::module_& m) {
  m.def("shared_allocate", [](nb::handle comm, std::int64_t bytes, bool zero) {
    MPI_Comm c = comm_of(comm);
    State s = state_of(c);
    void* p = nullptr;
    std::int64_t number = 0;
    {
      nb::gil_scoped_release unlocked;
      reclaim(c, *s);
      p = shared_allocate(c, bytes, 0, zero);  // bytes < 0 on any rank, or no window: agreed
      std::lock_guard<std::mutex> lock(s->mu);
      number = s->next++;
      s->live.emplace(number, p);
    }
    nb::capsule owner(new Owner{s, number}, [](void* o) noexcept {
      auto* w = static_cast<Owner*>(o);
      {
        std::lock_guard<std::mutex> lock(w->state->mu);
        w->state->unused.insert(w->number);
      }
      delete w;
    });
    return nb::ndarray<nb::numpy, std::uint8_t, nb::ndim<1>>(p, {static_cast<size_t>(bytes)}, owner);
  }, nb::arg("comm").none(), nb::arg("bytes"), nb::arg("zero") = true,
     "Collective over comm: `bytes` (may differ per rank) in one MPI-3 shared window per node (redist::shared_allocate; "
     "zeroed unless zero=False, page-aligned), as a numpy uint8 array. The window is freed by a later shared_allocate "
     "or reclaim_shared over the same communicator once no rank holds the array (or a view of it) any more.");
  m.def("reclaim_shared", [](nb::handle comm) {
    MPI_Comm c = comm_of(comm);
    State s = state_of(c);
    nb::gil_scoped_release unlocked;
    return reclaim(c, *s);
  }, nb::arg("comm") = nb::none(),
     "Collective over comm: frees the shared windows made over comm whose arrays no rank holds any more; returns how "
     "many (DistArray's creation does it too).");
  m.def("shared_windows", [](nb::handle comm) {
    State s = state_of(comm_of(comm));
    std::lock_guard<std::mutex> lock(s->mu);
    return static_cast<std::int64_t>(s->live.size());
  }, nb::arg("comm") = nb::none(),
     "Local: the shared windows made over comm and not yet freed (the same on every rank).");
}

}  // namespace redist::python
