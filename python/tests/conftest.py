# These tests run on every rank of an MPI job (tests/python/test_binding.py
# launches them with scripts/mpirun.sh on 1 to 4 ranks): every test is
# collective, in the same order on every rank. Results are checked against numpy.
import numpy as np
import pytest
from mpi4py import MPI


@pytest.fixture
def comm():
    return MPI.COMM_WORLD


def same_everywhere(comm, text):
    """True when every rank has the same text (an agreed error message)."""
    return len(set(comm.allgather(text))) == 1
