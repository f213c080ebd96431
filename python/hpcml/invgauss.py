"""hpcml.invgauss: the inverse Gaussian IG(mu, lam), stable over the whole parameter range.

Mean mu, variance mu^3 / lam (SciPy: ``scipy.stats.invgauss(mu / lam, scale=lam)``). The
elementwise functions broadcast x, mu and lam like NumPy and return float32 when every input is
float32, else float64. Invalid parameters (mu <= 0, lam <= 0, NaN, inf) give NaN, as SciPy does;
x <= 0 gives pdf 0 and cdf 0. CUDA arrays (torch, CuPy) are computed in place on their device
(device: default the arrays' device, else 0).
"""

from __future__ import annotations

import numpy as np

from . import _hpcml
from ._similarity import _cuda_array, _cuda_device, _current_stream, _device_empty

__all__ = ["pdf", "logpdf", "cdf", "sf", "logcdf", "logsf", "ppf", "standardize", "standardized_pdf", "sample",
           "distance_to_normal"]


def _dtype(*arrays):
    return np.float32 if all(np.asarray(a).dtype == np.float32 for a in arrays) else np.float64


def _evaluate(name, x, mu, lam, backend, device):
    if _cuda_array(x):
        if not (_cuda_array(mu) and _cuda_array(lam)):
            raise ValueError("mu, lam: with a CUDA x, pass mu and lam as CUDA arrays of x's shape or of one element")
        if len({str(a.dtype) for a in (x, mu, lam)}) != 1:
            raise ValueError(f"mu, lam: CUDA arrays must share x's dtype (no copy is made on the device), got "
                             f"{x.dtype}, {mu.dtype}, {lam.dtype}")
        device = _cuda_device((x, mu, lam), device)
        flat = [a.reshape(-1) for a in (x, mu, lam)]
        out = _device_empty(x, (flat[0].shape[0],), "float32" if str(x.dtype).endswith("float32") else "float64")
        _hpcml._ig_evaluate(name, *flat, out, backend, device, True, _current_stream(x))
        return out.reshape(x.shape)
    dtype = _dtype(x, mu, lam)
    x, mu, lam = (np.asarray(a, dtype=dtype) for a in (x, mu, lam))
    device = 0 if device is None else int(device)
    if mu.size == 1 and lam.size == 1:  # (size-1 mu or lam may still add leading axes)
        shape, mu, lam = np.broadcast_shapes(x.shape, mu.shape, lam.shape), mu.reshape(1), lam.reshape(1)
        x = np.ascontiguousarray(x).reshape(-1)
    else:
        x, mu, lam = np.broadcast_arrays(x, mu, lam)
        shape = x.shape
        x, mu, lam = (np.ascontiguousarray(a).reshape(-1) for a in (x, mu, lam))
    out = np.empty(x.shape[0], dtype=dtype)
    _hpcml._ig_evaluate(name, x, mu, lam, out, backend, device, False, 0)
    return out.reshape(shape)[()] if shape == () else out.reshape(shape)


def pdf(x, mu, lam, *, backend="auto", device=None):
    """Density f(x) = sqrt(lam / (2 pi x^3)) exp(-lam (x - mu)^2 / (2 mu^2 x))."""
    return _evaluate("pdf", x, mu, lam, backend, device)


def logpdf(x, mu, lam, *, backend="auto", device=None):
    """log f(x), finite far into the tails where f underflows."""
    return _evaluate("logpdf", x, mu, lam, backend, device)


def cdf(x, mu, lam, *, backend="auto", device=None):
    """F(x) through erfcx: no overflow for any lam / mu (the textbook form overflows above ~355)."""
    return _evaluate("cdf", x, mu, lam, backend, device)


def sf(x, mu, lam, *, backend="auto", device=None):
    """1 - F(x), computed directly in the upper tail."""
    return _evaluate("sf", x, mu, lam, backend, device)


def logcdf(x, mu, lam, *, backend="auto", device=None):
    return _evaluate("logcdf", x, mu, lam, backend, device)


def logsf(x, mu, lam, *, backend="auto", device=None):
    return _evaluate("logsf", x, mu, lam, backend, device)


def ppf(p, mu, lam, *, backend="auto", device=None):
    """The quantile: x with F(x) = p (Newton in log x, bracketed, for every lam / mu)."""
    return _evaluate("ppf", p, mu, lam, backend, device)


def standardize(x, mu, lam, *, backend="auto", device=None):
    """(x - mu) / sqrt(mu^3 / lam)."""
    return _evaluate("standardize", x, mu, lam, backend, device)


def standardized_pdf(y, mu, lam, *, backend="auto", device=None):
    """The density of Y = (X - mu) / sqrt(mu^3 / lam) at y: tends to phi(y) as lam / mu grows."""
    return _evaluate("standardized_pdf", y, mu, lam, backend, device)


def sample(n, mu, lam, *, seed=0, dtype=np.float64, backend="auto", device=0):
    """n samples (Michael-Schucany-Haas, Philox4x32-10 keyed by seed; sample i depends only on
    (seed, i, mu, lam): the same on the CPU and the GPU). mu and lam: scalars or length-n arrays."""
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n: expected a non-negative integer, got {n!r}")
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype: expected float32 or float64, got {dtype}")
    mu = np.ascontiguousarray(mu, dtype=dtype).reshape(-1)
    lam = np.ascontiguousarray(lam, dtype=dtype).reshape(-1)
    out = np.empty(int(n), dtype=dtype)
    _hpcml._ig_sample(mu, lam, int(seed), out, backend, int(device))
    return out


def distance_to_normal(mu, lam, *, metric="tv", grid=None, method="fused", backend="auto", device=0):
    """Distances between the standardised IG(mu, lam) and N(0, 1) for each pair (mu[p], lam[p]).

    metric: "tv" (total variation, 1/2 integral |f_Y - phi|, trapezoid rule), "ks" (largest
    |F_Y - Phi|) or "both" (a dict of both). grid: (lo, hi, points) of the standardised variable,
    default (-10, 10, 2001). method "fused" reduces each pair on the fly; "naive" materialises
    the P x G matrices as the seed did (for comparison; MemoryError if they would not fit).
    """
    mu = np.ascontiguousarray(mu, dtype=np.float64).reshape(-1)
    lam = np.ascontiguousarray(lam, dtype=np.float64).reshape(-1)
    mu, lam = (np.ascontiguousarray(a) for a in np.broadcast_arrays(mu, lam))
    lo, hi, points = (-10.0, 10.0, 2001) if grid is None else grid
    if not isinstance(points, (int, np.integer)) or points < 2:
        raise ValueError(f"grid: needs at least 2 points, got {points!r}")
    tv, ks, _ = _hpcml._ig_distance(mu, lam, metric, float(lo), float(hi), int(points), method, backend, int(device))
    if metric == "both":
        return {"tv": np.asarray(tv), "ks": np.asarray(ks)}
    return np.asarray(tv if metric == "tv" else ks)
