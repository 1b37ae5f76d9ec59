#!/bin/sh
# Runs a test binary under mpirun: run_mpi.sh MPIEXEC NP BINARY [ARGS...]. Exits 77
# (CTest: skipped) when there is no mpirun. Open MPI gets the flags it needs to run as root
# and with more ranks than cores (every rank shares the one GPU).
mpiexec=$1
np=$2
shift 2
if ! command -v "$mpiexec" >/dev/null 2>&1; then
  echo "mpirun ($mpiexec) not found: skipped"
  exit 77
fi
if OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "$mpiexec" --version 2>&1 | grep -q -e "Open MPI" -e "OpenRTE"; then
  # Containers often forbid the cross-process memory copies (CMA) of Open MPI's shared
  # memory transport for large messages; plain copies work everywhere.
  : "${OMPI_MCA_btl_vader_single_copy_mechanism:=none}"
  export OMPI_MCA_btl_vader_single_copy_mechanism
  exec "$mpiexec" --allow-run-as-root --oversubscribe -np "$np" "$@"
fi
exec "$mpiexec" -np "$np" "$@"
