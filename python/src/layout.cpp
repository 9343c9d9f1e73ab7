// Layouts, ownerships, regions and a rank's storage map, as Python values
// (docs/python.md). Each keyword constructor calls the C++ factory of the same
// name; spec strings go through Layout::parse (docs/spec.md), the one grammar.
#include <climits>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common.hpp"

namespace redist::python {
namespace {

GridOrder order_of(const std::string& s) {
  if (s == "row") return GridOrder::row;
  if (s == "col") return GridOrder::col;
  throw Error("order must be 'row' or 'col', got '" + s + "'");
}

StorageKind storage_of(const std::string& s) {
  if (s == "tile") return StorageKind::tile;
  if (s == "local_array") return StorageKind::local_array;
  if (s == "tile_pointers") return StorageKind::tile_pointers;
  throw Error("storage must be 'tile', 'local_array' or 'tile_pointers', got '" + s + "'");
}

const char* storage_name(StorageKind k) {
  switch (k) {
    case StorageKind::tile: return "tile";
    case StorageKind::local_array: return "local_array";
    case StorageKind::tile_pointers: return "tile_pointers";
  }
  return "?";
}

std::string kind_name(const Ownership& o) {
  switch (o.kind()) {
    case Ownership::Kind::block_cyclic: return "block_cyclic";
    case Ownership::Kind::random: return "random";
    case Ownership::Kind::band: return "band";
    case Ownership::Kind::table: return "table";
    case Ownership::Kind::function: return "function";
    case Ownership::Kind::placement: return o.plc().rule == PlacementRule::greedy ? "greedy" : "balanced";
  }
  return "?";
}

// tile=: None (one tile per dimension), an int per dimension, or per dimension a
// list of boundaries [0, ..., extent] (irregular).
std::vector<DimPartition> partitions_of(const Coord& shape, nb::handle tile, nb::handle offset) {
  const int n = shape.ndim();
  Coord off = offset.is_none() ? Coord(n, 0) : to_coord(offset, "offset");
  if (off.ndim() != n)
    throw Error(detail::cat("offset has ", off.ndim(), " items, one per dimension of the shape ", shape.str(),
                            " needs ", n));
  std::vector<DimPartition> parts;
  if (tile.is_none()) {
    for (int d = 0; d < n; ++d) parts.push_back(DimPartition::regular(shape[d], shape[d] > 0 ? shape[d] : 1, off[d]));
    return parts;
  }
  // A str or a float is no tile size (a str was iterated character by character).
  const auto not_a_tile = [&](nb::handle t, const char* what) {
    return nb::type_error(detail::cat(what, " must be an int, a sequence of them (one per dimension) or per dimension "
                                      "a list of boundaries [0, ..., extent]; got ", nb::type_name(t.type()).c_str(),
                                      nb::isinstance<nb::str>(t) ? " (a spec string goes whole to Layout: Layout('" +
                                                                      shape.str() + " tile=...'))"
                                                                : std::string())
                              .c_str());
  };
  nb::list items;
  if (is_scalar_index(tile)) items.append(tile);
  else if (nb::isinstance<nb::str>(tile) || !PySequence_Check(tile.ptr())) throw not_a_tile(tile, "tile");
  else for (nb::handle h : nb::iter(tile)) items.append(h);
  if (static_cast<int>(nb::len(items)) != n)
    throw Error(detail::cat("tile has ", nb::len(items), " items, one per dimension of the shape ", shape.str(),
                            " needs ", n));
  for (int d = 0; d < n; ++d) {
    nb::handle t = items[static_cast<size_t>(d)];
    if (is_scalar_index(t)) parts.push_back(DimPartition::regular(shape[d], to_index(t, "tile"), off[d]));
    else if (nb::isinstance<nb::str>(t) || !PySequence_Check(t.ptr())) throw not_a_tile(t, "each item of tile");
    else {
      std::vector<index_t> bounds;  // a list of boundaries [0, ..., extent]
      for (nb::handle b : nb::iter(t)) bounds.push_back(to_index(b, "a tile boundary"));
      parts.push_back(DimPartition::irregular(std::move(bounds)));
    }
  }
  return parts;
}

// A Python owner function, called with the GIL held; freed with it too (the
// core copies layouts, and so this, from any thread).
// A tile's coordinates in l's tile grid: one int per dimension (a bare int for a
// 1-D layout), each in [0, tiles along it); anything else raises, naming the grid.
Coord tile_of(const Layout& l, nb::handle tile) {
  const Coord t = to_coord(tile, "tile"), n = l.ntiles();
  std::string grid;
  for (int d = 0; d < n.ndim(); ++d) grid += detail::cat(d ? "x" : "", n[d]);
  if (t.ndim() != n.ndim())
    throw Error(detail::cat("tile has ", t.ndim(), " coordinate", t.ndim() == 1 ? "" : "s", "; this layout's tile grid ",
                            grid, " needs ", n.ndim(), " (one per dimension)"));
  for (int d = 0; d < n.ndim(); ++d)
    if (t[d] < 0 || t[d] >= n[d])
      throw Error(detail::cat("tile coordinate ", t[d], " in dimension ", d, " is outside the tile grid ", grid,
                              " (0 to ", n[d] - 1, ")"));
  return t;
}

OwnerFunction owner_function(nb::callable fn) {
  std::shared_ptr<nb::object> f(new nb::object(std::move(fn)), [](nb::object* o) {
    if (!Py_IsInitialized()) {  // the registry's static map, destroyed after Python: leave the object be
      o->release();
      delete o;
      return;
    }
    nb::gil_scoped_acquire locked;
    delete o;
  });
  return [f](const Coord& tile) {
    nb::gil_scoped_acquire locked;
    const nb::object r = (*f)(from_coord(tile));
    index_t owner = 0;
    try {  // as a std::runtime_error the core names the function and the tile
      owner = to_index(r, "its result");
    } catch (const Error& e) {
      throw std::runtime_error(e.what());
    }
    if (owner < INT_MIN || owner > INT_MAX)
      throw std::runtime_error(detail::cat("its result ", owner, " is not a rank"));
    return static_cast<int>(owner);
  };
}

// One rank's storage map with the layout it maps (LocalIndex keeps its own copy private).
struct PyLocalIndex {
  Layout layout;
  LocalIndex map;
  PyLocalIndex(const Layout& l, int rank) : layout(l), map(l, rank) {}
};

// What makes two regions the same: size, offsets and, where it permutes, the axes.
std::string region_key(const Region& r) {
  return r.size.str() + "|" + r.src_offset.str() + "|" + r.dst_offset.str() + "|" + (r.permutes() ? r.axes.str() : "");
}

}  // namespace

void bind_layout(nb::module_& m) {
  nb::class_<Ownership>(m, "Ownership", "Which rank owns each tile (docs/spec.md); made by the static factories.")
      .def_static("block_cyclic", [](nb::handle grid, const std::string& order, nb::handle src, nb::handle super,
                                     int first, std::optional<std::vector<int>> map) {
        BlockCyclicParams p;
        p.grid = to_coord(grid, "grid");
        const int n = p.grid.ndim();
        p.order = order_of(order);
        p.source = src.is_none() ? Coord(n, 0) : to_coord(src, "src");
        p.super = super.is_none() ? Coord(n, 1) : to_coord(super, "super");
        p.first_rank = first;
        if (map) p.map = std::make_shared<const std::vector<int>>(std::move(*map));
        return Ownership::block_cyclic(std::move(p));
      }, nb::arg("grid"), nb::kw_only(), nb::arg("order") = "row", nb::arg("src") = nb::none(),
         nb::arg("super") = nb::none(), nb::arg("first") = 0, nb::arg("map") = nb::none(),
         "Process grid `grid`, grid order 'row' or 'col', source coordinate src, k-cyclic super tiles, first rank, "
         "or map: the rank at each grid coordinate (column-major).")
      .def_static("random", [](std::uint64_t seed, int ranks, int first) {
        return Ownership::random({.seed = seed, .ranks = ranks, .first_rank = first});
      }, nb::kw_only(), nb::arg("seed") = 0, nb::arg("ranks") = 1, nb::arg("first") = 0,
         "Owner of each tile drawn from [first, first + ranks) by a hash of seed and the tile index.")
      .def_static("band", &Ownership::band, nb::arg("width"), nb::arg("near"), nb::arg("far"),
                  "Tiles with |t0 - t1| <= width owned as `near` says, the others as `far` says.")
      .def_static("table", &Ownership::table, nb::arg("owners"), "One rank per tile, column-major tile order.")
      .def_static("function", [](const std::string& name, int ranks) {
        OwnerFunction fn = find_owner_function(name);
        if (!fn) throw Error("unknown owner function '" + name + "': register it with redist.register_owner_function");
        return Ownership::function(name, ranks, std::move(fn));
      }, nb::arg("name"), nb::arg("ranks"), "A function registered with register_owner_function; owners in [0, ranks).")
      .def_static("greedy", [](nb::handle of) { return Ownership::placement(PlacementRule::greedy, as_layout(of, "of")); },
                  nb::arg("of"), "Each patch (tile) whole to the rank holding its largest part of `of` (paper 003).")
      .def_static("balanced", [](nb::handle of) {
        return Ownership::placement(PlacementRule::balanced, as_layout(of, "of"));
      }, nb::arg("of"), "Patch counts within one per rank, least data moved (paper 003).")
      .def_prop_ro("kind", &kind_name, "block_cyclic, random, band, table, function, greedy or balanced")
      .def_prop_ro("ranks_needed", &Ownership::ranks_needed)
      .def("__eq__", [](const Ownership& a, const Ownership& b) { return a == b; });

  m.def("register_owner_function", [](const std::string& name, nb::callable fn) {
    register_owner_function(name, owner_function(std::move(fn)));
  }, nb::arg("name"), nb::arg("fn"),
     "Registers fn(tile: tuple[int, ...]) -> int for specs 'function name=NAME ranks=R' (same on every rank).");

  nb::class_<Layout>(m, "Layout", "Shape x partition x ownership x storage x element size (docs/spec.md).")
      .def("__init__", [](Layout* self, const std::string& spec) { new (self) Layout(Layout::parse(spec)); },
           nb::arg("spec"), "From a spec string, e.g. '8000x8000 tile=400x400 block_cyclic grid=2x2'.")
      .def("__init__", [](Layout* self, nb::handle shape, nb::handle tile, nb::handle offset,
                          std::optional<Ownership> ownership, const std::string& storage, index_t ld, index_t esize) {
        Coord s = to_coord(shape, "shape");
        new (self) Layout(s, partitions_of(s, tile, offset), ownership.value_or(Ownership()),
                          Storage{storage_of(storage), ld}, esize);
      }, nb::arg("shape"), nb::arg("tile") = nb::none(), nb::kw_only(), nb::arg("offset") = nb::none(),
         nb::arg("ownership") = nb::none(), nb::arg("storage") = "tile", nb::arg("ld") = 0, nb::arg("esize") = 8,
         "Keywords: tile per dimension an int (regular) or a list of boundaries [0, ..., extent]; ownership an "
         "Ownership (default: everything on rank 0); storage 'tile', 'local_array' or 'tile_pointers'.")
      .def_static("parse", &Layout::parse, nb::arg("spec"))
      .def_prop_ro("shape", [](const Layout& l) { return from_coord(l.shape()); })
      .def_prop_ro("ndim", &Layout::ndim)
      .def_prop_ro("esize", &Layout::elem_size, "bytes per element")
      .def_prop_ro("storage", [](const Layout& l) { return storage_name(l.storage().kind); })
      .def_prop_ro("ld", [](const Layout& l) { return l.storage().ld; })
      .def_prop_ro("ownership", &Layout::ownership)
      .def_prop_ro("ntiles", [](const Layout& l) { return from_coord(l.ntiles()); }, "tiles per dimension")
      .def_prop_ro("spec", &Layout::spec, "the canonical spec string")
      .def("tile_bounds", [](const Layout& l, int d) {
        if (d < 0 || d >= l.ndim()) throw Error(detail::cat("dimension ", d, " outside [0, ", l.ndim(), ")"));
        std::vector<index_t> b;
        const DimPartition& p = l.partition(d);
        for (index_t t = 0; t < p.ntiles(); ++t) b.push_back(p.tile_lo(t));
        b.push_back(p.extent());
        return b;
      }, nb::arg("d"), "The tile boundaries along dimension d: [0, ..., extent].")
      .def("tile_box", [](const Layout& l, nb::handle tile) {
        Box b = l.tile_box(tile_of(l, tile));
        return nb::make_tuple(from_coord(b.lo), from_coord(b.size));
      }, nb::arg("tile"), "(lo, size) of a tile, in global elements.")
      .def("owner", [](const Layout& l, nb::handle tile) { return l.owner(tile_of(l, tile)); }, nb::arg("tile"),
           "The rank owning a tile, given by its coordinates in the tile grid (one int per dimension).")
      .def("check", [](const Layout& l, int comm_size) {
        if (comm_size < 1) throw Error(detail::cat("comm_size ", comm_size, ": a communicator has at least 1 rank"));
        return l.check(comm_size);
      }, nb::arg("comm_size"),
           "'' when valid for comm_size ranks, else what is wrong (make_plan raises it on every rank).")
      .def("hash", &Layout::hash)
      .def("with_esize", [](const Layout& l, index_t esize) {
        return Layout(l.shape(), l.partitions(), l.ownership(), l.storage(), esize);
      }, nb::arg("esize"), "The same layout with another element size.")
      .def("__eq__", [](const Layout& a, nb::handle b) { return nb::isinstance<Layout>(b) && a == nb::cast<const Layout&>(b); })
      .def("__hash__", [](const Layout& l) { return static_cast<Py_ssize_t>(l.hash() >> 2); })
      .def("__str__", &Layout::spec)
      .def("__repr__", [](const Layout& l) { return "Layout('" + l.spec() + "')"; });

  m.def("placement_summary", [](nb::handle layout) {
    PlacementSummary s = placement_summary(as_layout(layout, "layout"));
    nb::dict d;
    d["patches"] = s.patches;
    d["shared_patches"] = s.shared_patches;
    d["total_elements"] = s.total_elements;
    d["moved_elements"] = s.moved_elements;
    d["load"] = s.load;
    d["load_elements"] = s.load_elements;
    return d;
  }, nb::arg("layout"), "What a greedy/balanced placement does: patches, moved elements, load per rank.");

  nb::class_<Region>(m, "Region", "The part of the array to move: size, offset in the source and in the target.")
      .def("__init__", [](Region* self, const std::string& text) { new (self) Region(Region::parse(text)); },
           nb::arg("text"),
           "From '7000x7000 from=500x300 to=1000x0 axes=1,0' (from/to default to 0, axes to the identity; "
           "'transpose' is axes=1,0).")
      .def("__init__", [](Region* self, nb::handle size, nb::handle src_offset, nb::handle dst_offset,
                          nb::handle axes) {
        Coord s = to_coord(size, "size");
        new (self) Region{s, src_offset.is_none() ? Coord(s.ndim(), 0) : to_coord(src_offset, "src_offset"),
                          dst_offset.is_none() ? Coord(s.ndim(), 0) : to_coord(dst_offset, "dst_offset"),
                          axes.is_none() ? Coord() : to_coord(axes, "axes")};
      }, nb::arg("size"), nb::kw_only(), nb::arg("src_offset") = nb::none(), nb::arg("dst_offset") = nb::none(),
         nb::arg("axes") = nb::none(),
         "size and dst_offset in the target's order of dimensions, src_offset in the source's; axes: target "
         "dimension d reads source dimension axes[d] (numpy.transpose's meaning; None: the identity).")
      .def_prop_ro("axes", [](const Region& r) { return r.axes.ndim() ? from_coord(r.axes) : from_coord(Coord()); })
      .def_static("whole", [](nb::handle shape) { return Region::whole(to_coord(shape, "shape")); }, nb::arg("shape"))
      .def_prop_ro("size", [](const Region& r) { return from_coord(r.size); })
      .def_prop_ro("src_offset", [](const Region& r) { return from_coord(r.src_offset); })
      .def_prop_ro("dst_offset", [](const Region& r) { return from_coord(r.dst_offset); })
      .def("check", [](const Region& r, nb::handle src_shape, nb::handle dst_shape) {
        return r.check(to_coord(src_shape, "src_shape"), to_coord(dst_shape, "dst_shape"));
      })
      .def("__str__", &Region::str)
      .def("__repr__", [](const Region& r) { return "Region('" + r.str() + "')"; })
      // Equal regions compare and hash equal (identity axes as none), as Layouts do.
      .def("__eq__", [](const Region& a, nb::handle b) {
        return nb::isinstance<Region>(b) && region_key(a) == region_key(nb::cast<const Region&>(b));
      })
      .def("__hash__", [](const Region& r) { return static_cast<Py_ssize_t>(std::hash<std::string>{}(region_key(r)) >> 2); });

  nb::class_<PyLocalIndex>(m, "LocalIndex", "A rank's storage map of a layout: its tiles and where they live.")
      .def(nb::init<const Layout&, int>(), nb::arg("layout"), nb::arg("rank"))
      .def_prop_ro("ntiles", [](const PyLocalIndex& x) { return x.map.ntiles(); }, "tiles this rank owns")
      .def_prop_ro("nblocks", [](const PyLocalIndex& x) { return x.map.nblocks(); })
      .def("block_elements", [](const PyLocalIndex& x, index_t b) { return x.map.block_elements(b); }, nb::arg("b"))
      .def_prop_ro("elements", [](const PyLocalIndex& x) { return x.map.elements(); })
      .def_prop_ro("ld", [](const PyLocalIndex& x) { return x.map.ld(); })
      .def_prop_ro("per_dimension", [](const PyLocalIndex& x) { return x.map.per_dimension(); })
      .def_prop_ro("local_extent", [](const PyLocalIndex& x) { return from_coord(x.map.local_extent()); })
      .def("tiles", [](const PyLocalIndex& x) {
        // (tile index, lo, size, block, element offset in the block) per owned tile, storage order.
        nb::list out;
        for (index_t i = 0; i < x.map.ntiles(); ++i) {
          Coord t = x.map.tile(i);
          Box b = x.layout.tile_box(t);
          Address a = x.map.address(t, b.lo);
          out.append(nb::make_tuple(from_coord(t), from_coord(b.lo), from_coord(b.size), a.block, a.offset));
        }
        return out;
      }, "Per owned tile, in storage order: (tile, lo, size, block, offset).")
      .def("globals", [](const PyLocalIndex& x, int d) {
        // Per-dimension ownerships: the global index of each local position along d.
        if (!x.map.per_dimension()) throw Error("LocalIndex.globals: the ownership is not per dimension (block_cyclic)");
        if (d < 0 || d >= x.layout.ndim()) throw Error(detail::cat("dimension ", d, " outside [0, ", x.layout.ndim(), ")"));
        const index_t n = x.map.local_extent()[d];
        auto* g = new index_t[static_cast<size_t>(n)];
        nb::capsule owner(g, [](void* p) noexcept { delete[] static_cast<index_t*>(p); });
        const DimPartition& p = x.layout.partition(d);
        for (index_t l = 0; l < x.map.owned_count(d); ++l) {
          const index_t t = x.map.owned_tile(d, l), lo = p.tile_lo(t), at = x.map.tile_prefix(d, l);
          for (index_t k = 0; k < p.tile_size(t); ++k) g[at + k] = lo + k;
        }
        return nb::ndarray<nb::numpy, index_t, nb::ndim<1>>(g, {static_cast<size_t>(n)}, owner);
      }, nb::arg("d"), "Per-dimension ownerships: the global index of each local position along dimension d.");
}

}  // namespace redist::python
