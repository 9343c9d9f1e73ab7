// redist._core: the extension module (docs/python.md). Errors, communicators,
// strategies and the machine model; layouts in layout.cpp, plans in plan.cpp,
// storage in shared windows in shm.cpp.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <limits>

#include "common.hpp"
#include "mpi/agree.hpp"

namespace redist::python {

MPI_Comm comm_of(nb::handle comm) {
  // Before any MPI call: after MPI.Finalize() Open MPI aborted the job at the first
  // (MPI_Comm_test_inter), where plan.predictions() already raised (a helper's trial).
  if (std::string e = detail::outside_mpi("a call over a communicator", kCallsNeedMpi); !e.empty()) throw Error(e);
  nb::module_ mpi = nb::module_::import_("mpi4py.MPI");
  nb::object c = comm.is_none() ? mpi.attr("COMM_WORLD") : nb::borrow(comm);
  if (!nb::isinstance(c, mpi.attr("Comm")))
    throw nb::type_error(("comm must be an mpi4py communicator (mpi4py.MPI.Comm), got " +
                          std::string(nb::str(nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(c.ptr())))).c_str()))
                             .c_str());
  auto address = nb::cast<std::uintptr_t>(mpi.attr("_addressof")(c));
  MPI_Comm h = *reinterpret_cast<const MPI_Comm*>(address);
  if (h == MPI_COMM_NULL) throw Error("redist: comm is MPI.COMM_NULL");
  if (std::string e = detail::intercomm_problem(h, "redist"); !e.empty()) throw Error(e);
  return h;
}

index_t to_index(nb::handle value, const char* what) {
  // An int or what stands for one (__index__: numpy's integers), not a float or a str.
  if (!PyIndex_Check(value.ptr()))
    throw nb::type_error(detail::cat(what, " must be an int, got ", nb::type_name(value.type()).c_str()).c_str());
  const nb::object i = nb::steal(PyNumber_Index(value.ptr()));
  if (!i.is_valid()) throw nb::python_error();
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (overflow != 0)
    throw Error(detail::cat(what, " ", nb::str(value).c_str(), " does not fit in 64 bits (",
                            std::numeric_limits<index_t>::min(), " .. ", std::numeric_limits<index_t>::max(), ")"));
  return static_cast<index_t>(v);
}

bool is_scalar_index(nb::handle value) {
  // numpy's arrays have __index__ too (it raises unless 0-d): a sequence comes first
  return PyLong_Check(value.ptr()) || (!PySequence_Check(value.ptr()) && PyIndex_Check(value.ptr()));
}

Coord to_coord(nb::handle values, const char* what) {
  if (is_scalar_index(values)) return Coord{to_index(values, what)};
  if (!PySequence_Check(values.ptr()) || nb::isinstance<nb::str>(values))
    throw nb::type_error((std::string(what) + " must be a sequence of ints").c_str());
  nb::sequence seq = nb::borrow<nb::sequence>(values);
  const size_t n = nb::len(seq);
  if (n < 1 || n > static_cast<size_t>(kMaxDims))
    throw Error(detail::cat(what, " has ", n, " items; a layout has 1 to ", kMaxDims, " dimensions"));
  Coord c(static_cast<int>(n));
  for (size_t d = 0; d < n; ++d) c[static_cast<int>(d)] = to_index(seq[d], what);
  return c;
}

nb::tuple from_coord(const Coord& c) {
  nb::list l;
  for (index_t v : c) l.append(v);
  return nb::tuple(l);
}

Layout as_layout(nb::handle obj, const char* what) {
  if (nb::isinstance<nb::str>(obj)) return Layout::parse(nb::cast<std::string>(obj));
  if (nb::isinstance<Layout>(obj)) return nb::cast<const Layout&>(obj);
  throw nb::type_error((std::string(what) + " must be a redist.Layout or a spec string").c_str());
}

Region as_region(nb::handle obj, const Coord& shape) {
  if (obj.is_none()) return Region::whole(shape);
  if (nb::isinstance<nb::str>(obj)) return Region::parse(nb::cast<std::string>(obj));
  if (nb::isinstance<Region>(obj)) return nb::cast<const Region&>(obj);
  throw nb::type_error("region must be a redist.Region, a region string or None (the whole array)");
}

}  // namespace redist::python

using namespace redist;
using namespace redist::python;

NB_MODULE(_core, m) {
  m.doc() = "redist's C++ core (docs/python.md); use the package `redist`, which re-exports it";
  // redist::Error is bad input, agreed on every rank: a ValueError. MpiError is
  // local to the rank that saw it (end the job). Translators run latest first.
  static nb::exception<Error> error(m, "Error", PyExc_ValueError);
  static nb::exception<MpiError> mpi_error(m, "MpiError", error);
  static nb::exception<MismatchError> mismatch_error(m, "MismatchError", error);  // ranks disagreed (agreed)
  nb::set_leak_warnings(false);  // plans alive at exit are freed by Python's teardown, or not at all

  m.def("strategies", [] {
    std::vector<std::pair<std::string, std::string>> out;
    for (const StrategyInfo& s : redist::strategies()) out.emplace_back(s.name, s.summary);
    return out;
  }, "Every strategy as (name, summary), in the registry's order (without auto).");
  m.def("strategy_names", &strategy_names, "The strategies' names, in the registry's order (without auto).");
  m.def("check_strategy", [](const std::string& name) { check_strategy(name); }, nb::arg("name"),
        "Raises redist.Error naming the allowed names unless `name` is a strategy or 'auto'.");
  m.def("agree", [](nb::handle comm, const std::string& local_error, bool mismatch) {
    MPI_Comm c = comm_of(comm);
    // Without the GIL, as every collective here: another Python thread may need it
    // to reach its own collective on another communicator (threads deadlocked).
    nb::gil_scoped_release unlocked;
    detail::agree(c, local_error, mismatch);
  }, nb::arg("comm").none(), nb::arg("local_error"), nb::arg("mismatch") = false,
     "Collective: returns when local_error is empty on every rank, else raises redist.Error (redist.MismatchError "
     "with mismatch=True: the error is that ranks disagree) on every rank with the message of the lowest rank that "
     "has one.");

  nb::class_<Machine>(m, "Machine", "Measured machine figures of the cost model (redist calibrate).")
      .def_ro("bnet", &Machine::bnet, "bytes/s between two ranks (Eq. 5)")
      .def_ro("bmemcpy", &Machine::bmemcpy, "bytes/s of a single-core memcpy")
      .def_ro("startup", &Machine::startup, "seconds of a small message, one way")
      .def_ro("source", &Machine::source, "the file read, or 'quick'")
      .def_ro("hostname", &Machine::hostname)
      .def_ro("cores", &Machine::cores)
      .def_ro("ranks", &Machine::ranks)
      .def("to_json", [](const Machine& mm) { return to_json(mm); })
      .def_static("from_json", &machine_from_json, nb::arg("text"))
      .def("__repr__", [](const Machine& mm) {
        return detail::cat("Machine(source='", mm.source, "', bnet=", mm.bnet, ", bmemcpy=", mm.bmemcpy,
                           ", startup=", mm.startup, ")");
      });
  m.def("calibrate", [](nb::handle comm, bool quick) {
    MPI_Comm c = comm_of(comm);
    CalibrateOptions o;
    o.quick = quick;
    nb::gil_scoped_release unlocked;
    return calibrate(c, o);
  }, nb::arg("comm") = nb::none(), nb::arg("quick") = false,
     "Collective: measures the machine (ranks 0 and 1 ping-pong); the same Machine on every rank.");
  m.def("machine_for", [](nb::handle comm, const std::string& path) {
    MPI_Comm c = comm_of(comm);
    nb::gil_scoped_release unlocked;
    return machine_for(c, path);
  }, nb::arg("comm") = nb::none(), nb::arg("path") = "",
     "Collective: the calibration file (empty: the default path), else a quick measurement.");
  m.def("default_calibration_path", &default_calibration_path);

  bind_layout(m);
  bind_plan(m);
  bind_shm(m);
}
