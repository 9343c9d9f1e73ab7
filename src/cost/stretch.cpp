// Rows that follow one another in storage, for the models of copies that walk a
// storage in its order (model.hpp, merge_stretches; shm's rings, docs/shm.md
// "Cost model").
#include <algorithm>
#include <numeric>

#include "cost/model.hpp"

namespace redist::detail {
namespace {

// A piece's rows: `rows` of `len` elements at `offset`, the first at `stride`
// from each other; `outer` names the dimensions beyond the row (extents and
// strides), so that two pieces with equal ones have their rows side by side;
// `along`: the extent of the dimension of `stride`.
struct Rows {
  index_t block, offset, len, rows, stride, along;
  std::uint64_t outer;
  size_t piece;
  bool mergeable;
};

Rows rows_of(const StoragePiece& p, size_t index) {
  const Coord& sh = p.shape;
  const int nd = sh.ndim();
  const index_t run = std::max<index_t>(p.run, 1);
  index_t lead = 1;
  int k = 0;
  while (k < nd && lead < run) lead *= sh[k++];
  Rows r{p.at.block, p.at.offset, run, sh.volume() / run, 0, 1, 1469598103934665603ull, index, lead == run};
  for (int d = k; d < nd; ++d) {
    if (sh[d] == 1) continue;
    if (r.stride == 0) r.stride = p.at.strides[d], r.along = sh[d];
    for (const index_t v : {sh[d], p.at.strides[d]})  // FNV-1a over the outer extents and strides
      r.outer = (r.outer ^ static_cast<std::uint64_t>(v)) * 1099511628211ull;
  }
  return r;
}

}  // namespace

Stretches merge_stretches(const std::vector<StoragePiece>& pieces) {
  std::vector<Rows> rs;
  rs.reserve(pieces.size());
  for (size_t i = 0; i < pieces.size(); ++i)
    if (pieces[i].shape.volume() > 0) rs.push_back(rows_of(pieces[i], i));
  std::sort(rs.begin(), rs.end(), [](const Rows& a, const Rows& b) {
    return a.block != b.block ? a.block < b.block : a.offset < b.offset;
  });
  Stretches out;
  out.row.assign(pieces.size(), 0);
  for (size_t s = 0; s < rs.size();) {
    const Rows& first = rs[s];
    index_t len = first.len;
    size_t e = s + 1;
    while (first.mergeable && e < rs.size() && rs[e].mergeable && rs[e].block == first.block &&
           rs[e].offset == first.offset + len && rs[e].rows == first.rows && rs[e].outer == first.outer)
      len += rs[e++].len;
    // Rows as long as their stride follow one another: the stretch is one row
    // along that dimension (every row, when it is the only one beyond).
    index_t row = len, rows = first.rows;
    if (rows > 1 && len == first.stride) row = len * first.along, rows /= first.along;
    out.rows += rows;
    for (size_t k = s; k < e; ++k) out.row[rs[k].piece] = row;
    s = e;
  }
  return out;
}

void add_pieces(const Coord& shape, index_t run, const Address& at, const std::array<index_t, 2>& count,
                const std::array<index_t, 2>& step, std::vector<StoragePiece>& out) {
  for (index_t j = 0; j < count[1]; ++j)
    for (index_t i = 0; i < count[0]; ++i) {
      StoragePiece p{shape, run, at};
      p.at.offset += i * step[0] + j * step[1];
      out.push_back(p);
    }
}

}  // namespace redist::detail
