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
// attribute: when the communicator is freed (collectively), its delete callback
// frees the windows no rank holds any more; those still held are left, valid, to
// the process's end. (MPI_Comm_free then communicates: every rank must free its
// communicators in the same order.)
#include <nanobind/ndarray.h>

#include <atomic>
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
  // A duplicate of the communicator, made with the record (collectively): the
  // reclaims' own, and still there while the communicator is being freed.
  MPI_Comm own = MPI_COMM_NULL;
  std::int64_t next = 0;                 // the next window's number (the same on every rank)
  std::map<std::int64_t, void*> live;    // number -> shared_allocate's pointer
  std::set<std::int64_t> unused;         // windows whose arrays are gone on this rank
};
using State = std::shared_ptr<CommWindows>;

// Set by a delete callback on MPI_COMM_SELF, which MPI_Finalize runs first: from
// then on nothing is freed through MPI here (MPI frees what is left).
std::atomic<bool> finalizing{false};

// Collective over the record's communicator: frees the windows every rank marked
// unused; how many. One MPI_Allreduce of three numbers when no rank let go of a
// window, else a second of one bit per window. (A walk of every live window on
// each call made 10,000 live arrays cost 0.8 ms more per new one.)
std::int64_t reclaim(CommWindows& s) {
  std::int64_t count = 0;
  bool any = false;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    count = static_cast<std::int64_t>(s.live.size());
    any = !s.unused.empty();
  }
  std::int64_t v[3] = {count, -count, any ? -1 : 0};
  detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, v, 3, MPI_INT64_T, MPI_MIN, s.own), "MPI_Allreduce", s.own);
  if (v[0] != -v[1])  // only if a rank allocated or freed alone: a bug here, not the caller's
    throw MpiError(detail::cat("redist: the ranks hold different numbers of shared windows over one communicator (",
                               v[0], " and ", -v[1], ")"),
                   MPI_ERR_OTHER);
  if (count == 0 || v[2] == 0) return 0;  // no rank let go of a window
  std::vector<std::int64_t> numbers;
  std::vector<std::uint64_t> unused;  // bit i: window numbers[i] unused on this rank (then on every rank)
  {
    std::lock_guard<std::mutex> lock(s.mu);  // live is the same as above: only collective calls change it
    unused.assign((s.live.size() + 63) / 64, 0);
    for (const auto& [n, p] : s.live) {
      if (s.unused.count(n)) unused[numbers.size() / 64] |= std::uint64_t{1} << (numbers.size() % 64);
      numbers.push_back(n);
    }
  }
  detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, unused.data(), static_cast<int>(unused.size()), MPI_UINT64_T, MPI_BAND,
                                  s.own),
                    "MPI_Allreduce", s.own);
  std::int64_t freed = 0;
  for (size_t i = 0; i < numbers.size(); ++i) {
    if (!(unused[i / 64] >> (i % 64) & 1)) continue;
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

// The communicator freed (MPI_Comm_free is collective: every rank is here): its
// windows that no rank holds any more are freed now; those still held are left to
// the process's end (their arrays keep the record, through their owners, until
// they go). At MPI_Finalize nothing is freed here.
int delete_state(MPI_Comm /*comm*/, int /*keyval*/, void* value, void* /*extra*/) {
  auto* state = static_cast<State*>(value);
  CommWindows& s = **state;
  if (!finalizing && s.own != MPI_COMM_NULL) {
    bool any = false;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      any = !s.live.empty();  // the same on every rank
    }
    try {
      if (any) reclaim(s);
    } catch (const std::exception&) {
      // a callback must not throw: the windows are left to the process's end
    }
    MPI_Comm_free(&s.own);  // unchecked: nothing to report to from here
  }
  delete state;
  return MPI_SUCCESS;
}

int on_finalize(MPI_Comm, int, void*, void*) {
  finalizing = true;
  return MPI_SUCCESS;
}

int keyval() {
  static const int k = [] {
    int kv = MPI_KEYVAL_INVALID, self = MPI_KEYVAL_INVALID;
    // MPI_COMM_NULL_COPY_FN: a duplicate of the communicator starts with no windows.
    detail::check_mpi(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &delete_state, &kv, nullptr),
                      "MPI_Comm_create_keyval");
    detail::check_mpi(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &on_finalize, &self, nullptr),
                      "MPI_Comm_create_keyval");
    detail::check_mpi(MPI_Comm_set_attr(MPI_COMM_SELF, self, nullptr), "MPI_Comm_set_attr");
    return kv;
  }();
  return k;
}

// The windows made over `comm`, or null where none were; local.
State find_state(MPI_Comm comm) {
  void* value = nullptr;
  int found = 0;
  detail::check_mpi(MPI_Comm_get_attr(comm, keyval(), &value, &found), "MPI_Comm_get_attr", comm);
  return found ? *static_cast<State*>(value) : State();
}

// The windows made over `comm`; collective the first time (a new, empty record
// and its duplicate of the communicator). Call it without the GIL.
State state_of(MPI_Comm comm) {
  if (State s = find_state(comm)) return s;
  auto* s = new State(std::make_shared<CommWindows>());
  detail::check_mpi(MPI_Comm_dup(comm, &(*s)->own), "MPI_Comm_dup", comm);
  detail::check_mpi(MPI_Comm_set_attr(comm, keyval(), s), "MPI_Comm_set_attr", comm);
  return *s;
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
    State s;
    void* p = nullptr;
    std::int64_t number = 0;
    {
      nb::gil_scoped_release unlocked;
      s = state_of(c);
      reclaim(*s);
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
     "zeroed unless zero=False, page-aligned), as a numpy uint8 array. The window is freed by a later shared_allocate, "
     "reclaim_shared or comm.Free() over the same communicator once no rank holds the array (or a view of it) any "
     "more.");
  m.def("reclaim_shared", [](nb::handle comm) {
    MPI_Comm c = comm_of(comm);
    State s = find_state(c);  // none on every rank alike: nothing was made over comm
    if (!s) return std::int64_t{0};
    nb::gil_scoped_release unlocked;
    return reclaim(*s);
  }, nb::arg("comm") = nb::none(),
     "Collective over comm: frees the shared windows made over comm whose arrays no rank holds any more; returns how "
     "many (DistArray's creation does it too).");
  m.def("shared_windows", [](nb::handle comm) {
    State s = find_state(comm_of(comm));
    if (!s) return std::int64_t{0};
    std::lock_guard<std::mutex> lock(s->mu);
    return static_cast<std::int64_t>(s->live.size());
  }, nb::arg("comm") = nb::none(),
     "Local: the shared windows made over comm and not yet freed (the same on every rank).");
}

}  // namespace redist::python
