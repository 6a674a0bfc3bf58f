#!/usr/bin/env bash
# Dense part of a GPU round (on the device machine, .gpu carried): the dense unit tests,
# compute-sanitizer on the dense kernel families, and the dense benchmark with every
# variant; a short table at the end. Output in $OUT (or .gpu/out).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
stage=$here/.gpu
out=${OUT:-$stage/out}; mkdir -p "$out"
export LD_LIBRARY_PATH=$stage/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
status=0
run() { local name=$1; shift; local t0=$SECONDS
  if "$@" >"$out/$name.log" 2>&1; then r=PASS; else r=FAIL; status=1; fi
  printf '%-20s %s (%ds)\n' "$name" "$r" $((SECONDS - t0)); [ $r = PASS ] || tail -20 "$out/$name.log"; }
run unit "$stage/kolesky_unit_cuda" --gtest_filter='Potrf*:PotrfBlocked*:PosvMixed*'
run memcheck compute-sanitizer --tool memcheck --error-exitcode 9 "$stage/kolesky_unit_cuda" \
  --gtest_filter='*PotrfBlocked/1.SeedSchemes*:*PotrfBlocked/1.FailureInLaterPanels*:*PosvMixed.Well*:*PotrfBlocked/0.NonUnit*:*PotrfBlocked/0.PotrsMany*'
run racecheck compute-sanitizer --tool racecheck --error-exitcode 9 "$stage/kolesky_unit_cuda" \
  --gtest_filter='*PotrfBlocked/1.FailureInLaterPanels*:*PotrfBlocked/0.SeedSchemes*'
run synccheck compute-sanitizer --tool synccheck --error-exitcode 9 "$stage/kolesky_unit_cuda" \
  --gtest_filter='*PotrfBlocked/1.FailureInLaterPanels*'
run perf "$stage/kolesky_perf_dense" --algos ${KOLESKY_DENSE_ARGS:---n=250,500,1000,2048,4096,8192,16384} \
  --benchmark_min_time=0.1 --benchmark_out="$out/dense.json" --benchmark_out_format=json \
  --benchmark_filter="${KOLESKY_DENSE_FILTER:-.}"
run perf_big "$stage/kolesky_perf_dense" --n=32768 --benchmark_min_time=0.1 \
  --benchmark_filter='(Default|cusolver)' --benchmark_out="$out/dense_big.json" --benchmark_out_format=json
python3 "$here/scripts/perf_table.py" "$out/dense.json" || status=1
exit $status
