#!/usr/bin/env python3
"""Benchmark sweep: Kolesky's perf binaries over the size grids, every result checked.

    scripts/sweep.py [--build DIR | --bin DIR] [--out DIR] [--quick] [--gpu]
                     [--only dense,lu,batched,threads] [--mm DIR] [--report NAME]
                     [--filter REGEX] [--merge]

Runs kolesky_perf_dense, kolesky_perf_lu and kolesky_perf_batched from DIR/perf_test (each
runs Kolesky and its baselines in one process and checks every result after timing), writes
their Google Benchmark JSON to OUT/<suite>.json and one CSV of all of them to OUT/sweep.csv.
--quick: seconds-long grids (CI's smoke run). --gpu: the GPU grids (up to n = 32768 and batch
2^20); the default grids are the 2-core host's. Exit status 1 when any benchmark reported an
error (a wrong result, a failed factorization, a crash): a fast wrong kernel never gets into a
table.

threads (host builds): the dense potrf sweep of reference 002 at OMP_NUM_THREADS = 1 .. cores
(OpenBLAS gets the same count), one JSON per count in OUT/threads/; the report turns it into
speedup t(1)/t(p) and efficiency speedup/p. --mm DIR adds reference 004's per-matrix LU runs
(Matrix Market files in DIR). --report NAME writes to docs/data/report/NAME and then runs
scripts/report.py, which regenerates docs/performance.md and docs/img/ from every backend's
data there: the one command behind the report, per backend:

    python3 scripts/sweep.py --report openmp                               # 2-core host
    python3 scripts/sweep.py --gpu --bin .gpu --mm .gpu/mm --report h100   # H100 (device round)

A grid longer than one device call (the GPU dense suite takes ~11 minutes) runs in parts:
--filter REGEX passes Google Benchmark's filter (a leading '-' excludes), and --merge keeps the
suite's JSON already in OUT, replacing the benchmarks the new run measured and adding the rest
(its context lists each merged part), e.g. two calls:

    python3 scripts/sweep.py --gpu --bin .gpu --only dense --report h200 --filter=-posv
    python3 scripts/sweep.py --gpu --bin .gpu --only dense --report h200 --filter=posv --merge
"""
import argparse
import csv
import json
import os
import re
import subprocess
import sys

HOST = {
    "dense": ["--n=32,128,250,500,1000,1024,2000,2048,2500,4000,4096",
              "--solve-n=128,500,1000,2048,4096", "--nrhs=1,100"],
    "lu": ["--n=250,500,1000,2000,2048,4096"],
    "batched": ["--n=2,4,8,16,20,32,40,64,100,128", "--batch=1024,16384,131072,1048576"],
    # Reference 002's thread sweep: the default potrf, its OpenMP cutoff variant (sequential
    # tail 0 / 128 / 512) and the baselines; the other variants are in the dense suite.
    "threads": ["--n=250,500,1000,2000,4000", "--nrhs=0", "--algos",
                "--benchmark_filter=(Default|CroutCutoff|lapack_potrf|kokkoskernels)"],
}
GPU = {
    "dense": ["--n=32,64,100,128,200,250,500,1000,1024,2000,2048,2500,4000,4096,5000,7500,8192,16384,32768",
              "--solve-n=128,1000,4096,16384", "--nrhs=1,100"],
    "lu": ["--n=1000,2048,4096,8192,16384"],
    "batched": ["--n=2,4,8,16,20,32,40,64,100,128", "--batch=1024,16384,131072,1048576"],
}
QUICK = {"threads": ["--quick", "--nrhs=0"]}
BINARY = {"dense": "kolesky_perf_dense", "lu": "kolesky_perf_lu", "batched": "kolesky_perf_batched",
          "threads": "kolesky_perf_dense"}


def merge_into(old_path, data, note):
    """The benchmarks of `data` replace those of the same name in the JSON at old_path; the
    others there are kept, in their order, the new ones added after them."""
    old = json.load(open(old_path))
    fresh = {b["name"] for b in data.get("benchmarks", [])}
    old["benchmarks"] = [b for b in old.get("benchmarks", []) if b["name"] not in fresh] + \
        data.get("benchmarks", [])
    ctx = old.setdefault("context", {})
    ctx.setdefault("kolesky_merged", []).append(note)
    return old


def run_suite(suite, bindir, out, quick, gpu, mm=None, threads=None, label=None, filt=None,
              merge=False):
    exe = os.path.join(bindir, BINARY[suite])
    if not os.path.exists(exe):
        print(f"sweep: {exe} is missing (build the perf tests first)", file=sys.stderr)
        return None, [f"{suite}: binary missing"]
    if quick:
        args = QUICK.get(suite, ["--quick"]) + ["--benchmark_min_time=0.01"]
    else:
        # Hundreds of batched points: a shorter minimum keeps the sweep within minutes.
        args = (GPU if gpu else HOST)[suite] + [f"--benchmark_min_time={0.1 if suite == 'batched' else 0.2}"]
    if suite == "lu" and mm:
        args.append(f"--mm={mm}")
    if filt:
        args = args + [f"--benchmark_filter={filt}"]
    label = label or suite
    js = os.path.join(out, f"{label}.json")
    merging = merge and os.path.exists(js)
    dest = js + ".part" if merging else js
    cmd = [exe] + args + [f"--benchmark_out={dest}", "--benchmark_out_format=json"]
    env = dict(os.environ, OMP_PROC_BIND=os.environ.get("OMP_PROC_BIND", "false"))
    # The default environment, as a user has it (no OMP_WAIT_POLICY chosen for us): Kolesky
    # links the OpenMP build of OpenBLAS, which shares Kokkos' thread pool (issue 17). A run
    # with sleeping idle threads can be made by exporting OMP_WAIT_POLICY=passive; label it.
    if threads:
        # Kolesky (Kokkos OpenMP) and the OpenBLAS baseline get the same thread count.
        env.update(OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    # Logs get committed with the data: paths relative to the working directory.
    shown = " ".join(cmd).replace(os.getcwd() + os.sep, "")
    print("sweep:", f"OMP_NUM_THREADS={threads}" if threads else "", shown, flush=True)
    r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL)
    errors = [] if r.returncode == 0 else [f"{suite}: exit status {r.returncode}"]
    if not os.path.exists(dest):
        return None, errors + [f"{suite}: no JSON written"]
    data = json.load(open(dest))
    if merging:
        data = merge_into(js, data, {"date": data.get("context", {}).get("date", ""),
                                     "filter": filt or "", "benchmarks": len(data.get("benchmarks", []))})
        json.dump(data, open(js, "w"), indent=2)
        os.remove(dest)
    # The JSON is committed too: the binary's path relative to the working directory.
    ctx = data.get("context", {})
    if os.path.isabs(ctx.get("executable", "")):
        ctx["executable"] = os.path.relpath(ctx["executable"])
        json.dump(data, open(js, "w"), indent=2)
    for b in data.get("benchmarks", []):
        if b.get("error_occurred") and not is_outcome(b):
            errors.append(f'{suite}: {b["name"]}: {b.get("error_message", "error")}')
    return data, errors


def is_outcome(b):
    """Reference 004's per-matrix runs report a method failing on a matrix (a zero leading
    minor, no convergence) as that matrix's result; a wrong factor is still an error."""
    msg = b.get("error_message", "")
    return b["name"].startswith("mm/") and (msg.startswith("info =") or msg.startswith("did not converge"))


def rows_of(suite, data, threads=""):
    ctx = data.get("context", {})
    for b in data.get("benchmarks", []):
        m = re.match(r"(.+?)<(\w+)>", b["name"])
        impl, scalar = (m.group(1), m.group(2)) if m else (b["name"], "")
        unit = {"ms": 1, "us": 1e-3, "ns": 1e-6, "s": 1e3}.get(b.get("time_unit", "ms"), 1)
        yield {
            "suite": suite,
            "threads": threads,
            "device": ctx.get("device", ctx.get("execution_space", "")),
            "execution_space": ctx.get("execution_space", ""),
            "git": ctx.get("kolesky_git", ""),
            "date": ctx.get("date", ""),
            "name": b["name"],
            "impl": impl,
            "scalar": scalar,
            "n": int(b.get("n", 0)),
            "batch": int(b.get("batch", 0)),
            "nrhs": int(b.get("nrhs", 0)),
            "time_ms": b.get("real_time", 0) * unit if not b.get("error_occurred") else "",
            "gflops": b.get("GFLOP/s", "") and b["GFLOP/s"] / (1e9 if b["GFLOP/s"] > 1e7 else 1),
            "gbs": b.get("GB/s", "") and b["GB/s"] / (1e9 if b["GB/s"] > 1e7 else 1),
            "err": b.get("err", b.get("resid", "")),
            "error": b.get("error_message", "") if b.get("error_occurred") else "",
        }


def write_meta(a):
    """What the report says about the run: the command (paths as given) and the CPU."""
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    git = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True,
                         cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    # The report names the whole sweep's command; a run split with --only / --filter merges
    # its parts.
    args, skip = [], False
    for x in sys.argv[1:]:
        if skip or x.startswith(("--only", "--filter", "--merge")):
            skip = x in ("--only", "--filter")
            continue
        args.append(x)
    path = os.path.join(a.out, "meta.json")
    meta = json.load(open(path)) if (a.only or a.merge) and os.path.exists(path) else {}
    meta.update({"command": "python3 scripts/sweep.py " + " ".join(args), "gpu": a.gpu, "cpu": cpu})
    if git:
        meta["git"] = git
    json.dump(meta, open(path, "w"), indent=1)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    repo = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    p.add_argument("--build", default=os.path.join(repo, "build"))
    p.add_argument("--bin", help="directory holding the perf binaries (default BUILD/perf_test)")
    p.add_argument("--out", default="sweep-out")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--gpu", action="store_true")
    p.add_argument("--only", help="suites (default: dense,lu,batched, plus threads on a host)")
    p.add_argument("--mm", help="Matrix Market directory for the per-matrix LU runs")
    p.add_argument("--report", metavar="NAME", help="write docs/data/report/NAME, then regenerate the report")
    p.add_argument("--filter", help="Google Benchmark filter for every suite run (a leading '-' excludes)")
    p.add_argument("--merge", action="store_true",
                   help="merge into the suite JSON already in OUT instead of replacing it")
    a = p.parse_args()
    if a.report:
        a.out = os.path.join(repo, "docs", "data", "report", a.report)
    bindir = a.bin or os.path.join(a.build, "perf_test")
    suites = (a.only or ("dense,lu,batched" if a.gpu else "dense,lu,batched,threads")).split(",")
    os.makedirs(a.out, exist_ok=True)
    if a.report:
        write_meta(a)
    rows, errors = [], []
    for suite in suites:
        if suite == "threads":
            tdir = os.path.join(a.out, "threads")
            os.makedirs(tdir, exist_ok=True)
            for t in range(1, (os.cpu_count() or 1) + 1):
                data, errs = run_suite(suite, bindir, tdir, a.quick, a.gpu, threads=t, label=f"p{t}")
                errors += errs
                if data:
                    rows += list(rows_of(suite, data, t))
            continue
        data, errs = run_suite(suite, bindir, a.out, a.quick, a.gpu, mm=a.mm, filt=a.filter, merge=a.merge)
        errors += errs
        if data:
            rows += list(rows_of(suite, data))
    if rows:
        with open(os.path.join(a.out, "sweep.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)
    print(f"sweep: {len(rows)} results in {os.path.relpath(a.out)}/sweep.csv")
    for e in errors:
        print("sweep: FAILED", e, file=sys.stderr)
    if errors or not rows:
        return 1
    if a.report:
        return subprocess.call([sys.executable, os.path.join(repo, "scripts", "report.py")])
    return 0


if __name__ == "__main__":
    sys.exit(main())
