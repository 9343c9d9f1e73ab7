// One redistribution case's storage on this rank, checked against the serial
// oracle (harness/pattern.hpp): the source holds pattern kSource, the target
// pattern kTarget until a run writes the region. Used by the conformance suite
// and the thread tests (every execute checked bit for bit).
#pragma once

#include <string>

#include "harness/pattern.hpp"
#include "harness/storage.hpp"
#include "redist/error.hpp"
#include "redist/layout.hpp"

namespace redist::testing {

class OracleCase {
 public:
  static constexpr std::uint64_t kSource = 101, kTarget = 202;

  // `arith`: the plan's Options::arithmetic; patterns of its element type (finite
  // values), expected target = alpha * op(source) + beta * target.
  OracleCase(const Layout& src, const Layout& dst, const Region& region, int rank, const Arithmetic& arith = {})
      : src_(src), dst_(dst), region_(region), rank_(rank), arith_(arith), s_(storage(src)), d_(storage(dst)) {
    fill_pattern(src_, rank_, s_.blocks(), kSource, arith_.type);
    reset_target();
  }

  const harness::LocalStorage& source() const { return s_; }
  const harness::LocalStorage& target() const { return d_; }
  std::span<const void* const> src_blocks() const { return s_.const_blocks(); }
  std::span<void* const> dst_blocks() const { return d_.blocks(); }

  // The target back to its own pattern (the next run must write the region again).
  void reset_target() { fill_pattern(dst_, rank_, d_.blocks(), kTarget, arith_.type); }

  // After a run: empty when every target element of the region holds its source
  // element's bytes, every other target element its old pattern and the source
  // its pattern; else the first error found, prefixed by `what`. Local (no MPI).
  std::string check(const std::string& what = {}) const {
    const CheckResult c = check_redistributed(dst_, rank_, d_.blocks(), region_, src_, kSource, kTarget, arith_);
    if (!c.ok())
      return detail::cat(what, what.empty() ? "" : ": ", c.wrong, " of ", c.checked, " wrong; first: ", c.first_error);
    const CheckResult cs = check_pattern(src_, rank_, s_.blocks(), kSource, arith_.type);
    if (!cs.ok()) return detail::cat(what, what.empty() ? "" : ": ", "source changed: ", cs.first_error);
    return {};
  }

 private:
  // Collective when $REDIST_STORAGE=shared (every rank makes its cases in one order).
  harness::LocalStorage storage(const Layout& l) const {
    if (harness::shared_storage_requested()) return {l, LocalIndex(l, rank_), MPI_COMM_WORLD};
    return {l, rank_};
  }
  Layout src_, dst_;
  Region region_;
  int rank_;
  Arithmetic arith_;
  harness::LocalStorage s_, d_;
};

}  // namespace redist::testing
