#include "redist/element.hpp"

#include <cstdio>

#include "redist/error.hpp"

namespace redist {
namespace {

struct TypeInfo {
  ElementType type;
  std::string_view name;
  index_t size;
};
constexpr TypeInfo kTypes[] = {{ElementType::bytes, "bytes", 0}, {ElementType::f32, "f32", 4},
                               {ElementType::f64, "f64", 8},     {ElementType::c64, "c64", 8},
                               {ElementType::c128, "c128", 16},  {ElementType::i32, "i32", 4},
                               {ElementType::i64, "i64", 8}};

const TypeInfo& info(ElementType t) { return kTypes[static_cast<int>(t)]; }

std::string number(std::complex<double> z) {
  char buf[64];
  if (z.imag() == 0)
    std::snprintf(buf, sizeof buf, "%.17g", z.real());
  else
    std::snprintf(buf, sizeof buf, "(%.17g,%.17g)", z.real(), z.imag());
  return buf;
}

}  // namespace

std::string_view element_type_name(ElementType t) { return info(t).name; }
index_t element_type_size(ElementType t) { return info(t).size; }

ElementType parse_element_type(std::string_view name) {
  for (const TypeInfo& t : kTypes)
    if (t.name == name) return t.type;
  detail::fail("unknown element type '", name, "'; allowed: f32, f64, c64, c128, i32, i64, bytes");
}

std::string Arithmetic::check(index_t elem_size) const {
  using detail::cat;
  const index_t size = element_type_size(type);
  if (size != 0 && size != elem_size)
    return cat("element type ", element_type_name(type), " has ", size, " bytes, the layouts' elements have ",
               elem_size, " (esize=", elem_size, ")");
  if (conjugate && !is_floating(type))  // on real types a conjugate is the value itself, as in BLAS
    return cat("conj needs complex elements: name their type (c64 or c128); ",
               type == ElementType::bytes ? "opaque elements" : "integer elements", " have no conjugate");
  if (identity()) return {};
  // Opaque elements: the caller may not have named the type. Integer ones were
  // named: "name their type" read as if they had not (a new user's trial).
  if (type == ElementType::bytes)
    return cat("alpha=", number(alpha), " beta=", number(beta), conjugate ? " conj" : "",
               " needs arithmetic on the elements: name their type (f32, f64, c64 or c128); "
               "opaque elements move only as they are (alpha = 1, beta = 0)");
  if (!is_floating(type))
    return cat("alpha=", number(alpha), " beta=", number(beta), conjugate ? " conj" : "", " on ",
               element_type_name(type), " elements: integer elements move only as they are (alpha = 1, beta = 0); "
               "the arithmetic applies to f32, f64, c64 or c128");
  if (!is_complex(type) && (alpha.imag() != 0 || beta.imag() != 0)) {
    const bool a = alpha.imag() != 0, b = beta.imag() != 0;
    return cat(a && b ? cat("alpha=", number(alpha), " and beta=", number(beta), " are")
               : a    ? cat("alpha=", number(alpha), " is")
                      : cat("beta=", number(beta), " is"),
               " complex on real elements (", element_type_name(type),
               "): give real values, or name complex elements (c64 or c128)");
  }
  return {};
}

std::string Arithmetic::str() const {
  std::string s = type == ElementType::bytes ? std::string() : detail::cat("type=", element_type_name(type));
  if (!identity()) s += detail::cat(s.empty() ? "" : " ", "alpha=", number(alpha), " beta=", number(beta), conjugate ? " conj" : "");
  return s;
}

}  // namespace redist
