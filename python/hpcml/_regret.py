"""hpcml.solve_matrix_game(s): Nash equilibria of two-player zero-sum matrix games by regret matching."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Optional

import numpy as np

from . import _arrays, _hpcml, _progress
from ._types import Array, ArrayIn, Backend, Progress

Variant = Literal["seed", "rm", "rm+", "dcfr", "prm+"]
Averaging = Literal["uniform", "linear", "quadratic"]
Method = Literal["auto", "fused", "naive"]


@dataclass
class GameSolution:
    """The average profile regret matching returned, and how good it is.

    row_strategy, col_strategy: the average strategies (x-bar, y-bar). value: x-bar^T A y-bar.
    gap: the exact Nash gap max(A y-bar) - min(x-bar^T A). eps_bound: the seed's
    2 max(max R1, max R2) / T, a bound on the gap only when eps_bound_valid. curve: (k, 2)
    array of (iteration, gap) every record_every iterations. stats: backend, method, seconds,
    peak memory. For a batch, every field gains a leading batch axis.
    """

    row_strategy: Array
    col_strategy: Array
    value: Any  # float for one game, an array for a batch
    gap: Any
    eps_bound: Any
    eps_bound_valid: bool
    curve: Array
    stats: dict[str, Any] = field(repr=False)


def _payoffs(A: ArrayIn, ndim: int) -> Any:
    layout = "(n1, n2)" if ndim == 2 else "(batch, n1, n2)"
    return _arrays.host_array(A, "A", ndim=ndim, layout=layout, values="real payoffs")


def solve_matrix_games(A: ArrayIn, *, iterations: int = 500, variant: Variant = "prm+", alternating: bool = True,
                       averaging: Averaging = "quadratic", sampled: bool = False, seed: int = 0, first_game: int = 0,
                       record_every: int = 0, backend: Backend = "auto", method: Method = "fused",
                       device: Optional[int] = None, progress: Progress = None,
                       progress_interval: float = 0.25) -> GameSolution:
    """Solves a batch of games A of shape (batch, n1, n2), each by regret matching.

    variant: "seed" (the seed program, op for op: simultaneous regret matching one iteration
    behind, uniform average of its new strategies), "rm", "rm+", "dcfr" (DCFR(1.5, 0, 2)) or
    "prm+" (predictive RM+, the default). alternating: player 2 responds to player 1's new
    strategy (ignored by the seed, always simultaneous). averaging: "uniform", "linear" or
    "quadratic" (ignored by the seed, always uniform). sampled: the seed's stochastic variant
    (each player's regret against its own action sampled with the opponent's), reproducible
    for a given seed; first_game (an integer >= 0): game g of A draws as game first_game + g of
    a larger batch, so a batch solved in pieces draws as one call. Payoffs are taken as float32.
    progress: True for a progress bar (tqdm's where installed) on calls that run longer than
    progress_interval seconds, or a callable (done, total) in game-iterations (on the GPU it is
    not called: the iterations run inside launches).

    A CUDA array (torch, CuPy; float32) is solved where it is: the results are arrays of its
    library on its device (and so is the large-game path's workspace), queued on its current
    stream without a copy or a wait (a CUDA graph can capture the call); its payoffs are not
    checked (non-finite ones give NaN), there is no curve (record_every must be 0) and no progress.

    Returns:
        A GameSolution whose fields gain a leading batch axis.

    Raises:
        ValueError: A not (batch, n1, n2) or with non-finite payoffs, iterations < 1, first_game < 0,
            record_every < 0, an unknown variant, averaging, backend or method; progress or
            record_every with CUDA arrays.
        RuntimeError: backend "cuda" without a usable device, or a CUDA failure (named).
    """
    # (C++ checks first_game + batch against the draws' 64-bit game number, and the names.)
    first_game = _arrays.integer(first_game, "first_game", 0, _arrays.SIZE_MAX)
    iterations = _arrays.integer(iterations, "iterations", 1, _arrays.INT_MAX)
    alternating, sampled = _arrays.boolean(alternating, "alternating"), _arrays.boolean(sampled, "sampled")
    seed = _arrays.integer(seed, "seed", 0, _arrays.SIZE_MAX)
    record_every = _arrays.integer(record_every, "record_every", 0, _arrays.INT_MAX)
    for value, argument in [(variant, "variant"), (averaging, "averaging"), (backend, "backend")]:
        _arrays.text(value, argument)
    _arrays.choice(method, "method", _arrays.METHODS_WITHOUT_SORTED)
    device = _arrays.device_option(device, backend)
    if _arrays.is_cuda(A):
        if progress:
            raise ValueError("progress: not reported for CUDA arrays (the games run inside one launch)")
        if record_every:
            raise ValueError("record_every: no gap curve for CUDA arrays (pass a host array for one)")
        return _solve_on_device(A, iterations, variant, alternating, averaging, sampled, seed, first_game, backend,
                                method, device)
    payoffs = _payoffs(A, 3)
    r = _hpcml._solve_matrix_games(payoffs, iterations=iterations, variant=variant, alternating=alternating,
                                   averaging=averaging, sampled=sampled, seed=seed, first_game=first_game,
                                   record_every=record_every, backend=backend, method=method,
                                   device=0 if device is None else device,
                                   progress=_progress.callback(progress, "hpcml.solve_matrix_games", "game-iterations"),
                                   progress_interval=_progress.interval(progress_interval))
    return GameSolution(r["row_strategy"], r["col_strategy"], r["value"], r["gap"], r["eps_bound"],
                        bool(r["eps_bound_valid"]), r["curve"], r["stats"])


def _solve_on_device(A: Any, iterations: int, variant: str, alternating: bool, averaging: str, sampled: bool, seed: int,
                     first_game: int, backend: str, method: str, device: Optional[int]) -> GameSolution:
    A = _arrays.cuda_array(A, "A", ndim=3, layout="(batch, n1, n2)")
    device = _arrays.resolve_device([A], device, True)
    batch, n1, n2 = (int(n) for n in A.shape)
    row, col, value, gap, eps_bound = (_arrays.empty(A, shape, "float64", "A")
                                       for shape in ((batch, n1), (batch, n2), (batch,), (batch,), (batch,)))
    workspace_bytes = _hpcml._solve_matrix_games_device_workspace(batch, n1, n2, backend, device)
    workspace = _arrays.empty(A, (workspace_bytes,), "uint8", "A") if workspace_bytes else None
    r = _hpcml._solve_matrix_games_device(A, row, col, value, gap, eps_bound, workspace, iterations=iterations,
                                          variant=variant, alternating=alternating, averaging=averaging,
                                          sampled=sampled, seed=seed, first_game=first_game, backend=backend,
                                          method=method, device=device, stream=_arrays.current_stream(A))
    return GameSolution(row, col, value, gap, eps_bound, bool(r["eps_bound_valid"]), np.empty((batch, 0, 2)), r["stats"])


def solve_matrix_game(A: ArrayIn, *, iterations: int = 500, variant: Variant = "prm+", alternating: bool = True,
                      averaging: Averaging = "quadratic", sampled: bool = False, seed: int = 0, record_every: int = 0,
                      backend: Backend = "auto", method: Method = "fused", device: Optional[int] = None,
                      progress: Progress = None, progress_interval: float = 0.25) -> GameSolution:
    """Solves one zero-sum game with payoff matrix A (n1, n2) for the row player.

    The options are solve_matrix_games' (a host array: A is copied as float32); value, gap and
    eps_bound are floats, the strategies 1-D float64 arrays. Raises as solve_matrix_games does.
    """
    batch = solve_matrix_games(_payoffs(A, 2)[None], iterations=iterations, variant=variant, alternating=alternating,
                               averaging=averaging, sampled=sampled, seed=seed, record_every=record_every,
                               backend=backend, method=method, device=device, progress=progress,
                               progress_interval=progress_interval)
    return GameSolution(batch.row_strategy[0], batch.col_strategy[0], float(batch.value[0]), float(batch.gap[0]),
                        float(batch.eps_bound[0]), batch.eps_bound_valid, batch.curve[0], batch.stats)
