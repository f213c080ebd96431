"""hpcml.similarity: pairwise similarity counts S[i, j] = #{s : |x[s, i] - y[s, j]| < t}."""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Literal, Optional, Tuple, Union, overload

import numpy.typing as npt

from . import _arrays, _hpcml, _progress, telemetry
from ._types import Array, ArrayIn, Backend, Progress

Mode = Literal["count", "all"]
Method = Literal["auto", "fused", "sorted", "naive"]

_LAYOUT = "(samples, features)"


def _operands(x: Any, y: Any, tile: Any, on_device: bool) -> Tuple[Any, Any, Any]:
    """x and y (None: y = x) as the kernels take them, checked for shape, and the tile as a size."""
    x = _arrays.array(x, "x", on_device, ndim=2, layout=_LAYOUT)
    if y is not None:
        y = _arrays.array(y, "y", on_device, ndim=2, layout=_LAYOUT)
        if y.shape[0] != x.shape[0]:
            raise ValueError(f"y: has {y.shape[0]} samples (rows) but x has {x.shape[0]}; "
                             "both must have the same number of samples")
    if tile is not None:
        tile = _arrays.integer(tile, "tile", 1, _arrays.SIZE_MAX)
    return x, y, tile


def _execution(xs: Any, backend: str, method: str, device: int, progress: Progress, progress_interval: float,
               what: str) -> dict[str, Any]:
    """The execution options of a call, by name as the bindings take them."""
    return dict(backend=backend, method=method, device=device, stream=_arrays.current_stream(xs),
                progress=_progress.callback(progress, what, "pairs"), progress_interval=_progress.interval(progress_interval))


def _min_count(min_count: Any, mode: Any) -> int:
    """A pair list's min_count: 1 when unset, given in mode "count" only (C++: >= 1 there)."""
    if min_count is None:
        return 1
    if mode != "count":
        raise ValueError("min_count: applies to mode 'count' only")
    return _arrays.integer(min_count, "min_count", 0, _arrays.SIZE_MAX)


def _checked(threshold: Any, mode: Any, backend: Any, method: Any, return_stats: Any) -> Tuple[float, bool]:
    """The options both calls take, checked for their Python types (their values: by C++)."""
    for value, argument in [(mode, "mode"), (backend, "backend"), (method, "method")]:
        _arrays.text(value, argument)
    return _arrays.real(threshold, "threshold"), _arrays.boolean(return_stats, "return_stats")


@overload
def similarity(x: ArrayIn, y: Optional[ArrayIn] = None, *, threshold: float = 1.0, mode: Mode = "count",
               tile: Optional[int] = None, backend: Backend = "auto", method: Method = "auto",
               dtype: Optional[Union[npt.DTypeLike, Literal["bitmask"]]] = None, device: Optional[int] = None,
               out: Optional[Array] = None, return_stats: Literal[False] = False, progress: Progress = None,
               progress_interval: float = 0.25) -> Array: ...
@overload
def similarity(x: ArrayIn, y: Optional[ArrayIn] = None, *, threshold: float = 1.0, mode: Mode = "count",
               tile: Optional[int] = None, backend: Backend = "auto", method: Method = "auto",
               dtype: Optional[Union[npt.DTypeLike, Literal["bitmask"]]] = None, device: Optional[int] = None,
               out: Optional[Array] = None, return_stats: Literal[True], progress: Progress = None,
               progress_interval: float = 0.25) -> Tuple[Array, dict[str, Any]]: ...


def similarity(x: ArrayIn, y: Optional[ArrayIn] = None, *, threshold: float = 1.0, mode: Mode = "count",
               tile: Optional[int] = None, backend: Backend = "auto", method: Method = "auto",
               dtype: Optional[Union[npt.DTypeLike, Literal["bitmask"]]] = None, device: Optional[int] = None,
               out: Optional[Array] = None, return_stats: bool = False, progress: Progress = None,
               progress_interval: float = 0.25) -> Union[Array, Tuple[Array, dict[str, Any]]]:
    """Pairwise similarity counts S[i, j] = #{s : |x[s, i] - y[s, j]| < threshold}.

    x is (n_samples, n) and y is (n_samples, m) (y defaults to x). Inputs are taken as float32:
    the result equals, bit for bit, NumPy's ``(abs(x[:, :, None] - y[:, None, :]) < t).sum(0)``
    on float32 arrays, without ever storing the n_samples x n x m intermediate.

    mode: "count" (dtype int32 by default, or uint16 / uint8 when n_samples fits) or "all"
    (every sample within the threshold: dtype bool, or "bitmask" for an (n, ceil(m / 8)) uint8
    array packed like ``np.packbits(s, axis=1, bitorder="little")``).
    tile: output tile edge (None: the backend chooses). backend: "auto", "cpu" or "cuda".
    device: the CUDA device (default: the one CUDA arrays are on, else 0).
    method: "auto" (the faster exact method for the shape and mode: fused or sorted; on a GPU,
    fused for now), "fused" (every element evaluated), "sorted" (rank intervals of sorted samples,
    counted as bit masks; on a GPU, count mode up to 1023 samples) or "naive" (the broadcast
    baseline, for comparison). All but naive give
    the same result bit for bit; stats["method"] says which ran.
    Arrays on a CUDA device (torch, CuPy: anything with DLPack) are used in place and the
    result is returned on the same device, computed on the library's current stream there
    (``torch.cuda.current_stream()``, CuPy's current stream), so it is ordered with your own work.
    out: an array to write S into (returned), of S's shape and dtype, C-contiguous: where the
    inputs are (NumPy for host inputs), or for CUDA inputs also on the host (a NumPy array, a
    torch CPU tensor), which the GPU's result is copied into after the work on the current
    stream, at the host link's rate where it is page-locked (``torch.empty(..., pin_memory=True)``),
    complete on return (refused during CUDA graph capture); reusing one saves allocating and
    first touching a large result on every call.
    With return_stats=True, returns (S, stats) where stats has backend, method, seconds,
    peak_device_bytes, peak_host_bytes, and cpu_energy_j (the CPUs' package and DRAM energy over
    the call, None where not measured) with cpu_energy (its source, or why not).
    progress: True for a progress bar (tqdm's where installed) on calls that run longer than
    progress_interval seconds, or a callable (done, total) in output elements, called at most
    once per progress_interval and once at the end if at all (docs/python.md).

    Raises:
        ValueError: x or y not 2-D or with different sample counts, a threshold that is not
            finite and >= 0, an unknown mode, dtype, backend or method, an output type that
            cannot hold the counts (uint8 past 255 samples), a tile < 1, an `out` of the wrong
            shape, dtype or device; on a GPU, method "sorted" in count mode past 1023 samples.
        MemoryError: memory hpcml needs does not fit (the naive method's intermediate: the
            message gives the bytes needed and free).
        RuntimeError: backend "cuda" without a usable device, or a CUDA failure (named).
    """
    threshold, return_stats = _checked(threshold, mode, backend, method, return_stats)
    on_device = _arrays.on_cuda({"x": x, "y": y})
    xs, ys, tile_size = _operands(x, y, tile, on_device)
    device = _arrays.resolve_device([xs, ys], device, on_device, backend)
    # The C++ library checks mode and dtype (naming them), resolves the default output and gives
    # S's shape and NumPy dtype.
    n = xs.shape[1]
    m = n if ys is None else ys.shape[1]
    output, shape, element, _ = _hpcml._similarity_layout(mode, "default" if dtype is None else _arrays.dtype_name(dtype),
                                                       n, m)
    if out is None:
        out = _arrays.empty(xs, shape, element)
    else:
        _arrays.check_output(out, shape, element, device if on_device else None, {"x": xs, "y": ys},
                             host_for_cuda=True)
    energy = telemetry.cpu_energy()
    with energy if return_stats else contextlib.nullcontext():
        stats = _hpcml._similarity(xs, ys, out, on_device, threshold=threshold, mode=mode, tile=tile_size, dtype=output,
                                   **_execution(xs, backend, method, device, progress, progress_interval,
                                                "hpcml.similarity"))
    return (out, {**stats, **energy.fields()}) if return_stats else out


@overload
def similarity_pairs(x: ArrayIn, y: Optional[ArrayIn] = None, *, threshold: float = 1.0, mode: Mode = "all",
                     min_count: Optional[int] = None, tile: Optional[int] = None, backend: Backend = "auto",
                     method: Method = "auto", device: Optional[int] = None, return_stats: Literal[False] = False,
                     progress: Progress = None, progress_interval: float = 0.25) -> Tuple[Array, ...]: ...
@overload
def similarity_pairs(x: ArrayIn, y: Optional[ArrayIn] = None, *, threshold: float = 1.0, mode: Mode = "all",
                     min_count: Optional[int] = None, tile: Optional[int] = None, backend: Backend = "auto",
                     method: Method = "auto", device: Optional[int] = None, return_stats: Literal[True],
                     progress: Progress = None, progress_interval: float = 0.25
                     ) -> Tuple[Tuple[Array, ...], dict[str, Any]]: ...


def similarity_pairs(x: ArrayIn, y: Optional[ArrayIn] = None, *, threshold: float = 1.0, mode: Mode = "all",
                     min_count: Optional[int] = None, tile: Optional[int] = None, backend: Backend = "auto",
                     method: Method = "auto", device: Optional[int] = None, return_stats: bool = False,
                     progress: Progress = None, progress_interval: float = 0.25
                     ) -> Union[Tuple[Array, ...], Tuple[Tuple[Array, ...], dict[str, Any]]]:
    """The pairs (i, j) of S = similarity(x, y) that pass, without a dense S.

    mode "all": the pairs with every sample within the threshold; returns (i, j). mode "count":
    the pairs with S[i, j] >= min_count (default 1); returns (i, j, count). i and j are int64
    arrays in row-major order (NumPy's ``np.nonzero(S)`` order), count int32. The output is
    computed tile by tile (tile x tile; when unset, 2048 on the CPU and 1024 on the GPU) and
    reduced per tile, so memory grows with the number of pairs. Host arrays (NumPy and anything
    np.asarray takes), or CUDA arrays (torch, CuPy), used in place on their device and their
    library's current stream; on the GPU
    each launch's output is reduced there and only the pairs come back, as NumPy arrays.
    With return_stats=True, returns (pairs, stats). progress, progress_interval: as similarity's
    (on the GPU, the pair list of host arrays reports nothing; of CUDA arrays it takes no callback).

    Raises:
        ValueError: x or y not 2-D or with different sample counts, a threshold that is not
            finite and >= 0, an unknown mode, backend or method, min_count given in mode "all"
            or < 0, a tile < 1; on a GPU, method "sorted" in count mode past 1023 samples.
        MemoryError: memory hpcml needs does not fit (the naive method's intermediate: the
            message gives the bytes needed and free).
        RuntimeError: backend "cuda" without a usable device, or a CUDA failure (named).
    """
    threshold, return_stats = _checked(threshold, mode, backend, method, return_stats)
    on_device = _arrays.on_cuda({"x": x, "y": y})
    xs, ys, tile_size = _operands(x, y, tile, on_device)
    device = _arrays.resolve_device([xs, ys], device, on_device, backend)
    min_count = _min_count(min_count, mode)
    energy = telemetry.cpu_energy()
    with energy if return_stats else contextlib.nullcontext():
        r = _hpcml._similarity_pairs(xs, ys, on_device, threshold=threshold, mode=mode, min_count=min_count,
                                     tile=tile_size, **_execution(xs, backend, method, device, progress,
                                                                  progress_interval, "hpcml.similarity_pairs"))
    pairs = (r.pop("i"), r.pop("j")) + ((r.pop("count"),) if "count" in r else ())
    return (pairs, {**r, **energy.fields()}) if return_stats else pairs


def pairs_on_device(x: Any, y: Any, allocate: Callable[[int], Tuple[int, int, int]], *, threshold: float,
                    mode: Mode, min_count: Optional[int], tile: Optional[int]) -> None:
    """similarity_pairs of CUDA arrays with the pairs left on their device (hpcml.torch's op).

    allocate(pairs) is called once, when the number of pairs is known, and returns the device
    addresses (i, j, count: int64, int64 and, in mode "count", int32 arrays of that many) the
    pairs are written to, in row-major order, on the arrays' current stream."""
    threshold, _ = _checked(threshold, mode, "cuda", "auto", False)
    xs, ys, tile_size = _operands(x, y, tile, True)
    device = _arrays.resolve_device([xs, ys], None, True, "cuda")
    _hpcml._similarity_pairs_on_device(xs, ys, allocate, threshold=threshold, mode=mode,
                                       min_count=_min_count(min_count, mode), tile=tile_size,
                                       **_execution(xs, "cuda", "auto", device, None, 0.25, ""))
