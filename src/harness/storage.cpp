#include "harness/storage.hpp"

#include <cstdlib>
#include <string_view>

#include "mpi/agree.hpp"
#include "redist/shm.hpp"

namespace redist::harness {

LocalStorage::LocalStorage(const Layout& layout, int rank) : LocalStorage(layout, LocalIndex(layout, rank)) {}

LocalStorage::LocalStorage(const Layout& layout, const LocalIndex& li) : elem_size_(layout.elem_size()) {
  for (index_t b = 0; b < li.nblocks(); ++b) {
    const index_t bytes = li.block_elements(b) * layout.elem_size();
    owned_.push_back(bytes ? std::make_unique<std::byte[]>(static_cast<std::size_t>(bytes)) : nullptr);
    ptr_.push_back(owned_.back().get());
    cptr_.push_back(owned_.back().get());
    sizes_.push_back(static_cast<std::size_t>(bytes));
    bytes_ += bytes;
  }
}

LocalStorage::LocalStorage(const Layout& layout, const LocalIndex& li, MPI_Comm comm) : elem_size_(layout.elem_size()) {
  constexpr index_t kAlign = 64;
  index_t total = 0;
  for (index_t b = 0; b < li.nblocks(); ++b)
    total += (li.block_elements(b) * layout.elem_size() + kAlign - 1) / kAlign * kAlign;
  shared_ = std::shared_ptr<void>(shared_allocate(comm, total), [](void* p) { shared_free(p); });
  auto* at = static_cast<std::byte*>(shared_.get());
  for (index_t b = 0; b < li.nblocks(); ++b) {
    const index_t bytes = li.block_elements(b) * layout.elem_size();
    ptr_.push_back(bytes ? at : nullptr);
    cptr_.push_back(bytes ? at : nullptr);
    sizes_.push_back(static_cast<std::size_t>(bytes));
    bytes_ += bytes;
    at += (bytes + kAlign - 1) / kAlign * kAlign;
  }
}

bool shared_storage_requested() {
  const char* v = std::getenv("REDIST_STORAGE");
  if (!v || !*v || std::string_view(v) == "heap") return false;
  if (std::string_view(v) == "shared") return true;
  throw Error(detail::cat("REDIST_STORAGE=", v, ": expected heap or shared"));
}

}  // namespace redist::harness
