#!/usr/bin/env python3
"""Generate docs/performance.md and its plots from the sweep data.

    scripts/report.py [--data docs/data/report] [--docs docs]

Every directory under DATA is one backend's sweep (written by `scripts/sweep.py --report NAME`):
dense.json, lu.json, batched.json (Google Benchmark JSON with Kolesky and its baselines measured
in the same process), threads/p<k>.json (host thread sweep), meta.json (command, CPU). The
report gets, per backend, ratio tables against each baseline (baseline time / Kolesky time:
> 1 means Kolesky is faster) and PNG plots in DOCS/img. Nothing in docs/performance.md is
written by hand: edit this script, or docs/performance_log.md (the engineering log).
"""
import argparse
import glob
import json
import os
import re
import sys
from collections import defaultdict

UNIT = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
NICE = {
    "kolesky_potrf/Default": "Kolesky potrf",
    "cusolver_potrf": "cuSOLVER potrf",
    "lapack_potrf": "OpenBLAS potrf",
    "kokkoskernels_blocked_potrf": "Kokkos Kernels (blocked potrf from KokkosBlas)",
    "kolesky_potrf/CroutCutoff/0": "Kolesky Crout, OpenMP cutoff: sequential tail 0",
    "kolesky_potrf/CroutCutoff/128": "Kolesky Crout, OpenMP cutoff: sequential tail 128",
    "kolesky_potrf/CroutCutoff/512": "Kolesky Crout, OpenMP cutoff: sequential tail 512",
    "kolesky_getrf": "Kolesky getrf",
    "kolesky_getrf/native": "Kolesky getrf, native level 3",
    "kolesky_crout": "Kolesky Crout (no pivoting)",
    "kolesky_crout/native": "Kolesky Crout, native level 3",
    "cusolver_getrf": "cuSOLVER getrf",
    "lapack_getrf": "OpenBLAS getrf",
    "cusolver_potrfBatched": "cuSOLVER potrfBatched",
    "lapack_potrf_loop": "loop of OpenBLAS potrf (one per thread)",
    "kokkoskernels_serial_lu": "Kokkos Kernels SerialLU (batched LU)",
    "kokkoskernels_team_lu": "Kokkos Kernels TeamLU (batched LU)",
    "copy_roofline": "copy (read + write once)",
}
BASE_STYLE = dict(linestyle="--", marker="s", markersize=3)
OURS_STYLE = dict(linestyle="-", marker="o", markersize=3, linewidth=2)


def parse_name(name):
    name = re.sub(r"/(manual_time|real_time|iterations:\d+)", "", name)
    m = re.match(r"^(.+?)<(\w+)>((?:/[^/]+)*)$", name)
    if not m:
        return None
    return m.group(1), m.group(2), [a for a in m.group(3).split("/") if a]


def load(path):
    if not os.path.exists(path):
        return None
    data = json.load(open(path))
    rows = []
    for b in data.get("benchmarks", []):
        p = parse_name(b["name"])
        if not p:
            continue
        impl, scalar, args = p
        r = dict(impl=impl, scalar=scalar, args=args, b=b, error=b.get("error_message", "")
                 if b.get("error_occurred") else "")
        if not r["error"]:
            r["ms"] = b["real_time"] * UNIT[b.get("time_unit", "ms")]
        rows.append(r)
    return {"ctx": data.get("context", {}), "rows": rows}


def load_backend(d):
    be = {"name": os.path.basename(d.rstrip("/")), "dir": d}
    for s in ("dense", "lu", "batched"):
        be[s] = load(os.path.join(d, s + ".json"))
    be["threads"] = {}
    for f in glob.glob(os.path.join(d, "threads", "p*.json")):
        be["threads"][int(re.search(r"p(\d+)\.json$", f).group(1))] = load(f)
    meta = os.path.join(d, "meta.json")
    be["meta"] = json.load(open(meta)) if os.path.exists(meta) else {}
    return be


def fmt_ms(v):
    return "-" if v is None else (f"{v:.3g}" if v < 100 else f"{v:.0f}")


def fmt_ratio(base, ours):
    return "-" if base is None or ours is None or ours <= 0 else f"**{base / ours:.2f}**"


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


class Plotter:
    def __init__(self, imgdir):
        self.imgdir = imgdir
        self.ok = False
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
            self.plt = plt
            self.ok = True
        except ImportError:
            print("report: matplotlib is missing (Debian: python3-matplotlib); tables only",
                  file=sys.stderr)

    def save(self, fig, name):
        os.makedirs(self.imgdir, exist_ok=True)
        fig.tight_layout()
        fig.savefig(os.path.join(self.imgdir, name), dpi=90)
        self.plt.close(fig)
        return f"![{name}](img/{name})\n"


def device_of(be):
    for s in ("dense", "lu", "batched"):
        if be[s]:
            c = be[s]["ctx"]
            if c.get("device"):
                return c["device"], c
            cpu = be["meta"].get("cpu", "CPU")
            return f'{cpu}, {c.get("num_cpus", "?")} cores ({c.get("execution_space", "?")})', c
    return be["name"], {}


# ---------------------------------------------------------------------------------------------
# Dense potrf and the solves


def paired_ratios(d, impl):
    """(scalar, n) -> the median ratio of a paired_vs_* benchmark (Kolesky and the baseline
    timed alternately on the same matrix: the ratio a noisy host reproduces)."""
    out = {}
    for r in d["rows"]:
        if r["impl"] == impl and len(r["args"]) == 1 and not r["error"] and "ratio" in r["b"]:
            out[(r["scalar"], int(r["args"][0]))] = r["b"]["ratio"]
    return out


def dense_section(be, P):
    d = be["dense"]
    if not d:
        return ""
    out = []
    res = {}  # (impl, scalar, n) -> ms
    for r in d["rows"]:
        if len(r["args"]) == 1 and "ms" in r:
            res[(r["impl"], r["scalar"], int(r["args"][0]))] = r["ms"]
    ours = "kolesky_potrf/Default"
    bases = [b for b in ("cusolver_potrf", "lapack_potrf", "kokkoskernels_blocked_potrf")
             if any(k[0] == b for k in res)]
    paired = paired_ratios(d, "paired_vs_lapack_potrf")
    out.append("### Dense potrf (one matrix, lower, column-major)\n\n")
    out.append("Time of `kolesky::potrf(exec, Uplo::Lower, A)` (the `Default` variant) and of each "
               "baseline on the same matrix; ratio = baseline time / Kolesky time (> 1: Kolesky "
               "faster)." + (" *alternating*: the median ratio with Kolesky and OpenBLAS timed "
                            "alternately on the same matrix (`paired_vs_lapack_potrf`), which "
                            "this noisy machine reproduces best." if paired else "") + "\n\n")
    for scalar in ("double", "float"):
        ns = sorted({k[2] for k in res if k[0] == ours and k[1] == scalar})
        if not ns:
            continue
        head = ["n", "Kolesky ms", "Kolesky GFLOP/s"]
        for b in bases:
            head += [f"{NICE[b].split(' (')[0]} ms", "ratio"]
            if b == "lapack_potrf" and paired:
                head += ["ratio, alternating"]
        rows = []
        for n in ns:
            k = res[(ours, scalar, n)]
            row = [n, fmt_ms(k), f"{n ** 3 / 3 / k / 1e6:.1f}"]
            for b in bases:
                t = res.get((b, scalar, n))
                row += [fmt_ms(t), fmt_ratio(t, k)]
                if b == "lapack_potrf" and paired:
                    pr = paired.get((scalar, n))
                    row += ["-" if pr is None else f"**{pr:.2f}**"]
            rows.append(row)
        out.append(f"**{scalar}**\n\n" + table(head, rows) + "\n")
        if P.ok:
            fig, ax = P.plt.subplots(1, 2, figsize=(10, 3.8))
            for impl in [ours] + bases:
                xs = [n for n in ns if (impl, scalar, n) in res]
                ts = [res[(impl, scalar, n)] for n in xs]
                st = OURS_STYLE if impl == ours else BASE_STYLE
                lab = NICE.get(impl, impl) + ("" if impl == ours else " (baseline)")
                ax[0].plot(xs, ts, label=lab, **st)
                ax[1].plot(xs, [n ** 3 / 3 / t / 1e6 for n, t in zip(xs, ts)], label=lab, **st)
            ax[0].set(xscale="log", yscale="log", xlabel="n (matrix order)", ylabel="time (ms)",
                      title=f"potrf time, {scalar}")
            ax[1].set(xscale="log", yscale="log", xlabel="n (matrix order)", ylabel="GFLOP/s (n³/3 / t)",
                      title=f"potrf rate, {scalar}")
            for a in ax:
                a.grid(True, which="both", alpha=0.3)
            ax[1].legend(fontsize=7)
            fig.suptitle(f"Dense Cholesky, {device_of(be)[0]}", fontsize=9)
            out.append(P.save(fig, f"dense_{be['name']}_{scalar}.png") + "\n")
    out.append(solve_section(be, P))
    return "".join(out)


def solve_section(be, P):
    res = {}
    for r in be["dense"]["rows"]:
        m = re.match(r"^(\w+?)_(potrs|posv)$", r["impl"])
        if m and len(r["args"]) == 2 and "ms" in r:
            res[(m.group(1), m.group(2), r["scalar"], int(r["args"][0]), int(r["args"][1]))] = r["ms"]
    if not res:
        return ""
    who = [w for w in ("cusolver", "lapack", "kokkoskernels") if any(k[0] == w for k in res)]
    names = {"cusolver": "cuSOLVER", "lapack": "OpenBLAS", "kokkoskernels": "Kokkos Kernels"}
    out = ["### potrs and posv (nrhs right-hand sides)\n\n",
           "`potrs`: the solve alone with a factor made before (`kolesky::potrs`; baselines: "
           "cuSOLVER potrs, LAPACK potrs, two `KokkosBlas::trsm`); `posv`: factor and solve "
           "timed together (`kolesky::posv`; each baseline's own factorization and solve). "
           "Ratio = baseline time / Kolesky time.\n\n"]
    for scalar in ("double", "float"):
        keys = sorted({(k[3], k[4]) for k in res if k[2] == scalar})
        if not keys:
            continue
        head = ["n", "nrhs"]
        for kind in ("potrs", "posv"):
            head += [f"Kolesky {kind} ms"] + [f"{names[w]} ratio" for w in who]
        rows = []
        for n, r in keys:
            row = [n, r]
            for kind in ("potrs", "posv"):
                k = res.get(("kolesky", kind, scalar, n, r))
                row += [fmt_ms(k)] + [fmt_ratio(res.get((w, kind, scalar, n, r)), k) for w in who]
            rows.append(row)
        out.append(f"**{scalar}**\n\n" + table(head, rows) + "\n")
    if P.ok:
        nrhs = sorted({k[4] for k in res})
        fig, ax = P.plt.subplots(1, len(nrhs), figsize=(5 * len(nrhs), 3.6), squeeze=False)
        for a, r in zip(ax[0], nrhs):
            for w in ["kolesky"] + who:
                for kind, mk in (("potrs", "o"), ("posv", "^")):
                    xs = sorted(k[3] for k in res if k[:3] == (w, kind, "double") and k[4] == r)
                    if not xs:
                        continue
                    st = dict(OURS_STYLE if w == "kolesky" else BASE_STYLE, marker=mk)
                    lab = f'{"Kolesky" if w == "kolesky" else names[w] + " (baseline)"} {kind}'
                    a.plot(xs, [res[(w, kind, "double", n, r)] for n in xs], label=lab, **st)
            a.set(xscale="log", yscale="log", xlabel="n (matrix order)", ylabel="time (ms)",
                  title=f"potrs / posv, double, nrhs = {r}")
            a.grid(True, which="both", alpha=0.3)
            a.legend(fontsize=6)
        out.append(P.save(fig, f"solve_{be['name']}.png") + "\n")
    # Measurements outside the sweep (posv_mixed's own runs), written by hand beside the data.
    notes = os.path.join(be["dir"], "notes_solve.md")
    if os.path.exists(notes):
        out.append(open(notes).read().rstrip("\n") + "\n\n")
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Batched potrf


def batched_section(be, P):
    d = be["batched"]
    if not d:
        return ""
    res = {}
    for r in d["rows"]:
        if len(r["args"]) == 2 and "ms" in r:
            res[(r["impl"], r["scalar"], int(r["args"][0]), int(r["b"].get("batch", r["args"][1])))] = r
    layouts = ["kolesky_batched/strided", "kolesky_batched/interleaved", "kolesky_batched/chunked"]
    bases = [b for b in ("cusolver_potrfBatched", "lapack_potrf_loop", "kokkoskernels_serial_lu",
                         "kokkoskernels_team_lu") if any(k[0] == b for k in res)]
    out = ["### Batched potrf (many small matrices)\n\n",
           "Kolesky's `batched::potrf` in each layout (strided = one matrix after another, "
           "interleaved = batch index fastest, chunked = interleaved in chunks; `Kernel::Auto`) "
           "against the baselines, at the largest batch measured for each n. GB/s counts each "
           "matrix read once and written once; the copy column is a `deep_copy` of the same "
           "bytes in the same run (the roofline). Ratio = baseline time / best Kolesky layout "
           "(Kokkos Kernels has no batched Cholesky: its batched LU does twice the flops).\n\n"]
    for scalar in ("double", "float"):
        ns = sorted({k[2] for k in res if k[1] == scalar and k[0] in layouts})
        if not ns:
            continue
        head = ["n", "batch"] + [l.split("/")[1] + " ms" for l in layouts] + \
               ["best GB/s", "copy GB/s", "% of copy"] + [f"{NICE[b].split(' (')[0]} ratio" for b in bases]
        rows, plot = [], defaultdict(list)
        for n in ns:
            bt = max(k[3] for k in res if k[1] == scalar and k[2] == n and k[0] in layouts)
            t = {l: res.get((l, scalar, n, bt)) for l in layouts}
            have = [v for v in t.values() if v]
            best = min(have, key=lambda v: v["ms"])
            gbs = best["b"].get("GB/s", 0) / (1e9 if best["b"].get("GB/s", 0) > 1e7 else 1)
            cp = res.get(("copy_roofline", scalar, n, bt))
            cgbs = cp["b"].get("GB/s", 0) / (1e9 if cp["b"].get("GB/s", 0) > 1e7 else 1) if cp else None
            row = [n, bt] + [fmt_ms(t[l]["ms"]) if t[l] else "-" for l in layouts]
            row += [f"{gbs:.0f}", f"{cgbs:.0f}" if cgbs else "-", f"{100 * gbs / cgbs:.0f}" if cgbs else "-"]
            row += [fmt_ratio(res[(b, scalar, n, bt)]["ms"], best["ms"]) if (b, scalar, n, bt) in res else "-"
                    for b in bases]
            rows.append(row)
            for impl in layouts + bases + ["copy_roofline"]:
                v = res.get((impl, scalar, n, bt))
                if v:
                    plot[impl].append((n, 2.0 * bt * n * n * (4 if scalar == "float" else 8) / v["ms"] / 1e6))
        out.append(f"**{scalar}**\n\n" + table(head, rows) + "\n")
        if P.ok:
            fig, ax = P.plt.subplots(figsize=(7, 4))
            for impl, pts in plot.items():
                if impl == "copy_roofline":
                    st = dict(color="black", linestyle=":", linewidth=2)
                    lab = "copy roofline (same run)"
                elif impl in layouts:
                    st, lab = OURS_STYLE, "Kolesky " + impl.split("/")[1]
                else:
                    st, lab = BASE_STYLE, NICE[impl] + " (baseline)"
                ax.plot([p[0] for p in pts], [p[1] for p in pts], label=lab, **st)
            ax.set(xscale="log", yscale="log", xlabel="n (order of each matrix)",
                   ylabel="GB/s (2 n² s bytes per matrix / t)",
                   title=f"Batched potrf, {scalar}, largest batch per n — {device_of(be)[0]}")
            ax.title.set_fontsize(8)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=6)
            out.append(P.save(fig, f"batched_{be['name']}_{scalar}.png") + "\n")
    # Batch-size sweep: flat GFLOP/s means a kernel fills the machine at small batches too.
    if P.ok:
        fig, ax = P.plt.subplots(figsize=(7, 4))
        for n in (4, 16, 32, 64, 128):
            for impl, st in (("kolesky_batched/interleaved", OURS_STYLE),
                             ("kolesky_batched/strided", dict(OURS_STYLE, linestyle="-.")),
                             (bases[0] if bases else None, BASE_STYLE)):
                if not impl:
                    continue
                pts = sorted((k[3], v["ms"]) for k, v in res.items()
                             if k[0] == impl and k[1] == "double" and k[2] == n)
                if len(pts) < 2:
                    continue
                ax.plot([p[0] for p in pts], [b * n ** 3 / 3 / t / 1e6 for b, t in pts],
                        label=f'n={n} {NICE.get(impl, "Kolesky " + impl.split("/")[-1])}'
                              + ("" if impl.startswith("kolesky") else " (baseline)"), **st)
        ax.set(xscale="log", yscale="log", xlabel="batch (matrices)", ylabel="GFLOP/s (n³/3 per matrix)",
               title=f"Batched potrf against the batch size, double — {device_of(be)[0]}")
        ax.title.set_fontsize(8)
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=5, ncol=2)
            out.append(P.save(fig, f"batched_batch_{be['name']}.png") + "\n")
        else:
            P.plt.close(fig)
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# LU


def lu_section(be, P):
    d = be["lu"]
    if not d:
        return ""
    out = []
    res = {}
    for r in d["rows"]:
        if not r["impl"].startswith("mm/") and len(r["args"]) == 1 and "ms" in r:
            res[(r["impl"], r["scalar"], int(r["args"][0]))] = r["ms"]
    ours = "kolesky_getrf"
    bases = [b for b in ("cusolver_getrf", "lapack_getrf") if any(k[0] == b for k in res)]
    variants = sorted({k[0] for k in res if k[0].startswith("kolesky_") and k[0] != ours
                       and "/panel" not in k[0] and k[2] in {n for kk in res if kk[0] == ours for n in [kk[2]]}})
    if res:
        out.append("### LU: getrf (partial pivoting) and Crout\n\n"
                   "`kolesky::getrf` against the baselines' getrf on the same matrix (ratio = "
                   "baseline time / Kolesky time); Kolesky's other LU variants as their time "
                   "(Crout and the iterative Crout factor without pivoting, on diagonally dominant "
                   "matrices).\n\n")
        paired = paired_ratios(d, "paired_vs_lapack_getrf")
        if paired:
            out.append("*alternating*: the median ratio with Kolesky and OpenBLAS timed alternately "
                       "on the same matrix (`paired_vs_lapack_getrf`), which this noisy machine "
                       "reproduces best.\n\n")
        for scalar in ("double", "float"):
            ns = sorted({k[2] for k in res if k[0] == ours and k[1] == scalar})
            if not ns:
                continue
            head = ["n", "getrf ms", "GFLOP/s"] + sum(([f"{NICE[b]} ms", "ratio"] +
                                                       (["ratio, alternating"] if b == "lapack_getrf" and paired else [])
                                                       for b in bases), []) + \
                   [NICE.get(v, v.replace("kolesky_", "")) + " ms" for v in variants]
            rows = []
            for n in ns:
                k = res[(ours, scalar, n)]
                row = [n, fmt_ms(k), f"{2 * n ** 3 / 3 / k / 1e6:.1f}"]
                for b in bases:
                    row += [fmt_ms(res.get((b, scalar, n))), fmt_ratio(res.get((b, scalar, n)), k)]
                    if b == "lapack_getrf" and paired:
                        pr = paired.get((scalar, n))
                        row += ["-" if pr is None else f"**{pr:.2f}**"]
                row += [fmt_ms(res.get((v, scalar, n))) for v in variants]
                rows.append(row)
            out.append(f"**{scalar}**\n\n" + table(head, rows) + "\n")
        if P.ok:
            fig, ax = P.plt.subplots(figsize=(7, 4))
            for impl in [ours] + variants + bases:
                xs = sorted(k[2] for k in res if k[0] == impl and k[1] == "double")
                if not xs:
                    continue
                st = BASE_STYLE if impl in bases else (OURS_STYLE if impl == ours else dict(OURS_STYLE, linewidth=1))
                ax.plot(xs, [res[(impl, "double", n)] for n in xs],
                        label=NICE.get(impl, impl) + (" (baseline)" if impl in bases else ""), **st)
            ax.set(xscale="log", yscale="log", xlabel="n (matrix order)", ylabel="time (ms)",
                   title=f"LU, double — {device_of(be)[0]}")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=6)
            out.append(P.save(fig, f"lu_{be['name']}.png") + "\n")
    out.append(lu_mm_section(be, P))
    return "".join(out)


def lu_mm_section(be, P):
    mm = defaultdict(dict)  # (scalar, matrix) -> method -> row
    for r in be["lu"]["rows"]:
        if r["impl"].startswith("mm/"):
            parts = r["impl"].split("/")
            mm[(r["scalar"], parts[-1])]["/".join(parts[1:-1])] = r
    if not mm:
        return ""
    methods = ["kolesky_getrf", "kolesky_crout", "kolesky_crout_iterative/8", "kolesky_crout_iterative/16",
               "kolesky_crout_iterative/32", "sequential_crout", "cusolver_getrf", "lapack_getrf"]
    methods = [m for m in methods if any(m in v for v in mm.values())]
    out = ["### LU per matrix (reference 004's experiment, SuiteSparse matrices)\n\n"
           "Each cell: time in ms / max |A − LU| (for getrf, |PA − LU|); the iterative Crout also "
           "gives its sweeps. A method that fails on a matrix says why (a zero leading minor: "
           "`info = k`; no convergence: the sweep cap or an overflowing iterate).\n\n"]
    short = {"kolesky_getrf": "getrf", "kolesky_crout": "Crout", "kolesky_crout_iterative/8": "iter. 8",
             "kolesky_crout_iterative/16": "iter. 16", "kolesky_crout_iterative/32": "iter. 32",
             "sequential_crout": "sequential Crout", "cusolver_getrf": "cuSOLVER getrf (baseline)",
             "lapack_getrf": "OpenBLAS getrf (baseline)"}
    for scalar in ("double", "float"):
        mats = sorted((k[1] for k in mm if k[0] == scalar),
                      key=lambda m: next(int(v["b"].get("n", 0)) for v in mm[(scalar, m)].values()))
        if not mats:
            continue
        rows = []
        for m in mats:
            v = mm[(scalar, m)]
            n = int(next(iter(v.values()))["b"].get("n", 0))
            row = [m, n]
            for meth in methods:
                r = v.get(meth)
                if not r:
                    row.append("-")
                elif r["error"]:
                    row.append(r["error"].replace("did not converge", "no conv.").replace("|", "/"))
                else:
                    cell = f'{fmt_ms(r["ms"])} / {r["b"].get("err", 0):.1e}'
                    if "sweeps" in r["b"]:
                        cell += f' ({int(r["b"]["sweeps"])} sw.)'
                    row.append(cell)
            rows.append(row)
        out.append(f"**{scalar}**\n\n" + table(["matrix", "n"] + [short[m] for m in methods], rows) + "\n")
        if P.ok:
            fig, ax = P.plt.subplots(1, 2, figsize=(11, 4))
            width = 0.8 / len(methods)
            for i, meth in enumerate(methods):
                xs, ts, es = [], [], []
                for j, m in enumerate(mats):
                    r = mm[(scalar, m)].get(meth)
                    if r and not r["error"]:
                        xs.append(j + i * width)
                        ts.append(r["ms"])
                        es.append(max(r["b"].get("err", 0), 1e-18))
                hatch = "//" if "baseline" in short[meth] else None
                ax[0].bar(xs, ts, width, label=short[meth], hatch=hatch)
                ax[1].bar(xs, es, width, label=short[meth], hatch=hatch)
            for a, yl in ((ax[0], "time (ms)"), (ax[1], "max |A − LU|")):
                a.set_yscale("log")
                a.set_ylabel(yl)
                a.set_xticks([j + 0.4 - width / 2 for j in range(len(mats))])
                a.set_xticklabels(mats, rotation=45, ha="right", fontsize=7)
                a.grid(True, axis="y", which="both", alpha=0.3)
            ax[0].set_title(f"LU time per matrix, {scalar} (missing bar: the method failed)", fontsize=8)
            ax[1].set_title(f"factor error per matrix, {scalar}", fontsize=8)
            ax[1].legend(fontsize=6)
            out.append(P.save(fig, f"lu_mm_{be['name']}_{scalar}.png") + "\n")
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Threads


def threads_section(be, P):
    th = {p: d for p, d in be["threads"].items() if d}
    if len(th) < 1:
        return ""
    res = {}  # (impl, scalar, n, p) -> ms
    for p, d in th.items():
        for r in d["rows"]:
            if len(r["args"]) == 1 and "ms" in r:
                res[(r["impl"], r["scalar"], int(r["args"][0]), p)] = r["ms"]
    ps = sorted(th)
    impls = [i for i in ("kolesky_potrf/Default", "lapack_potrf", "kokkoskernels_blocked_potrf",
                         "kolesky_potrf/CroutCutoff/0", "kolesky_potrf/CroutCutoff/128",
                         "kolesky_potrf/CroutCutoff/512")
             if any(k[0] == i for k in res)]
    out = ["### Threads: speedup and efficiency (reference 002's measurement)\n\n",
           "Dense potrf (double) at OMP_NUM_THREADS = p (OpenBLAS gets the same p): speedup "
           "S(p) = t(1) / t(p), efficiency E(p) = S(p) / p. The Crout columns are reference "
           "002's OpenMP cutoff (columns with fewer rows than the tail run sequentially; run up "
           "to n = 2048).\n\n"]
    head = ["n"] + sum(([f"{NICE[i].split(' (')[0]} t(1) ms"] + [f"S({p}) / E({p})" for p in ps[1:]]
                        for i in impls), [])
    rows = []
    ns = sorted({k[2] for k in res if k[1] == "double"})
    for n in ns:
        row = [n]
        for i in impls:
            t1 = res.get((i, "double", n, ps[0]))
            row.append(fmt_ms(t1))
            for p in ps[1:]:
                tp = res.get((i, "double", n, p))
                row.append("-" if not (t1 and tp) else f"{t1 / tp:.2f} / {t1 / tp / p:.2f}")
        rows.append(row)
    out.append(table(head, rows) + "\n")
    if P.ok and len(ps) > 1:
        fig, ax = P.plt.subplots(1, 2, figsize=(10, 3.8))
        for i in (i for i in impls if "CroutCutoff" not in i):  # the table has the cutoffs
            for n in ns:
                pts = [(p, res[(i, "double", n, ps[0])] / res[(i, "double", n, p)])
                       for p in ps if (i, "double", n, p) in res and (i, "double", n, ps[0]) in res]
                if not pts:
                    continue
                st = OURS_STYLE if i.startswith("kolesky") else BASE_STYLE
                lab = f'{NICE[i].split(" (")[0]}{"" if i.startswith("kolesky") else " (baseline)"}, n={n}'
                ax[0].plot([p for p, _ in pts], [s for _, s in pts], label=lab, **st)
                ax[1].plot([p for p, _ in pts], [s / p for p, s in pts], label=lab, **st)
        ax[0].plot(ps, ps, color="gray", linestyle=":", label="ideal")
        ax[0].set(xlabel="threads p", ylabel="speedup t(1)/t(p)", title="potrf speedup, double")
        ax[1].set(xlabel="threads p", ylabel="efficiency speedup/p", title="potrf efficiency, double",
                  ylim=(0, 1.2))
        for a in ax:
            a.set_xticks(ps)
            a.grid(True, alpha=0.3)
        ax[1].legend(fontsize=5, ncol=2)
        out.append(P.save(fig, f"threads_{be['name']}.png") + "\n")
    return "".join(out)


def lp_section(be, P):
    """Example 03's run on this backend (the GPU round's `lp` step saves its output as lp.log)."""
    path = os.path.join(be["dir"], "lp.log")
    if not os.path.exists(path):
        return ""
    lines = [l.rstrip() for l in open(path) if l.strip() and not l.startswith("OMP_")]
    share = next((l for l in lines if "Cholesky" in l and "%" in l), "")
    m = re.search(r"=\s*([\d.]+)%", share)
    out = ["### Application: the interior-point LP (example 03)\n\n",
           "`example/03_interior_point_lp` (Mehrotra predictor-corrector; one `potrf` and two "
           "`potrs` of the normal matrix per iteration)"
           + (f": **{m.group(1)} % of the solver's time is the Cholesky factorization and solves**" if m else "")
           + ". Its output:\n\n```\n" + "\n".join(lines) + "\n```\n\n"]
    return "".join(out)


def batched_kernels_section(be, data_files):
    """Later H100 runs of the batched benchmark with --kernels (one process each; a later file
    replaces an earlier one's points): each kernel beside Auto, the copy and cuSOLVER. Newer
    than the sweep above; shown until it is rerun."""
    files = [f for f in data_files if os.path.exists(f)]
    # Only under the sweep whose batched rows these runs follow (a GPU sweep with batched data).
    if not be["meta"].get("gpu") or not be["batched"] or not files:
        return ""
    t = {}
    for f in files:
        for b in json.load(open(f))["benchmarks"]:
            m = re.match(r"(.*)<(float|double)>/(\d+)/", b["name"])
            if m:
                t[(m.group(1), m.group(2), int(m.group(3)))] = b
    names = ", ".join("`docs/data/issue16/" + os.path.basename(f) + "`" for f in files)
    out = ["#### n = 16-128 by kernel (later runs)\n\n",
           "`kolesky_perf_batched --n=... --kernels --benchmark_min_time=0.1` on the same GPU, "
           "cuSOLVER and the copy in the same process (data: " + names + ", the later file "
           "for the orders it has). WarpStaged: a warp per matrix staged in shared memory by "
           "asynchronous copies (n <= 64), a block of n / 32 warps per matrix above (in double on "
           "sm_80 and later, but for a uniform n = 96, a thread per row with its dot products on "
           "the FP64 tensor cores: the split kernel, from the last file on; float too, with m16n8k4 "
           "pairs, since issue 16's ninth session, and with more blocks per SM (its uniform "
           "n = 96 included) since the tenth, after these runs: the table above has its "
           "n = 100 and 128). \"Best\" "
           "is the faster of the two kernels, which the tuned table committed after these runs "
           "makes Auto's choice for strided batches; the Auto column is what the build that "
           "ran had in its table. Ratio = cuSOLVER potrfBatched time / best.\n\n",
           "| scalar | n | batch | WarpStaged ms | RowRegisters ms | Auto (that build) ms | best ms | "
           "copy ms | % of copy (best) | cuSOLVER ms | cuSOLVER ratio |\n",
           "|---|---|---|---|---|---|---|---|---|---|---|\n"]
    for T in ("double", "float"):
        for n in sorted({k[2] for k in t if k[1] == T}):
            w, r, a, c, cu = (t.get((k, T, n)) for k in (
                "kolesky_batched/strided/WarpStaged", "kolesky_batched/strided/RowRegisters",
                "kolesky_batched/strided", "copy_roofline", "cusolver_potrfBatched"))
            if not (r and a and c and cu):
                continue
            # WarpStaged beyond its orders runs as RowRegisters: only its own orders count.
            staged = w["real_time"] if (w and n <= 128) else None
            best = min(x for x in (staged, r["real_time"]) if x is not None)
            ws = f"{staged:.3g}" if staged is not None else "-"
            out.append(f"| {T} | {n} | {int(a.get('batch', 0))} | {ws} | "
                       f"{r['real_time']:.3g} | {a['real_time']:.3g} | {best:.3g} | "
                       f"{c['real_time']:.3g} | {100 * c['real_time'] / best:.0f} | "
                       f"{cu['real_time']:.3g} | **{cu['real_time'] / best:.2f}** |\n")
    out.append("\n")
    return "".join(out)


def _jsonl(path):
    return [json.loads(l) for l in open(path) if l.strip()] if os.path.exists(path) else []


def _median_runs(rows):
    """The same configuration run several times (rounds interleaved with the others, against a
    noisy machine): one row each, the median of every time, and potrf_s's range."""
    keys = ("scaling", "layout", "kernel", "n", "total", "ranks", "threads_per_rank")
    groups = {}
    for r in rows:
        groups.setdefault(tuple(r.get(k) for k in keys), []).append(r)
    out = []
    for g in groups.values():
        m = dict(g[0])
        for f in ("potrf_s", "scatter_s", "gather_s"):
            v = sorted(r[f] for r in g)
            m[f] = v[len(v) // 2]
        m["potrf_range"] = (min(r["potrf_s"] for r in g), max(r["potrf_s"] for r in g))
        m["runs"] = len(g)
        m["gflops"] = g[0]["gflops"] * g[0]["potrf_s"] / m["potrf_s"]
        m["check"] = "ok" if all(r["check"] == "ok" for r in g) else "FAILED"
        out.append(m)
    return out


def mpi_section(data_dir):
    """Issue 19's scaling runs (kolesky_bench_mpi, plain timing): the distributed batch and
    ScaLAPACK, from DATA_DIR/{meta.json, batch.jsonl, scalapack.jsonl}."""
    meta_path = os.path.join(data_dir, "meta.json")
    if not os.path.exists(meta_path):
        return ""
    meta = json.load(open(meta_path))
    batch = _median_runs(_jsonl(os.path.join(data_dir, "batch.jsonl")))
    scal = _jsonl(os.path.join(data_dir, "scalapack.jsonl"))
    rel = os.path.relpath(data_dir, os.path.join(os.path.dirname(data_dir), "..", ".."))
    out = ["## Beyond one GPU: MPI ranks (issue 19)\n\n"]
    for line in meta.get("about", []):
        out.append(f"- {line}\n")
    out.append(f"- Data: `{rel}/` (one JSON object per run); commands below.\n\n")
    # (a) the distributed batch: strong scaling per layout, then weak scaling.
    strong = [r for r in batch if r.get("scaling") == "strong"]
    if strong:
        out.append(f"### Distributed batch: `kolesky::mpi::batched::potrf`, n = {strong[0]['n']} "
                   f"double, {strong[0]['total']} matrices (strong scaling)\n\n")
        out.append("Time of the factorization alone (every rank's matrices restored before each "
                   "run; `MPI_Barrier`, `MPI_Wtime`): the median of three invocations (rounds interleaved with "
                   "the other rows), each the median of 5 runs; the range is the three invocations'. "
                   "Efficiency = t(1 rank, 1 thread) / "
                   "(cores used x t). Scatter from rank 0 and gather back are timed apart.\n\n")
        out.append("| layout (kernel) | ranks x threads | potrf s | (range) | GFLOP/s | speedup | "
                   "efficiency | scatter s | gather s |\n|---|---|---|---|---|---|---|---|---|\n")
        for layout in dict.fromkeys(r["layout"] for r in strong):
            rows = [r for r in strong if r["layout"] == layout]
            base = next((r for r in rows if r["ranks"] == 1 and r["threads_per_rank"] == 1), None)
            if not base:
                continue
            kern = meta.get("kernels", {}).get(layout, "")
            for r in rows:
                cores = r["ranks"] * r["threads_per_rank"]
                used = min(cores, meta.get("cores", cores))
                sp = base["potrf_s"] / r["potrf_s"]
                note = " (oversubscribed)" if cores > meta.get("cores", cores) else ""
                out.append(f"| {layout}{' (' + kern + ')' if kern else ''} | {r['ranks']} x "
                           f"{r['threads_per_rank']}{note} | {r['potrf_s']:.3f} | "
                           f"{r['potrf_range'][0]:.3f}-{r['potrf_range'][1]:.3f} | {r['gflops']:.2f} | "
                           f"{sp:.2f} | **{100 * sp / cores:.0f} %**"
                           f"{f' ({100 * sp / used:.0f} % of the {used} cores)' if used < cores else ''}"
                           f" | {r['scatter_s']:.3f} | {r['gather_s']:.3f} |\n")
        out.append("\n")
    weak = [r for r in batch if r.get("scaling") == "weak" and r["threads_per_rank"] == 1]
    if weak:
        per = weak[0]["per_rank_max"]
        base = next(r for r in weak if r["ranks"] == 1)
        out.append(f"### Distributed batch: weak scaling, {per} matrices per rank "
                   f"(n = {base['n']} double, {base['layout']})\n\n")
        out.append("| ranks | matrices | potrf s | (range) | GFLOP/s | efficiency t(1) / t(R) | "
                   "scatter s | gather s |\n|---|---|---|---|---|---|---|---|\n")
        for r in weak:
            note = " (oversubscribed)" if r["ranks"] > meta.get("cores", r["ranks"]) else ""
            out.append(f"| {r['ranks']}{note} | {r['total']} | {r['potrf_s']:.3f} | "
                       f"{r['potrf_range'][0]:.3f}-{r['potrf_range'][1]:.3f} | {r['gflops']:.2f} "
                       f"| **{100 * base['potrf_s'] / r['potrf_s']:.0f} %** | {r['scatter_s']:.3f} | "
                       f"{r['gather_s']:.3f} |\n")
        out.append("\n")
    # (b) ScaLAPACK against one rank of Kolesky.
    if scal:
        out.append("### One matrix through ScaLAPACK: `kolesky::mpi::potrf` (pdpotrf, Lower, "
                   f"nb = {next(r['nb'] for r in scal if r['mode'] == 'scalapack')})\n\n")
        out.append("GFLOP/s from n^3/3; conversion = scatter from rank 0 to the block-cyclic pieces "
                   "plus gather back, as a share of the factorization (median of 3 each). "
                   "`kolesky::potrf` is the one-rank library on OpenMP (OpenBLAS level 3).\n\n")
        out.append("| n | routine | ranks x threads | grid | potrf s | GFLOP/s | scatter s | gather s "
                   "| conversion |\n|---|---|---|---|---|---|---|---|---|\n")
        for n in sorted(dict.fromkeys(r["n"] for r in scal)):
            for r in (r for r in scal if r["n"] == n):
                if r["mode"] == "scalapack":
                    note = " (oversubscribed)" if r["ranks"] > meta.get("cores", r["ranks"]) else ""
                    out.append(f"| {n} | ScaLAPACK | {r['ranks']} x {r['threads_per_rank']}{note} | "
                               f"{r['grid']} | {r['potrf_s']:.2f} | {r['gflops']:.1f} | "
                               f"{r['scatter_s']:.3f} | {r['gather_s']:.3f} | "
                               f"**{r['conversion_pct']:.1f} %** |\n")
                else:
                    out.append(f"| {n} | kolesky::potrf | 1 x {r['threads']} | - | {r['potrf_s']:.2f} "
                               f"| {r['gflops']:.1f} | - | - | - |\n")
        out.append("\n")
    if meta.get("commands"):
        out.append("Commands (from `build/`, after `bash scripts/test.sh`):\n\n```sh\n")
        out.extend(c + "\n" for c in meta["commands"])
        out.append("```\n\n")
    for line in meta.get("notes", []):
        out.append(line + "\n\n")
    return "".join(out)


# ---------------------------------------------------------------------------------------------


HEADER = """# Performance

Generated by `scripts/report.py` from the sweep data in `docs/data/report/` — do not edit by
hand. The engineering log (rooflines, experiments, what was tried and why) is
[performance_log.md](performance_log.md).

What every number here is: the mean of Google Benchmark's manually timed iterations (the device
fenced before and after, matrices restored outside the timed region), Kolesky and every baseline
**measured in the same process on the same matrices**, and **every result checked** after
timing (a solve against a known solution, a factor residual, or a sample of a batch); a wrong
result fails the sweep instead of producing a number. Ratios are baseline time / Kolesky time:
**> 1 means Kolesky is faster**.

## How to reproduce on your machine

```sh
bash scripts/test.sh -R perf_smoke                 # provision and build (or any build with perf tests)
python3 scripts/sweep.py --report mymachine        # sweep, check, write docs/data/report/mymachine,
                                                   # regenerate this page and docs/img/
```

On a GPU build (`scripts/gpu_round.sh build`, then on the GPU machine
`python3 scripts/sweep.py --gpu --bin .gpu --mm .gpu/mm --report h100`) the same command runs
the GPU grids (dense up to n = 32768, batches up to 2²⁰ matrices). `--quick` runs the
seconds-long grids CI uses (`ctest -R sweep`). `python3 scripts/report.py` alone rebuilds the page
from the data already there.

"""


def main():
    # Debian's python3-matplotlib serves the system interpreter; another python3 first on PATH
    # (a pyenv, a venv) would lose the plots, so hand over to the system one.
    syspy = "/usr/bin/python3"
    if os.path.realpath(sys.executable) != os.path.realpath(syspy) and os.path.exists(syspy):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            os.execv(syspy, [syspy] + sys.argv)
    repo = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=os.path.join(repo, "docs", "data", "report"))
    p.add_argument("--docs", default=os.path.join(repo, "docs"))
    p.add_argument("--mpi-section", action="store_true",
                   help="print only the MPI section (issue 19's data) and exit")
    a = p.parse_args()
    if a.mpi_section:
        sys.stdout.write(mpi_section(os.path.join(repo, "docs", "data", "issue19")))
        return 0
    dirs = sorted(d for d in glob.glob(os.path.join(a.data, "*")) if os.path.isdir(d))
    if not dirs:
        print(f"report: no sweep data under {a.data}", file=sys.stderr)
        return 1
    P = Plotter(os.path.join(a.docs, "img"))
    body = [HEADER]
    # GPU first: it is what most readers come for; then a sweep's "order" (the newest device
    # first), then the name.
    backends = sorted((load_backend(d) for d in dirs),
                      key=lambda be: (0 if be["meta"].get("gpu") else 1,
                                      be["meta"].get("order", 1), be["dir"]))
    for be in backends:
        dev, ctx = device_of(be)
        meta = be["meta"]
        body.append(f"## {dev}\n\n")
        body.append(f"- Date: {ctx.get('date', '?')[:10]}; Kolesky {ctx.get('kolesky_version', '?')} "
                    f"(git {meta.get('git', ctx.get('kolesky_git', '?'))}); Kokkos "
                    f"{ctx.get('kokkos_version', '?')} ({ctx.get('kokkos_backends', '?').strip()}), "
                    f"execution space {ctx.get('execution_space', '?')}; vendor libraries: "
                    f"{ctx.get('kolesky_tpls', '?').strip()}.\n")
        if meta.get("command"):
            body.append(f"- Command: `{meta['command']}` (data: `docs/data/report/{be['name']}/`).\n")
        if meta.get("note"):
            body.append(f"- {meta['note']}\n")
        body.append("\n")
        for sec in (dense_section, batched_section, lu_section, threads_section, lp_section):
            body.append(sec(be, P))
            if sec is batched_section:
                body.append(batched_kernels_section(be, [os.path.join(
                    repo, "docs", "data", "issue16", f) for f in (
                        "warpstaged_round3_perf_batched.json", "block_round2_perf_batched.json",
                        "session8_perf_batched.json")]))
    body.append(mpi_section(os.path.join(repo, "docs", "data", "issue19")))
    out = os.path.join(a.docs, "performance.md")
    os.makedirs(a.docs, exist_ok=True)
    open(out, "w").write("".join(body))
    print(f"report: wrote {os.path.relpath(out)}" + (f" and plots in {os.path.relpath(P.imgdir)}" if P.ok else " (no plots)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
