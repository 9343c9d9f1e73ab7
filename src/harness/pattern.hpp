// Deterministic array contents for verification (the serial oracle of the tests,
// `redist run` and the benchmarks). Element g of array `id` holds bytes computed
// from (id, g) alone, so any rank can say what any element must be without
// communication. 8-byte elements are finite doubles in [1, 2) x sign, so
// ScaLAPACK can move them as doubles without changing a bit.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "redist/element.hpp"
#include "redist/layout.hpp"
#include "redist/plan.hpp"

namespace redist {

// Writes pattern `id` into every element this rank stores under `layout`. With
// an element type (redist/element.hpp) every value is finite: floats and
// doubles (and complex parts) in [1, 2) x sign.
void fill_pattern(const Layout& layout, int rank, std::span<void* const> blocks, std::uint64_t id,
                  ElementType type = ElementType::bytes);

// Outcome of a check: how many elements were compared and how many were wrong.
struct CheckResult {
  index_t checked = 0;
  index_t wrong = 0;
  std::string first_error;  // the first wrong element, with expected and found bytes
  bool ok() const { return wrong == 0; }
};

// Checks every element this rank stores: elements inside `region` (target side)
// must hold source pattern `src_id` of the source element they came from; all
// others must still hold target pattern `dst_id`. With an empty region this checks
// that an array still holds its own pattern (e.g. the source after a run).
// `arith`: elements inside the region must hold alpha * op(source) + beta * (the
// target's pattern), computed here with std::complex / plain arithmetic (BLAS's
// rules: alpha = 0 reads no source, beta = 0 no target); patterns of arith.type.
CheckResult check_redistributed(const Layout& dst, int rank, std::span<void* const> blocks,
                                const Region& region, const Layout& src, std::uint64_t src_id,
                                std::uint64_t dst_id, const Arithmetic& arith = {});
CheckResult check_pattern(const Layout& layout, int rank, std::span<void* const> blocks,
                          std::uint64_t id, ElementType type = ElementType::bytes);

// The bytes of element `linear` (column-major global index) of pattern `id`.
void pattern_element(std::uint64_t id, index_t linear, index_t elem_size, unsigned char* out,
                     ElementType type = ElementType::bytes);

}  // namespace redist
