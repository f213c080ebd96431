"""hpcml.invgauss: the inverse Gaussian IG(mu, lam), stable over the whole parameter range.

Mean mu, variance mu^3 / lam (SciPy: ``scipy.stats.invgauss(mu / lam, scale=lam)``). The
elementwise functions broadcast x, mu and lam like NumPy and return float32 when every input is
float32, else float64. Invalid parameters (mu <= 0, lam <= 0, NaN, inf) give NaN, as SciPy does;
x <= 0 gives pdf 0 and cdf 0. CUDA arrays (torch, CuPy) are computed in place on their device
(device: default the arrays' device, else 0).
"""

from __future__ import annotations

from typing import Any, Callable, Literal, Optional, Tuple, TypeVar

import numpy as np
import numpy.typing as npt

from . import _arrays, _hpcml
from ._types import Array, ArrayIn, Backend

__all__ = ["pdf", "logpdf", "cdf", "sf", "logcdf", "logsf", "ppf", "standardize", "standardized_pdf", "evaluate",
           "functions", "sample", "distance_to_normal"]


_F = TypeVar("_F", bound=Callable[..., Any])

# What every elementwise function takes, returns and raises (their docstrings' common part).
_ELEMENTWISE = """

Args:
    {x}: where to evaluate: a scalar or an array (NumPy, or anything np.asarray takes), or a CUDA
        array (torch, CuPy), used in place on its device and its library's current stream.
    mu: the mean, > 0: a scalar or an array broadcast against {x} like NumPy (CUDA arrays: of
        {x}'s dtype, {x}'s size or one element).
    lam: the shape lambda, > 0, as mu. Invalid parameters (<= 0, NaN, inf) give NaN, as SciPy.
    backend: "auto" (the GPU where a usable one exists), "cpu" or "cuda".
    device: the CUDA device (default: the CUDA arrays' device, else 0).

Returns:
    The broadcast shape's values (a NumPy scalar for scalar inputs): float32 where every input
    is float32, else float64; for CUDA arrays, an array of their library on their device.

Raises:
    ValueError: shapes that do not broadcast, CUDA arrays on different devices or of another
        dtype, an unknown backend.
    RuntimeError: backend "cuda" without a usable device.
"""


def _elementwise(argument: str = "x", template: str = _ELEMENTWISE) -> Callable[[_F], _F]:
    """Appends the elementwise functions' common Args, Returns and Raises (`template`, its
    argument named `argument`) to a docstring; hpcml.dask.invgauss passes its own template."""
    def document(function: _F) -> _F:
        function.__doc__ = (function.__doc__ or "") + template.format(x=argument)
        return function
    return document


def functions() -> list[str]:
    """The names of the elementwise functions, from the library's table (evaluate() takes any)."""
    return list(_hpcml._ig_functions())


def evaluate(function: str, x: ArrayIn, mu: ArrayIn, lam: ArrayIn, *, backend: Backend = "auto",
             device: Optional[int] = None) -> Array:
    """The elementwise function named `function` (one of functions(): "pdf", "logpdf", "cdf", "sf",
    "logcdf", "logsf", "ppf", "standardize", "standardized_pdf"), as pdf() and the others; an
    unknown name raises ValueError."""
    return _evaluate(_arrays.text(function, "function"), x, mu, lam, backend, device)


def _evaluate(name: str, x: Any, mu: Any, lam: Any, backend: str, device: Optional[int]) -> Array:
    arrays = {"x": x, "mu": mu, "lam": lam}
    on_device = _arrays.on_cuda(arrays)
    device = _arrays.resolve_device(arrays.values(), device, on_device, _arrays.text(backend, "backend"))
    if on_device:
        # Used in place: mu and lam must have x's dtype, and x's size or one element (C++ checks the count).
        x = _arrays.cuda_array(x, "x", dtypes=("float32", "float64"))
        dtype = _arrays.dtype_name(x.dtype)
        mu, lam = (_arrays.cuda_array(arrays[k], k, dtypes=(dtype,)) for k in ("mu", "lam"))
        out = _arrays.empty(x, tuple(x.shape), dtype)
        fx, fmu, flam, fout = (a.reshape(-1) for a in (x, mu, lam, out))  # views: all four are contiguous
        _hpcml._ig_evaluate(name, fx, fmu, flam, fout, True, backend=backend, device=device,
                            stream=_arrays.current_stream(x))
        return out
    dtype = _arrays.common_float(arrays)
    shape, flat = _arrays.flat_broadcast(arrays, dtype=dtype, keep_single=True)
    out = np.empty(flat[0].shape[0], dtype=dtype)
    hx, hmu, hlam = flat
    _hpcml._ig_evaluate(name, hx, hmu, hlam, out, False, backend=backend, device=device)
    return out.reshape(shape)[()] if shape == () else out.reshape(shape)


@_elementwise()
def pdf(x: ArrayIn, mu: ArrayIn, lam: ArrayIn, *, backend: Backend = "auto", device: Optional[int] = None
        ) -> Array:
    """Density f(x) = sqrt(lam / (2 pi x^3)) exp(-lam (x - mu)^2 / (2 mu^2 x))."""
    return _evaluate("pdf", x, mu, lam, backend, device)


@_elementwise()
def logpdf(x: ArrayIn, mu: ArrayIn, lam: ArrayIn, *, backend: Backend = "auto", device: Optional[int] = None
           ) -> Array:
    """log f(x), finite far into the tails where f underflows."""
    return _evaluate("logpdf", x, mu, lam, backend, device)


@_elementwise()
def cdf(x: ArrayIn, mu: ArrayIn, lam: ArrayIn, *, backend: Backend = "auto", device: Optional[int] = None
        ) -> Array:
    """F(x) through erfcx: no overflow for any lam / mu (the textbook form overflows above ~355)."""
    return _evaluate("cdf", x, mu, lam, backend, device)


@_elementwise()
def sf(x: ArrayIn, mu: ArrayIn, lam: ArrayIn, *, backend: Backend = "auto", device: Optional[int] = None
       ) -> Array:
    """1 - F(x), computed directly in the upper tail."""
    return _evaluate("sf", x, mu, lam, backend, device)


@_elementwise()
def logcdf(x: ArrayIn, mu: ArrayIn, lam: ArrayIn, *, backend: Backend = "auto", device: Optional[int] = None
           ) -> Array:
    """log F(x), finite far into the lower tail where F underflows."""
    return _evaluate("logcdf", x, mu, lam, backend, device)


@_elementwise()
def logsf(x: ArrayIn, mu: ArrayIn, lam: ArrayIn, *, backend: Backend = "auto", device: Optional[int] = None
          ) -> Array:
    """log(1 - F(x)), finite far into the upper tail where 1 - F underflows."""
    return _evaluate("logsf", x, mu, lam, backend, device)


@_elementwise("p")
def ppf(p: ArrayIn, mu: ArrayIn, lam: ArrayIn, *, backend: Backend = "auto", device: Optional[int] = None
        ) -> Array:
    """The quantile: x with F(x) = p (Newton in log x, bracketed, for every lam / mu); p outside
    [0, 1] gives NaN."""
    return _evaluate("ppf", p, mu, lam, backend, device)


@_elementwise()
def standardize(x: ArrayIn, mu: ArrayIn, lam: ArrayIn, *, backend: Backend = "auto",
                device: Optional[int] = None) -> Array:
    """(x - mu) / sqrt(mu^3 / lam)."""
    return _evaluate("standardize", x, mu, lam, backend, device)


@_elementwise("y")
def standardized_pdf(y: ArrayIn, mu: ArrayIn, lam: ArrayIn, *, backend: Backend = "auto",
                     device: Optional[int] = None) -> Array:
    """The density of Y = (X - mu) / sqrt(mu^3 / lam) at y: tends to phi(y) as lam / mu grows."""
    return _evaluate("standardized_pdf", y, mu, lam, backend, device)


def sample(n: int, mu: ArrayIn, lam: ArrayIn, *, seed: int = 0, first: int = 0, dtype: npt.DTypeLike = np.float64,
           backend: Backend = "auto", device: Optional[int] = None) -> Array:
    """n samples of IG(mu, lam) (Michael-Schucany-Haas, Philox4x32-10 keyed by seed; draw i of the
    stream depends only on (seed, i, mu, lam): the same draws on the CPU and the GPU, to 1e-13
    relative, as their log, cos and sqrt differ in the last bits).

    Args:
        n: how many samples, >= 0.
        mu: the mean, > 0: a scalar or a length-n array (host), or a 1-D CUDA array of `dtype`.
        lam: the shape lambda, > 0, as mu.
        seed: the generator's key.
        first: the stream index of the first sample: ``sample(n, ..., first=k)`` equals
            ``sample(k + n, ...)[k:]`` (for scalar mu and lam), so a sequence drawn in pieces
            equals one call's. An integer >= 0; first + n must not pass the stream's 2**64 draws.
        dtype: float32 or float64, the samples' type.
        backend: "auto", "cpu" or "cuda".
        device: the CUDA device (default: the CUDA arrays' device, else 0).

    Returns:
        A length-n NumPy array of `dtype`; for CUDA arrays, one of their library on their device,
        queued on its current stream without a copy or a wait.

    Raises:
        ValueError: n or first not an integer >= 0 (or first + n past 2**64), another dtype,
            invalid host parameters (on the device they are not checked: they give NaN), mu or
            lam of another length.
        RuntimeError: backend "cuda" without a usable device.
    """
    n = _arrays.integer(n, "n", 0, _arrays.SIZE_MAX)  # the output's length
    first = _arrays.integer(first, "first", 0, _arrays.SIZE_MAX)
    seed = _arrays.integer(seed, "seed", 0, _arrays.SIZE_MAX)
    device = _arrays.device_option(device, _arrays.text(backend, "backend"))
    if first + max(n, 1) - 1 >= 2**64:  # the generator's stream index is 64 bits
        raise ValueError(f"first: draws {first} + {n} pass the end of the generator's stream (2**64 draws)")
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):  # the output's dtype
        raise ValueError(f"dtype: expected float32 or float64, got {dtype}")
    arrays = {"mu": mu, "lam": lam}
    if _arrays.on_cuda(arrays):
        device = _arrays.resolve_device(arrays.values(), device, True)
        mu_d, lam_d = (_arrays.cuda_array(arrays[k], k, ndim=1, dtypes=(dtype.name,)) for k in ("mu", "lam"))
        out = _arrays.empty(mu_d, (n,), dtype.name, "mu")
        _hpcml._ig_sample(mu_d, lam_d, out, True, seed=seed, first=first, backend=backend, device=device,
                          stream=_arrays.current_stream(mu_d))
        return out
    device = 0 if device is None else device
    out = np.empty(n, dtype=dtype)
    _hpcml._ig_sample(_arrays.vector(mu, dtype), _arrays.vector(lam, dtype), out, False, seed=seed, first=first,
                      backend=backend, device=device)
    return out


def distance_to_normal(mu: npt.ArrayLike, lam: npt.ArrayLike, *, metric: Literal["tv", "ks", "both"] = "tv",
                       grid: Optional[Tuple[float, float, int]] = None, method: Literal["fused", "naive"] = "fused",
                       backend: Backend = "auto", device: int = 0) -> Any:
    """Distances between the standardised IG(mu, lam) and N(0, 1) for each pair (mu[p], lam[p]).

    Args:
        mu: the means, > 0 (host arrays, broadcast against lam; P pairs in all).
        lam: the shapes lambda, > 0.
        metric: "tv" (total variation, 1/2 integral |f_Y - phi|, trapezoid rule), "ks" (largest
            |F_Y - Phi|) or "both".
        grid: (lo, hi, points) of the standardised variable, default (-10, 10, 2001).
        method: "fused" reduces each pair on the fly; "naive" materialises the P x G matrices
            as the seed did (for comparison).
        backend: "auto", "cpu" or "cuda".
        device: the CUDA device.

    Returns:
        A float64 array of P distances, or for "both" a dict {"tv": ..., "ks": ...} of them.

    Raises:
        ValueError: invalid parameters or grid, an unknown metric, method or backend.
        MemoryError: the naive method's matrices would not fit (the message gives the bytes).
        RuntimeError: backend "cuda" without a usable device.
    """
    _, (mus, lams) = _arrays.flat_broadcast({"mu": np.ravel(mu), "lam": np.ravel(lam)}, dtype=np.float64)
    lo, hi, points = (-10.0, 10.0, 2001) if grid is None else grid
    points = _arrays.integer(points, "grid", 0, _arrays.SIZE_MAX)  # C++ checks points >= 2
    lo, hi = _arrays.real(lo, "grid"), _arrays.real(hi, "grid")
    for value, argument in [(metric, "metric"), (backend, "backend")]:
        _arrays.text(value, argument)
    _arrays.choice(method, "method", _arrays.METHODS_WITHOUT_SORTED)
    device = _arrays.integer(device, "device", 0, _arrays.INT_MAX)
    tv, ks, _ = _hpcml._ig_distance(mus, lams, metric=metric, lo=lo, hi=hi, points=points, method=method,
                                    backend=backend, device=device)
    if metric == "both":
        return {"tv": np.asarray(tv), "ks": np.asarray(ks)}
    return np.asarray(tv if metric == "tv" else ks)
