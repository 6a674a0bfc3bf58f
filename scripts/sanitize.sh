#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer run of the unit tests on Serial and OpenMP,
# the Matrix Market tests and the hostile-input tests (Serial; with KOLESKY_SANITIZE_FULL=1
# also the accuracy sweeps):
#
#   scripts/sanitize.sh [extra ctest arguments]
#
# Build directory: $KOLESKY_BUILD_ASAN (default <repo>/build-asan). Only Kolesky's own code
# (header-only, so everything the tests instantiate) is instrumented; the provisioned Kokkos,
# OpenBLAS/LAPACK and libgomp are not. ASan still checks every access our code makes, and
# UBSan every operation in it, which is what this run is for.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
deps=${KOLESKY_DEPS:-$here/.deps}
build=${KOLESKY_BUILD_ASAN:-$here/build-asan}
bash "$here/scripts/provision.sh" openmp

san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
# Under ASan the suites take about 30x the CPU time, and building them about twice the normal
# build's. To keep CI's whole run within its time on two cores (issue 15 session 25: 53 minutes
# before), the OpenMP instance compiles only the suites whose code differs by backend (the host
# pool, the one-region factorizations, the host dataflow's threads, team functions over the
# whole pool) and the accuracy executable only the hostile inputs (the accuracy ratios' sweeps
# run the unit suites' code at larger sizes: 132 s under ASan for no path of their own).
# KOLESKY_SANITIZE_FULL=1 builds and runs everything.
subset=()
if [ "${KOLESKY_SANITIZE_FULL:-0}" != 1 ]; then
  subset=("-DKolesky_TEST_SOURCES_kolesky_unit_openmp=Test_Potrf.cpp;Test_PotrfBlocked.cpp;Test_PotrfFlow.cpp;Test_Device.cpp;Test_Lu.cpp"
          "-DKolesky_TEST_SOURCES_kolesky_accuracy_serial=Test_Hostile.cpp")
else
  subset=("-UKolesky_TEST_SOURCES_kolesky_unit_openmp" "-UKolesky_TEST_SOURCES_kolesky_accuracy_serial")
fi
# -O1: the sanitizers' recommended speed/stack-quality trade-off; -g1 (line tables only): the
# reports' stacks keep file and line, and the build takes 30 % less than with -g (issue 15
# session 40: Test_Device.cpp 164 -> 114 s on these two cores). Debug keeps
# assert() on. -Werror off: GCC's sanitizer instrumentation is documented to cause spurious
# warnings (e.g. -Wmaybe-uninitialized); the normal build is the warning gate.
cmake -S "$here" -B "$build" -DCMAKE_PREFIX_PATH="$deps/openmp" \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
  -DCMAKE_CXX_FLAGS="$san" -DCMAKE_EXE_LINKER_FLAGS="$san" \
  -DKolesky_ENABLE_TESTS=ON -DKolesky_ENABLE_PERFTESTS=OFF -DKolesky_ENABLE_EXAMPLES=OFF \
  -DKolesky_ENABLE_CLI=OFF -DKolesky_ENABLE_HEADER_CHECK=OFF -DKolesky_ENABLE_WERROR=OFF \
  "${subset[@]}" >/dev/null

# The unit suites on both backends (OpenMP's narrowed as above); the hostile-input tests on
# Serial only.
targets=(kolesky_unit_serial kolesky_unit_openmp kolesky_unit_io kolesky_accuracy_serial)
cmake --build "$build" -j "${KOLESKY_JOBS:-$(nproc)}" --target "${targets[@]}"

# LeakSanitizer stops the process by ptrace-attaching to its own threads; that works in this
# container (checked, OpenMP threads included), so leaks fail the run too. Where ptrace is
# blocked (under a debugger, a strict seccomp profile) run with ASAN_OPTIONS=detect_leaks=0.
# allocator_may_return_null: the Matrix Market tests check that a size line asking for
# exabytes becomes matrix_market_error, which needs the failed allocation to reach Kokkos
# (ASan would abort instead).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:allocator_may_return_null=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
# Passive waiting: libgomp's idle threads otherwise spin between the many short parallel
# regions, which on two shared cores slows the instrumented code down further.
export OMP_PROC_BIND=false OMP_WAIT_POLICY=passive
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
# The float instances of the eight exhaustive sweeps are left out too (44% of the Serial
# suite's time for the first four, 22% of the rest for the next four): every kernel, layout,
# variant and size still runs, in double.
if [ "${KOLESKY_SANITIZE_FULL:-0}" != 1 ]; then
  export GTEST_FILTER=${GTEST_FILTER:-"-Batched/0.StridedLayoutRight:Batched/0.Interleaved:Batched/0.Chunked:PotrfBlocked/0.VariantsBlockSizesBlas:Potrf/0.DefaultEverySizePath:PotrfFlow/0.Panels:Lu/0.GetrfRandomEverySizeAndLayout:Potrf/0.PoolOrdersBothWays"}
fi
cd "$build"
# The Serial suite beside the others, on one thread (its OpenBLAS calls too; the OpenMP
# suite's threads wait passively): CI's sanitizer step took 691 s one after the other (issue
# 15 session 36). Not for the normal build's tests: there OpenBLAS's and Kokkos' threads spin
# (the default environment), and two suites side by side took 2-14x longer (session 37).
OMP_NUM_THREADS=1 ctest --output-on-failure -R "^unit_serial$" "$@" >ctest_serial.log 2>&1 &
serial=$!
rc=0
ctest --output-on-failure -R "unit_openmp|unit_io|accuracy_serial" "$@" || rc=$?
wait "$serial" || rc=$?
cat ctest_serial.log
exit "$rc"
