// Helpers of the round-trip tests: a caller's matrix in any storage (tile or
// ScaLAPACK local_array), filled from a function of global indices, and gathered
// on rank 0 by the core's redistribution (an oracle independent of the runtime).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "../runtime/test_util.hpp"
#include "redist/shm.hpp"

// This rank's storage of `layout` (doubles), element (i, j) = f(i, j).
template <class F>
std::vector<double> make_local(const redist::Layout& layout, F f) {
  const redist::LocalIndex local(layout, world_rank());
  std::vector<double> a(static_cast<std::size_t>(local.elements()));
  for (redist::index_t o = 0; o < local.ntiles(); ++o) {
    const redist::Coord t = local.tile(o);
    const redist::Box b = layout.tile_box(t);
    const redist::Address at = local.address(t, b.lo);
    for (redist::index_t j = 0; j < b.size[1]; ++j)
      for (redist::index_t i = 0; i < b.size[0]; ++i)
        a[static_cast<std::size_t>(at.offset + i + j * at.strides[1])] = f(b.lo[0] + i, b.lo[1] + j);
  }
  return a;
}

// A copy of `v` in a shared window (redist::shared_allocate over MPI_COMM_WORLD,
// nodes of `node_size` ranks, 0: the whole node), freed with this object. Both
// collective: create and destroy them in the same order on every rank.
class SharedCopy {
 public:
  SharedCopy(const std::vector<double>& v, int node_size)
      : p_(static_cast<double*>(
            redist::shared_allocate(MPI_COMM_WORLD, static_cast<redist::index_t>(v.size() * sizeof(double)), node_size))) {
    std::copy(v.begin(), v.end(), p_);
  }
  SharedCopy(const SharedCopy&) = delete;
  SharedCopy& operator=(const SharedCopy&) = delete;
  ~SharedCopy() { redist::shared_free(p_); }
  double* data() const { return p_; }

 private:
  double* p_;
};

// The whole m x n matrix, column-major, on rank 0 (empty elsewhere). Collective.
inline std::vector<double> gather_root(const redist::Layout& layout, const double* data) {
  const redist::Layout whole = redist::block_cyclic_layout(layout.shape(), layout.shape(), {1, 1});
  redist::Plan plan = redist::make_plan(layout, whole, redist::Region::whole(layout.shape()), MPI_COMM_WORLD);
  std::vector<double> all(world_rank() == 0 ? static_cast<std::size_t>(layout.shape().volume()) : 0);
  plan.execute(data, world_rank() == 0 ? static_cast<void*>(all.data()) : nullptr);
  return all;
}

// True on every rank when `what()` throws redist::Error containing `text` on
// every rank with the same message.
template <class F>
void expect_collective_error(F what, const std::string& text) {
  std::string msg;
  try {
    what();
  } catch (const redist::Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find(text), std::string::npos) << "message: '" << msg << "', expected '" << text << "'";
  EXPECT_TRUE(same_on_all(msg)) << msg;
}
