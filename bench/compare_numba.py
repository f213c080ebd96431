#!/usr/bin/env python3
"""CPU comparison: hpcml's similarity, fused and sorted methods, against the simple peer a user
would write, a numba loop (``@njit(parallel=True)``, prange over output rows), on x =
randn(samples, dim) float32, count mode, threshold 1.

All are checked equal first, then timed in alternating rounds (numba, and each hpcml method with
y = x, which uses the symmetry, and with y a copy of x, which cannot; each allocating its result,
then each writing into a reused one, ``out=``), and the medians are printed with the ratios
against the numba run of the same kind, and for the fused method its fraction of the direct
method's instruction floor (peers.similarity_floor: the pairs on and above the diagonal where y
= x lets hpcml use the symmetry, all pairs otherwise; numba's loop computes all of them); for the
sorted method, which evaluates far fewer than every pair-sample, its ratio to the fused run of
the same kind. numba compiles on the first (checking) call, before any timing. numba is not a
dependency of hpcml: ``pip install -c constraints.txt numba`` (the version CI and the results use).
"""

import argparse
import os

import peers  # first: NumPy at its full speed

# Threads that spin after a parallel region (numba's and hpcml's OpenMP alike) would slow down
# whichever runs next in the alternation; passive waiting keeps the rounds independent.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
from numba import njit, prange  # noqa: E402

import hpcml  # noqa: E402


@njit(parallel=True, fastmath=False, cache=False)
def similarity_numba_into(x, y, threshold, out):
    samples, n = x.shape
    m = y.shape[1]
    for i in prange(n):  # a thread per output row; the inner loop is branch-free, so it vectorises
        row = np.zeros(m, np.int32)
        for s in range(samples):
            xi = x[s, i]
            ys = y[s]
            for j in range(m):
                row[j] += abs(xi - ys[j]) < threshold
        out[i] = row
    return out


def similarity_numba(x, y, threshold):
    return similarity_numba_into(x, y, threshold, np.empty((x.shape[1], y.shape[1]), np.int32))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=256)
    parser.add_argument("--dim", type=int, nargs="+", default=[2000, 8000])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(peers.header())
    for dim in args.dim:
        x = np.random.default_rng(0).standard_normal((args.samples, dim)).astype(np.float32)
        copy = x.copy()
        threshold = np.float32(1.0)
        # Each allocating its result per call, as the simplest code does; then each writing into
        # one reused result (first touch of a fresh result is paid once, not per call).
        numba_out, hpcml_out = np.empty((dim, dim), np.int32), np.empty((dim, dim), np.int32)
        runs = {"numba": lambda: similarity_numba(x, x, threshold),
                "numba, out reused": lambda: similarity_numba_into(x, x, threshold, numba_out)}
        for method in ("fused", "sorted"):
            runs |= {
                f"{method}, y = x (symmetry)": lambda m=method: hpcml.similarity(x, backend="cpu", method=m),
                f"{method}, y a copy of x": lambda m=method: hpcml.similarity(x, copy, backend="cpu", method=m),
                f"{method}, y = x, out reused":
                    lambda m=method: hpcml.similarity(x, backend="cpu", method=m, out=hpcml_out),
                f"{method}, y a copy, out reused":
                    lambda m=method: hpcml.similarity(x, copy, backend="cpu", method=m, out=hpcml_out),
            }
        reference = runs["numba"]()  # also compiles
        for name, run in runs.items():
            assert np.array_equal(run(), reference), name
        times = peers.alternate(runs, args.rounds)
        medians = peers.medians(times)
        print(f"samples {args.samples}, dim {dim}, {args.rounds} alternating rounds, medians:")
        for name, t in times.items():
            peer = "numba, out reused" if "out reused" in name else "numba"
            pairs = dim * (dim + 1) / 2 if "y = x" in name else dim * dim
            if name.startswith("sorted"):
                beside = f"{medians[name.replace('sorted', 'fused')] / medians[name]:.2f}x fused"
            else:
                beside = f"{peers.similarity_floor(args.samples * pairs) / medians[name]:.2f} of the floor"
            print(f"  {name:32s} {medians[name]:.4f} s  (rounds {min(t):.4f}-{max(t):.4f}),"
                  f" {medians[peer] / medians[name]:.2f}x {peer}, {beside}")


if __name__ == "__main__":
    main()
