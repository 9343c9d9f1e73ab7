#!/usr/bin/env bash
# mpirun with the settings this project needs everywhere: running as root is allowed
# (containers, CI), more ranks than cores are allowed (correctness runs only), and
# shared memory + self transports on one machine.
# Usage: scripts/mpirun.sh -np 4 program args...
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
# Open MPI 4.1 warns when it finds no high-speed network; that is expected here.
export OMPI_MCA_btl_base_warn_component_unused=0
# When a rank exits with an error, mpirun sends the others SIGTERM at once but
# waits before ending the job (SIGKILL after odls_base_sigkill_timeout, default
# 1 s): every bad input took 1-2 s longer to report (`mpirun -np 2 sh -c 'exit
# 2'`: 1.1-2.05 s here, 0.04-0.09 s with 0), half the Python tests' time. Nothing
# in redist handles SIGTERM. (Open MPI 4.1's variable; Open MPI 5 has its own.)
export OMPI_MCA_odls_base_sigkill_timeout=${OMPI_MCA_odls_base_sigkill_timeout:-0}
exec mpirun --oversubscribe "$@"
