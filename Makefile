# The two commands of the README: `make demo` and `make test`.
# Both install what is missing (scripts/setup.sh), configure and build.
BUILD ?= build
JOBS  ?= 2
MPIRUN := scripts/mpirun.sh
REDIST := $(BUILD)/apps/redist

.PHONY: all setup configure build demo test check-long check-sanitize fuzz clean

all: build

setup:
	@bash scripts/setup.sh

# After setup (order only): under `make -j` cmake would otherwise configure while
# setup still installs the Python venv, and leave the Python package off.
$(BUILD)/build.ninja: | setup
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release

configure: setup $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# A real redistribution on 2 ranks, verified: 8000x8000 doubles, a 7000x7000 submatrix
# at an offset, tiles 400 on grid 1x2 -> tiles 300 on grid 2x1, every strategy and auto.
demo: build
	$(MPIRUN) -np 2 $(REDIST) run \
	  "8000x8000 tile=400x400 block_cyclic grid=1x2" \
	  "8000x8000 tile=300x300 block_cyclic grid=2x1" \
	  "7000x7000 from=500x300 to=1000x0" --strategy all --reps 5

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 600 -LE long
	.venv/bin/python -m pytest -q tests/python

# The long conformance run (ctest label `long`; 5 minutes here with five strategies, more now): 25,000
# random cases per strategy and rank count against the serial oracle, 10,000 per
# rank count against pdgemr2d. A failure prints the one command that replays it.
check-long: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L long

# The tests under sanitizers (docs/testing.md; CI runs it after `make test`):
# AddressSanitizer + UndefinedBehaviorSanitizer on the unit, MPI and
# command-line tests (build-asan), ThreadSanitizer on the threaded ones
# (build-tsan). Any finding fails; only Open MPI's internals are left out.
check-sanitize: setup
	JOBS=$(JOBS) bash scripts/check_sanitize.sh all

# libFuzzer targets (fuzz/) for the spec and region parsers and the planner, built
# with clang-14, ASan and UBSan in build-fuzz/, each run FUZZ_SECONDS (default 60).
# Fails on any crash, sanitizer report, hang or wrong plan, leaving the input in
# build-fuzz/crashes/ and printing the command that replays it (scripts/fuzz.sh).
fuzz:
	JOBS=$(JOBS) bash scripts/fuzz.sh

clean:
	rm -rf $(BUILD)
