"""Array handling shared by hpcml's families (private).

Everything a family does with the arrays it is handed, written once: telling host arrays (NumPy
and whatever ``np.asarray`` takes) from CUDA arrays (torch, CuPy: anything with DLPack on a CUDA
device), checking their shape and dtype, converting host arrays to the contiguous dtype the
kernels take, finding the CUDA device the arrays are on and the stream their library runs on,
and allocating outputs beside the inputs.

Python checks arrays (their kind, shape and dtype, which the binding cannot see before it
converts them) and the Python types of options (integer, integers in the range of the C++
parameter, bool, real number, string: below, one message template per rule), so that no
nanobind signature dump reaches a user. What the options mean (names of modes, backends,
methods, variants, metrics; a threshold's sign; a tile's least size) is checked by the C++
library, whose InvalidArgument errors name the argument and arrive here as ValueError; checking
that here too would give two messages for one rule, drifting apart. docs/python.md has the
table of every parameter and what refuses it.
"""

from __future__ import annotations

import numpy as np

_DLPACK_CUDA_DEVICES = (2, 13)  # kDLCUDA, kDLCUDAManaged


def library(a) -> str:
    """The top-level module of `a`'s type: "numpy", "torch", "cupy", ..."""
    return type(a).__module__.split(".")[0]


def is_cuda(a) -> bool:
    """True for a DLPack-capable array on a CUDA device (torch, CuPy, ...)."""
    device = getattr(a, "__dlpack_device__", None)
    return device is not None and not isinstance(a, np.ndarray) and device()[0] in _DLPACK_CUDA_DEVICES


def dtype_name(dtype) -> str:
    """NumPy's name for a dtype given the NumPy way (np.float32, "float32", "f4") or as torch's
    (torch.float32); anything else as its text, for the C++ parser to reject by name."""
    try:
        return np.dtype(dtype).name
    except TypeError:
        return str(dtype).removeprefix("torch.")


def on_cuda(arrays: dict) -> bool:
    """Whether the arrays ({argument: array}; None values are left out) are CUDA arrays: all of
    them are, or none is (ValueError naming the odd ones out)."""
    where = {name: is_cuda(a) for name, a in arrays.items() if a is not None}
    first, cuda = next(iter(where.items()))
    odd = [name for name, c in where.items() if c != cuda]
    if odd:
        kind, other = ("CUDA", "host") if cuda else ("host", "CUDA")
        names = ", ".join(odd)
        other = f"is a {other} array" if len(odd) == 1 else f"are {other} arrays"
        raise ValueError(f"{names}: {first} is a {kind} array but {names} {other}; "
                         "pass host arrays only or CUDA arrays only")
    return cuda


def _require_ndim(a, argument: str, ndim, layout: str):
    if ndim is not None and len(a.shape) != ndim:
        raise ValueError(f"{argument}: expected a {ndim}-D {layout} array, got shape {tuple(a.shape)}")


def host_array(a, argument: str, *, ndim=None, layout="", dtype=np.float32, values="real numbers") -> np.ndarray:
    """`a` as a C-contiguous NumPy array of `dtype`, after checking it has `ndim` axes (`layout`
    names them in the message) and holds real numbers (`values` names them)."""
    a = np.asarray(a)
    _require_ndim(a, argument, ndim, layout)
    if a.dtype.kind not in "fiub":
        raise ValueError(f"{argument}: expected {values}, got dtype {a.dtype}")
    return np.ascontiguousarray(a, dtype=dtype)


def cuda_array(a, argument: str, *, ndim=None, layout="", dtypes=("float32",)):
    """CUDA array `a`, contiguous, after checking it has `ndim` axes and one of `dtypes` (NumPy
    names): a device array is used in place, never converted, so its dtype must be the kernel's."""
    _require_ndim(a, argument, ndim, layout)
    if dtype_name(a.dtype) not in dtypes:
        raise ValueError(f"{argument}: CUDA arrays must be {' or '.join(dtypes)} (no copy is made on the device), "
                         f"got {a.dtype}")
    if library(a) == "torch":
        return a.contiguous()
    if library(a) == "cupy":
        import cupy  # type: ignore[import-not-found]

        return cupy.ascontiguousarray(a)
    return a


def array(a, argument: str, on_device: bool, *, ndim=None, layout="", dtype="float32", values="real numbers"):
    """host_array or cuda_array, by `on_device`: a host array is converted to `dtype`, a CUDA
    array must have it already."""
    if on_device:
        return cuda_array(a, argument, ndim=ndim, layout=layout, dtypes=(dtype,))
    return host_array(a, argument, ndim=ndim, layout=layout, dtype=dtype, values=values)


def common_float(arrays: dict):
    """The float dtype the result is computed in, by NumPy 2's promotion with Python scalars weak
    (a float32 array with 1.0 stays float32): float32 where that gives float32, else float64.
    `arrays` maps each argument's name to its value; complex or non-numeric values are refused
    naming the argument (NumPy would drop the imaginary part with only a warning)."""
    operands = []
    for name, a in arrays.items():
        if type(a) in (int, float):  # (not bool, nor np.float64, a float subclass that NumPy keeps strong)
            operands.append(a)  # weak: takes the arrays' precision
            continue
        a = np.asarray(a)
        if a.dtype.kind == "c":
            raise ValueError(f"{name}: expected real numbers, got {a.dtype} (complex) values")
        if a.dtype.kind not in "biuf":
            raise ValueError(f"{name}: expected real numbers, got an array of {a.dtype}")
        operands.append(a)
    return np.float32 if np.result_type(*operands) == np.float32 else np.float64


def vector(a, dtype) -> np.ndarray:
    """`a` (a scalar or any array) as a contiguous 1-D NumPy array of `dtype`."""
    return np.ascontiguousarray(a, dtype=dtype).reshape(-1)


def flat_broadcast(arrays: dict, *, dtype, keep_single=False):
    """(shape, flats): the arrays (by argument name) as `dtype` broadcast together like NumPy to
    `shape`, each as a contiguous 1-D array. With keep_single, the arrays after the first that
    hold one value stay one value (the C++ calls take each parameter as 1 or n values), saving
    the copies. Shapes that do not broadcast are refused naming the arguments."""
    names = list(arrays)
    values = [np.asarray(a, dtype=dtype) for a in arrays.values()]
    try:
        shape = np.broadcast_shapes(*(a.shape for a in values))
    except ValueError:
        shapes = ", ".join(f"{n} {a.shape}" for n, a in zip(names, values))
        raise ValueError(f"{names[1]}: shapes do not broadcast together ({shapes})") from None
    flats = [a.reshape(1) if keep_single and i > 0 and a.size == 1
             else np.ascontiguousarray(np.broadcast_to(a, shape)).reshape(-1) for i, a in enumerate(values)]
    return shape, flats


def resolve_device(arrays, device, on_device: bool, backend="auto") -> int:
    """The CUDA device ordinal to run on: for CUDA arrays the one they are all on (`device`, when
    given, must be that one), else `device` (default 0); device_option's checks first."""
    device = device_option(device, backend)
    if not on_device:
        return 0 if device is None else device
    ids = sorted({int(a.__dlpack_device__()[1]) for a in arrays if a is not None})
    if len(ids) > 1:
        raise ValueError(f"device: the CUDA arrays are on different devices {ids}; put them on one")
    if device is not None and int(device) != ids[0]:
        raise ValueError(f"device: {device}, but the CUDA arrays are on device {ids[0]}")
    return ids[0]


def current_stream(a) -> int:
    """The stream `a`'s library currently runs on, on `a`'s device (torch, CuPy), as a cudaStream_t
    handle (0 for a host array); hpcml queues its work there, so that it is ordered with the
    user's own work on it."""
    if not is_cuda(a):
        return 0
    if library(a) == "torch":
        import torch

        return int(torch.cuda.current_stream(a.device).cuda_stream)
    if library(a) == "cupy":
        import cupy  # type: ignore[import-not-found]

        with cupy.cuda.Device(a.device.id):
            return int(cupy.cuda.get_current_stream().ptr)
    return 0


def empty(like, shape, dtype: str, argument="x"):
    """An uninitialised array of `shape` and `dtype` (a NumPy name) where `like` (the input named
    `argument`) is: a NumPy array for a host array, else one from `like`'s library on its device."""
    if not is_cuda(like):
        return np.empty(shape, dtype=dtype)
    if library(like) == "torch":
        import torch

        return torch.empty(shape, dtype=getattr(torch, dtype), device=like.device)
    if library(like) == "cupy":
        import cupy  # type: ignore[import-not-found]

        with cupy.cuda.Device(like.device.id):
            return cupy.empty(shape, dtype=dtype)
    raise TypeError(f"{argument}: CUDA arrays from {library(like)!r} are not supported; pass a torch or CuPy array")


def _byte_range(a):
    """[first, last) bytes of a contiguous array's memory."""
    if isinstance(a, np.ndarray):
        start = a.__array_interface__["data"][0]
    elif library(a) == "torch":
        start = a.data_ptr()
        return start, start + a.numel() * a.element_size()
    else:
        start = a.__cuda_array_interface__["data"][0]
    return start, start + a.nbytes


def check_output(out, shape, dtype: str, device, inputs: dict, argument="out", host_for_cuda=False):
    """Checks a caller's output array: `shape` and `dtype` (a NumPy name), C-contiguous and
    writable, a NumPy array for host inputs (device None) or a CUDA array on `device`, sharing no
    memory with the inputs ({argument: array}, as the kernels read them). With host_for_cuda, CUDA
    inputs may also have a host output: a NumPy array or a torch CPU tensor (pinned or not). It is
    written in place, so nothing is converted: a copy would silently take the results."""
    on_device = device is not None
    host_out = isinstance(out, np.ndarray) or (library(out) == "torch" and out.device.type == "cpu")
    if on_device and host_for_cuda and host_out:
        on_device = False  # a host result of CUDA inputs: no device to match
    elif on_device != is_cuda(out) or (not on_device and not isinstance(out, np.ndarray)):
        if on_device:
            kind = ("a CUDA array (torch, CuPy) or a host array (NumPy, a torch CPU tensor), as the inputs are CUDA "
                    "arrays" if host_for_cuda else "a CUDA array (torch, CuPy), as the inputs are")
        else:
            kind = "a NumPy array, as the inputs are host arrays"
        raise TypeError(f"{argument}: must be {kind}; got {type(out).__module__}.{type(out).__name__}")
    if on_device and int(out.__dlpack_device__()[1]) != device:
        raise ValueError(f"{argument}: is on CUDA device {int(out.__dlpack_device__()[1])}, the inputs on {device}")
    if tuple(out.shape) != tuple(shape) or dtype_name(out.dtype) != dtype:
        raise ValueError(f"{argument}: has shape {tuple(out.shape)} and dtype {dtype_name(out.dtype)}, "
                         f"needs {tuple(shape)} and {dtype}")
    contiguous = out.is_contiguous() if library(out) == "torch" else out.flags.c_contiguous
    if not contiguous:
        raise ValueError(f"{argument}: must be C-contiguous")
    if isinstance(out, np.ndarray) and not out.flags.writeable:
        raise ValueError(f"{argument}: is read-only")
    first, last = _byte_range(out)
    for name, a in inputs.items():
        if a is not None and last > first:
            a_first, a_last = _byte_range(a)
            if a_first < last and first < a_last:
                raise ValueError(f"{argument}: shares memory with {name}")


# The ranges of the C++ parameters the bindings take.
INT_MAX = 2**31 - 1  # int
SIZE_MAX = 2**64 - 1  # std::size_t, std::uint64_t


def _bound(n: int) -> str:
    return {INT_MAX: "2**31 - 1", SIZE_MAX: "2**64 - 1"}.get(n, str(n))


def integer(value, argument: str, minimum=None, maximum=None) -> int:
    """`value` as an int, which it must be already (2.5 is not taken as 2, nor True as 1), from
    `minimum` to `maximum` where given (the range of the C++ parameter, or of what it means)."""
    integral = isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
    if not integral or (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        if minimum is not None and maximum is not None:
            expected = f"an integer from {_bound(minimum)} to {_bound(maximum)}"
        elif minimum is not None:
            expected = f"an integer >= {minimum}"
        else:
            expected = "an integer" if maximum is None else f"an integer <= {_bound(maximum)}"
        raise ValueError(f"{argument}: expected {expected}, got {value!r}")
    return int(value)


def boolean(value, argument: str) -> bool:
    """`value`, which must be True or False (a string "false" is not false)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{argument}: expected True or False, got {value!r}")
    return bool(value)


def real(value, argument: str) -> float:
    """`value` as a float: a real number (not a string, a bool or a complex)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{argument}: expected a real number, got {value!r}")
    return float(value)


def text(value, argument: str) -> str:
    """`value`, which must be a string (what it names, the C++ library checks)."""
    if not isinstance(value, str):
        raise ValueError(f"{argument}: expected a string, got {value!r}")
    return value


def choice(value, argument: str, names) -> str:
    """`value`, one of `names`: for the families without every method (the C++ names table lists
    them all), in the C++ library's words."""
    if text(value, argument) not in names:
        expected = ", ".join(names[:-1]) + " or " + names[-1]
        raise ValueError(f"{argument}: expected {expected}, got {value!r}")
    return value


# The methods of the families that have no sorted method (regret, the inverse Gaussian).
METHODS_WITHOUT_SORTED = ("auto", "fused", "naive")


def device_option(device, backend) -> "int | None":
    """`device` checked: None, or a CUDA ordinal (an integer from 0), refused where `backend` is
    "cpu" (the call could not honour it)."""
    if device is None:
        return None
    device = integer(device, "device", 0, INT_MAX)
    if backend == "cpu":
        raise ValueError(f"device: {device} names a CUDA device, but backend is 'cpu'; leave device out")
    return device

