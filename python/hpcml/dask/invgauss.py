"""hpcml.dask.invgauss: hpcml.invgauss over dask arrays, each block evaluated by hpcml.invgauss.

The elementwise functions broadcast x, mu and lam like NumPy (dask arrays, NumPy arrays or
scalars; scalars travel as constants) and give a dask array with hpcml.invgauss's values:
float32 where every input is float32, else float64, bit for bit however the arrays are cut
(hpcml computes every element in a full vector lane). The sampler's draws do not depend on the
chunking either: block k, covering draws [a, b), is hpcml.invgauss.sample's draws a to b - 1.
With backend "auto" on a cluster of CPU and GPU workers, a block's values depend on where it
runs (the GPU's exp, log and sqrt differ from the CPU's by a few ulps: 1e-13 relative); pass
a backend for the same bits on every run.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Dict, Literal, Optional, Tuple, TypeVar

import numpy as np
import numpy.typing as npt

from .. import _arrays
from .. import invgauss as _ig
from .._types import Backend
from ._common import Blocks, DaskArray, DaskArrayIn, HighLevelGraph, blocks, check_backend, da, is_dask, tokenize

__all__ = ["pdf", "logpdf", "cdf", "sf", "logcdf", "logsf", "ppf", "standardize", "standardized_pdf", "evaluate",
           "functions", "sample", "distance_to_normal", "DEFAULT_SAMPLE_CHUNK"]

DEFAULT_SAMPLE_CHUNK = 1 << 22
"""sample's default block: 4Mi draws (32 MiB of float64)."""

_F = TypeVar("_F", bound=Callable[..., Any])

_ELEMENTWISE = """

Args:
    {x}: where to evaluate: a dask array, a NumPy array or a scalar.
    mu: the mean, > 0: a dask array, a NumPy array or a scalar, broadcast against {x} like NumPy.
    lam: the shape lambda, > 0, as mu. Invalid parameters (<= 0, NaN, inf) give NaN, as SciPy.
    backend: "auto" (each worker uses its GPU where it has a usable one, else its CPU), "cpu"
        or "cuda".

Returns:
    A dask array of the broadcast shape, chunked like the inputs (their chunks unified):
    float32 where every input is float32, else float64.

Raises:
    ValueError: shapes that do not broadcast, an unknown backend.
"""


def _elementwise(argument: str = "x") -> Callable[[_F], _F]:
    return _ig._elementwise(argument, _ELEMENTWISE)


def functions() -> list[str]:
    """The names of the elementwise functions, from the library's table (evaluate() takes any).

    Returns:
        hpcml.invgauss.functions().
    """
    return _ig.functions()


def _evaluate_block(x: Any, mu: Any, lam: Any, *, function: str, backend: Backend) -> Any:
    return np.asarray(_ig.evaluate(function, x, mu, lam, backend=backend))  # hpcml gives 0-d results as scalars


def evaluate(function: str, x: DaskArrayIn, mu: DaskArrayIn, lam: DaskArrayIn, *,
             backend: Backend = "auto") -> DaskArray:
    """The elementwise function named `function` over dask arrays, as pdf() and the others.

    Args:
        function: one of functions(): "pdf", "logpdf", "cdf", "sf", "logcdf", "logsf", "ppf",
            "standardize", "standardized_pdf".
        x: where to evaluate: a dask array, a NumPy array or a scalar.
        mu: the mean, > 0, broadcast against x like NumPy.
        lam: the shape lambda, > 0, as mu.
        backend: "auto", "cpu" or "cuda".

    Returns:
        A dask array of the broadcast shape: float32 where every input is float32, else float64.

    Raises:
        ValueError: an unknown function or backend, shapes that do not broadcast.
    """
    names = functions()
    if function not in names:
        raise ValueError(f"function: expected one of {', '.join(names)}, got {function!r}")
    check_backend(backend)
    inputs: list[Any] = [a if is_dask(a) or np.ndim(a) == 0 else da.asarray(a) for a in (x, mu, lam)]
    try:
        shape = np.broadcast_shapes(*(np.shape(a) for a in inputs))
    except ValueError:
        raise ValueError(f"x, mu, lam: shapes {[np.shape(a) for a in inputs]} do not broadcast") from None
    # As hpcml.invgauss computes: in float32 where every input is float32, else in float64.
    dtypes = [a.dtype if is_dask(a) else np.asarray(a).dtype for a in inputs]
    dtype = np.dtype(np.float32 if all(d == np.float32 for d in dtypes) else np.float64)
    if not shape:  # all scalars: one block
        inputs = [da.asarray(a) for a in inputs]
    # Indices aligned on the trailing axes, as NumPy broadcasts (dask's elemwise does the same).
    indexed = [(a, tuple(range(a.ndim))[::-1]) if is_dask(a) else (a, None) for a in inputs]
    return da.blockwise(functools.partial(_evaluate_block, function=function, backend=backend),
                        tuple(range(len(shape)))[::-1], *(item for pair in indexed for item in pair),
                        dtype=dtype, meta=np.empty((0,) * len(shape), dtype),
                        name=f"hpcml-invgauss-{function}-{tokenize(function, backend, *inputs)}")


@_elementwise()
def pdf(x: DaskArrayIn, mu: DaskArrayIn, lam: DaskArrayIn, *, backend: Backend = "auto") -> DaskArray:
    """Density f(x), as hpcml.invgauss.pdf, block by block."""
    return evaluate("pdf", x, mu, lam, backend=backend)


@_elementwise()
def logpdf(x: DaskArrayIn, mu: DaskArrayIn, lam: DaskArrayIn, *, backend: Backend = "auto") -> DaskArray:
    """log f(x), as hpcml.invgauss.logpdf, block by block."""
    return evaluate("logpdf", x, mu, lam, backend=backend)


@_elementwise()
def cdf(x: DaskArrayIn, mu: DaskArrayIn, lam: DaskArrayIn, *, backend: Backend = "auto") -> DaskArray:
    """F(x), as hpcml.invgauss.cdf, block by block."""
    return evaluate("cdf", x, mu, lam, backend=backend)


@_elementwise()
def sf(x: DaskArrayIn, mu: DaskArrayIn, lam: DaskArrayIn, *, backend: Backend = "auto") -> DaskArray:
    """1 - F(x), as hpcml.invgauss.sf, block by block."""
    return evaluate("sf", x, mu, lam, backend=backend)


@_elementwise()
def logcdf(x: DaskArrayIn, mu: DaskArrayIn, lam: DaskArrayIn, *, backend: Backend = "auto") -> DaskArray:
    """log F(x), as hpcml.invgauss.logcdf, block by block."""
    return evaluate("logcdf", x, mu, lam, backend=backend)


@_elementwise()
def logsf(x: DaskArrayIn, mu: DaskArrayIn, lam: DaskArrayIn, *, backend: Backend = "auto") -> DaskArray:
    """log(1 - F(x)), as hpcml.invgauss.logsf, block by block."""
    return evaluate("logsf", x, mu, lam, backend=backend)


@_elementwise("p")
def ppf(p: DaskArrayIn, mu: DaskArrayIn, lam: DaskArrayIn, *, backend: Backend = "auto") -> DaskArray:
    """The quantile, as hpcml.invgauss.ppf, block by block; p outside [0, 1] gives NaN."""
    return evaluate("ppf", p, mu, lam, backend=backend)


@_elementwise()
def standardize(x: DaskArrayIn, mu: DaskArrayIn, lam: DaskArrayIn, *, backend: Backend = "auto") -> DaskArray:
    """(x - mu) / sqrt(mu^3 / lam), as hpcml.invgauss.standardize, block by block."""
    return evaluate("standardize", x, mu, lam, backend=backend)


@_elementwise("y")
def standardized_pdf(y: DaskArrayIn, mu: DaskArrayIn, lam: DaskArrayIn, *, backend: Backend = "auto") -> DaskArray:
    """The density of the standardised variable at y, as hpcml.invgauss.standardized_pdf."""
    return evaluate("standardized_pdf", y, mu, lam, backend=backend)


def _sample_block(mu: Any, lam: Any, *, n: int, first: int, seed: int, dtype: str, backend: Backend) -> Any:
    return _ig.sample(n, mu, lam, seed=seed, first=first, dtype=dtype, backend=backend)


def _parameter(a: Any, argument: str, n: int, lengths: Tuple[int, ...]) -> Any:
    """A sampler parameter: a scalar as itself, an array as a dask array cut like the output."""
    if not is_dask(a) and np.ndim(a) == 0:
        return a
    if np.shape(a) != (n,):
        raise ValueError(f"{argument}: expected a scalar or a length-{n} array, got shape {np.shape(a)}")
    return da.asarray(a).rechunk((lengths,))


def sample(n: int, mu: DaskArrayIn, lam: DaskArrayIn, *, seed: int = 0, dtype: npt.DTypeLike = np.float64,
           chunks: Blocks = DEFAULT_SAMPLE_CHUNK, backend: Backend = "auto") -> DaskArray:
    """n samples of IG(mu, lam) as a dask array, the same draws however they are cut.

    Block k, covering draws [a, b), is ``hpcml.invgauss.sample(b - a, mu[a:b], lam[a:b],
    seed=seed, first=a)``: draw i is the generator's stream index i whatever the block, so the
    result equals one ``hpcml.invgauss.sample(n, mu, lam, seed=seed)`` call, on any chunking.

    Args:
        n: how many samples, >= 0.
        mu: the mean, > 0: a scalar, or a length-n array (NumPy or dask; cut like the output).
        lam: the shape lambda, > 0, as mu.
        seed: the generator's key.
        dtype: float32 or float64, the samples' type.
        chunks: draws per block: an int (default 4Mi), or the blocks' lengths.
        backend: "auto", "cpu" or "cuda".

    Returns:
        A length-n dask array of `dtype`.

    Raises:
        ValueError: n not an integer >= 0, another dtype, chunks < 1 or not covering n, mu or
            lam neither a scalar nor of length n, invalid scalar parameters (checked now; those
            in arrays when the blocks run), an unknown backend.
    """
    n = _arrays.integer(n, "n", 0, _arrays.SIZE_MAX)
    seed = _arrays.integer(seed, "seed", 0, _arrays.SIZE_MAX)
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype: expected float32 or float64, got {dtype}")
    check_backend(backend)
    lengths = blocks(chunks, n, "the output")
    mu, lam = _parameter(mu, "mu", n, lengths), _parameter(lam, "lam", n, lengths)
    if not is_dask(mu) and not is_dask(lam):
        _ig.sample(1, mu, lam, seed=seed, dtype=dtype, backend="cpu")  # hpcml checks the parameters
    name = f"hpcml-invgauss-sample-{tokenize(n, mu, lam, seed, dtype.name, lengths, backend)}"
    starts = np.cumsum((0,) + lengths)
    layer: Dict[Any, Any] = {}
    for k, length in enumerate(lengths):
        draw = functools.partial(_sample_block, n=length, first=int(starts[k]), seed=int(seed), dtype=dtype.name,
                                 backend=backend)
        layer[(name, k)] = (draw, *((p.name, k) if is_dask(p) else p for p in (mu, lam)))
    graph = HighLevelGraph.from_collections(name, layer, dependencies=[p for p in (mu, lam) if is_dask(p)])
    return da.Array(graph, name, chunks=(lengths,), dtype=dtype, meta=np.empty(0, dtype))


def _distance_block(mu: Any, lam: Any, *, options: Dict[str, Any]) -> Any:
    d = _ig.distance_to_normal(mu, lam, **options)
    return np.stack([d["tv"], d["ks"]]) if options["metric"] == "both" else d


def distance_to_normal(mu: DaskArrayIn, lam: DaskArrayIn, *, metric: Literal["tv", "ks", "both"] = "tv",
                       grid: Optional[Tuple[float, float, int]] = None, method: Literal["fused", "naive"] = "fused",
                       backend: Backend = "auto") -> Any:
    """Distances between the standardised IG(mu, lam) and N(0, 1) for each pair, block by block.

    Args:
        mu: the means, > 0 (dask or NumPy arrays, or scalars; raveled and broadcast against lam
            as hpcml.invgauss.distance_to_normal does: P pairs in all).
        lam: the shapes lambda, > 0.
        metric: "tv", "ks" or "both", as hpcml.invgauss.distance_to_normal's.
        grid: (lo, hi, points) of the standardised variable, default (-10, 10, 2001).
        method: "fused" or "naive".
        backend: "auto", "cpu" or "cuda".

    Returns:
        A float64 dask array of P distances, or for "both" a dict {"tv": ..., "ks": ...} of two
        (which share their tasks: computed together, each block runs once).

    Raises:
        ValueError: mu and lam that do not broadcast, an unknown backend; the options
            hpcml.invgauss.distance_to_normal rejects (metric, grid, method), checked now.
    """
    check_backend(backend)
    options: Dict[str, Any] = dict(metric=metric, grid=grid, method=method, backend=backend)
    _ig.distance_to_normal([1.0], [1.0], **{**options, "backend": "cpu"})  # hpcml checks the options
    flat = [da.ravel(da.asarray(a)) for a in (mu, lam)]
    try:
        mus, lams = da.broadcast_arrays(*flat)
    except ValueError:
        raise ValueError(f"mu, lam: {flat[0].size} and {flat[1].size} values do not broadcast") from None
    distance = functools.partial(_distance_block, options=options)
    if metric != "both":
        return da.map_blocks(distance, mus, lams, dtype=np.float64, meta=np.empty(0, np.float64))
    both = da.map_blocks(distance, mus, lams, new_axis=0, chunks=((2,),) + mus.chunks, dtype=np.float64,
                         meta=np.empty((0, 0), np.float64))
    return {"tv": both[0], "ks": both[1]}
