// Data buffers and the pool behind Data::allocate.
#include "redist/runtime/data.hpp"

#include <bit>
#include <cstdlib>
#include <mutex>
#include <new>
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
        cached_ -= capacity;
        return p;
      }
    }
    return static_cast<std::byte*>(::operator new(capacity));
  }

  void put(std::byte* p, std::size_t capacity) {
    if (capacity >= kPooledMin) {
      std::lock_guard lock(mutex_);
      if (cached_ + capacity <= kMaxCachedBytes) {
        free_[std::bit_width(capacity - 1)].push_back(p);
        cached_ += capacity;
        return;
      }
    }
    ::operator delete(p);
  }

 private:
  std::mutex mutex_;
  std::vector<std::byte*> free_[kClasses];
  std::size_t cached_ = 0;
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
