// Data as a place in a collection's storage shared on a node (DataCollection::
// storage_of): what an output read in place (comm.cpp) and a lent task's flows
// (lending.cpp) carry instead of the bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "redist/runtime/data.hpp"

namespace redist::runtime::detail {

// The byte offset of `d` in `storage` (as mapped in this process), or -1 when `d`
// does not lie wholly inside it.
inline std::int64_t offset_in(std::span<const std::byte> storage, const Data& d) {
  const std::byte* p = d.bytes();
  if (storage.empty() || p < storage.data() || p > storage.data() + storage.size() ||
      d.size() > static_cast<std::size_t>(storage.data() + storage.size() - p))
    return -1;
  return p - storage.data();
}

// Whether `size` bytes at `offset` lie inside `storage`.
inline bool fits(std::span<const std::byte> storage, std::int64_t offset, std::size_t size) {
  return offset >= 0 && static_cast<std::size_t>(offset) <= storage.size() && size <= storage.size() - offset;
}

// A view of `size` bytes at `offset` of `storage` (fits() checked by the caller).
// Data holds mutable bytes: the const of the mapping is cast away.
inline Data view_at(std::span<const std::byte> storage, std::int64_t offset, std::size_t size) {
  return Data::wrap(const_cast<std::byte*>(storage.data()) + offset, size);
}

}  // namespace redist::runtime::detail
