#!/usr/bin/env python3
"""Benchmark sweep: Kolesky's perf binaries over the size grids, every result checked.

    scripts/sweep.py [--build DIR] [--out DIR] [--quick] [--gpu] [--only dense,lu,batched]

Runs kolesky_perf_dense, kolesky_perf_lu and kolesky_perf_batched from DIR/perf_test (each
runs Kolesky and its baselines in one process and checks every result after timing), writes
their Google Benchmark JSON to OUT/<suite>.json and one CSV of all of them to OUT/sweep.csv.
--quick: seconds-long grids (CI's smoke run). --gpu: the GPU grids (up to n = 32768 and batch
2^20); the default grids are the 2-core host's. Exit status 1 when any benchmark reported an
error (a wrong result, a failed factorization, a crash): a fast wrong kernel never gets into a
table.
"""
import argparse
import csv
import json
import os
import re
import subprocess
import sys

HOST = {
    "dense": ["--n=32,128,250,500,1000,1024,2000,2048,2500,4000,4096"],
    "lu": ["--n=250,500,1000,2000,2048,4096"],
    "batched": ["--n=2,4,8,16,20,32,40,64,100,128", "--batch=1024,16384,131072"],
}
GPU = {
    "dense": ["--n=32,128,250,500,1000,1024,2000,2048,2500,4000,4096,5000,7500,8192,16384,32768"],
    "lu": ["--n=1000,2048,4096,8192,16384"],
    "batched": ["--n=2,4,8,16,20,32,40,64,100,128", "--batch=1024,16384,131072,1048576"],
}
BINARY = {"dense": "kolesky_perf_dense", "lu": "kolesky_perf_lu", "batched": "kolesky_perf_batched"}


def run_suite(suite, build, out, quick, gpu):
    exe = os.path.join(build, "perf_test", BINARY[suite])
    if not os.path.exists(exe):
        print(f"sweep: {exe} is missing (build the perf tests first)", file=sys.stderr)
        return None, [f"{suite}: binary missing"]
    args = ["--quick", "--benchmark_min_time=0.01"] if quick else (GPU if gpu else HOST)[suite] + [
        "--benchmark_min_time=0.2"]
    js = os.path.join(out, f"{suite}.json")
    cmd = [exe] + args + [f"--benchmark_out={js}", "--benchmark_out_format=json"]
    print("sweep:", " ".join(cmd), flush=True)
    env = dict(os.environ, OMP_PROC_BIND=os.environ.get("OMP_PROC_BIND", "false"))
    r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL)
    errors = [] if r.returncode == 0 else [f"{suite}: exit status {r.returncode}"]
    if not os.path.exists(js):
        return None, errors + [f"{suite}: no JSON written"]
    data = json.load(open(js))
    for b in data.get("benchmarks", []):
        if b.get("error_occurred"):
            errors.append(f'{suite}: {b["name"]}: {b.get("error_message", "error")}')
    return data, errors


def rows_of(suite, data):
    ctx = data.get("context", {})
    for b in data.get("benchmarks", []):
        m = re.match(r"(.+?)<(\w+)>", b["name"])
        impl, scalar = (m.group(1), m.group(2)) if m else (b["name"], "")
        unit = {"ms": 1, "us": 1e-3, "ns": 1e-6, "s": 1e3}.get(b.get("time_unit", "ms"), 1)
        yield {
            "suite": suite,
            "device": ctx.get("device", ctx.get("execution_space", "")),
            "execution_space": ctx.get("execution_space", ""),
            "git": ctx.get("kolesky_git", ""),
            "date": ctx.get("date", ""),
            "name": b["name"],
            "impl": impl,
            "scalar": scalar,
            "n": int(b.get("n", 0)),
            "batch": int(b.get("batch", 0)),
            "time_ms": b.get("real_time", 0) * unit if not b.get("error_occurred") else "",
            "gflops": b.get("GFLOP/s", "") and b["GFLOP/s"] / (1e9 if b["GFLOP/s"] > 1e7 else 1),
            "gbs": b.get("GB/s", "") and b["GB/s"] / (1e9 if b["GB/s"] > 1e7 else 1),
            "err": b.get("err", b.get("resid", "")),
            "error": b.get("error_message", "") if b.get("error_occurred") else "",
        }


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    p.add_argument("--out", default="sweep-out")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--gpu", action="store_true")
    p.add_argument("--only", default="dense,lu,batched")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rows, errors = [], []
    for suite in a.only.split(","):
        data, errs = run_suite(suite, a.build, a.out, a.quick, a.gpu)
        errors += errs
        if data:
            rows += list(rows_of(suite, data))
    if rows:
        with open(os.path.join(a.out, "sweep.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)
    print(f"sweep: {len(rows)} results in {a.out}/sweep.csv")
    for e in errors:
        print("sweep: FAILED", e, file=sys.stderr)
    return 1 if errors or not rows else 0


if __name__ == "__main__":
    sys.exit(main())
