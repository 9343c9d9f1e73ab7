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
    With ranks, it is launched under mpirun with that many ranks. It runs in the
    repository's root, wherever pytest was started: files named in args relative
    to it (tests/python/bad_calibration/) are found."""
    if not REDIST.exists():
        pytest.fail(f"{REDIST} is missing: build first (make build)")

    def run(args, ranks=None, timeout=300):
        cmd = [str(REDIST)] + list(args)
        if ranks:
            cmd = [str(MPIRUN), "-np", str(ranks)] + cmd
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)

    return run


@pytest.fixture(scope="session", autouse=True)
def calibration_file(tmp_path_factory):
    """One calibration for the whole session, in $REDIST_CALIBRATION, measured once
    (`redist calibrate`, 2 ranks, small sizes). Without it every `redist run` and
    `redist bench` launch measures the machine quickly before it starts (about
    2.5 s each here, more under the sanitizers), on CI's fresh machines every time.
    The tests of the calibration itself (the quick path, missing or foreign files)
    set REDIST_CALIBRATION themselves; a REDIST_CALIBRATION set by the caller is
    kept."""
    if os.environ.get("REDIST_CALIBRATION") or not REDIST.exists():
        yield None
        return
    path = tmp_path_factory.mktemp("calibration") / "calibration.json"
    r = subprocess.run([str(MPIRUN), "-np", "2", str(REDIST), "calibrate", "--max-size", "65536", "--out", str(path)],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        pytest.fail(f"redist calibrate for the session failed:\n{r.stdout}\n{r.stderr}")
    os.environ["REDIST_CALIBRATION"] = str(path)
    yield path
    del os.environ["REDIST_CALIBRATION"]
