#!/usr/bin/env python3
"""GPU comparison: the seed's PyTorch similarity (eager and torch.compile) against hpcml.

On the same x = randn(samples, dim) float32 CUDA tensor (y = x), computes
S = (x[:, :, None] - x[:, None, :]).abs().lt(1).sum(0) tile by tile as the seed did (eager, then
torch.compile of the same function), and hpcml's fused and naive similarity on the same device
tensor (no copies: DLPack). Checks all results are equal and prints time and peak device memory
side by side (torch.cuda.max_memory_allocated for PyTorch, hpcml's tracked peak for hpcml), each
one's speed-up over torch.compile, and hpcml fused's fraction of the issue-rate floor (3
instructions per pair-sample, peers.gpu_similarity_floor).
"""

import peers  # first: the peers at their full speed

import argparse  # noqa: E402
import time  # noqa: E402


import hpcml  # noqa: E402
from cuda_check import require_cuda  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=256)
    parser.add_argument("--dim", type=int, default=2000)
    parser.add_argument("--tile", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-eager", action="store_true", help="skip the eager run (slow for large dims)")
    args = parser.parse_args()
    require_cuda("compare_torch.py")
    import torch

    torch.manual_seed(0)
    x = torch.randn(args.samples, args.dim, device="cuda", dtype=torch.float32)
    n, t = args.dim, args.tile

    def seed_similarity(a, b):
        return (a[:, :, None] - b[:, None, :]).abs().lt(1).sum(0)

    compiled = torch.compile(seed_similarity, dynamic=False)

    def tiled(fn):
        out = torch.empty(n, n, dtype=torch.int64, device="cuda")
        for i in range(0, n, t):
            for j in range(0, n, t):
                out[i:i + t, j:j + t] = fn(x[:, i:i + t], x[:, j:j + t])
        return out

    def measure(fn):
        fn()  # warm-up (and compilation)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        best = float("inf")
        for _ in range(args.repeats):
            torch.cuda.synchronize()
            start = time.perf_counter()
            result = fn()
            torch.cuda.synchronize()
            best = min(best, time.perf_counter() - start)
        return result, best, torch.cuda.max_memory_allocated() - base

    rows, reference = [], None
    runs = [] if args.skip_eager else [("torch eager (seed)", lambda: tiled(seed_similarity))]
    runs.append(("torch.compile (seed)", lambda: tiled(compiled)))
    for name, fn in runs:
        result, seconds, peak = measure(fn)
        reference = result if reference is None else reference
        assert torch.equal(result, reference), f"{name} differs"
        rows.append((name, seconds, peak))
    for method in ("fused", "naive"):
        stats = {}

        def run(method=method):
            s, st = hpcml.similarity(x, tile=t, method=method, return_stats=True)
            stats.update(st)
            return s
        try:
            result, seconds, _ = measure(run)
        except MemoryError as e:
            print(f"hpcml {method}: skipped: {e}")
            continue
        assert torch.equal(result.long(), reference), f"hpcml {method} differs from PyTorch"
        rows.append((f"hpcml {method}", seconds, stats["peak_device_bytes"] + result.numel() * 4))

    elements = args.samples * n * n
    compiled_seconds = next(seconds for name, seconds, _ in rows if name == "torch.compile (seed)")
    floor = peers.gpu_similarity_floor(elements)
    print(peers.gpu_header())
    print(f"x = randn({args.samples}, {n}) on {torch.cuda.get_device_name()}, tile {t}; all results equal; "
          f"best of {args.repeats}; floor {floor * 1e3:.3f} ms (3 instructions per pair-sample)")
    print(f"{'':22s} {'seconds':>10s} {'Gelem/s':>10s} {'peak MB':>10s} {'vs compile':>11s} {'floor frac':>11s}")
    for name, seconds, peak in rows:
        fraction = f"{floor / seconds:11.2f}" if name == "hpcml fused" else f"{'':11s}"
        print(f"{name:22s} {seconds:10.4f} {elements / seconds / 1e9:10.1f} {peak / 1e6:10.1f} "
              f"{compiled_seconds / seconds:10.1f}x {fraction}")


if __name__ == "__main__":
    main()
