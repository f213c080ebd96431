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
bandwidth (peers.stream_bandwidth), measured right before and right after hpcml in every round:
the fraction of the floor is taken round by round against the mean of the two, over the rounds
in which they agree within 10% (this machine kind's memory switches between two speeds within
seconds; a round that spans a switch has no one floor).
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
    # This VM's memory bandwidth drifts (37-62 GB/s in one hour): it is measured around every round.
    before, after = [], []
    times = peers.alternate({"stream before": lambda: before.append(peers.stream_bandwidth()), "hpcml": run_hpcml,
                             "stream after": lambda: after.append(peers.stream_bandwidth()), "numpy": run_numpy},
                            args.rounds)
    t_np, t_hp = statistics.median(times["numpy"]), statistics.median(times["hpcml"])
    bytes_over_a = 4.0 * n1 * n2 * args.iterations
    steady = [bytes_over_a / ((b + a) / 2) / t for b, a, t in zip(before, after, times["hpcml"])
              if max(b, a) <= 1.1 * min(b, a)]
    fraction = (f"{statistics.median(steady):.2f} of the floor, the median of {len(steady)} rounds' "
                f"{min(steady):.2f}-{max(steady):.2f}" if steady else "no round with a steady stream bandwidth")
    streams = before + after
    print(f"one {n1} x {n2} game, {args.iterations} iterations (seed variant), median of {args.rounds} alternating "
          f"rounds; strategies agree:")
    print(f"  numpy transcription {t_np:8.3f} s   hpcml cpu {t_hp:8.3f} s   hpcml {t_np / t_hp:5.2f}x numpy   "
          f"(hpcml {bytes_over_a / t_hp / 1e9:.1f} GB/s over A, one pass per iteration: {fraction}; "
          f"stream {min(streams) / 1e9:.1f}-{max(streams) / 1e9:.1f} GB/s; "
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
