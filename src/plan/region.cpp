#include <algorithm>
#include <sstream>

#include "redist/plan.hpp"

namespace redist {
namespace {

Coord parse_dims(const std::string& text, const std::string& what) {
  std::vector<index_t> v;
  size_t pos = 0;
  while (true) {
    size_t used = 0;
    index_t x = 0;
    try {
      x = std::stoll(text.substr(pos), &used);
    } catch (const std::out_of_range&) {
      detail::fail("bad region: a number in ", what, " '", text, "' does not fit in 64 bits");
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0)
      detail::fail("bad region: expected integers joined by 'x' for ", what, ", got '", text, "'");
    v.push_back(x);
    pos += used;
    if (pos == text.size()) break;
    if (text[pos] != 'x')
      detail::fail("bad region: expected integers joined by 'x' for ", what, ", got '", text, "'");
    if (v.size() >= static_cast<size_t>(kMaxDims))
      detail::fail("bad region: ", what, " '", text, "' has too many dimensions (at most ", kMaxDims, " dimensions)");
    ++pos;
  }
  Coord c(static_cast<int>(v.size()));
  for (size_t d = 0; d < v.size(); ++d) c[static_cast<int>(d)] = v[d];
  return c;
}

// "1,0,2": a permutation of the dimensions (checked by Region::check).
Coord parse_axes(const std::string& text) {
  Coord c;
  std::vector<index_t> v;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t end = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, end - pos);
    if (item.empty() || item.size() > 2 || item.find_first_not_of("0123456789") != std::string::npos)
      detail::fail("bad region: expected dimension numbers joined by ',' for axes=, e.g. axes=1,0; got '", text, "'");
    v.push_back(std::stoll(item));
    if (v.size() > static_cast<size_t>(kMaxDims))
      detail::fail("bad region: axes='", text, "' names more than ", kMaxDims, " dimensions");
    pos = end + 1;
  }
  c = Coord(static_cast<int>(v.size()));
  for (size_t d = 0; d < v.size(); ++d) c[static_cast<int>(d)] = v[d];
  return c;
}

// "1,0,2" (parse_axes' form).
std::string axes_text(const Coord& axes) {
  std::string a;
  for (int d = 0; d < axes.ndim(); ++d) {
    if (d) a += ',';
    a += std::to_string(axes[d]);
  }
  return a;
}

}  // namespace

bool Region::permutes() const {
  for (int d = 0; d < axes.ndim(); ++d)
    if (axes[d] != d) return true;
  return false;
}

Coord Region::src_size() const {
  Coord s = size;
  for (int d = 0; d < size.ndim() && d < axes.ndim(); ++d)
    if (axes[d] >= 0 && axes[d] < size.ndim()) s[static_cast<int>(axes[d])] = size[d];
  return s;
}

Region Region::whole(const Coord& shape) {
  return {shape, Coord(shape.ndim(), 0), Coord(shape.ndim(), 0)};
}

Region Region::parse(const std::string& text) {
  std::istringstream is(text);
  std::string tok;
  Region r;
  bool have_size = false, have_from = false, have_to = false, have_axes = false;
  while (is >> tok) {
    if (tok.rfind("from=", 0) == 0 && !have_from) {
      r.src_offset = parse_dims(tok.substr(5), "from=");
      have_from = true;
    } else if (tok.rfind("to=", 0) == 0 && !have_to) {
      r.dst_offset = parse_dims(tok.substr(3), "to=");
      have_to = true;
    } else if ((tok.rfind("axes=", 0) == 0 || tok == "transpose") && !have_axes) {
      r.axes = tok == "transpose" ? Coord{1, 0} : parse_axes(tok.substr(5));
      have_axes = true;
    } else if (!have_size && tok.find('=') == std::string::npos) {
      r.size = parse_dims(tok, "the size");
      have_size = true;
    } else {
      detail::fail("bad region '", text, "': unexpected '", tok,
                   "'; expected SIZE [from=OFFSET] [to=OFFSET] [axes=A,B,...|transpose], e.g. '7000x7000 from=500x300 to=0x0'");
    }
  }
  if (!have_size)
    detail::fail("bad region '", text, "': missing the size, e.g. '7000x7000 from=500x300 to=0x0'");
  const int n = r.size.ndim();
  if (!have_from) r.src_offset = Coord(n, 0);
  if (!have_to) r.dst_offset = Coord(n, 0);
  return r;
}

std::string Region::str() const {
  std::string s = size.str() + " from=" + src_offset.str() + " to=" + dst_offset.str();
  if (permutes()) s += " axes=" + axes_text(axes);
  return s;
}

bool Region::empty() const {
  for (index_t s : size)
    if (s <= 0) return true;
  return size.ndim() == 0;
}

std::string Region::check(const Coord& src_shape, const Coord& dst_shape) const {
  using detail::cat;
  const int n = src_shape.ndim();
  if (dst_shape.ndim() != n)
    return cat("source has ", n, " dimensions, target has ", dst_shape.ndim());
  if (size.ndim() != n || src_offset.ndim() != n || dst_offset.ndim() != n)
    return cat("region ", str(), " must have ", n, " dimensions like the arrays");
  if (axes.ndim() != 0) {
    bool seen[kMaxDims] = {};
    bool perm = axes.ndim() == n;
    for (int d = 0; d < axes.ndim() && perm; ++d) {
      perm = axes[d] >= 0 && axes[d] < n && !seen[axes[d]];
      if (perm) seen[axes[d]] = true;
    }
    if (!perm) {
      return cat("region axes=", axes_text(axes), " must name each of the ", n, " dimensions 0..", n - 1,
                 " once (target dimension d reads source dimension axes[d])");
    }
  }
  for (int d = 0; d < n; ++d) {
    if (size[d] < 0) return cat("region size ", size.str(), " must be >= 0 in every dimension");
    if (src_offset[d] < 0 || dst_offset[d] < 0)
      return cat("region offsets from=", src_offset.str(), " to=", dst_offset.str(), " must be >= 0");
  }
  if (empty()) return {};  // a zero-size region is a valid no-op
  const Coord ssize = src_size();
  for (int d = 0; d < n; ++d) {
    index_t end;
    if (!fits_add(src_offset[d], ssize[d], end) || end > src_shape[d])
      return cat("region ", str(), " leaves the source array ", src_shape.str(), " in dimension ", d);
    if (!fits_add(dst_offset[d], size[d], end) || end > dst_shape[d])
      return cat("region ", str(), " leaves the target array ", dst_shape.str(), " in dimension ", d);
  }
  return {};
}

std::string check_regions(std::span<const Region> regions, const Coord& src_shape, const Coord& dst_shape) {
  for (size_t k = 0; k < regions.size(); ++k)
    if (std::string e = regions[k].check(src_shape, dst_shape); !e.empty()) return detail::cat("region ", k, ": ", e);
  // Overlaps in the target: a sweep along the last dimension, comparing only
  // regions whose extents there overlap (empty regions write nothing).
  const int n = dst_shape.ndim();
  if (n == 0) return {};
  const int last = n - 1;
  std::vector<size_t> order;
  for (size_t k = 0; k < regions.size(); ++k)
    if (!regions[k].empty()) order.push_back(k);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return regions[a].dst_offset[last] < regions[b].dst_offset[last];
  });
  for (size_t x = 0; x < order.size(); ++x) {
    const Region& a = regions[order[x]];
    const index_t end = a.dst_offset[last] + a.size[last];
    for (size_t y = x + 1; y < order.size() && regions[order[y]].dst_offset[last] < end; ++y) {
      const Region& b = regions[order[y]];
      bool meet = true;
      for (int d = 0; d < last && meet; ++d)
        meet = a.dst_offset[d] < b.dst_offset[d] + b.size[d] && b.dst_offset[d] < a.dst_offset[d] + a.size[d];
      if (meet)
        return detail::cat("regions ", std::min(order[x], order[y]), " (", regions[std::min(order[x], order[y])].str(),
                           ") and ", std::max(order[x], order[y]), " (", regions[std::max(order[x], order[y])].str(),
                           ") overlap in the target; the regions of one plan must write disjoint parts of it");
    }
  }
  return {};
}

}  // namespace redist
