// The bytes that travel on a data flow between tasks (paper 004, sec. III-B: the
// engine tracks data produced by a task until every consumer has used it).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>

namespace redist::runtime {

// A reference-counted view of a byte buffer. Copies share the buffer; the last copy
// releases it (to the buffer pool when the runtime allocated it). The size may be
// smaller than the capacity and may be decided at run time by the producing task
// (paper 000, sec. 6.2.2, dynamic communication volume).
class Data {
 public:
  Data() = default;

  // A fresh buffer of `bytes` bytes from the runtime's pool (contents undefined).
  // Pooled so that large receive buffers are not page-faulted again for every
  // message (fresh pages cost ~1 GB/s on this machine, ../shared/design/MACHINE.md).
  static Data allocate(std::size_t bytes);

  // A non-owning view of user memory (a data collection's tile). The memory must
  // outlive every task that uses it.
  static Data wrap(void* ptr, std::size_t bytes);

  // A non-owning view of user memory laid out as one element of the committed MPI
  // datatype `type` at `base` (strided, not contiguous): `bytes` is its packed size.
  // Sent from, or received into, where it lies, with no packing by the runtime
  // (paper 000, sec. 8.2: a segment sent straight from the source tile). The memory
  // and the type must outlive the run. bytes() is `base`: read it only through the
  // type.
  static Data typed(void* base, MPI_Datatype type, std::size_t bytes);

  std::byte* bytes() const { return ptr_; }
  std::size_t size() const { return size_; }
  std::size_t capacity() const { return capacity_; }
  bool empty() const { return ptr_ == nullptr; }
  // The layout of a typed() view; MPI_DATATYPE_NULL for a contiguous buffer.
  MPI_Datatype type() const { return type_; }
  bool is_typed() const { return type_ != MPI_DATATYPE_NULL; }

  // Shrinks or grows the size within the capacity. Precondition: bytes <= capacity(),
  // not a typed() view.
  void set_size(std::size_t bytes);

  template <class T>
  T* as() const {
    return reinterpret_cast<T*>(ptr_);
  }

 private:
  std::shared_ptr<std::byte> holder_;  // empty for wrapped user memory
  std::byte* ptr_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
};

}  // namespace redist::runtime
