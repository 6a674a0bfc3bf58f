#!/usr/bin/env python3
"""torch.linalg.cholesky_ex on batches (what a PyTorch user gets), beside Kolesky's batched
benchmark: CUDA-event median of 10 calls after 3 warm-ups, the batch restored untimed.

Uniform batches (b, n, n); and batches of mixed orders drawn as kolesky_perf_batched's
"mixed" benchmark draws them (the same generator: orders 1..nmax), which PyTorch cannot take
in one call: a user groups the matrices by order and calls cholesky_ex once per order (the
grouping itself untimed, matrices pre-stacked per order). --mixed-solve also times
torch.cholesky_solve on those groups (one right-hand side, factors made untimed), beside
kolesky_batched/mixed_potrs; --solve times it on the uniform batches, beside
kolesky_batched/potrs.

    python3 scripts/torch_batched.py [--n 32,64,128] [--batch 131072] [--mixed 64,128]
                                     [--mixed-batch 65536] [--mixed-solve] [--solve]
                                     [--json out.json]
"""
import argparse
import json
import sys

try:
    import torch
except ImportError:
    print("torch not available", file=sys.stderr)
    sys.exit(0)


def spd(b, n, dtype):
    a = torch.rand(b, n, n, dtype=dtype, device="cuda") * 2 - 1
    a = torch.tril(a) + torch.tril(a, -1).transpose(1, 2)
    a.diagonal(dim1=1, dim2=2).fill_(n + 1)
    return a


def timed(fn, restore):
    ts = []
    for rep in range(13):
        restore()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        if rep >= 3:
            ts.append(s.elapsed_time(e))
    ts.sort()
    return ts[len(ts) // 2]


def mixed_orders(nmax, batch):
    x, out = 12345, []
    for _ in range(batch):
        x = (x * 1664525 + 1013904223) & 0xFFFFFFFF
        out.append(1 + (x >> 8) % nmax)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", default="32,64,128")
    p.add_argument("--batch", type=int, default=0, help="0: as kolesky_perf_batched (<= 2 GiB)")
    p.add_argument("--mixed", default="64,128")
    p.add_argument("--mixed-batch", type=int, default=65536)
    p.add_argument("--mixed-solve", action="store_true")
    p.add_argument("--solve", action="store_true")
    p.add_argument("--json")
    args = p.parse_args()
    rows = []
    for dtype in (torch.float64, torch.float32):
        name = "double" if dtype == torch.float64 else "float"
        for n in [int(x) for x in args.n.split(",") if x]:
            b = args.batch
            if not b:  # kolesky_perf_batched's default: 131072, halved until under 2 GiB
                b = 131072
                while b > 1024 and b * n * n * (8 if dtype == torch.float64 else 4) > 2 << 30:
                    b //= 2
            a0 = spd(b, n, dtype)
            a = a0.clone()
            ms = timed(lambda: torch.linalg.cholesky_ex(a), lambda: a.copy_(a0))
            gbs = 2.0 * b * n * n * a.element_size() / ms * 1e-6
            rows.append({"scalar": name, "n": n, "batch": b, "ms": ms, "GB/s": gbs})
            print(f"torch cholesky_ex {name:6s} n={n:4d} batch={b:7d} {ms:9.3f} ms {gbs:7.0f} GB/s",
                  flush=True)
            if args.solve:  # kolesky_batched/potrs's GB/s: the triangle read, B read and written
                f = torch.linalg.cholesky_ex(a0)[0]
                rhs = torch.ones(b, n, 1, dtype=dtype, device="cuda")
                ms = timed(lambda: torch.cholesky_solve(rhs, f), lambda: None)
                gbs = b * (0.5 * n * (n + 1) + 2 * n) * a.element_size() / ms * 1e-6
                rows.append({"scalar": name, "solve_n": n, "batch": b, "ms": ms, "GB/s": gbs})
                print(f"torch cholesky_solve {name:6s} n={n:4d} batch={b:7d} {ms:9.3f} ms "
                      f"{gbs:7.0f} GB/s", flush=True)
                del f, rhs
            del a0, a
        for nmax in [int(x) for x in args.mixed.split(",") if x]:
            orders = mixed_orders(nmax, args.mixed_batch)
            groups = {}
            for o in orders:
                groups[o] = groups.get(o, 0) + 1
            stacks0 = {o: spd(c, o, dtype) for o, c in groups.items()}
            stacks = {o: s.clone() for o, s in stacks0.items()}

            def run():
                for o in stacks:
                    torch.linalg.cholesky_ex(stacks[o])

            def restore():
                for o in stacks:
                    stacks[o].copy_(stacks0[o])

            ms = timed(run, restore)
            rows.append({"scalar": name, "mixed_nmax": nmax, "batch": args.mixed_batch, "ms": ms,
                         "calls": len(groups)})
            print(f"torch cholesky_ex {name:6s} mixed 1..{nmax} batch={args.mixed_batch} "
                  f"({len(groups)} calls, one per order) {ms:9.3f} ms", flush=True)
            if args.mixed_solve:
                factors = {o: torch.linalg.cholesky_ex(s)[0] for o, s in stacks0.items()}
                rhs = {o: torch.ones(f.shape[0], o, 1, dtype=dtype, device="cuda") for o, f in factors.items()}

                def solve():
                    for o in factors:
                        torch.cholesky_solve(rhs[o], factors[o])

                ms = timed(solve, lambda: None)
                rows.append({"scalar": name, "mixed_solve_nmax": nmax, "batch": args.mixed_batch,
                             "ms": ms, "calls": len(groups)})
                print(f"torch cholesky_solve {name:6s} mixed 1..{nmax} batch={args.mixed_batch} "
                      f"({len(groups)} calls, one per order) {ms:9.3f} ms", flush=True)
                del factors, rhs
            del stacks0, stacks
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
