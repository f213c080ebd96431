#!/usr/bin/env python3
"""The seed's regret matching (getEquilibrium under torch.compile) beside hpcml: the seed's game
(Rock-Paper-Scissors with Crash) or a random one, solved by both, checked to agree, and timed;
then hpcml's modern variants on the same game, with the exact Nash gap of each result.

The seed keeps float32 state; hpcml's seed variant keeps double, so the strategies agree to
float32 rounding (1e-5) and eps to 1e-4 relative. Timings are medians of --rounds calls after a
first call (which compiles the seed: reported apart).
"""

import argparse
import os
import statistics
import sys
import time
from typing import Callable, Literal, TypedDict

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hpcml  # noqa: E402
from hpcml.reference import nash_gap  # noqa: E402
import seed  # noqa: E402


class Options(TypedDict, total=False):
    """The options of hpcml.solve_matrix_game that VARIANTS set."""
    variant: Literal["seed", "rm", "rm+", "dcfr", "prm+"]
    alternating: bool
    averaging: Literal["uniform", "linear", "quadratic"]


VARIANTS: list[tuple[str, Options]] = [("seed (as the seed's program)", dict(variant="seed")),
            ("rm+, alternating, linear", dict(variant="rm+", alternating=True, averaging="linear")),
            ("prm+, alternating, quadratic", dict(variant="prm+"))]


def median_seconds(call: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--iterations", type=int, default=500, help="the seed's N_ITER (500)")
    parser.add_argument("--actions", type=int, default=0, help="a random normal game of this size (0: the seed's game)")
    parser.add_argument("--compile-mode", default=None, help="default: the seed's max-autotune on CUDA, default on the CPU")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if args.iterations < 1 or args.rounds < 1:
        parser.error("--iterations and --rounds: must be >= 1")
    backend: Literal["cpu", "cuda"] = "cuda" if torch.device(args.device).type == "cuda" else "cpu"
    if backend == "cuda" and hpcml.cuda_status()["status"] != "ok":
        print(f"run.py: no CUDA device: {hpcml.cuda_status()['message']}", file=sys.stderr)
        sys.exit(2)  # what the GPU suite's rehearsal counts as a skip
    mode = args.compile_mode or ("max-autotune" if backend == "cuda" else "default")

    A = (np.array(seed.PAYOFF, dtype=np.float32) if args.actions == 0 else
         np.random.default_rng(0).standard_normal((args.actions, args.actions)).astype(np.float32))
    PAYOFF = torch.tensor(A, dtype=torch.float).to(args.device)
    getEquilibrium = seed.make_equilibrium(args.device, mode)
    start = time.perf_counter()
    x, y, eps = (t.cpu().numpy() for t in getEquilibrium(PAYOFF, args.iterations))
    compile_seconds = time.perf_counter() - start

    ours = hpcml.solve_matrix_game(A, iterations=args.iterations, backend=backend, variant="seed")
    np.testing.assert_allclose(ours.row_strategy, x, atol=1e-5, err_msg="row strategy")
    np.testing.assert_allclose(ours.col_strategy, y, atol=1e-5, err_msg="column strategy")
    np.testing.assert_allclose(ours.eps_bound, eps, rtol=1e-4, atol=1e-7, err_msg="eps")

    game = "Rock-Paper-Scissors with Crash" if args.actions == 0 else f"a random normal {args.actions} x {args.actions} game"
    print(f"{game}, {args.iterations} iterations on {args.device}; the seed's and hpcml's seed variant agree "
          f"(strategies to 1e-5, eps to 1e-4); the seed's first call (torch.compile, mode {mode!r}): "
          f"{compile_seconds:.1f} s")
    seed_seconds = median_seconds(lambda: getEquilibrium(PAYOFF, args.iterations), args.rounds)
    print(f"  {'':36s} {'seconds':>10s} {'vs seed':>8s} {'eps':>10s} {'exact gap':>10s}")
    print(f"  {'the seed (torch.compile)':36s} {seed_seconds:10.5f} {1.0:7.1f}x {float(eps):10.3g} "
          f"{nash_gap(A, x, y):10.3g}")
    for name, options in VARIANTS:
        solve: Callable[[], hpcml.GameSolution] = lambda: hpcml.solve_matrix_game(  # noqa: E731
            A, iterations=args.iterations, backend=backend, **options)
        s = solve()
        seconds = median_seconds(solve, args.rounds)
        print(f"  {'hpcml ' + name:36s} {seconds:10.5f} {seed_seconds / seconds:7.1f}x {s.eps_bound:10.3g} {s.gap:10.3g}")


if __name__ == "__main__":
    main()
