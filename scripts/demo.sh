#!/usr/bin/env bash
# Provision (if needed), build and run example/01_quickstart on the default backend (OpenMP).
#   scripts/demo.sh [n]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
deps=${KOLESKY_DEPS:-$here/.deps}
build=${KOLESKY_BUILD:-$here/build}
bash "$here/scripts/provision.sh" openmp
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$deps/openmp" >/dev/null
cmake --build "$build" -j "$(nproc)" --target 01_quickstart
OMP_PROC_BIND=spread OMP_PLACES=threads "$build/example/01_quickstart/01_quickstart" "$@"
