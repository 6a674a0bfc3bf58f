#!/usr/bin/env bash
# One GPU round in two halves, so the device machine spends its time running, not compiling.
#
#   scripts/gpu_round.sh build     # here (no GPU needed): provision the cuda prefix, build the
#                                  # CUDA binaries, stage them in .gpu/ (git-ignored)
#   scripts/gpu_round.sh run       # on the GPU machine, from the repo root, with .gpu carried:
#                                  # unit tests, compute-sanitizer, perf, a short table
#   scripts/gpu_round.sh sweep     # on the GPU machine: the report's sweep (scripts/sweep.py --gpu)
#
# With the device tool: run(command="tar -xJf build-cuda/gpu.tar.xz && bash scripts/gpu_round.sh run",
# carry=["build-cuda/gpu.tar.xz"]) (the staged binaries, compressed by the build step).
# Logs and JSON land in $OUT (when set) or .gpu/out. KOLESKY_SKIP="perf_dense tune ..." leaves
# steps out; KOLESKY_PERF_ARGS / KOLESKY_LU_ARGS / KOLESKY_BATCHED_ARGS / KOLESKY_TUNE_ARGS
# replace their arguments.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
deps=${KOLESKY_DEPS:-$here/.deps}
stage=$here/.gpu
mode=${1:-}

case "$mode" in
build)
  bash "$here/scripts/provision.sh" cuda
  b=$here/build-cuda
  cmake -S "$here" -B "$b" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$deps/cuda" \
    -DCMAKE_CXX_COMPILER="$deps/cuda/bin/nvcc_wrapper" -DKolesky_ENABLE_HEADER_CHECK=OFF >/dev/null
  # KOLESKY_TARGETS="..." builds and stages only those (e.g. the perf binaries for a sweep).
  read -r -a targets <<<"${KOLESKY_TARGETS:-kolesky_unit_cuda kolesky_perf_dense kolesky_perf_lu kolesky_perf_batched kolesky_tune_batched}"
  if [ -z "${KOLESKY_TARGETS:-}" ]; then
    # Targets that exist in this tree (the accuracy tests, the host suites of this CUDA-enabled
    # build, whose default memory space is CudaSpace, the examples, the command-line tool).
    avail=$(cmake --build "$b" --target help | awk '{print $2}')
    for t in kolesky_accuracy_cuda kolesky_unit_openmp kolesky_unit_serial kolesky_cli 01_quickstart 02_batched_layouts 03_interior_point_lp \
             04_batched_gaussian_process 05_lu_from_matrix_market; do
      grep -qx "$t" <<<"$avail" && targets+=("$t")
    done
  fi
  cmake --build "$b" -j "$(nproc)" --target "${targets[@]}"
  rm -rf "$stage"; mkdir -p "$stage"
  for t in "${targets[@]}"; do
    case $t in
      kolesky_unit_*|kolesky_accuracy_cuda) cp "$b/unit_test/$t" "$stage/" ;;
      kolesky_perf_*|kolesky_tune_batched) cp "$b/perf_test/$t" "$stage/" ;;
      kolesky_cli) cp "$b/src/cli/kolesky" "$stage/" ;;
      *) cp "$b/example/$t/$t" "$stage/" ;;
    esac
  done
  strip "$stage"/* 2>/dev/null || true
  # Shared libraries the GPU machine's image lacks (it has CUDA and the C/C++ runtimes).
  mkdir -p "$stage/lib"
  for f in "$stage"/*; do [ -f "$f" ] || continue; ldd "$f"; done | awk '$3 ~ /^\// {print $3}' \
    | grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|libgomp|libpthread|libdl|librt|ld-linux[^/]*|libcu[a-zA-Z]*|libnv[a-zA-Z]*)\.so' \
    | sort -u | while read -r lib; do cp -L "$lib" "$stage/lib/"; done
  # Reference 004's matrices for the LU experiment, when the shared data are there.
  if [ -d "$here/../shared/matrices" ]; then
    mkdir -p "$stage/mm" && cp "$here"/../shared/matrices/*.mtx* "$stage/mm/"
  fi
  du -sh "$stage"
  # The device carries 64 MiB with the working tree (~16 MiB): the stripped binaries (~110 MB
  # with the test suites) travel compressed, unpacked there by the run command below.
  tar -C "$here" -cf - .gpu | xz -T"$(nproc)" -6 > "$b/gpu.tar.xz"
  ls -l "$b/gpu.tar.xz"
  tree=$(git -C "$here" ls-files -z | (cd "$here" && xargs -0 stat -c %s 2>/dev/null) | awk '{s += $1} END {print s}')
  if [ $(( $(stat -c %s "$b/gpu.tar.xz") + tree )) -gt $((62 * 1024 * 1024)) ]; then
    echo "warning: archive + working tree pass the device's 64 MiB: stage fewer binaries (KOLESKY_TARGETS=...)" >&2
  fi
  echo 'run(command="tar -xJf build-cuda/gpu.tar.xz && bash scripts/gpu_round.sh run", carry=["build-cuda/gpu.tar.xz"])'
  ;;
run)
  out=${OUT:-$stage/out}; mkdir -p "$out"
  export LD_LIBRARY_PATH=$stage/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
  export OMP_PROC_BIND=false
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
  status=0
  step() {  # name, command...: run, log, remember failures
    local name=$1; shift
    case " ${KOLESKY_SKIP:-} " in *" $name "*) echo "$name skipped" | tee -a "$out/summary.txt"; return;; esac
    local t0=$SECONDS
    if "$@" >"$out/$name.log" 2>&1; then r=PASS; else r=FAIL; status=1; fi
    printf '%-28s %s  (%ds)\n' "$name" "$r" $((SECONDS - t0)) | tee -a "$out/summary.txt"
    [ $r = PASS ] || tail -30 "$out/$name.log"
  }
  step unit_cuda "$stage/kolesky_unit_cuda"
  [ -f "$out/unit_cuda.log" ] && grep -E '^\[  (PASSED|FAILED) ' "$out/unit_cuda.log" || true
  for s in openmp serial; do  # the host suites with CUDA enabled: nothing else runs them
    [ -x "$stage/kolesky_unit_$s" ] && step "unit_$s" "$stage/kolesky_unit_$s"
    [ -f "$out/unit_$s.log" ] && grep -E '^\[  (PASSED|FAILED) ' "$out/unit_$s.log" || true
  done
  # Sanitizers on a subset that reaches every kernel family (full runs take too long).
  filt='*PotrfFlow/*.Sanitize*:*Api/*.DeviceFree*:*Api/1.BatchedSolves*:*HandWorked*:*BlockedBlockSizes*:*SolveRankOne*:*DevicePotrf/1.Team*:*NotPositive*:*Batched/1.StridedLayoutLeft*:*Batched*Bad*:*Batched*Conversions*:*PotrfBlocked/1.VariantsBlockSizesBlas*:*PotrfBlocked/0.SeedSchemes*:*PotrfBlocked/1.FailureInLaterPanels*:*PotrfBlocked/0.PotrsMany*:*PosvMixed*:*Lu/0.GetrfHandWorked*:*Lu/1.GetrsEvery*:*Lu/0.CroutHandWorked*:*Lu/1.CroutZeroMinor*:*Lu/0.BatchedEveryLayout*:*Lu/1.NanOrInf*:*BatchedVar/1.SingleClass*:*BatchedVar/0.WrapsUserBuffer*:*Batched/1.WarpStaged*:*PotrfFlow/*.PlanSolveGraph*:*PotrfFlowGraph.*'
  step memcheck compute-sanitizer --tool memcheck --error-exitcode 9 "$stage/kolesky_unit_cuda" --gtest_filter="$filt"
  step racecheck compute-sanitizer --tool racecheck --error-exitcode 9 "$stage/kolesky_unit_cuda" --gtest_filter='*PotrfFlow/*.Sanitize*:*Api/0.DeviceFree*:*HandWorked*:*BlockedBlockSizes*:*DevicePotrf/1.TeamCrout*:*Batched/0.StridedLayoutLeft*:*Batched/1.LayoutConversionsTiles*:*PotrfBlocked/1.SeedSchemes*:*PotrfBlocked/0.NonUnitStrides*:*Lu/0.CroutHandWorked*:*Lu/1.GetrfSingular*:*Lu/1.CroutIterativeReports*:*BatchedVar/0.SingleClass*:*BatchedVar/1.WrapsUserBuffer*:*Batched/0.WarpStaged*'
  step synccheck compute-sanitizer --tool synccheck --error-exitcode 9 "$stage/kolesky_unit_cuda" --gtest_filter='*PotrfFlow/*.Sanitize*:*HandWorked*:*BlockedBlockSizes*:*Batched/1.StridedLayoutLeft*:*PotrfBlocked/1.SeedSchemes*:*Lu/0.CroutHandWorked*:*Lu/1.GetrfSingular*:*BatchedVar/1.SingleClass*:*Batched/1.WarpStaged*'
  [ -x "$stage/kolesky_accuracy_cuda" ] && step accuracy_cuda "$stage/kolesky_accuracy_cuda"
  [ -f "$out/accuracy_cuda.log" ] && grep -E '^\[  (PASSED|FAILED) |max ratio' "$out/accuracy_cuda.log" | head -40
  # The accuracy binary's hostile-input tests (NaN batches, bad arguments) under memcheck.
  [ -x "$stage/kolesky_accuracy_cuda" ] && step memcheck_hostile compute-sanitizer --tool memcheck \
    --error-exitcode 9 "$stage/kolesky_accuracy_cuda" --gtest_filter='Hostile*'
  [ -x "$stage/01_quickstart" ] && step quickstart "$stage/01_quickstart" 4000
  [ -f "$out/quickstart.log" ] && tail -4 "$out/quickstart.log"
  for ex in 02_batched_layouts 04_batched_gaussian_process 05_lu_from_matrix_market; do  # defaults
    [ -x "$stage/$ex" ] && step "$ex" "$stage/$ex"
  done
  # The LP example at a normal-equation order of several thousand (KOLESKY_LP_ARGS).
  [ -x "$stage/03_interior_point_lp" ] && step lp "$stage/03_interior_point_lp" ${KOLESKY_LP_ARGS:-}
  [ -f "$out/lp.log" ] && tail -12 "$out/lp.log"
  if [ -x "$stage/kolesky" ] && [ -d "$stage/mm" ]; then
    step cli_factor "$stage/kolesky" factor "$stage/mm/bcsstk03.mtx" --backend cuda
    step cli_lu "$stage/kolesky" factor "$stage/mm/orsirr_1.mtx" --lu --backend cuda
    step cli_bench "$stage/kolesky" bench --n 4096 --backend cuda
    step cli_bench_batched "$stage/kolesky" bench --n 32 --batch 65536 --backend cuda
  fi
  step perf_dense "$stage/kolesky_perf_dense" ${KOLESKY_PERF_ARGS:---n=250,500,1000,2048,4096,8192,16384,32768} \
    --benchmark_min_time=0.2 --benchmark_out="$out/perf_dense.json" --benchmark_out_format=json
  [ -f "$out/perf_dense.json" ] && { python3 "$here/scripts/perf_table.py" "$out/perf_dense.json" || status=1; }
  mm=(); [ -d "$stage/mm" ] && mm=(--mm="$stage/mm")
  step perf_lu "$stage/kolesky_perf_lu" ${KOLESKY_LU_ARGS:---n=1000,2048,4096,8192} "${mm[@]}" \
    --benchmark_min_time=0.2 --benchmark_out="$out/perf_lu.json" --benchmark_out_format=json
  [ -f "$out/perf_lu.json" ] && { python3 "$here/scripts/perf_table.py" "$out/perf_lu.json" --ref=kolesky_getrf || status=1
    python3 "$here/scripts/perf_table.py" "$out/perf_lu.json" --mm; }
  step tune "$stage/kolesky_tune_batched" ${KOLESKY_TUNE_ARGS:-} --out="$out/Kolesky_TunedDevice.hpp"
  [ -f "$out/tune.log" ] && grep "^best" "$out/tune.log" || true
  step perf_batched "$stage/kolesky_perf_batched" ${KOLESKY_BATCHED_ARGS:-} --benchmark_min_time=0.1 \
    --benchmark_out="$out/perf_batched.json" --benchmark_out_format=json
  [ -f "$out/perf_batched.json" ] && { python3 "$here/scripts/perf_table.py" --batched "$out/perf_batched.json" || status=1; }
  exit $status
  ;;
sweep)
  # The report's GPU data: the GPU grids of scripts/sweep.py (every result checked), into
  # docs/data/report/$KOLESKY_REPORT (h200: the device's GPU now; h100 holds the older H100
  # sweep) here and $OUT there (copy it back, then run scripts/report.py). The whole grid takes
  # longer than one device call: split it with KOLESKY_SWEEP_ARGS, one part a call, carrying
  # the earlier parts' JSON back in, e.g. "--only dense --filter=-posv", then
  # "--only dense --filter=posv --merge", "--only lu", "--only batched".
  out=${OUT:-$stage/out}; mkdir -p "$out"
  export LD_LIBRARY_PATH=$stage/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
  report=${KOLESKY_REPORT:-h200}
  mm=(); [ -d "$stage/mm" ] && mm=(--mm .gpu/mm)
  rc=0
  python3 scripts/sweep.py --gpu --bin .gpu "${mm[@]}" --report "$report" ${KOLESKY_SWEEP_ARGS:-} || rc=$?
  # Example 03 at a normal-matrix order of 4865, checked against GLPK: the report's LP section.
  if [ -x "$stage/03_interior_point_lp" ]; then
    "$stage/03_interior_point_lp" --nx 16 --ny 16 --nz 5 --check-glpk >"docs/data/report/$report/lp.log" 2>&1 || rc=1
  fi
  mkdir -p "$out/$report" && cp -r "docs/data/report/$report/." "$out/$report/"
  exit $rc
  ;;
*)
  sed -n '2,12p' "$0"; exit 2 ;;
esac
