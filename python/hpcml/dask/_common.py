"""What hpcml.dask's families share (private): the typed boundary, the backend check, block lengths."""

from __future__ import annotations

from typing import Any, Sequence, Tuple, Union

import dask as _dask
import dask.array as _da
import numpy as np
import numpy.typing as npt
from dask.base import tokenize as _tokenize
from dask.delayed import Delayed as _Delayed
from dask.highlevelgraph import HighLevelGraph as _HighLevelGraph

from .. import _arrays, _library
from .._types import TypeAliasType

# dask's annotations are partial (most of its calls are untyped for mypy --strict): hpcml.dask
# uses it through Any, and its collections cross hpcml's API as named Any.
dask: Any = _dask
da: Any = _da
tokenize: Any = _tokenize
Delayed: Any = _Delayed
HighLevelGraph: Any = _HighLevelGraph

DaskArray = TypeAliasType("DaskArray", Any)
"""A dask.array.Array."""
DaskDataFrame = TypeAliasType("DaskDataFrame", Any)
"""A dask.dataframe.DataFrame."""
DaskArrayIn = TypeAliasType("DaskArrayIn", Union[npt.ArrayLike, DaskArray])
"""An array argument: a dask array, or anything NumPy takes as an array (a host array)."""
# Block lengths along one axis: an int (every block that long but the last), or the lengths.
Blocks = Union[int, Sequence[int]]


def check_backend(backend: str) -> None:
    """Rejects an unknown backend now, with the library's message (ValueError naming it). A known
    one is resolved by each worker when its tasks run: "cuda" on a client without a GPU is fine."""
    if backend == "auto":
        return  # resolving it here would only print this machine's choice
    try:
        _library.resolve_backend(backend)
    except RuntimeError:
        pass  # no usable GPU here; the workers may have one


def is_dask(a: Any) -> bool:
    return isinstance(a, da.Array)


def float32_array(a: Any, argument: str, ndim: int, layout: str, values: str = "real numbers",
                  chunks: Any = -1) -> Any:
    """`a` (NumPy, anything np.asarray takes, or dask) as a float32 dask array, checked as hpcml
    checks host arrays (ValueError naming `argument`): hpcml computes in float32, and float32
    blocks travel in half float64's bytes. A host array becomes one graph key, cut by `chunks`."""
    if not is_dask(a):
        return da.from_array(_arrays.host_array(a, argument, ndim=ndim, layout=layout, values=values), chunks=chunks)
    if a.ndim != ndim:
        raise ValueError(f"{argument}: expected a {ndim}-D {layout} array, got shape {a.shape}")
    if not isinstance(getattr(a, "_meta", None), np.ndarray):  # hpcml.dask moves host blocks only
        raise ValueError(f"{argument}: a dask array of {type(a._meta).__module__}.{type(a._meta).__name__} "
                         "blocks; hpcml.dask takes NumPy blocks (each worker uses its GPU itself)")
    if a.dtype.kind not in "fiub":
        raise ValueError(f"{argument}: expected {values}, got dtype {a.dtype}")
    return a.astype(np.float32)


def blocks(spec: Blocks, length: int, what: str, multiple: int = 1) -> Tuple[int, ...]:
    """Block lengths that cover `length` elements of `what` (named in errors, as the argument
    `chunks`): an int edge (rounded up to a multiple of `multiple`), or the lengths themselves,
    each but the last a multiple of `multiple`."""
    if isinstance(spec, (int, np.integer)):
        edge = _arrays.integer(spec, "chunks", minimum=1)
        edge = -(-edge // multiple) * multiple
        return tuple(int(b) for b in da.core.normalize_chunks(edge, (length,))[0])
    lengths = tuple(_arrays.integer(b, "chunks", minimum=0) for b in spec)
    if sum(lengths) != length:
        raise ValueError(f"chunks: blocks {lengths} cover {sum(lengths)} elements, but {what} has {length}")
    if 0 in lengths and length > 0:
        raise ValueError(f"chunks: blocks {lengths} include an empty one")
    if any(b % multiple for b in lengths[:-1]):
        raise ValueError(f"chunks: blocks {lengths} of {what}: each but the last must be a multiple of "
                         f"{multiple} (bitmask tiles pack 8 columns a byte)")
    return lengths
