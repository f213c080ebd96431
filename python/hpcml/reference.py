"""Plain NumPy references that hpcml's tests and benchmarks compare against.

They share no code with the C++ library: they are the independent side of each comparison.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def seed_regret_matching(PAYOFF, N_ITER=500, stochastic_advantage=False, *, dtype=np.float32, multinomial=None,
                         history=False):
    """The seed program's getEquilibrium, transcribed op for op from PyTorch to NumPy.

    ../shared/seeds (section "Approximate Nash Equilibrium by Regret Matching"): torch tensors
    become NumPy arrays of `dtype` (float32, as torch.float; float64 to compare with hpcml's double
    state without float32 rounding), `.mm` becomes `@`, torch.multinomial becomes
    `multinomial(strategy, iteration, player)` (1-based iteration, player 0 or 1; default: a
    NumPy generator seeded with 0). Returns (avgStrategy1, avgStrategy2, eps); with
    history=True also the average profiles after every iteration, as two (N_ITER, n) arrays.
    """
    PAYOFF = np.asarray(PAYOFF, dtype=dtype)
    if multinomial is None:
        rng = np.random.default_rng(0)

        def multinomial(strategy, iteration, player):
            p = strategy.astype(np.float64)
            return rng.choice(len(p), p=p / p.sum())

    def getStrategy(cfr):
        weights = np.clip(cfr, 0, np.inf)
        with np.errstate(invalid="ignore", divide="ignore"):
            weights = weights / np.sum(weights)
        N_ACTIONS = weights.shape[0]
        weights = np.nan_to_num(weights, nan=1 / N_ACTIONS).astype(dtype)
        return weights

    cumCFR1 = np.zeros(PAYOFF.shape[0], dtype)
    cumCFR2 = np.zeros(PAYOFF.shape[1], dtype)
    cumStrategy1 = np.zeros(PAYOFF.shape[0], dtype)
    cumStrategy2 = np.zeros(PAYOFF.shape[1], dtype)
    # The seed writes torch.ones(N_ACTIONS) for both players (its game is square).
    strategy1 = np.ones(PAYOFF.shape[0], dtype) / dtype(PAYOFF.shape[0])
    strategy2 = np.ones(PAYOFF.shape[1], dtype) / dtype(PAYOFF.shape[1])
    averages1, averages2 = [], []
    for t in range(1, N_ITER + 1):
        # sample actions and observe regrets
        if stochastic_advantage:
            action1 = multinomial(strategy1, t, 0)
            action2 = multinomial(strategy2, t, 1)
            cfr1 = PAYOFF[:, action2] - PAYOFF[action1, action2]
            cfr2 = -(PAYOFF[action1, :] - PAYOFF[action1, action2])
        else:
            PAYOFF_avg = strategy1.reshape(1, -1) @ PAYOFF @ strategy2.reshape(-1, 1)
            cfr1 = (PAYOFF @ strategy2.reshape(-1, 1) - PAYOFF_avg).squeeze(-1)
            cfr2 = (strategy1.reshape(1, -1) @ PAYOFF - PAYOFF_avg).squeeze(0) * (-1)
        # update strategies proportionally to regrets
        strategy1 = getStrategy(cumCFR1)
        strategy2 = getStrategy(cumCFR2)
        # track cumulated regrets and strategies
        cumCFR1 += cfr1
        cumCFR2 += cfr2
        cumStrategy1 += strategy1
        cumStrategy2 += strategy2
        if history:
            averages1.append(cumStrategy1 / cumStrategy1.sum())
            averages2.append(cumStrategy2 / cumStrategy2.sum())

    # averaged strategies converge to Nash Equilibrium
    avgStrategy1 = cumStrategy1 / cumStrategy1.sum()
    avgStrategy2 = cumStrategy2 / cumStrategy2.sum()
    # estimate approximation error (upper bound)
    eps = 2 * max(cumCFR1.max(), cumCFR2.max()) / N_ITER
    if history:
        return avgStrategy1, avgStrategy2, eps, np.array(averages1), np.array(averages2)
    return avgStrategy1, avgStrategy2, eps


def nash_gap(A: npt.ArrayLike, x: npt.ArrayLike, y: npt.ArrayLike) -> float:
    """max_i (A y)_i - min_j (x^T A)_j in float64: the exact Nash gap of the profile (x, y)."""
    A = np.asarray(A, dtype=np.float64)
    return float((A @ np.asarray(y, np.float64)).max() - (np.asarray(x, np.float64) @ A).min())
