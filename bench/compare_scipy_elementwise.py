#!/usr/bin/env python3
"""CPU comparison: the inverse Gaussian's cdf, sf, logcdf, logsf (1e7 elements) and ppf (1e6)
in SciPy and in hpcml, and sampling (1e7 draws) in NumPy (Generator.wald, which SciPy's
invgauss.rvs calls) and in hpcml, in one run, alternating rounds, medians.

x is drawn from the distribution itself (IG(1, 1); 0.99% of the elements lie at or beyond 5 mu,
where the upper tail's erfcx difference would cancel), the probabilities of ppf uniformly. Each result
is checked against SciPy's before it is timed (where SciPy is accurate: relative 1e-9 where its
value exceeds 1e-300, to hpcml's own accuracy tests for the rest); the samples' mean and variance
against the law's (1 and 1, within 1% and 5%). The floor of each function
is its instruction count per element, read from the build's machine code (the instance
of hpcml.cpu_kernel()'s level, which HPCML_CPU_KERNEL=avx2 caps) at 4
instructions per cycle (bench/invgauss_instruction_floor.py; ppf's at its average step count). SciPy runs at its full speed
(peers.py removes OpenBLAS's CPU-type overrides before NumPy loads).
"""

import argparse
import os

import peers  # first: NumPy at its full speed

import numpy as np
from scipy import stats

import hpcml
from hpcml import invgauss as ig
from invgauss_instruction_floor import DEFAULT_LIBMVEC, DEFAULT_OBJECT, LEVELS, floor_seconds

FUNCTIONS = ["cdf", "sf", "logcdf", "logsf", "ppf", "sample"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--elements", type=float, default=1e7, help="elements of cdf, sf, logcdf, logsf, sample")
    parser.add_argument("--ppf-elements", type=float, default=1e6, help="elements of ppf")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (median reported)")
    parser.add_argument("--functions", default=",".join(FUNCTIONS), help="comma-separated subset")
    parser.add_argument("--object", default=DEFAULT_OBJECT,
                        help="the build's invgauss/cpu.cpp.o, whose machine code gives the floors")
    args = parser.parse_args()
    names = args.functions.split(",")
    unknown = [n for n in names if n not in FUNCTIONS]
    if unknown or args.rounds < 1 or args.elements < 1 or args.ppf_elements < 1:
        parser.error(f"--functions must name some of {FUNCTIONS}; --rounds and the sizes must be >= 1")

    rng = np.random.default_rng(1)
    mu, lam = 1.0, 1.0
    x = rng.wald(mu, lam, int(args.elements))
    p = rng.random(int(args.ppf_elements))
    print(peers.header())
    print(f"IG(mu=1, lambda=1); {args.rounds} alternating rounds, medians")
    floors, level = {}, hpcml.cpu_kernel()
    if level not in LEVELS:
        print(f"no floors: the {level} instance is not read")
    elif os.path.exists(args.object) and os.path.exists(DEFAULT_LIBMVEC):
        floors = floor_seconds(args.object, DEFAULT_LIBMVEC, 1.0, level=level)  # per element
    else:
        print(f"no floors: {args.object} or {DEFAULT_LIBMVEC} missing")
    print("| function | elements | SciPy (s; sample: NumPy) | hpcml CPU (s) | hpcml / peer | ns per element per core |"
          " fraction of the instruction floor |")
    print("|---|---|---|---|---|---|---|")
    for name in names:
        arg = p if name == "ppf" else x
        if name == "sample":
            ours = lambda: ig.sample(x.size, mu, lam, seed=3, backend="cpu")  # noqa: E731
            theirs = lambda: rng.wald(mu, lam, x.size)  # noqa: E731
            for draws in (ours(), theirs()):
                assert abs(draws.mean() - 1) < 0.01 and abs(draws.var() - 1) < 0.05, (draws.mean(), draws.var())
        else:
            ours = lambda: getattr(ig, name)(arg, mu, lam, backend="cpu")  # noqa: E731
            # SciPy's invgauss(mu / lambda, scale=lambda) is IG(mu, lambda).
            theirs = lambda: getattr(stats.invgauss, name)(arg, mu / lam, scale=lam)  # noqa: E731
            got, expected = ours(), theirs()
            trusted = np.abs(expected) > 1e-300 if name in ("cdf", "sf", "ppf") else np.isfinite(expected)
            np.testing.assert_allclose(got[trusted], expected[trusted], rtol=1e-9)
        medians = peers.medians(peers.alternate({"scipy": theirs, "hpcml": ours}, args.rounds))
        t_scipy, t_hpcml = medians["scipy"], medians["hpcml"]
        per_element = t_hpcml * os.cpu_count() / arg.size * 1e9
        fraction = f"{floors[name] * arg.size / t_hpcml:.2f}" if name in floors else "n/a (not vectorised)"
        print(f"| {name} | {arg.size:.0e} | {t_scipy:.3f} | {t_hpcml:.4f} | **{t_scipy / t_hpcml:.1f}x** faster"
              f" | {per_element:.1f} | {fraction} |")


if __name__ == "__main__":
    main()
