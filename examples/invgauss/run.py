#!/usr/bin/env python3
"""The seed's inverse-Gaussian figure beside hpcml's: both computed, checked to agree, timed in
alternating rounds (medians), and hpcml's figure written to --output.

SciPy's densities are not exact either, so the check is a tolerance: the left panel's
densities to 1e-9 of the peak, the right panel's metric to 1e-6 relative (it averages
differences of densities that agree to about 1e-12).
"""

import argparse
import os
import statistics
import sys
import time
from typing import Callable

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from scipy.stats import invgauss  # type: ignore[import-untyped]  # noqa: E402  (SciPy: no type stubs installed)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hpcml  # noqa: E402
import seed  # noqa: E402
import with_hpcml  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", default="invgauss_figure.png", help="hpcml's figure (PNG)")
    parser.add_argument("--seed-output", default=None, help="also write the seed's figure here")
    parser.add_argument("--rounds", type=int, default=5, help="alternating timing rounds")
    parser.add_argument("--backend", default="auto", help="hpcml's backend: auto, cpu or cuda")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds: must be >= 1")
    if args.backend == "cuda" and hpcml.cuda_status()["status"] != "ok":
        print(f"run.py: no CUDA device: {hpcml.cuda_status()['message']}", file=sys.stderr)
        sys.exit(2)  # what the GPU suite's rehearsal counts as a skip

    seed_fig, seed_out = seed.figure()
    hpcml_fig, hpcml_out = with_hpcml.figure(args.backend)
    k_seed, metric_seed = map(np.array, zip(*seed_out))
    k_hpcml, metric_hpcml = map(np.array, zip(*hpcml_out))
    np.testing.assert_allclose(k_hpcml, k_seed, rtol=1e-12, err_msg="lambda / mu")
    np.testing.assert_allclose(metric_hpcml, metric_seed, rtol=1e-6, err_msg="the right panel's metric")
    xs, left, _ = with_hpcml.panels(args.backend)
    for mu, density in zip(with_hpcml.LEFT_MUS, left):
        Z = invgauss(mu=mu)
        mean, std = Z.mean(), Z.std()
        reference = invgauss(mu=mu, loc=-mean / std, scale=1 / std).pdf(xs)
        np.testing.assert_allclose(density, reference, rtol=0, atol=1e-9 * reference.max(), err_msg=f"pdf, mu={mu}")
    hpcml_fig.savefig(args.output, dpi=100)
    if args.seed_output:
        seed_fig.savefig(args.seed_output, dpi=100)
    plt.close("all")

    def timed(make: Callable[[], tuple[Figure, object]]) -> float:
        start = time.perf_counter()
        plt.close(make()[0])
        return time.perf_counter() - start

    def computed(panels: Callable[[], object]) -> float:
        start = time.perf_counter()
        panels()
        return time.perf_counter() - start

    rounds: dict[str, list[float]] = {"seed, with its plot": [], "hpcml, with the same plot": [],
                                      "hpcml, the numbers alone": []}
    for _ in range(args.rounds):
        rounds["seed, with its plot"].append(timed(seed.figure))
        rounds["hpcml, with the same plot"].append(timed(lambda: with_hpcml.figure(args.backend)))
        rounds["hpcml, the numbers alone"].append(computed(lambda: with_hpcml.panels(args.backend)))
    print(f"the seed's figure and hpcml's agree (metric to 1e-6, densities to 1e-9 of the peak); {args.output} written")
    seed_median = statistics.median(rounds["seed, with its plot"])
    for name, seconds in rounds.items():
        median = statistics.median(seconds)
        print(f"  {name:28s} {median * 1e3:9.2f} ms   ({seed_median / median:5.1f}x the seed)")


if __name__ == "__main__":
    main()
