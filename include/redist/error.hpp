// The library's exception type, Error (STYLE.md, "Errors: two tiers"), and two
// kinds of it a caller may tell apart: MpiError (an MPI call failed, local) and
// MismatchError (ranks disagreed, agreed). Catching Error catches all three.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace redist {

// Bad user input or a failed collective agreement. The message names the
// offending values and what is allowed; after collective validation it is the
// same on every rank.
class Error : public std::invalid_argument {
 public:
  explicit Error(const std::string& what) : std::invalid_argument(what) {}
};

// An MPI call failed on this rank (the plan's communicator returns errors): a
// peer that died, a message truncated because a peer sent something else. The
// message names the call, this rank, the peer where known and MPI's own text.
// Unlike other Errors it is LOCAL, not agreed: the other ranks may have finished,
// or may wait on this one forever, and the plan may still have operations in
// flight. Nothing can be retried; end the job (MPI_Abort), as `redist` does
// (docs/strategies.md, "Faults").
class MpiError : public Error {
 public:
  MpiError(const std::string& what, int error_class) : Error(what), error_class_(error_class) {}
  int error_class() const { return error_class_; }  // MPI_Error_class of the code, e.g. MPI_ERR_TRUNCATE

 private:
  int error_class_;
};

// Ranks disagreed in a collective call: different layouts, regions or options
// passed to make_plan, owner functions that answer differently, different
// strategies passed to execute, different node sizes. Agreed like every Error
// (the same message on every rank); the C API returns REDIST_ERR_MISMATCH for it.
class MismatchError : public Error {
 public:
  using Error::Error;
};

namespace detail {

// Builds a message from streamable pieces: fail("tile size ", t, " must be > 0").
template <class... Args>
[[noreturn]] void fail(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  throw Error(os.str());
}

template <class... Args>
std::string cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

// fail for a disagreement between ranks (MismatchError).
template <class... Args>
[[noreturn]] void fail_mismatch(const Args&... args) {
  throw MismatchError(cat(args...));
}

// Internal invariant (not user input): prints the expression and stays on in release.
[[noreturn]] void assertion_failed(const char* expr, const char* file, int line,
                                   const std::string& values);

}  // namespace detail
}  // namespace redist

#define REDIST_ASSERT(cond, ...)                                                        \
  do {                                                                                  \
    if (!(cond))                                                                        \
      ::redist::detail::assertion_failed(#cond, __FILE__, __LINE__,                     \
                                         ::redist::detail::cat("" __VA_OPT__(, ) __VA_ARGS__)); \
  } while (0)
