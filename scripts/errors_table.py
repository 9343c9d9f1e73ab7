#!/usr/bin/env python3
"""Writes docs/errors.md, the bad-input catalogue, from the tests themselves.

    python3 scripts/errors_table.py [BUILD] [--out docs/errors.md] [--api-only] [--min-kinds 40] [--check-doc FILE]

API kinds: runs BUILD/tests/mpi/test_validation on 2 ranks with
REDIST_SHOW_ERRORS=1, which prints one line per kind (its input, where it is
checked, and the message every rank got; tests/mpi/test_validation.cpp, kind()).
CLI kinds: the BAD_RUN and BAD_PLAN lists of tests/python/test_cli.py (read
with ast, no pytest needed), each run here (`redist run` on 2 ranks) for its
message. Fails when the tests fail, when a CLI case does not exit with 2, when
there are fewer than --min-kinds API kinds, or (--check-doc) when a written page
does not list the kinds the tests have now (ctest's errors_catalogue).
"""
import argparse
import ast
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
MPIRUN = ROOT / "scripts" / "mpirun.sh"


def api_kinds(build):
    env = dict(os.environ, REDIST_SHOW_ERRORS="1")
    r = subprocess.run([str(MPIRUN), "-np", "2", str(build / "tests" / "mpi" / "test_validation")],
                       capture_output=True, text=True, timeout=600, env=env)
    if r.returncode != 0:
        sys.exit(f"test_validation failed (exit {r.returncode}):\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}")
    rows = []
    for line in r.stdout.splitlines():
        if line.startswith("kind\t"):
            _, what, where, message = line.split("\t", 3)
            rows.append((what, message.replace("\\n", "\n"), where))
    return rows


def cli_cases():
    """BAD_RUN and BAD_PLAN from tests/python/test_cli.py, as literals."""
    tree = ast.parse((ROOT / "tests" / "python" / "test_cli.py").read_text())
    lists = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and getattr(node.targets[0], "id", "") in (
                "BAD_RUN", "BAD_PLAN"):
            lists[node.targets[0].id] = ast.literal_eval(node.value)
    return lists["BAD_RUN"], lists["BAD_PLAN"]


def quote(a):
    return f'"{a}"' if (" " in a or not a) else a


def cli_input(command, what, args):
    """The input cell of a command-line kind."""
    return f"{what}: `redist {command} " + " ".join(quote(a) for a in args) + "`"


def cli_kinds(build):
    redist = build / "apps" / "redist"
    bad_run, bad_plan = cli_cases()
    rows = []
    for command, cases in (("run", bad_run), ("plan", bad_plan)):
        for what, where, args, words in cases:
            cmd = ([str(MPIRUN), "-np", "2"] if command == "run" else []) + [str(redist), command] + args
            # in the repository's root, as the tests run: files in args are named from there
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)
            errors = [line for line in r.stderr.splitlines() if line.startswith(f"redist {command}: error")]
            if r.returncode != 2 or not errors or any(w not in errors[0] for w in words):
                sys.exit(f"redist {command} {' '.join(args)}: exit {r.returncode}, expected 2 and {words}:\n{r.stderr}")
            rows.append((cli_input(command, what, args), errors[0], where))
    return rows


def doc_inputs(path):
    """The input cells of the two tables of a written errors.md: (API, command line)."""
    api, cli, rows = [], [], None
    for line in path.read_text().splitlines():
        if line.startswith("## Through the C++ API"):
            rows = api
        elif line.startswith("## Through the command line"):
            rows = cli
        elif rows is not None and line.startswith("| ") and not line.startswith("| # "):
            rows.append(re.split(r"(?<!\\)\|", line)[2].strip())
    return api, cli


def check_doc(path, api):
    """Exits naming what differs when `path` does not list the kinds the tests
    have now (inputs only: messages may name this machine's memory)."""
    written_api, written_cli = doc_inputs(path)
    bad_run, bad_plan = cli_cases()
    want_cli = [cell(cli_input(c, what, args)) for c, cases in (("run", bad_run), ("plan", bad_plan))
                for what, _, args, _ in cases]
    want_api = [cell(what) for what, _, _ in api]
    problems = []
    for name, written, want in (("C++ API", written_api, want_api), ("command-line", written_cli, want_cli)):
        if written != want:
            missing = [w for w in want if w not in written]
            stale = [w for w in written if w not in want]
            problems.append(f"{name} kinds: {len(written)} written, {len(want)} in the tests; missing "
                            f"{missing[:3]}, no longer tested {stale[:3]}" if missing or stale else
                            f"{name} kinds: in another order than the tests'")
    if problems:
        sys.exit(f"{path} is out of date ({'; '.join(problems)}): regenerate it with "
                 f"python3 scripts/errors_table.py build")


def cell(text):
    # The first line only (spec errors add the spec and a caret under the column).
    return text.split("\n")[0].replace("|", "\\|")


def table(rows):
    out = ["| # | input | message (the same on every rank) | checked in |", "|---|---|---|---|"]
    for i, (what, message, where) in enumerate(rows, 1):
        out.append(f"| {i} | {cell(what)} | {cell(message)} | {where} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build", nargs="?", default=str(ROOT / "build"))
    ap.add_argument("--out", default=str(ROOT / "docs" / "errors.md"))
    ap.add_argument("--api-only", action="store_true", help="skip the command-line cases")
    ap.add_argument("--min-kinds", type=int, default=40)
    ap.add_argument("--check-doc", metavar="FILE",
                    help="also fail when FILE (docs/errors.md) does not list the kinds the tests have now")
    a = ap.parse_args()
    build = pathlib.Path(a.build)
    api = api_kinds(build)
    if len(api) < a.min_kinds:
        sys.exit(f"only {len(api)} kinds of bad input in test_validation, expected >= {a.min_kinds}")
    if a.check_doc:
        check_doc(pathlib.Path(a.check_doc), api)
    cli = [] if a.api_only else cli_kinds(build)
    doc = f"""# Bad input and its errors

redist promises that no input makes it crash, hang or write a wrong result:
every kind of invalid input gives a `redist::Error` with the same message on
every rank (ARCHITECTURE.md, "Validate collectively, fail cleanly"), before
anything moves, so the target is left untouched; the `redist` command prints it
once and exits with 2. The tables below are that catalogue, written from the
tests that check it, {len(api)} kinds through the C++ API and {len(cli)} through
the command line. Faults are not bad input: an MPI error inside an execute, or
a rank that dies or hangs, ends the job with a message (docs/strategies.md,
"Faults").

Regenerate after changing a message or adding a kind (a build in `build/`, 2
ranks, about a minute; ctest's `errors_catalogue` fails while this page misses a
kind the tests have):

```sh
python3 scripts/errors_table.py build            # writes docs/errors.md
```

An API kind is a `kind("input", "where")` line in
`tests/mpi/test_validation.cpp` followed by the checks of that input: every rank
throws, the messages are identical, they contain the test's key words, and for
errors at execute the target still holds its bytes. `REDIST_SHOW_ERRORS=1`
makes the test print the catalogue. A command-line kind is an entry of
`BAD_RUN` or `BAD_PLAN` in `tests/python/test_cli.py`, whose tests check exit
code 2 and, with `REDIST_SHOW_ERRORS=1` (every rank prints its error), the same
message on both ranks. Messages beginning `redist: rank R:` were found on rank
R (the lowest rank that found one) and sent to every rank. Rank counts in the
messages are those of a 2-rank run; the memory figures are those of the machine
that wrote this page.

Where an input is checked:
- `Layout::parse`, `Region::parse`: syntax, on every rank alike (no collective);
- `Layout::check`, `Region::check` in `make_plan`: values, then agreed on;
- `make_plan: compared across ranks`: layouts, region and options must be the
  same on every rank (a hash of their values; on a difference the canonical
  spec strings, compared with rank 0's, name it); owner functions must give
  every tile the same owner (a hash of the owners, then the first differing
  tile);
- `LocalIndex`: the rank's storage map (leading dimension, local byte counts,
  owner functions called, whatever they throw turned into an error), agreed on;
- `Plan::execute`: buffers, pointer counts, overlap and strategy, agreed on
  before anything moves;
- `CaseRun` (the harness under `redist run` and the benchmarks): memory per
  node before allocating (std::bad_alloc caught as well), repetitions;
- the `redist` options: the command line is compared across ranks before it is
  parsed, so ranks launched with different options stop with one message.
- `load_machine` (`redist plan --predict`, `Options::calibration`, the default
  file): a calibration file's keys, each a number in a range no machine leaves,
  named with the file, what it holds and what is allowed.

## Through the C++ API (tests/mpi/test_validation.cpp)

{table(api)}
"""
    if cli:
        doc += f"""
## Through the command line (tests/python/test_cli.py)

{table(cli)}
"""
    out = pathlib.Path(a.out)
    out.write_text(doc)
    print(f"{out}: {len(api)} API kinds, {len(cli)} command-line kinds")


if __name__ == "__main__":
    main()
