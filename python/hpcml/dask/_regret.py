"""hpcml.dask.solve_matrix_games: a dask array of games solved block by block by hpcml."""

from __future__ import annotations

import functools
from typing import Any, Dict, Optional, Tuple

import numpy as np

from .. import _arrays
from .._regret import Averaging, GameSolution, Method, Variant
from .._regret import solve_matrix_games as _solve_matrix_games
from .._types import Backend
from ._common import Blocks, DaskArrayIn, HighLevelGraph, blocks, check_backend, da, float32_array, tokenize

def _solve_block(A: Any, *, options: Dict[str, Any]) -> GameSolution:
    return _solve_matrix_games(A, **options)


def _block_stats(solution: GameSolution) -> Any:
    stats = np.empty(1, object)
    stats[0] = solution.stats
    return stats


def solve_matrix_games(A: DaskArrayIn, *, iterations: int = 500, variant: Variant = "prm+", alternating: bool = True,
                       averaging: Averaging = "quadratic", sampled: bool = False, seed: int = 0,
                       record_every: int = 0, backend: Backend = "auto", method: Method = "fused",
                       chunks: Optional[Blocks] = None) -> GameSolution:
    """hpcml.solve_matrix_games over a dask array of games, one hpcml call per block of games.

    The games are cut along the batch axis only (each block holds whole games) and each block
    is solved by ``hpcml.solve_matrix_games`` on a worker, with the same options. The result is
    a GameSolution whose arrays are lazy: computing several of them together solves each block
    once.

    Args:
        A: (batch, n1, n2) payoffs: a NumPy array or a dask array (taken as float32).
        iterations: as hpcml.solve_matrix_games'.
        variant: as hpcml.solve_matrix_games'.
        alternating: as hpcml.solve_matrix_games'.
        averaging: as hpcml.solve_matrix_games'.
        sampled: as hpcml.solve_matrix_games'. Each block is solved at its first game's number
            (first_game), so sampled draws, like everything else, do not depend on the chunking.
        seed: as hpcml.solve_matrix_games'.
        record_every: as hpcml.solve_matrix_games': the gap curve every record_every iterations.
        backend: "auto" (each worker uses its GPU where it has a usable one, else its CPU),
            "cpu" or "cuda".
        method: as hpcml.solve_matrix_games'.
        chunks: games per block: an int, the blocks' lengths, or None (a dask array's own
            batch blocks; a NumPy array's cut by dask's "auto", about 128 MiB a block).

    Returns:
        A GameSolution whose row_strategy (batch, n1), col_strategy (batch, n2), value, gap,
        eps_bound (batch,) and curve (batch, k, 2) are float64 dask arrays, eps_bound_valid a
        bool (it depends on the options only), and stats {"blocks": a dask array of objects,
        each block's stats dict (backend, method, seconds, peak memory)}.

    Raises:
        ValueError: A not (batch, n1, n2) or not real; chunks < 1 or not covering the batch;
            the options hpcml.solve_matrix_games rejects (iterations, variant, averaging,
            record_every, method, backend), checked now. Non-finite payoffs are found when the
            blocks run.
    """
    games = float32_array(A, "A", 3, "(batch, n1, n2)", "real payoffs", chunks=("auto", -1, -1))
    batch, n1, n2 = (int(n) for n in games.shape)
    lengths = blocks(games.chunks[0] if chunks is None else chunks, batch, "A")
    games = games.rechunk((lengths, (n1,), (n2,)))
    check_backend(backend)
    options: Dict[str, Any] = dict(iterations=iterations, variant=variant, alternating=alternating,
                                   averaging=averaging, sampled=sampled, seed=seed, record_every=record_every,
                                   backend=backend, method=method)
    # A 1 x 1 game: hpcml checks the options, says whether eps_bound is a bound, and gives the
    # curve's length (run for every iteration only when a curve is asked for).
    probe_iterations = iterations if record_every else min(_arrays.integer(iterations, "iterations"), 1)
    probe = _solve_matrix_games(np.zeros((1, 1, 1), np.float32),
                                **{**options, "iterations": probe_iterations, "backend": "cpu"})
    solve = f"hpcml-solve-matrix-games-{tokenize(games.name, options)}"
    graph = HighLevelGraph.from_collections(
        solve, {(solve, k): (functools.partial(_solve_block, options={**options, "first_game": first}),
                             (games.name, k, 0, 0))
                for k, first in enumerate(np.cumsum((0,) + lengths[:-1]).tolist())}, dependencies=[games])

    def field(name: str, shape: Tuple[int, ...]) -> Any:
        """A lazy field of the blocks' solutions: (batch,) + shape, float64."""
        key = f"{solve}-{name}"
        layer = {(key, k) + (0,) * len(shape): (getattr, (solve, k), name) for k in range(len(lengths))}
        fields = HighLevelGraph({**graph.layers, key: layer}, {**graph.dependencies, key: {solve}})
        return da.Array(fields, key, chunks=(lengths,) + tuple((n,) for n in shape), dtype=np.float64,
                        meta=np.empty((0,) * (1 + len(shape)), np.float64))

    stats = f"{solve}-stats"
    layer = {(stats, k): (_block_stats, (solve, k)) for k in range(len(lengths))}
    stats_graph = HighLevelGraph({**graph.layers, stats: layer}, {**graph.dependencies, stats: {solve}})
    return GameSolution(field("row_strategy", (n1,)), field("col_strategy", (n2,)), field("value", ()),
                        field("gap", ()), field("eps_bound", ()), bool(probe.eps_bound_valid),
                        field("curve", tuple(int(n) for n in probe.curve.shape[1:])),
                        {"blocks": da.Array(stats_graph, stats, chunks=((1,) * len(lengths),), dtype=object,
                                            meta=np.empty(0, object))})
