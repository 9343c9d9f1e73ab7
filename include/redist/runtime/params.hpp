// Task parameters, and the functions of them that a task graph is made of (paper
// 004, sec. III-A: execution-space bounds, affinities, guards and dependency
// targets are all expressions in the task's parameters).
//
// Such functions are plain lambdas that take the parameters BY NAME, as the JDF of
// paper 004 Fig. 1 reads: `[](auto k, auto n) { return Tile{n, k}; }` for a task
// DTRSM(k, n). A lambda may take fewer parameters than its task has: it gets the
// first ones (a bound of the second parameter takes only the first).
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <utility>

namespace redist {
namespace runtime {

inline constexpr int kMaxParams = 4;  // Send(ms, ns, mt, nt) of paper 000 needs four

// The parameters of one task, e.g. {k, m, n, 0} for DGEMM(k, m, n); unused slots are 0.
using Params = std::array<std::int64_t, kMaxParams>;

}  // namespace runtime

// In redist::detail, not runtime::detail: the runtime's private code has a
// namespace of that name, which would hide these from the headers' users.
namespace detail {

template <std::size_t>
using ParamArg = std::int64_t;

// Whether f(lead..., p0, ..., p{K-1}) is well-formed for K = sizeof...(I).
template <class F, class... Lead, std::size_t... I>
constexpr bool takes(std::index_sequence<I...>) {
  return std::is_invocable_v<const F&, Lead..., ParamArg<I>...>;
}

// The most task parameters (0..kMaxParams) F accepts after the arguments Lead...;
// -1 when it accepts none of these counts.
template <class F, class... Lead>
constexpr int param_arity() {
  int arity = -1;
  [&]<std::size_t... K>(std::index_sequence<K...>) {
    ((takes<F, Lead...>(std::make_index_sequence<K>{}) ? void(arity = static_cast<int>(K)) : void()), ...);
  }(std::make_index_sequence<runtime::kMaxParams + 1>{});
  return arity;
}

// Whether F takes task parameters by name and returns something R is made from.
template <class F, class R>
constexpr bool param_function() {
  constexpr int arity = param_arity<F>();
  if constexpr (arity < 0) {
    return false;
  } else {
    return []<std::size_t... I>(std::index_sequence<I...>) {
      return std::is_constructible_v<R, std::invoke_result_t<const F&, ParamArg<I>...>>;
    }(std::make_index_sequence<arity>{});
  }
}

}  // namespace detail

namespace runtime {

// A function of a task's parameters returning R, made from a lambda that takes the
// parameters by name (see above). Remembers how many it takes, so that the graph
// can reject a lambda taking more parameters than its task has.
template <class R>
class ParamFn {
 public:
  ParamFn() = default;

  template <class F>
    requires(!std::same_as<std::remove_cvref_t<F>, ParamFn> && ::redist::detail::param_function<F, R>())
  ParamFn(F f)  // NOLINT(google-explicit-constructor): lambdas convert, as in the JDF
      : arity_(::redist::detail::param_arity<F>()) {
    fn_ = [f = std::move(f)](const Params& p) {
      return [&]<std::size_t... I>(std::index_sequence<I...>) {
        return static_cast<R>(f(p[I]...));
      }(std::make_index_sequence<::redist::detail::param_arity<F>()>{});
    };
  }

  // From a function of the whole parameter array (the runtime's own adaptors, e.g.
  // a negated guard); `arity` is how many parameters it reads.
  static ParamFn of_params(std::function<R(const Params&)> fn, int arity) {
    ParamFn f;
    f.fn_ = std::move(fn);
    f.arity_ = arity;
    return f;
  }

  R operator()(const Params& p) const { return fn_(p); }
  explicit operator bool() const { return static_cast<bool>(fn_); }
  int arity() const { return arity_; }

 private:
  std::function<R(const Params&)> fn_;
  int arity_ = 0;
};

// A bound of an execution-space range: a constant or a function of the outer
// parameters (the JDF's `n = k+1 .. SIZE-1` is `.param("n", [](auto k) { return k + 1; }, nt - 1)`).
struct Bound {
  ParamFn<std::int64_t> fn;
  Bound(std::int64_t c)  // NOLINT(google-explicit-constructor)
      : fn(ParamFn<std::int64_t>::of_params([c](const Params&) { return c; }, 0)) {}
  Bound(int c) : Bound(static_cast<std::int64_t>(c)) {}  // NOLINT(google-explicit-constructor)
  template <class F>
    requires(!std::integral<F> && ::redist::detail::param_function<F, std::int64_t>())
  Bound(F f) : fn(std::move(f)) {}  // NOLINT(google-explicit-constructor)
};

}  // namespace runtime
}  // namespace redist
