// A rank's local storage for a layout, allocated by the harness (the CLI, the
// benchmarks and the tests): one buffer for `tile` and `local_array` storage, one
// per local tile for `tile_pointers`. Zeroed when allocated (every page touched
// once, by this rank, before anything is timed); fill with harness/pattern.hpp.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "redist/error.hpp"
#include "redist/layout.hpp"

namespace redist::harness {

class LocalStorage {
 public:
  LocalStorage() = default;
  LocalStorage(const Layout& layout, int rank);
  // The same from the rank's storage map of `layout` (when the caller has one).
  LocalStorage(const Layout& layout, const LocalIndex& map);
  // Collective over `comm`: the same in one shared window per node
  // (redist::shared_allocate), freed collectively when the storage goes (every
  // rank must destroy its storages in the same order). Blocks 64-byte aligned.
  LocalStorage(const Layout& layout, const LocalIndex& map, MPI_Comm comm);

  // One pointer per block, as Plan::execute and fill_pattern take them.
  std::span<void* const> blocks() const { return ptr_; }
  std::span<const void* const> const_blocks() const { return cptr_; }
  // The one buffer of `tile`/`local_array` storage (null when this rank stores nothing).
  void* data() const { return ptr_.empty() ? nullptr : ptr_[0]; }
  index_t bytes() const { return bytes_; }
  // The bytes of block b (to compare whole buffers).
  std::span<std::byte> block_bytes(std::size_t b) const { return {static_cast<std::byte*>(ptr_[b]), sizes_[b]}; }
  // The one buffer as elements of T; sizeof(T) must be the layout's element size.
  template <class T>
  std::span<T> as() const {
    if (static_cast<index_t>(sizeof(T)) != elem_size_ || ptr_.size() != 1)
      throw Error("LocalStorage::as: the storage is not one buffer of this element type");
    return {static_cast<T*>(ptr_[0]), static_cast<std::size_t>(bytes_ / elem_size_)};
  }

 private:
  std::vector<std::unique_ptr<std::byte[]>> owned_;
  std::shared_ptr<void> shared_;  // the window memory (shared_free on release)
  std::vector<void*> ptr_;
  std::vector<const void*> cptr_;
  std::vector<std::size_t> sizes_;
  index_t bytes_ = 0, elem_size_ = 8;
};

// Where the harness allocates storage: in shared windows when $REDIST_STORAGE is
// `shared` (`redist run --storage shared`), else on the heap; throws on another value.
bool shared_storage_requested();

}  // namespace redist::harness
