"""hpcml's calls as PyTorch operators, for use inside torch.compile graphs.

``import hpcml.torch`` registers them with torch.library (``import hpcml`` alone never imports
torch). Each operator has a fake (meta) implementation, so torch.compile traces through it
without a graph break (``fullgraph=True`` works); on the CPU each runs hpcml's CPU backend on the
tensors' memory (no copy for contiguous float32/float64 inputs).

    import torch, hpcml.torch
    S = torch.ops.hpcml.similarity(x, None, 1.0, "count", "default", 0)  # or hpcml.torch.similarity(x)
    f = torch.compile(lambda x: hpcml.torch.similarity(x).sum(), fullgraph=True)

The operators, in the namespace ``hpcml`` (``torch.ops.hpcml.NAME``):
- similarity(x, y, threshold, mode, dtype, tile) -> S, as hpcml.similarity (tile 0: the backend's);
- similarity_host(x, y, threshold, mode, dtype, tile) -> S in host memory (pinned for CUDA inputs);
- similarity_pairs(x, y, threshold, mode, min_count, tile) -> (i, j, count): int64 indices, count
  int32 (empty in mode "all"); their length depends on the data (a dynamic size in the fake); for
  CUDA tensors the pairs are reduced, kept and ordered on the device (only their number crosses
  the link), in tensors from torch's allocator;
- invgauss(function, x, mu, lam) -> values of x's dtype and the broadcast shape, for every name in
  hpcml.invgauss.functions();
- invgauss_sample(n, mu, lam, seed, double, first=0) -> n draws (float64 if double, else float32),
  from the stream's draw `first` on (0 <= first < 2**63: torch's int);
- solve_matrix_games(A, iterations, variant, alternating, averaging, sampled, seed) ->
  (row_strategy, col_strategy, value, gap, eps_bound), float64, with a leading batch axis.
CUDA tensors go to hpcml's GPU backend through the same Python calls (docs/python.md says which
synchronise); on the CPU every operator is what the functions of hpcml compute.
"""

from typing import Any, Optional, Tuple, Union

import numpy as np

from hpcml import _optional

try:
    import torch
except ModuleNotFoundError as _error:
    raise _optional.missing(_error, "hpcml.torch") from None

import hpcml  # noqa: E402
from hpcml import _arrays, _hpcml
from hpcml._similarity import pairs_on_device as _pairs_on_device
from hpcml import invgauss as _ig

_TORCH_INT_MAX = 2**63 - 1  # a schema's int is int64

__all__ = ["similarity", "similarity_pairs", "invgauss", "invgauss_sample", "solve_matrix_games"]


def _torch_dtype(numpy_dtype):
    return torch.from_numpy(np.empty(0, dtype=numpy_dtype)).dtype


def _host(t):
    """A CPU tensor's memory as NumPy (no copy where it is contiguous and already NumPy's)."""
    return t.detach().contiguous().numpy()


def _device_of(*tensors):
    return next((t.device for t in tensors if t is not None), torch.device("cpu"))


def _on_cuda(*tensors):
    return any(t is not None and t.is_cuda for t in tensors)


# --- similarity -------------------------------------------------------------------------------

@torch.library.custom_op("hpcml::similarity", mutates_args=())
def _similarity(x: torch.Tensor, y: torch.Tensor | None, threshold: float, mode: str, dtype: str,
                tile: int) -> torch.Tensor:
    options: dict[str, Any] = dict(threshold=threshold, mode=mode, dtype=None if dtype == "default" else dtype,
                                   tile=tile or None)
    if _on_cuda(x, y):
        return hpcml.similarity(x, y, backend="cuda", **options)
    S = hpcml.similarity(_host(x), None if y is None else _host(y), backend="cpu", **options)
    return torch.from_numpy(S)


def _similarity_layout(x, y, mode, dtype):
    """S's shape and torch dtype."""
    n = x.shape[1]
    m = n if y is None else y.shape[1]
    # The element type and how many columns an element holds (m may be symbolic: no call with it).
    _, _, element, per_element = _hpcml._similarity_layout(mode, dtype, 1, 1)
    return (n, (m + per_element - 1) // per_element), _torch_dtype(element)


@_similarity.register_fake
def _(x, y, threshold, mode, dtype, tile):
    shape, element = _similarity_layout(x, y, mode, dtype)
    return x.new_empty(shape, dtype=element)


@torch.library.custom_op("hpcml::similarity_host", mutates_args=())
def _similarity_host(x: torch.Tensor, y: torch.Tensor | None, threshold: float, mode: str, dtype: str,
                     tile: int) -> torch.Tensor:
    if not _on_cuda(x, y):
        return _similarity(x, y, threshold, mode, dtype, tile)
    # The GPU's result copied straight into page-locked host memory (torch's caching pinned
    # allocator), after the work on the current stream; complete on return.
    shape, element = _similarity_layout(x, y, mode, dtype)
    out = torch.empty(shape, dtype=element, pin_memory=True)
    options: dict[str, Any] = dict(threshold=threshold, mode=mode, dtype=None if dtype == "default" else dtype,
                                   tile=tile or None)
    hpcml.similarity(x, y, backend="cuda", out=out, **options)
    return out


@_similarity_host.register_fake
def _(x, y, threshold, mode, dtype, tile):
    shape, element = _similarity_layout(x, y, mode, dtype)
    return x.new_empty(shape, dtype=element, device="cpu")


def similarity(x: torch.Tensor, y: Optional[torch.Tensor] = None, *, threshold: float = 1.0, mode: str = "count",
               dtype: Union[str, torch.dtype] = "default", tile: int = 0, host: bool = False) -> torch.Tensor:
    """torch.ops.hpcml.similarity with hpcml.similarity's defaults: S for (samples, n) tensors.

    host=True: S in host memory whatever the inputs' device (torch.ops.hpcml.similarity_host):
    for CUDA inputs a pinned CPU tensor that the GPU's result was copied into at the host link's
    rate, complete on return (so not inside a CUDA graph: torch.compile's "reduce-overhead" leaves
    such a graph uncaptured)."""
    tile = _arrays.integer(tile, "tile", 0, _TORCH_INT_MAX)
    op = torch.ops.hpcml.similarity_host if _arrays.boolean(host, "host") else torch.ops.hpcml.similarity
    return op(x, y, _arrays.real(threshold, "threshold"), mode, str(dtype).removeprefix("torch."), tile)


@torch.library.custom_op("hpcml::similarity_pairs", mutates_args=())
def _similarity_pairs(x: torch.Tensor, y: torch.Tensor | None, threshold: float, mode: str, min_count: int,
                      tile: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    options: dict[str, Any] = dict(threshold=threshold, mode=mode, min_count=min_count if mode == "count" else None,
                                   tile=tile or None)
    device = _device_of(x, y)
    if _on_cuda(x, y):  # the pairs stay on the device: only their number crosses the link
        made: list[torch.Tensor] = []

        def allocate(pairs: int) -> tuple[int, int, int]:
            made[:] = [torch.empty(pairs, dtype=torch.int64, device=device),
                       torch.empty(pairs, dtype=torch.int64, device=device),
                       torch.empty(pairs if mode == "count" else 0, dtype=torch.int32, device=device)]
            i, j, count = (t.data_ptr() for t in made)
            return i, j, count

        _pairs_on_device(x, y, allocate, **options)
        return made[0], made[1], made[2]
    pairs = hpcml.similarity_pairs(_host(x), None if y is None else _host(y), backend="cpu", **options)
    i, j = (torch.from_numpy(a) for a in pairs[:2])  # int64, as hpcml returns them
    count = torch.from_numpy(pairs[2]) if mode == "count" else torch.empty(0, dtype=torch.int32)
    return i, j, count


@_similarity_pairs.register_fake
def _(x, y, threshold, mode, min_count, tile):
    k = torch.library.get_ctx().new_dynamic_size()
    count = x.new_empty((k,) if mode == "count" else (0,), dtype=torch.int32)
    return x.new_empty((k,), dtype=torch.int64), x.new_empty((k,), dtype=torch.int64), count


def similarity_pairs(x: torch.Tensor, y: Optional[torch.Tensor] = None, *, threshold: float = 1.0, mode: str = "all",
                     min_count: int = 1, tile: int = 0) -> Tuple[torch.Tensor, ...]:
    """torch.ops.hpcml.similarity_pairs: (i, j) in mode "all", (i, j, count) in mode "count"."""
    i, j, count = torch.ops.hpcml.similarity_pairs(x, y, _arrays.real(threshold, "threshold"), mode,
                                                   _arrays.integer(min_count, "min_count", 0, _TORCH_INT_MAX),
                                                   _arrays.integer(tile, "tile", 0, _TORCH_INT_MAX))
    return (i, j) if mode == "all" else (i, j, count)


# --- the inverse Gaussian ---------------------------------------------------------------------

@torch.library.custom_op("hpcml::invgauss", mutates_args=())
def _invgauss(function: str, x: torch.Tensor, mu: torch.Tensor, lam: torch.Tensor) -> torch.Tensor:
    if _on_cuda(x, mu, lam):
        shape = torch.broadcast_shapes(x.shape, mu.shape, lam.shape)
        x, mu, lam = (t.to(x.dtype).expand(shape).contiguous() for t in (x, mu, lam))
        return _ig.evaluate(function, x, mu, lam, backend="cuda")
    xs = _host(x)
    out = _ig.evaluate(function, xs, _host(mu).astype(xs.dtype), _host(lam).astype(xs.dtype), backend="cpu")
    return torch.from_numpy(np.ascontiguousarray(out, dtype=xs.dtype))


@_invgauss.register_fake
def _(function, x, mu, lam):
    return x.new_empty(torch.broadcast_shapes(x.shape, mu.shape, lam.shape))


def invgauss(function: str, x: torch.Tensor, mu: Union[torch.Tensor, float], lam: Union[torch.Tensor, float]
             ) -> torch.Tensor:
    """torch.ops.hpcml.invgauss: function (a name in hpcml.invgauss.functions()) of IG(mu, lam) at
    x; mu and lam are tensors or numbers, broadcast against x; the result has x's dtype."""
    as_tensor = lambda v: v if isinstance(v, torch.Tensor) else torch.tensor(v, dtype=x.dtype, device=x.device)  # noqa: E731
    return torch.ops.hpcml.invgauss(function, x, as_tensor(mu), as_tensor(lam))


@torch.library.custom_op("hpcml::invgauss_sample", mutates_args=())
def _invgauss_sample(n: int, mu: torch.Tensor, lam: torch.Tensor, seed: int, double: bool,
                     first: int = 0) -> torch.Tensor:
    dtype = np.float64 if double else np.float32
    device = _sample_device(mu, lam)
    if device.type == "cuda":  # drawn in place on the current stream: capturable (the seed is the graph's)
        mu, lam = (t.to(device=device, dtype=_torch_dtype(dtype)).reshape(-1) for t in (mu, lam))
        return _ig.sample(n, mu, lam, seed=seed, first=first, dtype=dtype, backend="cuda")
    return torch.from_numpy(_ig.sample(n, _host(mu), _host(lam), seed=seed, first=first, dtype=dtype, backend="cpu"))


def _sample_device(mu, lam):
    """Where the draws are made and returned: the CUDA device of mu or lam, else the CPU."""
    return mu.device if mu.is_cuda or not lam.is_cuda else lam.device


@_invgauss_sample.register_fake
def _(n, mu, lam, seed, double, first=0):
    return mu.new_empty((n,), dtype=torch.float64 if double else torch.float32, device=_sample_device(mu, lam))


def invgauss_sample(n: int, mu: Union[torch.Tensor, float], lam: Union[torch.Tensor, float], *, seed: int = 0,
                    first: int = 0, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """torch.ops.hpcml.invgauss_sample: n draws of IG(mu, lam) (Philox, keyed by seed: the same
    draws for the same seed on every backend), from the stream's draw `first` on, as
    hpcml.invgauss.sample's `first`."""
    as_tensor = lambda v: v if isinstance(v, torch.Tensor) else torch.tensor(v, dtype=dtype)  # noqa: E731
    return torch.ops.hpcml.invgauss_sample(_arrays.integer(n, "n", 0, _TORCH_INT_MAX), as_tensor(mu), as_tensor(lam),
                                           _arrays.integer(seed, "seed", 0, _TORCH_INT_MAX), dtype == torch.float64,
                                           _arrays.integer(first, "first", 0, _TORCH_INT_MAX))


# --- games ------------------------------------------------------------------------------------

@torch.library.custom_op("hpcml::solve_matrix_games", mutates_args=())
def _solve_matrix_games(A: torch.Tensor, iterations: int, variant: str, alternating: bool, averaging: str,
                        sampled: bool, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor,
                                                           torch.Tensor]:
    options: dict[str, Any] = dict(iterations=iterations, variant=variant, alternating=alternating,
                                   averaging=averaging, sampled=sampled, seed=seed)
    if A.is_cuda:  # in place on the current stream: capturable
        s = hpcml.solve_matrix_games(A.to(torch.float32).contiguous(), backend="cuda", **options)
        return s.row_strategy, s.col_strategy, s.value, s.gap, s.eps_bound
    s = hpcml.solve_matrix_games(_host(A), backend="cpu", **options)
    row, col, value, gap, eps_bound = (torch.from_numpy(np.ascontiguousarray(a, dtype=np.float64))
                                       for a in (s.row_strategy, s.col_strategy, s.value, s.gap, s.eps_bound))
    return row, col, value, gap, eps_bound


@_solve_matrix_games.register_fake
def _(A, iterations, variant, alternating, averaging, sampled, seed):
    batch, n1, n2 = A.shape
    empty = lambda *shape: A.new_empty(shape, dtype=torch.float64)  # noqa: E731
    return empty(batch, n1), empty(batch, n2), empty(batch), empty(batch), empty(batch)


def solve_matrix_games(A: torch.Tensor, *, iterations: int = 500, variant: str = "prm+", alternating: bool = True,
                       averaging: str = "quadratic", sampled: bool = False, seed: int = 0
                       ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """torch.ops.hpcml.solve_matrix_games for A of shape (batch, n1, n2): (row_strategy,
    col_strategy, value, gap, eps_bound), float64 tensors with a leading batch axis."""
    return torch.ops.hpcml.solve_matrix_games(A, _arrays.integer(iterations, "iterations", 1, _arrays.INT_MAX), variant,
                                              _arrays.boolean(alternating, "alternating"), averaging,
                                              _arrays.boolean(sampled, "sampled"),
                                              _arrays.integer(seed, "seed", 0, _TORCH_INT_MAX))
