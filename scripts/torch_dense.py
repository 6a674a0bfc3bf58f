#!/usr/bin/env python3
"""torch.linalg.cholesky on one matrix (what a PyTorch user gets), beside Kolesky's
benchmarks: CUDA-event median of 20 calls after 3 warm-ups, the matrix restored untimed.
With --solve NRHS: torch.cholesky_solve with that many right-hand sides and the factor made
once (Kolesky's potrs benchmark). With --posv NRHS: torch.linalg.cholesky and
torch.cholesky_solve timed together (Kolesky's posv / posv_mixed benchmarks).

    python3 scripts/torch_dense.py [--n 250,1000,...] [--solve 1 | --posv 1] [--json out.json]
"""
import argparse
import json
import sys

try:
    import torch
except ImportError:
    print("torch not available", file=sys.stderr)
    sys.exit(0)


def spd(n, dtype):
    a = torch.rand(n, n, dtype=dtype, device="cuda") * 2 - 1
    a = torch.tril(a) + torch.tril(a, -1).T
    a.diagonal().fill_(n + 1)
    return a


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", default="250,500,1000,2048,4096,8192,16384")
    p.add_argument("--solve", type=int, default=0)
    p.add_argument("--posv", type=int, default=0)
    p.add_argument("--json")
    args = p.parse_args()
    rows = []
    for dtype in (torch.float64, torch.float32):
        for n in [int(x) for x in args.n.split(",")]:
            a0 = spd(n, dtype)
            a = a0.clone()
            if args.solve:
                lf = torch.linalg.cholesky(a0)
            if args.solve or args.posv:
                b = torch.rand(n, args.solve or args.posv, dtype=dtype, device="cuda")
            ts = []
            for rep in range(23):
                a.copy_(a0)
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                torch.cuda.synchronize()
                s.record()
                if args.posv:
                    l = torch.cholesky_solve(b, torch.linalg.cholesky(a))
                else:
                    l = torch.cholesky_solve(b, lf) if args.solve else torch.linalg.cholesky(a)
                e.record()
                torch.cuda.synchronize()
                if rep >= 3:
                    ts.append(s.elapsed_time(e))
            ts.sort()
            ms = ts[len(ts) // 2]
            name = "double" if dtype == torch.float64 else "float"
            rows.append({"scalar": name, "n": n, "nrhs": args.solve or args.posv, "ms": ms,
                         "what": "posv" if args.posv else "solve" if args.solve else "potrf"})
            what = (f"torch.cholesky + cholesky_solve nrhs={args.posv}" if args.posv else
                    f"torch.cholesky_solve nrhs={args.solve}" if args.solve else "torch.linalg.cholesky")
            print(f"{what} {name:6s} n={n:6d} {ms:9.3f} ms", flush=True)
            del a0, a, l
            torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
