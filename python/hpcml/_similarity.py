"""hpcml.similarity: pairwise similarity counts S[i, j] = #{s : |x[s, i] - y[s, j]| < t}."""

from __future__ import annotations

import numpy as np

from . import _hpcml

_DTYPES = {
    "int32": np.int32,
    "uint16": np.uint16,
    "uint8": np.uint8,
    "bool": np.bool_,
    "bitmask": np.uint8,
}


def _dtype_name(dtype, mode: str) -> str:
    if dtype is None:
        return "int32" if mode == "count" else "bool"
    if isinstance(dtype, str) and dtype == "bitmask":
        return "bitmask"
    try:
        name = np.dtype(dtype).name
    except TypeError:
        raise ValueError(f"dtype: expected int32, uint16, uint8, bool or 'bitmask', got {dtype!r}") from None
    if name not in _DTYPES:
        raise ValueError(f"dtype: expected int32, uint16, uint8, bool or 'bitmask', got {dtype!r}")
    return name


def _cuda_array(a) -> bool:
    """True for a DLPack-capable array on a CUDA device (torch, CuPy, ...)."""
    device = getattr(a, "__dlpack_device__", None)
    return device is not None and not isinstance(a, np.ndarray) and device()[0] in (2, 13)  # kDLCUDA, kDLCUDAManaged


def _cuda_device(arrays, device):
    """The CUDA device the arrays are on (all on one); `device`, when given, must be that one."""
    ids = sorted({int(a.__dlpack_device__()[1]) for a in arrays})
    if len(ids) > 1:
        raise ValueError(f"device: the CUDA arrays are on different devices {ids}; put them on one")
    if device is not None and int(device) != ids[0]:
        raise ValueError(f"device: {device}, but the CUDA arrays are on device {ids[0]}")
    return ids[0]


def _current_stream(a) -> int:
    """The stream `a`'s library currently runs on, on `a`'s device (torch, CuPy), as a cudaStream_t
    handle; hpcml queues its work there, so it is ordered with the user's own work on it."""
    if not _cuda_array(a):
        return 0
    module = type(a).__module__.split(".")[0]
    if module == "torch":
        import torch

        return int(torch.cuda.current_stream(a.device).cuda_stream)
    if module == "cupy":
        import cupy

        with cupy.cuda.Device(a.device.id):
            return int(cupy.cuda.get_current_stream().ptr)
    return 0


def _device_empty(like, shape, name):
    """An uninitialised array on `like`'s device, from the library `like` comes from."""
    module = type(like).__module__.split(".")[0]
    if module == "torch":
        import torch

        dtype = {"int32": torch.int32, "uint16": torch.uint16, "uint8": torch.uint8, "bool": torch.bool,
                 "bitmask": torch.uint8}[name]
        return torch.empty(shape, dtype=dtype, device=like.device)
    if module == "cupy":
        import cupy

        with cupy.cuda.Device(like.device.id):
            return cupy.empty(shape, dtype=_DTYPES[name])
    raise TypeError(f"x: CUDA arrays from {module!r} are not supported; pass a torch or CuPy array")


def _matrix(a, argument: str):
    if _cuda_array(a):
        if len(a.shape) != 2:
            raise ValueError(f"{argument}: expected a 2-D (samples, features) array, got shape {tuple(a.shape)}")
        if str(a.dtype) not in ("float32", "torch.float32"):
            raise ValueError(f"{argument}: CUDA arrays must be float32 (no copy is made on the device), got {a.dtype}")
        if hasattr(a, "contiguous"):  # torch
            return a.contiguous()
        if type(a).__module__.split(".")[0] == "cupy":
            import cupy

            return cupy.ascontiguousarray(a)
        return a
    a = np.asarray(a)
    if a.ndim != 2:
        raise ValueError(f"{argument}: expected a 2-D (samples, features) array, got shape {a.shape}")
    if a.dtype.kind not in "fiub":
        raise ValueError(f"{argument}: expected real numbers, got dtype {a.dtype}")
    return np.ascontiguousarray(a, dtype=np.float32)


def similarity(x, y=None, *, threshold=1.0, mode="count", tile=None, backend="auto", method="fused",
               dtype=None, device=None, return_stats=False):
    """Pairwise similarity counts S[i, j] = #{s : |x[s, i] - y[s, j]| < threshold}.

    x is (n_samples, n) and y is (n_samples, m) (y defaults to x). Inputs are taken as float32:
    the result equals, bit for bit, NumPy's ``(abs(x[:, :, None] - y[:, None, :]) < t).sum(0)``
    on float32 arrays, without ever storing the n_samples x n x m intermediate.

    mode: "count" (dtype int32 by default, or uint16 / uint8 when n_samples fits) or "all"
    (every sample within the threshold: dtype bool, or "bitmask" for an (n, ceil(m / 8)) uint8
    array packed like ``np.packbits(s, axis=1, bitorder="little")``).
    tile: output tile edge (None: the backend chooses). backend: "auto", "cpu" or "cuda".
    device: the CUDA device (default: the one CUDA arrays are on, else 0).
    method: "fused" or "naive" (the broadcast baseline, for comparison).
    Arrays on a CUDA device (torch, CuPy: anything with DLPack) are used in place and the
    result is returned on the same device, computed on the library's current stream there
    (``torch.cuda.current_stream()``, CuPy's current stream), so it is ordered with your own work.
    With return_stats=True, returns (S, stats) where stats has backend, method, seconds,
    peak_device_bytes and peak_host_bytes.
    """
    if mode not in ("count", "all"):
        raise ValueError(f"mode: expected 'count' or 'all', got {mode!r}")
    name = _dtype_name(dtype, mode)
    x = _matrix(x, "x")
    if y is not None:
        y = _matrix(y, "y")
        if y.shape[0] != x.shape[0]:
            raise ValueError(f"y: has {y.shape[0]} samples (rows) but x has {x.shape[0]}; "
                             "both must have the same number of samples")
    on_device = _cuda_array(x)
    if y is not None and _cuda_array(y) != on_device:
        raise ValueError("y: x and y must both be host arrays or both be CUDA arrays")
    device = _cuda_device([x] if y is None else [x, y], device) if on_device else (0 if device is None else int(device))
    if tile is not None and (not isinstance(tile, (int, np.integer)) or tile < 1):
        raise ValueError(f"tile: must be a positive integer, got {tile!r}")
    n = x.shape[1]
    m = n if y is None else y.shape[1]
    shape = (n, (m + 7) // 8) if name == "bitmask" else (n, m)
    if on_device:
        if backend == "cpu":
            raise ValueError("backend: CUDA arrays need backend 'cuda' or 'auto'")
        out = _device_empty(x, shape, name)
    else:
        out = np.empty(shape, dtype=_DTYPES[name])
    stats = _hpcml._similarity(x, y, out, float(threshold), mode, tile, backend, method, name, int(device), on_device,
                               _current_stream(x))
    return (out, stats) if return_stats else out
