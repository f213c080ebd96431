#!/usr/bin/env python3
"""CPU comparison: the seed's regret matching transcribed to NumPy (float32, as the seed) against hpcml.

Workloads of issue 4, on the CPU: one random normal 4096 x 4096 game for 100 iterations, and
3 x 3 games for 1000 iterations (NumPy solves one game at a time, as the seed does; its time
for the batch is measured on --numpy-games games and scaled, and says so).
"""

import argparse
import time

import numpy as np

import hpcml
from hpcml.reference import seed_regret_matching


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--actions", type=int, default=4096)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--batch", type=int, default=100000)
    parser.add_argument("--batch-iterations", type=int, default=1000)
    parser.add_argument("--numpy-games", type=int, default=200, help="games NumPy solves to estimate the batch")
    args = parser.parse_args()
    rng = np.random.default_rng(0)

    A = rng.standard_normal((args.actions, args.actions)).astype(np.float32)
    (x_np, _, _), t_np = timed(lambda: seed_regret_matching(A, args.iterations))
    s, t_hp = timed(lambda: hpcml.solve_matrix_game(A, variant="seed", iterations=args.iterations, backend="cpu"))
    assert np.allclose(s.row_strategy, x_np, atol=1e-5), "hpcml's seed variant differs from the transcription"
    print(f"one {args.actions} x {args.actions} game, {args.iterations} iterations (seed variant):")
    print(f"  numpy transcription {t_np:8.3f} s   hpcml cpu {t_hp:8.3f} s   {t_np / t_hp:6.1f}x")

    games = rng.standard_normal((args.batch, 3, 3)).astype(np.float32)
    _, t_np_part = timed(lambda: [seed_regret_matching(g, args.batch_iterations)
                                  for g in games[:args.numpy_games]])
    t_np_batch = t_np_part * args.batch / args.numpy_games
    _, t_hp_batch = timed(lambda: hpcml.solve_matrix_games(games, variant="seed", iterations=args.batch_iterations,
                                                           backend="cpu"))
    print(f"{args.batch} 3 x 3 games, {args.batch_iterations} iterations (seed variant):")
    print(f"  numpy transcription {t_np_batch:8.1f} s (scaled from {args.numpy_games} games)   "
          f"hpcml cpu {t_hp_batch:8.3f} s   {t_np_batch / t_hp_batch:6.0f}x   "
          f"hpcml {args.batch * args.batch_iterations / t_hp_batch:.3g} game-iterations/s")


if __name__ == "__main__":
    main()
