"""Figures hpcml's README shows, drawn from hpcml's own results (matplotlib, PNG).

    python -m hpcml.figures regret docs/regret_convergence.png
    python -m hpcml.figures invgauss docs/invgauss_normal.png
"""

from __future__ import annotations

import argparse

import numpy as np

from . import invgauss
from ._regret import solve_matrix_game

RPS_CRASH = np.array([[0, -1, 2], [1, 0, -1], [-2, 1, 0]], dtype=np.float32)

# (label, options): the seed and each modern variant in its usual setting.
REGRET_LINES = [
    ("seed (simultaneous RM, one iteration behind, uniform)", dict(variant="seed")),
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


def invgauss_normal(path, backend="auto"):
    """The seed's figure: left, standardised IG(mu, 1) densities for mu in {0.2, 0.1, 0.05,
    0.01, 0.0001} against N(0, 1); right, the total variation distance between the standardised
    IG and N(0, 1) against lambda / mu on log-log axes (2 to 1e5, 100 values), with a reference
    line of slope -1/2."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    y = np.linspace(-4, 6, 1001)
    for mu in [0.2, 0.1, 0.05, 0.01, 0.0001]:
        left.plot(y, invgauss.standardized_pdf(y, mu, 1.0, backend=backend), label=f"mu = {mu:g} (lambda/mu = {1 / mu:g})")
    left.plot(y, np.exp(-y**2 / 2) / np.sqrt(2 * np.pi), "k--", label="N(0, 1)")
    left.set_xlabel("standardised value y")
    left.set_ylabel("density")
    left.set_title("standardised IG(mu, 1)")
    left.legend(fontsize=8)

    ratio = np.logspace(np.log10(2), 5, 100)
    tv = invgauss.distance_to_normal(1.0 / ratio, np.ones_like(ratio), metric="tv", grid=(-12, 12, 4001), backend=backend)
    right.loglog(ratio, tv, label="TV(standardised IG, N(0, 1))")
    right.loglog(ratio, tv[-1] * np.sqrt(ratio[-1] / ratio), "k:", label="slope -1/2")
    right.set_xlabel("lambda / mu")
    right.set_ylabel("total variation")
    right.set_title("distance to the normal")
    right.grid(True, which="both", alpha=0.3)
    right.legend(fontsize=8)
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
    normal = sub.add_parser("invgauss", help="the seed's inverse-Gaussian figure (densities, TV vs lambda/mu)")
    normal.add_argument("output", help="PNG path")
    normal.add_argument("--backend", default="auto")
    args = parser.parse_args()
    if args.figure == "regret":
        regret_convergence(args.output, args.iterations, args.size, args.backend)
    else:
        invgauss_normal(args.output, args.backend)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
