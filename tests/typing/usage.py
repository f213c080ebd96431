"""A user's typed calls of hpcml, checked by mypy --strict against the installed package (its
py.typed, inline annotations and the extension's generated stub): scripts/pip-install-check.sh."""

from __future__ import annotations

from typing import Any

import numpy as np

import hpcml
import hpcml.dask
import hpcml.dask.invgauss
import hpcml.invgauss
import hpcml.telemetry


def similarity_checks() -> None:
    x = np.random.default_rng(0).standard_normal((16, 40)).astype(np.float32)
    counts = hpcml.similarity(x, threshold=0.5, mode="count", backend="cpu", method="auto")
    both: np.ndarray[Any, Any] = counts
    s, stats = hpcml.similarity(x, x, mode="all", dtype="bitmask", return_stats=True)
    method: str = stats["method"]
    pairs = hpcml.similarity_pairs(x, mode="count", min_count=3, tile=16)
    i, j = pairs[0], pairs[1]
    print(both.shape, s.shape, method, len(i), len(j))


def regret_checks() -> None:
    game: hpcml.GameSolution = hpcml.solve_matrix_game([[0.0, 1.0], [1.0, 0.0]], iterations=100, variant="rm+")
    batch = hpcml.solve_matrix_games(np.zeros((3, 2, 2)), averaging="linear", record_every=10)
    print(game.value, game.gap, batch.stats["seconds"])


def invgauss_checks() -> None:
    names: list[str] = hpcml.invgauss.functions()
    density = hpcml.invgauss.pdf(np.linspace(0.1, 2.0, 5), 1.0, 2.0)
    draws = hpcml.invgauss.sample(10, 1.0, 2.0, seed=3, dtype=np.float32)
    tv = hpcml.invgauss.distance_to_normal([1.0], [2.0], metric="tv", grid=(-5.0, 5.0, 101))
    print(names, density, draws, tv)


def dask_checks() -> None:
    # hpcml.dask needs the extra (pip install hpcml[dask]); its collections are typed Any.
    x = np.random.default_rng(0).standard_normal((16, 40)).astype(np.float32)
    bits: hpcml.dask.DaskArray = hpcml.dask.similarity(x, mode="all", dtype="bitmask", chunks=16, backend="cpu")
    pairs = hpcml.dask.similarity_pairs(x, threshold=0.5, mode="count", min_count=3, chunks=(16, 16, 8))
    written: int = hpcml.dask.to_zarr(bits, "S.zarr")
    density = hpcml.dask.invgauss.pdf(np.linspace(0.1, 2.0, 5), 1.0, 2.0)
    draws = hpcml.dask.invgauss.sample(10, 1.0, 2.0, seed=3, dtype=np.float32, chunks=4)
    games: hpcml.GameSolution = hpcml.dask.solve_matrix_games(np.zeros((3, 2, 2)), iterations=100, chunks=2)
    print(bits.compute().shape, len(pairs), written, density.compute(), draws, games.value.compute())


def telemetry_checks() -> None:
    with hpcml.telemetry.cpu_energy() as energy:
        hpcml.release_cached_memory()
    joules: float | None = energy.energy_j
    status: dict[str, Any] = hpcml.telemetry.status(0)
    backends: list[str] = hpcml.backends()
    print(joules, status, backends, hpcml.cpu_kernel(), hpcml.resolve_backend("auto"))
