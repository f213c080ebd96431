"""Plain NumPy references that hpcml's tests and benchmarks compare against.

They share no code with the C++ library: they are the independent side of each comparison.
"""

from __future__ import annotations

import numpy as np


def seed_regret_matching(A, iterations):
    """The seed program's regret matching, transcribed to NumPy (float64), on one game.

    Simultaneous updates from uniform strategies; each player's regret is its cumulative
    expert reward minus its cumulative expected reward; the strategy is the normalised positive
    regret (uniform when none is positive); the average is the mean of the strategies computed
    after each update. Returns (x-bar, y-bar, eps) with eps = 2 max(max R1, max R2) / T.
    """
    A = np.asarray(A, dtype=np.float64)

    def rm(regret):
        positive = np.maximum(regret, 0)
        total = positive.sum()
        return positive / total if total > 0 else np.full(len(regret), 1 / len(regret))

    p = [np.full(A.shape[0], 1 / A.shape[0]), np.full(A.shape[1], 1 / A.shape[1])]
    expected = [0.0, 0.0]
    experts = [np.zeros(A.shape[0]), np.zeros(A.shape[1])]
    regrets = [np.zeros(A.shape[0]), np.zeros(A.shape[1])]
    sums = [np.zeros(A.shape[0]), np.zeros(A.shape[1])]
    for _ in range(iterations):
        rewards = [A @ p[1], -(p[0] @ A)]
        for k in range(2):
            expected[k] += p[k] @ rewards[k]
            experts[k] += rewards[k]
            regrets[k] = experts[k] - expected[k]
        for k in range(2):
            p[k] = rm(regrets[k])
            sums[k] += p[k]
    eps = 2 * max(regrets[0].max(), regrets[1].max()) / iterations
    return sums[0] / iterations, sums[1] / iterations, eps
