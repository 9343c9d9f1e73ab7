// Plans as Python objects (docs/python.md): make once, execute many, a context
// manager. execute takes numpy arrays (any buffer-protocol object), a DistArray,
// or for tile_pointers a list of them; what it finds wrong on this rank (dtype,
// shape, contiguity, size) joins one collective agreement, so every rank raises
// the same redist.Error (a ValueError) and none waits.
#include <nanobind/stl/complex.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <optional>

#include "common.hpp"
#include "mpi/agree.hpp"

namespace redist::python {
namespace {

// plan_stats and predict plan one simulated rank: `rank` of `ranks`.
void check_rank(const char* what, int rank, int ranks) {
  if (ranks < 1) throw Error(detail::cat(what, ": ranks ", ranks, ": a communicator has at least 1 rank"));
  if (rank < 0 || rank >= ranks) throw Error(detail::cat(what, ": rank ", rank, " must be in [0, ", ranks, ")"));
}

struct PyPlan {
  std::optional<Plan> plan;
  LocalIndex src_map, dst_map;  // for the binding's checks of the buffers it is given
  int rank = 0, size = 1;
  ElementType type = ElementType::bytes;  // make_plan's element_type: the arrays' dtype must be of its kind
  nb::object src_verified, dst_verified;  // DistArray layouts found to fit (collect)

  explicit PyPlan(Plan p)
      : src_map(p.source(), rank_of(p)), dst_map(p.target(), rank_of(p)), rank(rank_of(p)) {
    MPI_Comm_size(p.comm(), &size);
    plan.emplace(std::move(p));
  }
  PyPlan(const PyPlan&) = delete;
  ~PyPlan() { close(); }
  void close() {
    if (!plan) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) new Plan(std::move(*plan));  // too late to free its communicator: left to the process's end
    plan.reset();
  }
  Plan& get() {
    if (!plan) throw Error("redist: the plan is closed");
    return *plan;
  }
  static int rank_of(const Plan& p) {
    int r = 0;
    MPI_Comm_rank(p.comm(), &r);
    return r;
  }
};

// The buffers of one side of an execute, held for its duration. One block
// (storage tile, local_array) lives inline: an execute allocates nothing then.
struct Side {
  Py_buffer one;
  std::vector<Py_buffer> more;
  const void* one_ptr = nullptr;
  std::vector<const void*> more_ptrs;
  size_t n = 0;
  const char* format = nullptr;  // of the first block (the dtype's struct code)
  Side() = default;
  Side(const Side&) = delete;
  ~Side() {
    if (n >= 1) PyBuffer_Release(&one);
    for (Py_buffer& v : more) PyBuffer_Release(&v);
  }
  Py_buffer* add() {  // the next Py_buffer to fill (keep() once it is)
    if (n == 0) return &one;
    more.emplace_back();
    return &more.back();
  }
  void keep(Py_buffer* v) {
    if (n == 0) one_ptr = v->buf;
    else {
      if (more_ptrs.empty()) more_ptrs.push_back(one_ptr);
      more_ptrs.push_back(v->buf);
    }
    ++n;
  }
  void drop_unfilled() {  // add() was called, the buffer not obtained
    if (n > 0) more.pop_back();
  }
  bool null_one = false;  // None given where this rank stores nothing: one null block
  std::span<const void* const> ptrs() const {
    if (null_one) return {&one_ptr, 1};
    return n <= 1 ? std::span<const void* const>(&one_ptr, n) : std::span<const void* const>(more_ptrs);
  }
};

std::string py_type_name(nb::handle o) { return nb::type_name(o.type()).c_str(); }

// A keyword argument of make_plan as a T, or nb::type_error naming it and what it
// takes (make_plan agrees on it with the other ranks).
template <class T>
T keyword(nb::handle value, const char* name, const char* takes) {
  T out{};
  if (!nb::try_cast<T>(value, out))
    throw nb::type_error(detail::cat(name, " must be ", takes, ", got ", py_type_name(value)).c_str());
  return out;
}
// An int argument that fits in an int (beyond it: redist::Error).
int small_int(nb::handle value, const char* name) {
  const index_t v = to_index(value, name);
  if (v < INT_MIN || v > INT_MAX) throw Error(detail::cat(name, " ", v, " is out of range"));
  return static_cast<int>(v);
}

// A buffer format (PEP 3118) without the byte-order and alignment marks that mean
// this machine's own ('@', '=', and '<' or '>' whichever is native), field names
// (between colons) kept as they are. numpy marks a packed structured dtype
// differently in an empty array ('T{d:a:i:b:}') and a non-empty one
// ('T{=d:a:@i:b:}'): the same elements (their size is checked apart).
std::string plain_format(const char* f) {
  const char native = std::endian::native == std::endian::little ? '<' : '>';
  std::string out;
  bool name = false;
  for (; f && *f; ++f) {
    if (*f == ':') name = !name;
    if (!name && (*f == '@' || *f == '=' || *f == native)) continue;
    out += *f;
  }
  // numpy's int64 is 'l' (native long) or 'q' (long long), the same elements here
  // (np.dtype('l') == np.dtype('q')); their sizes are checked apart.
  if constexpr (sizeof(long) == sizeof(long long)) {
    if (out == "l") return "q";
    if (out == "L") return "Q";
  }
  return out;
}

// Why elements of buffer format `f` (plain_format) cannot carry element_type
// `t`'s arithmetic ("" if they can; their size is checked apart): a float type
// needs a float dtype, a complex one a complex dtype, an integer one a signed
// integer dtype (int64 bits read as doubles would be scaled as doubles).
std::string kind_problem(ElementType t, const std::string& f) {
  if (t == ElementType::bytes) return {};
  const bool is_float = f == "f" || f == "d", is_complex = f == "Zf" || f == "Zd",
             is_int = f.size() == 1 && std::string_view("bhilqn").find(f[0]) != std::string_view::npos;
  const bool ok = t == ElementType::f32 || t == ElementType::f64     ? is_float
                  : t == ElementType::c64 || t == ElementType::c128 ? is_complex
                                                                    : is_int;
  if (ok) return {};
  const std::string_view name = element_type_name(t);
  return detail::cat("element_type='", name, "' computes on ",
                     t == ElementType::f32 || t == ElementType::f64     ? "floating-point"
                     : t == ElementType::c64 || t == ElementType::c128 ? "complex"
                                                                       : "signed integer",
                     " elements, but the arrays' elements are of format '", f,
                     "' (arrays of such elements, or the element_type of theirs)");
}

// Why obj gives no contiguous (writable) buffer.
std::string buffer_problem(nb::handle obj, bool writable) {
  Py_buffer v;
  if (PyObject_GetBuffer(obj.ptr(), &v, PyBUF_FULL_RO) != 0) {
    PyErr_Clear();
    return "expected a numpy array (or another buffer-protocol object), got " + py_type_name(obj);
  }
  const bool ro = v.readonly;
  PyBuffer_Release(&v);
  if (writable && ro) return "the array is read-only";
  return "the array is not contiguous (a strided view such as a[::2] or a[:, 1:3] of a larger array; a DistArray's "
         "local_array with ld= above its rows: pass the DistArray or its blocks[0]); np.ascontiguousarray, or "
         "np.asfortranarray for storage=local_array, makes a contiguous copy, which as a target receives the result in "
         "place of your array";
}

// Whether a DistArray made for `own` lies in storage as the plan's `layout`
// addresses it on this rank (`map`): the same tiles, owners and storage, the
// element size aside (the element checks see it) and ld= as each resolves it
// (0: the rank's own rows).
bool same_storage(const Layout& own, const Layout& layout, const LocalIndex& map) {
  if (!(own.shape() == layout.shape() && own.partitions() == layout.partitions() &&
        own.ownership() == layout.ownership() && own.storage().kind == layout.storage().kind))
    return false;
  if (own.storage().kind != StorageKind::local_array || map.local_extent().volume() == 0) return true;
  const index_t ld = own.storage().ld ? own.storage().ld : std::max<index_t>(1, map.local_extent()[0]);
  return ld == map.ld();
}

// Fills `side` from obj; returns what is wrong ("" if nothing). `verified`: the
// layout object of the last DistArray found to fit this side.
std::string collect(nb::handle obj, bool writable, const LocalIndex& map, const Layout& layout, MPI_Comm plan_comm,
                    const char* name, Side& side, nb::object& verified) {
  static PyObject* const kBlocks = PyUnicode_InternFromString("_redist_blocks");
  PyObject* single = nullptr;
  nb::object blocks;
  const bool one_buffer = layout.storage().kind != StorageKind::tile_pointers;
  if (obj.is_none()) {  // "nothing here": where this rank stores no element
    const index_t stored = one_buffer ? (map.nblocks() ? map.block_elements(0) : 0) : map.nblocks();
    const bool nothing = stored == 0 || (layout.storage().kind == StorageKind::local_array && map.local_extent().volume() == 0);
    if (!nothing)
      return detail::cat(name, ": None, but this rank ", one_buffer ? "stores " : "owns ", stored,
                         one_buffer ? " elements" : " local tiles", " (None only where it stores none)");
    side.null_one = one_buffer;
    return {};
  }
  if (PyObject_CheckBuffer(obj.ptr())) {
    single = obj.ptr();
  } else {
    PyObject* b = PyObject_GetAttr(obj.ptr(), kBlocks);  // a DistArray's storage blocks
    if (b) {
      blocks = nb::steal(b);
      // ... which fit the plan only if they were made for its layout (arrays
      // swapped, or made for another layout of as many elements, would be read
      // or written as this one).
      static PyObject* const kLayout = PyUnicode_InternFromString("layout");
      nb::object own = nb::steal(PyObject_GetAttr(obj.ptr(), kLayout));
      if (!own.is_valid()) PyErr_Clear();
      else if (nb::isinstance<Layout>(own) && !(verified.is_valid() && verified.is(own))) {
        if (!same_storage(nb::cast<const Layout&>(own), layout, map))
          return detail::cat(name, ": the DistArray's layout '", nb::cast<const Layout&>(own).spec(), "' is not the plan's ",
                             name, " layout '", layout.spec(), "'");
        // ... and over the plan's ranks (one made on a sub-communicator holds
        // another rank numbering's tiles).
        static PyObject* const kComm = PyUnicode_InternFromString("comm");
        nb::object comm = nb::steal(PyObject_GetAttr(obj.ptr(), kComm));
        if (!comm.is_valid()) PyErr_Clear();
        else if (!comm.is_none()) {
          int same = MPI_UNEQUAL;
          MPI_Comm_compare(comm_of(comm), plan_comm, &same);  // unchecked: both valid communicators
          if (same != MPI_IDENT && same != MPI_CONGRUENT)
            return detail::cat(name, ": the DistArray was made on another communicator than the plan's (make_plan's "
                               "comm, default COMM_WORLD): give make_plan the array's comm");
        }
        verified = own;  // the next execute with this array's layout object skips the comparisons
      }
    } else {
      PyErr_Clear();
      if (PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr())) blocks = nb::borrow(obj);
    }
    if (!blocks.is_valid() || !(PyList_Check(blocks.ptr()) || PyTuple_Check(blocks.ptr())))
      return detail::cat(name, ": expected a numpy array, a DistArray or (storage=tile_pointers) a list of arrays, got ",
                         py_type_name(obj));
  }
  const size_t count = single ? 1 : static_cast<size_t>(PySequence_Fast_GET_SIZE(blocks.ptr()));
  auto item = [&](size_t b) { return single ? single : PySequence_Fast_GET_ITEM(blocks.ptr(), static_cast<Py_ssize_t>(b)); };
  const index_t esize = layout.elem_size();
  if (one_buffer && count != 1)
    return detail::cat(name, ": storage=", layout.storage().kind == StorageKind::tile ? "tile" : "local_array",
                       " takes one array, got ", count);
  if (!one_buffer && static_cast<index_t>(count) != map.nblocks())
    return detail::cat(name, ": storage=tile_pointers takes one array per local tile: this rank owns ", map.nblocks(),
                       ", got ", count);
  if (!one_buffer) side.more.reserve(count);
  for (size_t b = 0; b < count; ++b) {
    Py_buffer* pv = side.add();
    const int flags = PyBUF_ANY_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(item(b), pv, flags) != 0) {
      PyErr_Clear();
      side.drop_unfilled();
      return detail::cat(name, ": ", buffer_problem(item(b), writable));
    }
    side.keep(pv);
    const Py_buffer& v = *pv;
    if (b == 0) side.format = v.format;
    else if (plain_format(v.format) != plain_format(side.format))
      return detail::cat(name, ": local tile ", b, "'s elements (format '", v.format ? v.format : "B",
                         "') are not of local tile 0's type (format '", side.format ? side.format : "B", "')");
    if (v.itemsize != esize)
      return detail::cat(name, ": the array's elements are ", v.itemsize, " bytes (format '", v.format ? v.format : "B",
                         "'), the layout's esize=", esize, " (a dtype of ", esize, " bytes, or esize=", v.itemsize,
                         " in the layout)");
    index_t want = map.block_elements(static_cast<index_t>(b));
    const index_t have = v.len / esize;
    if (layout.storage().kind == StorageKind::local_array && map.local_extent().volume() == 0)
      want = 0;  // nothing stored here (ld may still be 1): an empty array will do
    // Storage is column-major (tiles and local arrays): a C-ordered matrix would be read transposed.
    if (v.ndim > 1 && !PyBuffer_IsContiguous(&v, 'F'))
      return detail::cat(name, ": a multi-dimensional array must be column-major (numpy order='F'; "
                         "np.asfortranarray), like the layout's storage; this one is in C order");
    if (layout.storage().kind != StorageKind::local_array && v.ndim > 1) {
      // Tile storage read as its tiles one after another: a shaped array is one
      // tile, shaped as it (with more tiles, or another shape, the elements would
      // be taken in memory order as something else).
      const bool one_tile = one_buffer ? map.ntiles() == 1 : true;
      Coord want_shape = one_tile && map.ntiles() > 0 ? layout.tile_box(map.tile(one_buffer ? 0 : static_cast<index_t>(b))).size
                                                      : Coord();
      bool same = one_tile && v.ndim == layout.ndim() && map.ntiles() > 0;
      for (int d = 0; same && d < v.ndim; ++d) same = v.shape[d] == want_shape[d];
      if (!same) {
        std::string got;
        for (int d = 0; d < v.ndim; ++d) got += (d ? "x" : "") + std::to_string(v.shape[d]);
        return one_tile && map.ntiles() > 0
                   ? detail::cat(name, ": a multi-dimensional array for ", one_buffer ? "this rank's tile" : "local tile ",
                                 one_buffer ? "" : std::to_string(b), " is ", want_shape.str(), ", got ", got,
                                 " (or give it flat)")
                   : detail::cat(name, ": storage=tile on a rank with ", map.ntiles(),
                                 " local tiles takes them one after another, flat (1-D), got an array of shape ", got);
      }
    }
    if (layout.storage().kind == StorageKind::local_array && v.ndim > 1 && v.ndim != layout.ndim())
      return detail::cat(name, ": a multi-dimensional local array has the layout's ", layout.ndim(),
                         " dimensions (ld x local extents), this one ", v.ndim, " (or give it flat)");
    if (layout.storage().kind == StorageKind::local_array && v.ndim == layout.ndim() && v.ndim > 1 && want > 0) {
      // A multi-dimensional local array must be this rank's ld x local extents.
      Coord want_shape = map.local_extent();
      want_shape[0] = map.ld();
      bool same = true;
      for (int d = 0; d < v.ndim; ++d) same = same && v.shape[d] == want_shape[d];
      if (!same) {
        std::string got;
        for (int d = 0; d < v.ndim; ++d) got += (d ? "x" : "") + std::to_string(v.shape[d]);
        return detail::cat(name, ": this rank's local array is ", want_shape.str(), " (ld x local extents), got ", got);
      }
    }
    if (have < want)
      return detail::cat(name, ": ", one_buffer ? "this rank stores " : "local tile ", one_buffer ? "" : std::to_string(b),
                         one_buffer ? "" : " has ", want, " elements; the array holds ", have);
  }
  return {};
}

// Whether two of a tile_pointers target's blocks share memory (the same array
// twice, or views of one): one tile's result would overwrite another's.
std::string overlapping_blocks(const Side& side, const char* name) {
  std::vector<std::pair<const std::byte*, const std::byte*>> spans;
  auto add = [&](const Py_buffer& v) {
    const auto* p = static_cast<const std::byte*>(v.buf);
    if (v.len > 0) spans.emplace_back(p, p + v.len);
  };
  add(side.one);
  for (const Py_buffer& v : side.more) add(v);
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i)
    if (spans[i].first < spans[i - 1].second)
      return detail::cat(name, ": two of the local tiles' arrays share memory (the same array twice, or views of "
                               "one): each tile needs its own");
  return {};
}

void execute(PyPlan& self, nb::handle src, nb::handle dst, nb::handle strategy) {
  Plan& plan = self.get();
  // Before collect's MPI calls (after MPI.Finalize() they aborted the job).
  if (std::string e = detail::outside_mpi("Plan.execute", kCallsNeedMpi); !e.empty()) throw Error(e);
  Side s, d;
  // A wrong type is a TypeError on its rank, redist.Error on the others (agreed).
  std::string err, name_given;
  bool type_error = false;
  if (!strategy.is_none() && !nb::try_cast<std::string>(strategy, name_given))
    err = detail::cat("strategy must be a str or None, got ", py_type_name(strategy)), type_error = true;
  if (err.empty()) err = collect(src, false, self.src_map, plan.source(), plan.comm(), "source", s, self.src_verified);
  if (err.empty()) err = collect(dst, true, self.dst_map, plan.target(), plan.comm(), "target", d, self.dst_verified);
  if (err.empty() && d.n > 1) err = overlapping_blocks(d, "target");
  if (err.empty() && s.format && d.format && plain_format(s.format) != plain_format(d.format))
    err = detail::cat("the source's elements (format '", s.format, "') and the target's (format '", d.format,
                      "') are of different types");
  if (err.empty() && (s.format || d.format))
    err = kind_problem(self.type, plain_format(s.format ? s.format : d.format));
  std::string_view name = strategy.is_none() ? std::string_view() : std::string_view(name_given);
  std::span<const void* const> sp = s.ptrs(), dp = d.ptrs();
  {
    nb::gil_scoped_release unlocked;
    // What this rank found wrong joins the core's one agreement (same error everywhere, nothing moved).
    try {
      plan.execute(sp, std::span<void* const>(const_cast<void* const*>(dp.data()), dp.size()), name, err);
    } catch (const Error&) {
      if (!type_error) throw;
    }
  }
  if (type_error) throw nb::type_error(err.c_str());
}

nb::dict stats_dict(const PlanStats& s) {
  nb::dict d;
#define REDIST_FIELD(f) d[#f] = s.f
  REDIST_FIELD(bytes_sent); REDIST_FIELD(bytes_received); REDIST_FIELD(bytes_local);
  REDIST_FIELD(messages_sent); REDIST_FIELD(messages_received);
  REDIST_FIELD(segments_sent); REDIST_FIELD(segments_received); REDIST_FIELD(local_copies);
  REDIST_FIELD(runs_sent); REDIST_FIELD(runs_received); REDIST_FIELD(local_runs);
  REDIST_FIELD(plan_bytes); REDIST_FIELD(target_tiles); REDIST_FIELD(max_segments_per_tile);
  REDIST_FIELD(segments_per_tile_total);
#undef REDIST_FIELD
  return d;
}

}  // namespace

void bind_plan(nb::module_& m) {
  nb::class_<PlanStats>(m, "PlanStats", "What this rank's plan moves (no data needed).")
      .def_ro("bytes_sent", &PlanStats::bytes_sent)
      .def_ro("bytes_received", &PlanStats::bytes_received)
      .def_ro("bytes_local", &PlanStats::bytes_local)
      .def_ro("messages_sent", &PlanStats::messages_sent)
      .def_ro("messages_received", &PlanStats::messages_received)
      .def_ro("segments_sent", &PlanStats::segments_sent)
      .def_ro("segments_received", &PlanStats::segments_received)
      .def_ro("local_copies", &PlanStats::local_copies)
      .def_ro("runs_sent", &PlanStats::runs_sent)
      .def_ro("runs_received", &PlanStats::runs_received)
      .def_ro("local_runs", &PlanStats::local_runs)
      .def_ro("plan_bytes", &PlanStats::plan_bytes)
      .def_ro("target_tiles", &PlanStats::target_tiles)
      .def_ro("max_segments_per_tile", &PlanStats::max_segments_per_tile)
      .def_ro("segments_per_tile_total", &PlanStats::segments_per_tile_total)
      .def("as_dict", &stats_dict)
      .def("__repr__", [](const PlanStats& s) { return "PlanStats(" + nb::cast<std::string>(nb::repr(stats_dict(s))) + ")"; });

  m.def("plan_stats", [](nb::handle src, nb::handle dst, nb::handle region, int rank, int ranks) {
    check_rank("plan_stats", rank, ranks);
    Layout s = as_layout(src, "src"), d = as_layout(dst, "dst");
    Region r = as_region(region, s.shape());
    for (const std::string& e : {s.check(ranks), d.check(ranks), r.check(s.shape(), d.shape())})
      if (!e.empty()) throw Error(e);
    return plan_rank(s, d, r, rank, ranks).stats;
  }, nb::arg("src"), nb::arg("dst"), nb::arg("region") = nb::none(), nb::kw_only(), nb::arg("rank"), nb::arg("ranks"),
     "No MPI: the statistics of `rank`'s plan among `ranks` ranks (redist plan --ranks).");
  m.def("predict", [](nb::handle src, nb::handle dst, nb::handle region, int rank, int ranks, const Machine& machine,
                      const std::string& storage, int ranks_per_node) {
    check_rank("predict", rank, ranks);
    Layout s = as_layout(src, "src"), d = as_layout(dst, "dst");
    Region r = as_region(region, s.shape());
    for (const std::string& e : {s.check(ranks), d.check(ranks), r.check(s.shape(), d.shape())})
      if (!e.empty()) throw Error(e);
    if (storage != "heap" && storage != "shared")
      throw Error(detail::cat("predict: storage '", storage, "': expected heap or shared"));
    if (ranks_per_node < 0) throw Error(detail::cat("predict: ranks_per_node must be >= 0, got ", ranks_per_node));
    RankPlan rp = plan_rank(s, d, r, rank, ranks);
    std::vector<int> node_of;  // nodes of ranks_per_node consecutive ranks (0: one node)
    if (ranks_per_node > 0)
      for (int k = 0; k < ranks; ++k) node_of.push_back(k / ranks_per_node);
    nb::dict out;
    for (const std::string& name : strategy_names())
      out[name.c_str()] = predict(rp, name, machine, storage == "heap", node_of).total();
    return out;
  }, nb::arg("src"), nb::arg("dst"), nb::arg("region") = nb::none(), nb::kw_only(), nb::arg("rank"), nb::arg("ranks"),
     nb::arg("machine"), nb::arg("storage") = "heap", nb::arg("ranks_per_node") = 0,
     "No MPI: each strategy's predicted seconds for `rank`'s plan (paper 000 Eq. 1), for arrays in `storage`: "
     "'heap' (numpy arrays; shm predicts its heap model, cross-memory attach as direct) or 'shared' (shared "
     "windows), as `redist plan --predict --storage`; ranks_per_node=k > 0: nodes of k consecutive ranks (shm "
     "charges peers on other nodes as messages), as `redist plan --ranks-per-node`.");

  nb::class_<PyPlan>(m, "Plan", "A redistribution made once (make_plan) and executed as often as needed.")
      // .none(): None reaches the body (a rank that stores nothing; a wrong type is agreed there)
      .def("execute", &execute, nb::arg("src").none(), nb::arg("dst").none(), nb::arg("strategy").none() = nb::none(),
           nb::sig("def execute(self, src: typing_extensions.Buffer | redist._array.DistArray | list | None, dst: "
                   "typing_extensions.Buffer | redist._array.DistArray | list | None, strategy: str | None = None) -> None"),
           "Collective. src, dst: numpy arrays (one per rank for storage tile/local_array; a list, one per local "
           "tile, for tile_pointers), DistArrays, or None on a rank that stores none of that side's elements. "
           "strategy: a name of strategies() or 'auto'; None: the plan's.")
      .def_prop_ro("stats", [](PyPlan& p) { return p.get().stats(); })
      .def_prop_ro("source", [](PyPlan& p) { return p.get().source(); })
      .def_prop_ro("target", [](PyPlan& p) { return p.get().target(); })
      .def_prop_ro("region", [](PyPlan& p) { return p.get().region(); })
      .def_prop_ro("strategy", [](PyPlan& p) { return p.get().options().strategy; })
      .def_prop_ro("auto_choice", [](PyPlan& p) { return p.get().auto_choice(); },
                   "The strategy auto runs for this plan: '' until auto decides (its first execute, or after the "
                   "2 * auto_trials trial executes), then a name of strategy_names(), the same on every rank.")
      .def_prop_ro("auto_trials", [](PyPlan& p) { return p.get().options().auto_trials; })
      .def_prop_ro("copy_threads", [](PyPlan& p) { return p.get().options().copy_threads; })
      .def_prop_ro("buffer_bytes", [](PyPlan& p) { return p.get().buffer_bytes(); })
      .def_prop_ro("rank", [](const PyPlan& p) { return p.rank; })
      .def_prop_ro("size", [](const PyPlan& p) { return p.size; })
      .def_prop_ro("machine", [](PyPlan& p) -> std::optional<Machine> {
        const Machine* mm = p.get().machine();
        return mm ? std::optional<Machine>(*mm) : std::nullopt;
      })
      .def("predictions", [](PyPlan& p, nb::handle storage) {
        Plan& plan = p.get();
        // A wrong type is a TypeError on its rank, redist.Error on the others: a
        // text no storage has joins the core's agreement (nanobind's own
        // conversion refused it on that rank alone, and the others waited).
        std::string text;
        const bool type_error = !nb::try_cast<std::string>(storage, text);
        if (type_error) text = detail::cat("<", py_type_name(storage), ">");
        std::vector<double> t;
        {
          nb::gil_scoped_release unlocked;
          try {
            t = plan.predictions_for(text);
          } catch (const Error&) {
            if (!type_error) throw;
          }
        }
        if (type_error)
          throw nb::type_error(detail::cat("storage must be a str ('heap' or 'shared'), got ", py_type_name(storage))
                                   .c_str());
        nb::dict out;
        std::vector<std::string> names = strategy_names();
        for (size_t i = 0; i < t.size(); ++i) out[names[i].c_str()] = t[i];
        return out;
      }, nb::arg("storage") = "heap", nb::sig("def predictions(self, storage: str = 'heap') -> dict[str, float]"),
         "Collective: each strategy's predicted seconds (max over ranks), the same on every rank, for arrays in "
         "`storage`: 'heap' (numpy arrays, what auto compares for them; shm: its heap model) or 'shared' (shared "
         "windows); another value: the same Error on every rank (a TypeError on the rank that passed a non-str); "
         "different values on different ranks: MismatchError on every rank.")
      .def("close", &PyPlan::close, "Frees the plan (its communicator) now; every rank should close it.")
      .def_prop_ro("closed", [](const PyPlan& p) { return !p.plan; })
      .def("__enter__", [](nb::handle self) { return nb::borrow(self); })
      .def("__exit__", [](PyPlan& p, nb::args) { p.close(); });

  m.def("make_plan", [](nb::handle src, nb::handle dst, nb::handle region, nb::handle comm, nb::handle strategy,
                        nb::handle max_message_bytes, nb::handle max_buffer_bytes, nb::handle calibration,
                        nb::handle machine, nb::handle element_type, nb::handle alpha, nb::handle beta,
                        nb::handle conjugate, nb::handle auto_trials, nb::handle copy_threads) {
    // Every argument is read here, not by nanobind before the call: a spec or
    // region string that does not parse on some rank is agreed on like any bad
    // argument, and so is an argument of the wrong type (a TypeError on its rank,
    // redist.Error on the others, which would otherwise wait in make_plan). A
    // comm that is not a communicator is agreed on over COMM_WORLD, the default:
    // where the others passed another communicator they still wait (docs/python.md).
    // Outside MPI nothing can be agreed: this process's own error (Open MPI aborted
    // the job at the agreement's first call after MPI.Finalize()).
    if (std::string e = detail::outside_mpi("make_plan", kCallsNeedMpi); !e.empty()) throw Error(e);
    MPI_Comm c = MPI_COMM_WORLD;
    Layout s, d;
    Region r;
    Options o;
    std::string err;
    bool type_error = false;
    std::optional<nb::python_error> raised;  // re-raised as it is on this rank, after the agreement
    try {
      c = comm_of(comm);
      s = as_layout(src, "src");
      d = as_layout(dst, "dst");
      r = as_region(region, s.shape());
      // None: the default, as execute's strategy=None is the plan's own
      if (!strategy.is_none()) o.strategy = keyword<std::string>(strategy, "strategy", "a str or None");
      o.max_message_bytes = to_index(max_message_bytes, "max_message_bytes");
      o.max_buffer_bytes = to_index(max_buffer_bytes, "max_buffer_bytes");
      o.calibration = keyword<std::string>(calibration, "calibration", "a str");
      if (!machine.is_none())
        o.machine = std::make_shared<const Machine>(keyword<Machine>(machine, "machine", "a redist.Machine or None"));
      o.arithmetic.type = parse_element_type(keyword<std::string>(element_type, "element_type", "a str"));
      o.arithmetic.alpha = keyword<std::complex<double>>(alpha, "alpha", "a number");
      o.arithmetic.beta = keyword<std::complex<double>>(beta, "beta", "a number");
      o.arithmetic.conjugate = keyword<bool>(conjugate, "conjugate", "a bool");
      o.auto_trials = small_int(auto_trials, "auto_trials");    // checked (>= 0) by the core's make_plan, agreed
      o.copy_threads = small_int(copy_threads, "copy_threads");  // checked (0..1024) by the core's make_plan, agreed
    } catch (const Error& e) {
      err = e.what();
    } catch (const nb::builtin_exception& e) {
      if (e.type() != nb::exception_type::type_error) throw;
      err = e.what(), type_error = true;
    } catch (nb::python_error& e) {  // a Python exception from a conversion (numpy's __index__ of an array)
      err = e.what(), type_error = true;
      raised.emplace(std::move(e));
    }
    std::optional<Plan> plan;
    {
      nb::gil_scoped_release unlocked;  // owner functions written in Python take it back
      if (type_error) {
        try {
          detail::agree(c, err);
        } catch (const Error&) {  // raised below as what it is on this rank
        }
      } else {
        detail::agree(c, err);
        plan.emplace(make_plan(s, d, r, c, o));
      }
    }
    if (raised) throw std::move(*raised);
    if (type_error) throw nb::type_error(err.c_str());
    auto* made = new PyPlan(std::move(*plan));
    made->type = o.arithmetic.type;
    return made;
  }, nb::arg("src"), nb::arg("dst"), nb::arg("region") = nb::none(), nb::arg("comm") = nb::none(), nb::kw_only(),
     // .none(): None reaches the body too, which names the argument (agreed)
     nb::arg("strategy").none() = "p2p", nb::arg("max_message_bytes").none() = index_t{1} << 30,
     nb::arg("max_buffer_bytes").none() = 0, nb::arg("calibration").none() = "", nb::arg("machine").none() = nb::none(),
     nb::arg("element_type").none() = "bytes", nb::arg("alpha").none() = std::complex<double>(1.0),
     nb::arg("beta").none() = std::complex<double>(0.0), nb::arg("conjugate").none() = false,
     nb::arg("auto_trials").none() = 0, nb::arg("copy_threads").none() = 0,
     nb::sig("def make_plan(src: Layout | str, dst: Layout | str, region: Region | str | None = None, "
             "comm: mpi4py.MPI.Comm | None = None, *, strategy: str | None = 'p2p', max_message_bytes: int = 1073741824, "
             "max_buffer_bytes: int = 0, calibration: str = '', machine: Machine | None = None, "
             "element_type: str = 'bytes', alpha: complex = 1, beta: complex = 0, conjugate: bool = False, "
             "auto_trials: int = 0, copy_threads: int = 0) -> Plan"),
     "Collective over comm (an mpi4py communicator; None: COMM_WORLD): checks the arguments on every rank (the same "
     "redist.Error everywhere), then plans this rank. src, dst: Layouts or spec strings; region: a Region, a region "
     "string or None (the whole source shape; 'axes=1,0' in it transposes). element_type ('f32', 'f64', 'c64', "
     "'c128', 'i32', 'i64', 'bytes'), alpha, beta, conjugate: target = alpha * op(source) + beta * target while "
     "copying (docs/transforms.md); a strategy that cannot apply it is refused with an error naming those that can. "
     "auto_trials=k > 0: the first 2k executes under 'auto' alternate between the two strategies the model predicts "
     "fastest, timing each, then auto keeps the one with the smaller median time (Plan.auto_choice; 0: the model "
     "alone). copy_threads=T > 1: this rank's copies (local pieces, packing, unpacking, shm's push) cut into parts "
     "of at least 4 MB on T threads (0: $REDIST_COPY_THREADS, else 1; docs/strategies.md, 'Copy threads per rank').");
}

}  // namespace redist::python
