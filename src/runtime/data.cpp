// Data buffers and the pool behind Data::allocate.
#include "redist/runtime/data.hpp"

#include <sys/mman.h>

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>
#include <string_view>
#include <vector>

#include "redist/error.hpp"

namespace redist::runtime {
namespace {

// Buffers of at least kPooledMin bytes are rounded up to a power of two and kept
// for reuse after release: the ping-pong and Cholesky receive a buffer per
// transfer, and a fresh one would be page-faulted again each time (paper 004,
// sec. IV-B2 names "all network data are received in a newly allocated buffer" as
// a cost of DAGuE).
constexpr std::size_t kPooledMin = 4096;
constexpr int kClasses = 48;
constexpr std::size_t kMaxCachedBytes = std::size_t{2} << 30;

// Classes of kHugeMinBytes and up live in memory advised for transparent huge
// pages (madvise(MADV_HUGEPAGE), 2 MiB aligned), so that the first write into a
// fresh buffer (a tile received on a first run) faults once per 2 MiB instead of
// once per 4 KB: a fresh 2 MiB buffer filled with 1.84 MB took ~1.3 ms in 4 KB
// pages and ~0.55 ms in a huge page here (docs/runtime.md, "Buffer pool"). Classes
// below 2 MiB are carved from 2 MiB chunks (a chunk's pieces go to the free list
// and are never given back); classes of 2 MiB and up are mappings of their own.
// REDIST_HUGE_PAGES=0 turns this off (plain ::operator new, as below kHugeMinBytes).
constexpr int kHugeMinClass = 18;  // 256 KiB
constexpr int kChunkClass = 21;    // 2 MiB, the huge page
constexpr std::size_t kChunkBytes = std::size_t{1} << kChunkClass;

bool huge_pages_enabled() {
  const char* v = std::getenv("REDIST_HUGE_PAGES");
  return v == nullptr || std::string_view(v) != "0";
}

// `bytes` (a multiple of 2 MiB) of fresh memory at a 2 MiB boundary, advised for
// huge pages. An advice the kernel refuses (no THP) leaves ordinary pages.
std::byte* map_huge(std::size_t bytes) {
  void* m = ::mmap(nullptr, bytes + kChunkBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  auto base = reinterpret_cast<std::uintptr_t>(m);
  std::uintptr_t aligned = (base + kChunkBytes - 1) & ~(std::uintptr_t{kChunkBytes} - 1);
  if (aligned > base) ::munmap(m, aligned - base);
  std::size_t tail = base + bytes + kChunkBytes - (aligned + bytes);
  if (tail > 0) ::munmap(reinterpret_cast<void*>(aligned + bytes), tail);
  auto* p = reinterpret_cast<std::byte*>(aligned);
  ::madvise(p, bytes, MADV_HUGEPAGE);
  return p;
}

class BufferPool {
 public:
  std::byte* get(std::size_t bytes, std::size_t& capacity) {
    if (bytes < kPooledMin) {
      capacity = bytes;
      return static_cast<std::byte*>(::operator new(bytes == 0 ? 1 : bytes));
    }
    int c = std::bit_width(bytes - 1);
    capacity = std::size_t{1} << c;
    {
      std::lock_guard lock(mutex_);
      if (!free_[c].empty()) {
        std::byte* p = free_[c].back();
        free_[c].pop_back();
        if (!carved(c)) cached_ -= capacity;
        return p;
      }
    }
    if (!huge(c)) return static_cast<std::byte*>(::operator new(capacity));
    if (!carved(c)) return map_huge(capacity);
    // A fresh 2 MiB chunk: the first piece now, the others to the free list.
    std::byte* chunk = map_huge(kChunkBytes);
    std::lock_guard lock(mutex_);
    for (std::size_t off = kChunkBytes - capacity; off > 0; off -= capacity) free_[c].push_back(chunk + off);
    return chunk;
  }

  void put(std::byte* p, std::size_t capacity) {
    if (capacity >= kPooledMin) {
      int c = std::bit_width(capacity - 1);
      std::lock_guard lock(mutex_);
      if (carved(c)) {  // part of a chunk: kept whatever the cache holds
        free_[c].push_back(p);
        return;
      }
      if (cached_ + capacity <= kMaxCachedBytes) {
        free_[c].push_back(p);
        cached_ += capacity;
        return;
      }
      if (huge(c)) {
        ::munmap(p, capacity);
        return;
      }
    }
    ::operator delete(p);
  }

 private:
  bool huge(int c) const { return huge_ && c >= kHugeMinClass; }
  bool carved(int c) const { return huge(c) && c < kChunkClass; }

  const bool huge_ = huge_pages_enabled();
  std::mutex mutex_;
  std::vector<std::byte*> free_[kClasses];
  std::size_t cached_ = 0;  // bytes in the free lists that may be given back
};

BufferPool& pool() {
  static BufferPool* p = new BufferPool;  // never destroyed: buffers may outlive main
  return *p;
}

}  // namespace

Data Data::allocate(std::size_t bytes) {
  Data d;
  std::size_t capacity = 0;
  std::byte* p = pool().get(bytes, capacity);
  d.holder_ = std::shared_ptr<std::byte>(p, [capacity](std::byte* q) { pool().put(q, capacity); });
  d.ptr_ = p;
  d.size_ = bytes;
  d.capacity_ = capacity;
  return d;
}

Data Data::wrap(void* ptr, std::size_t bytes) {
  Data d;
  d.ptr_ = static_cast<std::byte*>(ptr);
  d.size_ = d.capacity_ = bytes;
  return d;
}

Data Data::typed(void* base, MPI_Datatype type, std::size_t bytes) {
  Data d = wrap(base, bytes);
  d.type_ = type;
  return d;
}

void Data::set_size(std::size_t bytes) {
  if (is_typed() && bytes != size_) detail::fail("Data::set_size: a typed view keeps the size of its type");
  if (bytes > capacity_)
    detail::fail("Data::set_size: ", bytes, " bytes exceeds the capacity ", capacity_,
                 "; use TaskContext::allocate for a larger output");
  size_ = bytes;
}

}  // namespace redist::runtime
