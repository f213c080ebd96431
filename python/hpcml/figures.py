"""Figures hpcml's README shows, drawn from hpcml's own results (matplotlib, PNG).

    python -m hpcml.figures regret docs/regret_convergence.png
"""

from __future__ import annotations

import argparse

import numpy as np

from ._regret import solve_matrix_game

RPS_CRASH = np.array([[0, -1, 2], [1, 0, -1], [-2, 1, 0]], dtype=np.float32)

# (label, options): the seed and each modern variant in its usual setting.
REGRET_LINES = [
    ("seed (simultaneous RM, uniform)", dict(variant="seed")),
    ("RM, alternating, uniform", dict(variant="rm", averaging="uniform")),
    ("RM+, alternating, linear", dict(variant="rm+", averaging="linear")),
    ("DCFR(1.5, 0, 2), alternating", dict(variant="dcfr", averaging="quadratic")),
    ("PRM+, simultaneous, quadratic", dict(variant="prm+", alternating=False)),
    ("PRM+, alternating, quadratic (default)", dict(variant="prm+")),
]


def regret_convergence(path, iterations=10000, random_size=1000, backend="auto"):
    """Exact Nash gap against iterations, log-log, one line per variant, for RPS-with-Crash
    (left) and a random normal random_size x random_size game (right)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    games = [("RPS with Crash", RPS_CRASH, iterations),
             (f"random normal {random_size} x {random_size}",
              np.random.default_rng(0).standard_normal((random_size, random_size)).astype(np.float32),
              min(iterations, 2000))]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    for ax, (title, A, T) in zip(axes, games):
        every = max(1, T // 100)
        for label, options in REGRET_LINES:
            s = solve_matrix_game(A, iterations=T, record_every=every, backend=backend, **options)
            ax.loglog(s.curve[:, 0], np.maximum(s.curve[:, 1], 1e-16), label=label)
        ax.set_title(title)
        ax.set_xlabel("iterations")
        ax.set_ylabel("exact Nash gap of the average profile")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].axhline(0.03, color="gray", linestyle=":", linewidth=1)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description="Draw hpcml's figures.")
    sub = parser.add_subparsers(dest="figure", required=True)
    regret = sub.add_parser("regret", help="regret-matching convergence (gap vs iterations)")
    regret.add_argument("output", help="PNG path")
    regret.add_argument("--iterations", type=int, default=10000)
    regret.add_argument("--size", type=int, default=1000, help="random game size")
    regret.add_argument("--backend", default="auto")
    args = parser.parse_args()
    if args.figure == "regret":
        regret_convergence(args.output, args.iterations, args.size, args.backend)
        print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
