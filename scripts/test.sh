#!/usr/bin/env bash
# Provision (if needed), build and run the whole test suite on the CPU backends (Serial and
# OpenMP): unit tests, the header self-containment check, the install test, the perf smoke,
# and Kolesky::mpi's tests on 1, 2 and 4 MPI ranks (Open MPI and ScaLAPACK from Debian).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
deps=${KOLESKY_DEPS:-$here/.deps}
build=${KOLESKY_BUILD:-$here/build}
bash "$here/scripts/provision.sh" openmp
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$deps/openmp" \
  -DKolesky_ENABLE_TESTS=ON -DKolesky_ENABLE_PERFTESTS=ON -DKolesky_ENABLE_EXAMPLES=ON \
  -DKolesky_ENABLE_MPI=ON >/dev/null
cmake --build "$build" -j "$(nproc)"
cd "$build"
OMP_PROC_BIND=false OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)} ctest --output-on-failure "$@"
