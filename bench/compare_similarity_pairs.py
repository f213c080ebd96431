#!/usr/bin/env python3
"""CPU comparison: hpcml's pair list against the dense result it replaces, on x = randn(samples,
dim) float32, y = x, mode all, threshold 1 (the seed's real case in miniature: almost only the
diagonal passes).

Three calls, checked to agree, then timed in alternating rounds, each with the fused and the
sorted method: ``similarity_pairs(x, mode="all")``; the dense bool ``similarity(x, mode="all",
out=S)`` into a reused S (its floor: the same counting with nothing but a byte per pair to
write); and what a user would write without pair lists, the dense call followed by
``np.nonzero``. Medians and the ratios against
the dense call are printed: the dense call is the floor here (mode all stops comparing a pair at
its first sample out of threshold, so the counting kernel's instruction floor does not bound it).
"""

import os

import peers  # first: NumPy at its full speed

# Threads that spin after a parallel region would slow down whichever call runs next.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402

import numpy as np  # noqa: E402

import hpcml  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=256)
    parser.add_argument("--dim", type=int, nargs="+", default=[8000, 20000])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    print(peers.header())
    for dim in args.dim:
        x = np.random.default_rng(0).standard_normal((args.samples, dim)).astype(np.float32)
        dense = np.empty((dim, dim), np.bool_)
        runs = {}
        for m in ("fused", "sorted"):
            runs |= {
                f"pairs, {m}": lambda m=m: hpcml.similarity_pairs(x, mode="all", backend="cpu", method=m),
                f"dense, {m}": lambda m=m: hpcml.similarity(x, mode="all", backend="cpu", method=m, out=dense),
                f"dense + np.nonzero, {m}":
                    lambda m=m: np.nonzero(hpcml.similarity(x, mode="all", backend="cpu", method=m, out=dense)),
            }
        results = {name: run() for name, run in runs.items()}  # warm-up, and the check
        expected = np.nonzero(results["dense, fused"])
        for name in runs:
            if not name.startswith("dense,"):
                assert all(np.array_equal(a, b) for a, b in zip(results[name], expected)), name
        medians = peers.medians(peers.alternate(runs, args.rounds))
        print(f"x = randn({args.samples}, {dim}), y = x, mode all: {len(results['pairs, fused'][0])} pairs, "
              f"median of {args.rounds} alternating rounds")
        for name, median in medians.items():
            print(f"  {name:<26} {median * 1e3:9.1f} ms   {median / medians['dense, fused']:5.2f}x the fused dense "
                  f"call's time")


if __name__ == "__main__":
    main()
