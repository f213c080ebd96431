#!/usr/bin/env python3
"""CPU comparison: NumPy's broadcast expression against hpcml's fused and naive similarity.

Runs the seed's expression ``(np.abs(x[:, :, None] - x[:, None, :]) < 1).sum(0)`` and hpcml on
the same x = randn(samples, dim) float32, checks that the results are equal, and prints time and
peak memory side by side (NumPy's peak from tracemalloc, which sees its array allocations;
hpcml's from its tracked allocator, plus the output array it returns), with the ratios against
NumPy and hpcml fused's fraction of the similarity kernel's instruction floor (peers.py).
"""

import argparse
import time
import tracemalloc

import peers  # first: NumPy at its full speed

import numpy as np

import hpcml


def timed(fn, repeats):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return result, best


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=256)
    parser.add_argument("--dim", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3, help="hpcml repetitions (best is reported)")
    args = parser.parse_args()

    x = np.random.default_rng(0).standard_normal((args.samples, args.dim)).astype(np.float32)
    io_bytes = x.nbytes + args.dim * args.dim * 4

    tracemalloc.start()
    expected, numpy_seconds = timed(lambda: (np.abs(x[:, :, None] - x[:, None, :]) < 1).sum(0), 1)
    numpy_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()

    rows = [("numpy broadcast", numpy_seconds, numpy_peak)]
    for method in ("fused", "naive"):
        (got, stats), seconds = timed(
            lambda: hpcml.similarity(x, backend="cpu", method=method, return_stats=True),
            args.repeats if method == "fused" else 1)
        assert np.array_equal(got, expected), f"hpcml {method} differs from NumPy"
        rows.append((f"hpcml {method} (cpu)", seconds, stats["peak_host_bytes"] + got.nbytes))

    print(peers.header())
    print(f"x = randn({args.samples}, {args.dim}) float32; inputs + output = {io_bytes / 1e6:.1f} MB; results equal")
    print(f"{'':22s} {'seconds':>10s} {'peak MB':>10s} {'vs numpy':>9s} {'peak / (in+out)':>16s}")
    for name, seconds, peak in rows:
        print(f"{name:22s} {seconds:10.4f} {peak / 1e6:10.1f} {numpy_seconds / seconds:8.1f}x "
              f"{(peak + x.nbytes) / io_bytes:16.3f}")
    floor = peers.similarity_floor(args.samples * args.dim * (args.dim + 1) / 2)  # y = x: the upper triangle
    print(f"hpcml fused at {floor / rows[1][1]:.2f} of the similarity kernel's instruction floor ({floor:.4f} s)")


if __name__ == "__main__":
    main()
