#!/usr/bin/env python3
"""Print the dense benchmarks of a Google Benchmark JSON file as a ratio table.

    perf_table.py results.json [--markdown] [--ref=kolesky_getrf]   # potrf (default) or LU
    perf_table.py results.json --mm [--markdown]     # kolesky_perf_lu's Matrix Market runs

One row per (scalar, n): time and GFLOP/s of each implementation, and the ratio of every
baseline's time to Kolesky's default (> 1 means Kolesky is faster).
"""
import json
import re
import sys
from collections import defaultdict


def load(path):
    data = json.load(open(path))
    out, errors = {}, []
    for b in data["benchmarks"]:
        m = re.match(r"(.+)<(\w+)>/(\d+)(?:/(\d+))?", b["name"])
        if not m:
            continue
        if b.get("error_occurred"):
            errors.append(f'{b["name"]}: {b.get("error_message")}')
            continue
        ms = b["real_time"] * {"ms": 1, "us": 1e-3, "ns": 1e-6, "s": 1e3}[b["time_unit"]]
        out[(m.group(1), m.group(2), int(m.group(3)), int(m.group(4) or 0))] = (ms, b)
    return data, out, errors


def batched(path, md, copy_gbs=3000.0):
    """Batched table: best Kolesky layout vs cuSOLVER / LAPACK loop, and % of copy bandwidth."""
    data, res, errors = load(path)
    ctx = data.get("context", {})
    print(("Run: " if md else "# ") + f'{ctx.get("device", ctx.get("execution_space", "?"))}, '
          f'git {ctx.get("kolesky_git", "?")}, {ctx.get("date", "")}')
    layouts = ["kolesky_batched/strided", "kolesky_batched/interleaved", "kolesky_batched/chunked"]
    bases = [b for b in ["cusolver_potrfBatched", "lapack_potrf_loop", "kokkoskernels_serial_lu",
                         "kokkoskernels_team_lu"]
             if any(k[0] == b for k in res)]
    head = ["scalar", "n", "batch"] + [l.split("/")[1] + " ms" for l in layouts] + \
        ["best GB/s", "% of copy"] + [f"{b} ms" for b in bases] + [f"{b}/best" for b in bases] + \
        ["convert ms"]
    if md:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
    else:
        print("  ".join(head))
    keys = sorted({(k[1], k[2], k[3]) for k in res})
    for scalar, n, bt in keys:
        t = {l: res.get((l, scalar, n, bt)) for l in layouts}
        have = [v for v in t.values() if v]
        if not have:
            continue
        best = min(have, key=lambda v: v[0])
        gbs = best[1].get("GB/s", 0)
        cells = [scalar, str(n), str(int(best[1].get("batch", 0)))]
        cells += [f"{t[l][0]:.3f}" if t[l] else "-" for l in layouts]
        cells += [f"{gbs:.0f}", f"{100 * gbs / copy_gbs:.0f}" if copy_gbs else "-"]
        cells += [f"{res[(b, scalar, n, bt)][0]:.3f}" if (b, scalar, n, bt) in res else "-" for b in bases]
        cells += [f"{res[(b, scalar, n, bt)][0] / best[0]:.2f}" if (b, scalar, n, bt) in res else "-" for b in bases]
        c = res.get(("convert_strided_to_interleaved", scalar, n, bt))
        cells.append(f"{c[0]:.3f}" if c else "-")
        print(("| " + " | ".join(cells) + " |") if md else "  ".join(cells))
    # Forced kernels (--kernels): ms per layout and kernel.
    forced = sorted({k[0] for k in res if k[0].count("/") == 2})
    if forced:
        print()
        head = ["scalar", "n", "batch"] + [f.split("/", 1)[1] for f in forced]
        print(("| " + " | ".join(head) + " |\n|" + "---|" * len(head)) if md else "  ".join(head))
        for scalar, n, bt in keys:
            cells = [scalar, str(n), str(bt)]
            cells += [f"{res[(f, scalar, n, bt)][0]:.3f}" if (f, scalar, n, bt) in res else "-"
                      for f in forced]
            print(("| " + " | ".join(cells) + " |") if md else "  ".join(cells))
    for e in errors:
        print("ERROR", e)
    return 1 if errors else 0


def matrices(path, md):
    """004's experiment: per (scalar, matrix) the time, sweeps and max |A - LU| of each method."""
    data = json.load(open(path))
    rows, methods, errors = defaultdict(dict), [], []
    for b in data["benchmarks"]:
        m = re.match(r"mm/(.+)/([^/<]+)<(\w+)>", b["name"])
        if not m:
            continue
        meth, mat, scalar = m.groups()
        if meth not in methods:
            methods.append(meth)
        if b.get("error_occurred"):
            rows[(scalar, mat)][meth] = b.get("error_message", "error")
            continue
        ms = b["real_time"] * {"ms": 1, "us": 1e-3, "ns": 1e-6, "s": 1e3}[b["time_unit"]]
        rows[(scalar, mat)][meth] = (ms, b.get("sweeps"), b.get("err"), int(b.get("n", 0)))
    ctx = data.get("context", {})
    print(("Run: " if md else "# ") + f'{ctx.get("device", ctx.get("execution_space", "?"))}, '
          f'git {ctx.get("kolesky_git", "?")}, {ctx.get("date", "")}')
    head = ["scalar", "matrix", "n"] + methods
    print(("| " + " | ".join(head) + " |\n|" + "---|" * len(head)) if md else "  ".join(head))
    for (scalar, mat) in sorted(rows, key=lambda k: (k[0], min(v[3] for v in rows[k].values() if isinstance(v, tuple)) if any(isinstance(v, tuple) for v in rows[k].values()) else 0)):
        r = rows[(scalar, mat)]
        n = next((v[3] for v in r.values() if isinstance(v, tuple)), 0)
        cells = [scalar, mat, str(n)]
        for meth in methods:
            v = r.get(meth)
            if v is None:
                cells.append("-")
            elif isinstance(v, str):
                cells.append(v)
            else:
                c = f"{v[0]:.3g} ms"
                if v[1]:
                    c += f", {int(v[1])} sw"
                if v[2] is not None:
                    c += f", err {v[2]:.1e}"
                cells.append(c)
        print(("| " + " | ".join(cells) + " |") if md else "  ".join(cells))
    return 0


def main():
    md = "--markdown" in sys.argv
    if "--mm" in sys.argv:
        return matrices([a for a in sys.argv[1:] if not a.startswith("--")][0], md)
    refs = [a.split("=", 1)[1] for a in sys.argv if a.startswith("--ref=")]
    if "--batched" in sys.argv:
        path = [a for a in sys.argv[1:] if not a.startswith("--")][0]
        host = "--host" in sys.argv
        return batched(path, md, 0.0 if host else 3000.0)
    path = [a for a in sys.argv[1:] if not a.startswith("--")][0]
    data = json.load(open(path))
    rows = defaultdict(dict)  # (scalar, n) -> impl -> (ms, gflops)
    impls = []
    errors = []
    for b in data["benchmarks"]:
        m = re.match(r"(.+)<(\w+)>/(\d+)", b["name"])
        if not m:
            continue
        impl, scalar, n = m.group(1), m.group(2), int(m.group(3))
        if b.get("error_occurred"):
            errors.append(f'{b["name"]}: {b.get("error_message")}')
            continue
        ms = b["real_time"] * {"ms": 1, "us": 1e-3, "ns": 1e-6, "s": 1e3}[b["time_unit"]]
        rows[(scalar, n)][impl] = (ms, b.get("GFLOP/s", 0) / 1e9 if b.get("GFLOP/s", 0) > 1e6 else b.get("GFLOP/s", 0))
        if impl not in impls:
            impls.append(impl)
    ctx = data.get("context", {})
    print(("Run: " if md else "# ") + f'{ctx.get("device", ctx.get("execution_space", "?"))}, '
          f'{ctx.get("execution_space", "?")}, git {ctx.get("kolesky_git", "?")}, {ctx.get("date", "")}')
    ref = refs[0] if refs else "kolesky_potrf/Default"
    baselines = [i for i in impls if not i.startswith("kolesky_")]
    variants = [i for i in impls if i.startswith("kolesky_") and i != ref]
    sep = " | " if md else "  "

    def table(head, cells_of):
        if md:
            print("| " + " | ".join(head) + " |")
            print("|" + "---|" * len(head))
        else:
            print(sep.join(head))
        for (scalar, n) in sorted(rows, key=lambda k: (k[0], k[1])):
            cells = cells_of(scalar, n, rows[(scalar, n)])
            print(("| " + " | ".join(cells) + " |") if md else sep.join(cells))

    # Default against the baselines: ratio = baseline time / Kolesky time (> 1: Kolesky faster).
    table(["scalar", "n", "kolesky ms", "kolesky GF/s"] + [f"{b} ms" for b in baselines] +
          [f"{b}/kolesky" for b in baselines],
          lambda scalar, n, r: [scalar, str(n), f"{r[ref][0]:.3f}" if ref in r else "-",
                                f"{r[ref][1]:.1f}" if ref in r else "-"] +
          [f"{r[b][0]:.3f}" if b in r else "-" for b in baselines] +
          [f"{r[b][0] / r[ref][0]:.2f}" if b in r and ref in r else "-" for b in baselines])
    if variants:
        # Every variant as its time over the default's (> 1: the default is faster).
        print()
        table(["scalar", "n"] + [v.split("/", 1)[1] if v.startswith("kolesky_potrf/") else v
                                 for v in variants],
              lambda scalar, n, r: [scalar, str(n)] +
              [f"{r[v][0] / r[ref][0]:.2f}" if v in r and ref in r else "-" for v in variants])
    for e in errors:
        print("ERROR", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
