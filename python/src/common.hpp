// The Python binding (docs/python.md): shared helpers of its three files. A front
// end with no logic of its own: it maps Python values to the core's types and
// back; validation, collective errors, planning and execution are the core's.
#pragma once

#include <mpi.h>
#include <nanobind/nanobind.h>

#include <string>

#include "redist/redist.hpp"

namespace redist::python {

namespace nb = nanobind;

// Why a call after MPI.Finalize() is refused (detail::outside_mpi's reason).
inline constexpr const char* kCallsNeedMpi =
    "redist's calls communicate through MPI, which mpi4py starts at import and MPI.Finalize() (or the "
    "interpreter's exit) ends";

// The MPI_Comm of an mpi4py communicator (None: mpi4py.MPI.COMM_WORLD). Imports
// mpi4py.MPI, which initializes MPI on first use. Raises TypeError for anything else.
MPI_Comm comm_of(nb::handle comm);

// A sequence of ints (or one int for 1-D) as a Coord; `what` names it in errors.
// A Python int as a 64-bit index: redist::Error when it does not fit, TypeError
// when it is no int (`what` names it in both).
index_t to_index(nb::handle value, const char* what);
// Whether `value` is one int (a Python int or an integer scalar such as numpy's),
// not a sequence of them.
bool is_scalar_index(nb::handle value);
Coord to_coord(nb::handle values, const char* what);
nb::tuple from_coord(const Coord& c);

// A Layout, or a spec string parsed (redist.Error on a syntax error).
Layout as_layout(nb::handle obj, const char* what);
// A Region, a region string parsed, or None: the whole of `shape`.
Region as_region(nb::handle obj, const Coord& shape);

void bind_layout(nb::module_& m);
void bind_plan(nb::module_& m);
void bind_shm(nb::module_& m);

}  // namespace redist::python
