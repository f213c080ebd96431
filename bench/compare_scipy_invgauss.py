#!/usr/bin/env python3
"""CPU comparison: the seed's SciPy workload for its figure against hpcml, in one run.

The seed evaluates, for 100 values of mu with lambda = 1 (lambda / mu from 2 to 1e5, log-spaced),
the standardised inverse-Gaussian density and the normal density on a broadcast grid
y = linspace(-10, 10, 1000) (a 100 x 1000 matrix each), and estimates the total variation as
mean|f_Y - phi| * 20. hpcml computes the same quantity, fused (no 100 x 1000 matrix), on the same
grid; the results are compared and both times printed.
"""

import argparse
import time

import numpy as np
from scipy import stats

import hpcml
from hpcml import invgauss as ig


def seed_tv(mu, lam, y):
    sd = np.sqrt(mu**3 / lam)[:, None]
    x = mu[:, None] + y[None, :] * sd
    f_y = sd * stats.invgauss.pdf(x, (mu / lam)[:, None], scale=lam[:, None])
    phi = stats.norm.pdf(y)[None, :]
    return np.mean(np.abs(f_y - phi), axis=1) * 20  # the seed's estimate of the integral


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--params", type=int, default=100)
    parser.add_argument("--grid", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    lam = 1.0
    mu = lam / np.logspace(np.log10(2), 5, args.params)
    y = np.linspace(-10, 10, args.grid)

    def best(fn):
        times, result = [], None
        for _ in range(args.repeats):
            start = time.perf_counter()
            result = fn()
            times.append(time.perf_counter() - start)
        return result, min(times)

    expected, t_scipy = best(lambda: seed_tv(mu, np.full_like(mu, lam), y))
    # hpcml's TV is 1/2 integral |f_Y - phi| (trapezoid, step h = 20 / (G - 1)); the seed's
    # mean * 20 is the rectangle rule with step 20 / G, without the 1/2: 2 TV (G - 1) / G.
    got, t_hpcml = best(lambda: ig.distance_to_normal(mu, np.full_like(mu, lam), metric="tv",
                                                       grid=(-10, 10, args.grid), backend="cpu"))
    scale = 2 * (args.grid - 1) / args.grid
    np.testing.assert_allclose(got * scale, expected, rtol=2e-2)
    print(f"seed workload: {args.params} (mu, lambda) pairs x {args.grid} grid points, best of {args.repeats}")
    print(f"  scipy (seed)   {t_scipy * 1e3:9.2f} ms")
    print(f"  hpcml fused    {t_hpcml * 1e3:9.2f} ms   {t_scipy / t_hpcml:6.1f}x faster; TV agrees within 2%")


if __name__ == "__main__":
    main()
