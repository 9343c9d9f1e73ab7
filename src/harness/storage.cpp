#include "harness/storage.hpp"

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

}  // namespace redist::harness
