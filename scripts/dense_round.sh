#!/usr/bin/env bash
# Dense part of a GPU round (on the device machine, .gpu carried): the dense unit tests,
# compute-sanitizer on the dense kernels (the dataflow kernel and its flags included), the
# critical-path trace (--trace), the dense benchmarks against cuSOLVER in the same process,
# torch.linalg.cholesky beside them; a short table at the end. Output in $OUT (or .gpu/out).
#   dense_round.sh [check|bench|all]   check: tests, sanitizers, trace; bench: benchmarks, torch
#   KOLESKY_SKIP="unit memcheck ..."  leaves steps out; KOLESKY_DENSE_ARGS / _FILTER / _BIG
#   replace the benchmark's sizes, filter and the n = 32768 run's arguments.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
stage=$here/.gpu
# Logs go to a work folder, packed into one file under $OUT at the end (the device tool
# returns at most 8 files).
final=${OUT:-$stage/out}; mkdir -p "$final"
out=$(mktemp -d); trap 'tar czf "$final/dense_${phase:-all}.tgz" -C "$out" .' EXIT
export LD_LIBRARY_PATH=$stage/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
status=0
run() { local name=$1; shift
  case " ${KOLESKY_SKIP:-} " in *" $name "*) echo "$name skipped"; return;; esac
  local t0=$SECONDS
  if "$@" >"$out/$name.log" 2>&1; then r=PASS; else r=FAIL; status=1; fi
  printf '%-20s %s (%ds)\n' "$name" "$r" $((SECONDS - t0)); [ $r = PASS ] || tail -20 "$out/$name.log"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
u=$stage/kolesky_unit_cuda
phase=${1:-all}
if [ "$phase" != bench ]; then
run unit timeout 300 "$u" --gtest_filter='Potrf*:PotrfBlocked*:PotrfFlow*:PosvMixed*:*HandWorked*'
grep -E '^\[  (PASSED|FAILED) ' "$out/unit.log"
small='*PotrfFlow/*.Sanitize*:*PotrfFlow/1.NonUnitStride*'
run memcheck timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 "$u" \
  --gtest_filter="$small:*PotrfBlocked/1.FailureInLaterPanels*:*PosvMixed.Well*"
run racecheck timeout 300 compute-sanitizer --tool racecheck --error-exitcode 9 "$u" --gtest_filter="$small"
run synccheck timeout 300 compute-sanitizer --tool synccheck --error-exitcode 9 "$u" --gtest_filter="$small"
run trace timeout 200 "$stage/kolesky_perf_dense" --trace --n=${KOLESKY_TRACE_N:-1000,8192}
# Where the chain's time goes: stall reasons and the hottest instructions of one dataflow launch.
if command -v ncu >/dev/null && [ -z "${KOLESKY_NO_NCU:-}" ]; then
  run ncu timeout 240 ncu --kernel-name-base demangled --kernel-name regex:FlowPotrf --launch-skip 2 --launch-count 1 \
    --section WarpStateStats --section SchedulerStats --section SourceCounters --section LaunchStats \
    --section Occupancy --print-details all "$stage/kolesky_perf_dense" --trace --n=${KOLESKY_NCU_N:-512}
  grep -E "Stall|stall|Warp Cycles|Issued|Eligible|Registers|Achieved" "$out/ncu.log" | head -40
fi
fi
[ "$phase" = check ] && exit $status
run perf timeout 420 "$stage/kolesky_perf_dense" --algos ${KOLESKY_DENSE_ARGS:---n=250,500,1000,2048,4096,8192,16384 --nb=256,512 --nrhs=1} \
  --benchmark_min_time=0.1 --benchmark_out="$out/dense.json" --benchmark_out_format=json \
  --benchmark_filter="${KOLESKY_DENSE_FILTER:-(Default|Dataflow|plan|flowpanel|recpanel|cusolver|posv)}"
# Measurement knobs for the large-n path (lookahead panel teams, SYRK split block).
for knob in --panel-teams=33 --panel-teams=66 --syrk-block=1024 --syrk-block=2048; do
  tag=$(echo "$knob" | tr -dc 'a-z0-9')
  run "knob_$tag" timeout 120 "$stage/kolesky_perf_dense" --n=${KOLESKY_KNOB_N:-4096,8192,16384} --nrhs=0 "$knob" \
    --benchmark_min_time=0.1 --benchmark_filter='kolesky_potrf/Default<double>' \
    --benchmark_out="$out/knob_$tag.json" --benchmark_out_format=json
  grep -E "^kolesky_potrf" "$out/knob_$tag.log" | sed "s/^/$knob /"
done
run perf_big timeout 200 "$stage/kolesky_perf_dense" ${KOLESKY_DENSE_BIG:---n=32768 --nrhs=0} --benchmark_min_time=0.1 \
  --benchmark_filter='(Default|cusolver|cublas).*double' --benchmark_out="$out/dense_big.json" --benchmark_out_format=json
run torch python3 "$here/scripts/torch_dense.py" --json "$out/torch_dense.json"
python3 "$here/scripts/perf_table.py" "$out/dense.json" || status=1
[ -f "$out/dense_big.json" ] && python3 "$here/scripts/perf_table.py" "$out/dense_big.json"
cat "$out/torch.log" 2>/dev/null
exit $status
