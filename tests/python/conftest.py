import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("REDIST_BUILD", ROOT / "build"))
REDIST = BUILD / "apps" / "redist"
MPIRUN = ROOT / "scripts" / "mpirun.sh"


@pytest.fixture(scope="session")
def redist():
    """Runs the `redist` program: redist(args, ranks=None) -> CompletedProcess.
    With ranks, it is launched under mpirun with that many ranks."""
    if not REDIST.exists():
        pytest.fail(f"{REDIST} is missing: build first (make build)")

    def run(args, ranks=None, timeout=300):
        cmd = [str(REDIST)] + list(args)
        if ranks:
            cmd = [str(MPIRUN), "-np", str(ranks)] + cmd
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)

    return run
