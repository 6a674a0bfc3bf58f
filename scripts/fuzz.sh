#!/usr/bin/env bash
# Fuzz the Matrix Market reader with libFuzzer (clang, ASan + UBSan) for a bounded time:
#
#   scripts/fuzz.sh [seconds]          (default 60)
#
# Build directory: $KOLESKY_BUILD_FUZZ (default <repo>/build-fuzz). The seeds are
# unit_test/fuzz/corpus and unit_test/data/mm (read only); new inputs go to a scratch
# directory outside the repository, deleted at the end. A crash, sanitizer report, unexpected
# exception, hang (-timeout) or out-of-memory exits non-zero and leaves the input in
# <build>/artifacts; replay it with `<build>/kolesky_fuzz_mm <file>`.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
deps=${KOLESKY_DEPS:-$here/.deps}
build=${KOLESKY_BUILD_FUZZ:-$here/build-fuzz}
seconds=${1:-60}
bash "$here/scripts/provision.sh" openmp

cxx=${KOLESKY_FUZZ_CXX:-$(command -v clang++-14 || command -v clang++ || true)}
[ -n "$cxx" ] || { echo "fuzz.sh: clang++ not found" >&2; exit 1; }
cmake -S "$here/unit_test/fuzz" -B "$build" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$deps/openmp" >/dev/null
cmake --build "$build" -j "${KOLESKY_JOBS:-$(nproc)}"

work=$(mktemp -d "${TMPDIR:-/tmp}/kolesky-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$build/artifacts"
# allocator_may_return_null: the reader turns a failed allocation (a size line asking for
# exabytes) into matrix_market_error; ASan would abort on it instead.
export ASAN_OPTIONS=${ASAN_OPTIONS:-allocator_may_return_null=1:detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export OMP_NUM_THREADS=1 OMP_PROC_BIND=false
"$build/kolesky_fuzz_mm" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
  -max_len=4096 -dict="$here/unit_test/fuzz/mm.dict" -print_final_stats=1 -artifact_prefix="$build/artifacts/" \
  "$work" "$here/unit_test/fuzz/corpus" "$here/unit_test/data/mm"
