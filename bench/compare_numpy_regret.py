#!/usr/bin/env python3
"""CPU comparison: the seed's regret matching transcribed to NumPy (float32, as the seed) against hpcml.

Large games (--actions, --actions-2; default one random normal 4096 x 4096 game, 100 iterations):
NumPy's seed loop (three float32 GEMVs over A per iteration) and hpcml's seed variant (one pass
over A per iteration), checked to agree, then timed in --rounds alternating rounds; the medians
and their ratio are printed (bench_regret gives hpcml's fraction of the memory-bandwidth floor).
Batches of 3 x 3 games (--batch, --batch-iterations): NumPy solves one game at a time, as the
seed does; its time for the batch is measured on --numpy-games games and scaled, and says so.

NumPy runs at its full speed (peers.py removes OpenBLAS's CPU-type overrides before NumPy loads).
The floor of hpcml's large game is its one pass over A per iteration at the machine's stream
bandwidth (peers.stream_bandwidth), measured right after hpcml in every round: the fraction of
the floor is taken round by round, so that a drift of the bandwidth between rounds cancels.
"""

import peers  # first: NumPy at its full speed

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import hpcml  # noqa: E402
from hpcml.reference import seed_regret_matching  # noqa: E402


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--actions", type=int, default=4096)
    parser.add_argument("--actions-2", type=int, default=None, help="player 2's actions (default: --actions)")
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds of the large game")
    parser.add_argument("--batch", type=int, default=100000)
    parser.add_argument("--batch-iterations", type=int, default=1000)
    parser.add_argument("--numpy-games", type=int, default=200, help="games NumPy solves to estimate the batch")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    n1, n2 = args.actions, args.actions_2 or args.actions

    A = rng.standard_normal((n1, n2)).astype(np.float32)
    run_numpy = lambda: seed_regret_matching(A, args.iterations)  # noqa: E731
    run_hpcml = lambda: hpcml.solve_matrix_game(A, variant="seed", iterations=args.iterations, backend="cpu")  # noqa: E731
    (x_np, _, _), s = run_numpy(), run_hpcml()
    assert np.allclose(s.row_strategy, x_np, atol=1e-5), "hpcml's seed variant differs from the transcription"
    print(peers.header())
    # This VM's memory bandwidth drifts (37-62 GB/s in one hour): it is measured in every round.
    bandwidths = []
    times = peers.alternate({"numpy": run_numpy, "hpcml": run_hpcml,
                             "stream": lambda: bandwidths.append(peers.stream_bandwidth())}, args.rounds)
    t_np, t_hp = statistics.median(times["numpy"]), statistics.median(times["hpcml"])
    bandwidth = statistics.median(bandwidths)
    bytes_over_a = 4.0 * n1 * n2 * args.iterations
    fractions = [bytes_over_a / b / t for b, t in zip(bandwidths, times["hpcml"])]
    print(f"one {n1} x {n2} game, {args.iterations} iterations (seed variant), median of {args.rounds} alternating "
          f"rounds; strategies agree:")
    print(f"  numpy transcription {t_np:8.3f} s   hpcml cpu {t_hp:8.3f} s   hpcml {t_np / t_hp:5.2f}x numpy   "
          f"(hpcml {bytes_over_a / t_hp / 1e9:.1f} GB/s over A, one pass per iteration:"
          f" {statistics.median(fractions):.2f} of the floor, the median of the rounds' "
          f"{min(fractions):.2f}-{max(fractions):.2f}; stream {min(bandwidths) / 1e9:.1f}-"
          f"{max(bandwidths) / 1e9:.1f} GB/s, median {bandwidth / 1e9:.1f}; "
          f"rounds: numpy {min(times['numpy']):.3f}-{max(times['numpy']):.3f} s, "
          f"hpcml {min(times['hpcml']):.3f}-{max(times['hpcml']):.3f} s)")
    if args.batch == 0:
        return

    games = rng.standard_normal((args.batch, 3, 3)).astype(np.float32)
    _, t_np_part = timed(lambda: [seed_regret_matching(g, args.batch_iterations)
                                  for g in games[:args.numpy_games]])
    t_np_batch = t_np_part * args.batch / args.numpy_games
    _, t_hp_batch = timed(lambda: hpcml.solve_matrix_games(games, variant="seed", iterations=args.batch_iterations,
                                                           backend="cpu"))
    print(f"{args.batch} 3 x 3 games, {args.batch_iterations} iterations (seed variant):")
    print(f"  numpy transcription {t_np_batch:8.1f} s (scaled from {args.numpy_games} games)   "
          f"hpcml cpu {t_hp_batch:8.3f} s   {t_np_batch / t_hp_batch:6.0f}x   "
          f"hpcml {args.batch * args.batch_iterations / t_hp_batch:.3g} game-iterations/s (no floor: a 3 x 3"
          f" game's iteration is a chain of dependent steps, bound by latency, not by bytes or issue rate)")


if __name__ == "__main__":
    main()
