#!/usr/bin/env python3
"""Every MPI call of the library is checked (docs/strategies.md, "Faults"): fails
on a call in src/exec, src/harness, src/mpi, src/cost, src/capi or src/scalapack whose return code does
not go through detail::check_mpi or detail::check_wait (src/mpi/agree.hpp).

    python3 tests/mpi_calls.py [SOURCE_DIR]

The plan's communicator returns errors instead of aborting, so an unchecked call
there would go on after a failure as if nothing happened (a truncated message
read as data, a hang). MPI_Wtime and MPI_Wtick return no code. Any other call
may stay unchecked only with a comment saying "unchecked" and why, on its line
or the line above (destructors, the error path itself). Runs as the ctest
`mpi_calls_checked`; it first checks that it catches a planted unchecked call.
"""
import pathlib
import re
import sys

FOLDERS = ["src/exec", "src/harness", "src/mpi", "src/cost", "src/capi", "src/scalapack", "apps/roundtrip"]
CALL = re.compile(r"\bMPI_[A-Z][A-Za-z_]*\s*\(")
NO_CODE = {"MPI_Wtime", "MPI_Wtick"}


def strip_comments(text):
    """Comments blanked (same length, newlines kept), so offsets and lines stay."""
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))
    return re.sub(r"//[^\n]*|/\*.*?\*/", blank, text, flags=re.S)


def unchecked(text):
    """(line, call) for each MPI call whose code is not checked in `text`."""
    code = strip_comments(text)
    lines = text.splitlines()
    found = []
    for m in CALL.finditer(code):
        name = m.group(0)[:-1].strip()
        if name in NO_CODE:
            continue
        # The statement so far: from the last ; { or } before the call.
        start = max(code.rfind(c, 0, m.start()) for c in ";{}")
        if "check_mpi(" in code[start + 1:m.start()] or "check_wait(" in code[start + 1:m.start()]:
            continue
        line = code.count("\n", 0, m.start())
        if any("unchecked" in lines[i] for i in (line, line - 1) if 0 <= i < len(lines)):
            continue
        found.append((line + 1, name))
    return found


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[1])
    planted = ("void f(MPI_Comm c) {\n  check_mpi(MPI_Barrier(c), \"MPI_Barrier\", c);\n"
               "  MPI_Barrier(c);  // not checked\n}\n")
    if unchecked(planted) != [(3, "MPI_Barrier")]:
        sys.exit(f"mpi_calls.py: the checker misses a planted unchecked call: {unchecked(planted)}")
    bad = []
    for folder in FOLDERS:
        for f in sorted((root / folder).rglob("*.[ch]pp")):
            for line, name in unchecked(f.read_text()):
                bad.append(f"{f.relative_to(root)}:{line}: {name} without check_mpi/check_wait "
                           "(or an 'unchecked' comment)")
    if bad:
        sys.exit("\n".join(bad))
    print(f"every MPI call in {', '.join(FOLDERS)} is checked")


if __name__ == "__main__":
    main()
