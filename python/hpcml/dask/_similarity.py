"""hpcml.dask.similarity, similarity_pairs and to_zarr: the similarity as output tiles, one task each."""

from __future__ import annotations

import functools
import importlib
import itertools
from typing import Any, Callable, Dict, NamedTuple, Optional, Sequence, Set, Tuple, Union

import numpy as np
import numpy.typing as npt

from .. import _arrays, _hpcml
from .._similarity import Method, Mode
from .._similarity import similarity as _similarity
from .._similarity import similarity_pairs as _similarity_pairs
from .._types import Backend
from ._common import (Blocks, DaskArray, DaskArrayIn, DaskDataFrame, Delayed, HighLevelGraph, blocks, check_backend, da,
                      dask, float32_array, is_dask, tokenize)

DEFAULT_TILE = 4096
"""The default output tile edge: a 4096 x 4096 int32 tile is 64 MiB."""

Chunks = Union[Blocks, Tuple[Sequence[int], Sequence[int]], None]

_LAYOUT = "(samples, features)"


class _Tile(NamedTuple):
    """Where an output tile lies: its first row and column, and its rows and columns."""

    row0: int
    rows: int
    col0: int
    cols: int


class _Plan(NamedTuple):
    """The C++ tile plan (similarity_tile_plan) of the output: its row and column blocks (x's and
    y's feature blocks), each column block's width in output elements, and its tiles, each
    (row block, column block, row0, rows, col0, cols, role: "computed", "diagonal" or "mirror")."""

    rows: Tuple[int, ...]
    cols: Tuple[int, ...]
    widths: Tuple[int, ...]
    tiles: Sequence[Tuple[int, int, int, int, int, int, str]]


def _tile_plan(chunks: Chunks, x: Any, y: Any, given: Tuple[bool, bool], mode: str, dtype: str) -> _Plan:
    """The plan of `chunks` over x's features (rows) and y's (columns; x's when y is None: y = x).
    An int edge is cut by the C++ planner (a bitmask's column blocks, and its rows with y = x,
    rounded up to whole bytes); given blocks are checked here to cover the features, then there
    (whole bytes, the same rows and columns with y = x)."""
    other, other_name = (x, "x") if y is None else (y, "y")
    n, m = x.shape[1], other.shape[1]
    if isinstance(chunks, (int, np.integer)):
        return _plan(_hpcml._similarity_tile_plan(mode, dtype, n, m, y is None,
                                                  tile=_arrays.integer(chunks, "chunks", minimum=1)))
    if chunks is None:
        for argument, is_given in zip(("x", "y"), given):
            if not is_given:
                raise ValueError(f"chunks: None keeps the dask inputs' own feature blocks, but {argument} is not "
                                 "a dask array; pass an int tile edge")
        rows, cols = blocks(x.chunks[1], n, "x"), blocks(other.chunks[1], m, other_name)
    else:
        spec: Any = tuple(chunks)
        pair = len(spec) == 2 and all(isinstance(s, (tuple, list)) for s in spec)
        rows, cols = blocks(spec[0] if pair else spec, n, "x"), blocks(spec[1] if pair else spec, m, other_name)
    return _plan(_hpcml._similarity_tile_plan(mode, dtype, n, m, y is None, blocks=(list(rows), list(cols))))


def _plan(planned: Any) -> _Plan:
    rows, cols, widths, tiles = planned
    return _Plan(tuple(rows), tuple(cols), tuple(widths), tiles)


def _operands(x: Any, y: Any, chunks: Chunks, mode: str, dtype: str) -> Tuple[Any, Any, _Plan]:
    """x and y (None when y is x) as float32 dask arrays whose blocks are the tiles' inputs (all
    samples in one chunk, the features cut as the plan's blocks), and the plan."""
    mirrored = y is None or y is x
    xd = float32_array(x, "x", 2, _LAYOUT)
    yd = None if mirrored else float32_array(y, "y", 2, _LAYOUT)
    if yd is not None and yd.shape[0] != xd.shape[0]:
        raise ValueError(f"y: has {yd.shape[0]} samples (rows) but x has {xd.shape[0]}; "
                         "both must have the same number of samples")
    plan = _tile_plan(chunks, xd, yd, (is_dask(x), mirrored or is_dask(y)), mode, dtype)
    samples = xd.shape[0]
    xd = xd.rechunk(((samples,), plan.rows))
    return xd, None if yd is None else yd.rechunk(((samples,), plan.cols)), plan


def _tile_graph(name: str, x: Any, y: Any, plan: _Plan, compute: Callable[..., Any], mirror: Callable[..., Any]
                ) -> Any:
    """The graph of the plan's tiles (name, a, b), one task each, on top of x's and y's.

    Tile (a, b) is compute(x block a, y block b, tile=...), which depends on the two block keys,
    so each input block travels to a worker once however many tiles read it there, and nothing
    is embedded in the tasks. With y None (y = x), a diagonal tile is compute(x block a,
    tile=...) (hpcml's symmetric path) and a mirror (below the diagonal) is mirror(tile (b, a),
    tile=...), computed once for the pair.
    """
    other = x if y is None else y
    layer: Dict[Any, Any] = {}
    for a, b, row0, rows, col0, cols, role in plan.tiles:
        tile = _Tile(row0, rows, col0, cols)
        if role == "mirror":
            layer[(name, a, b)] = (functools.partial(mirror, tile=tile), (name, b, a))
        elif role == "diagonal":
            layer[(name, a, b)] = (functools.partial(compute, tile=tile), (x.name, 0, a))
        else:
            layer[(name, a, b)] = (functools.partial(compute, tile=tile), (x.name, 0, a), (other.name, 0, b))
    return HighLevelGraph.from_collections(name, layer, dependencies=[x] if y is None else [x, y])


# --- the tasks (run on the workers) -------------------------------------------------------------

def _similarity_tile(x: Any, y: Any = None, *, tile: _Tile, options: Dict[str, Any]) -> Any:
    return _similarity(x, y, **options)


def _transpose(upper: Any, *, tile: _Tile, mode: str, output: str) -> Any:
    # The upper tile is tile.cols x tile.rows; hpcml's transpose (the command line's mirrors:
    # threaded, bitmask by bit blocks) writes this tile's tile.rows x tile.cols, shaped as the
    # C++ output table says.
    mirror = np.empty(_hpcml._similarity_layout(mode, output, tile.rows, tile.cols)[1], upper.dtype)
    _hpcml._similarity_transpose(upper.view(np.uint8), output, tile.cols, tile.rows, mirror.view(np.uint8))
    return mirror


def _pairs_tile(x: Any, y: Any = None, *, tile: _Tile, options: Dict[str, Any]) -> Any:
    pd = importlib.import_module("pandas")  # (no annotations of its own)
    pairs = _similarity_pairs(x, y, **options)
    columns = {"i": pairs[0] + np.int64(tile.row0), "j": pairs[1] + np.int64(tile.col0)}
    return pd.DataFrame(columns if len(pairs) == 2 else {**columns, "count": pairs[2]})


def _swap_pairs(upper: Any, *, tile: _Tile) -> Any:
    pd = importlib.import_module("pandas")
    i, j = upper["j"].to_numpy(), upper["i"].to_numpy()
    order = np.lexsort((j, i))  # back to row-major order
    columns = {"i": i[order], "j": j[order]}
    if "count" in upper:
        columns["count"] = upper["count"].to_numpy()[order]
    return pd.DataFrame(columns)


# --- the API ------------------------------------------------------------------------------------

def similarity(x: DaskArrayIn, y: Optional[DaskArrayIn] = None, *, threshold: float = 1.0, mode: Mode = "count",
               dtype: Optional[Union[npt.DTypeLike, str]] = None, method: Method = "auto",
               backend: Backend = "auto", chunks: Chunks = DEFAULT_TILE) -> DaskArray:
    """hpcml.similarity(x, y) as a lazy dask array whose blocks are output tiles.

    Each block (a, b) is ``hpcml.similarity(x[:, rows a], y[:, columns b])``, run by a worker,
    so the result equals hpcml.similarity's (shape, dtype, bits) however it is cut. x's and y's
    feature blocks are the graph's inputs (all samples in one chunk): a block travels to a
    worker once, not once per tile. With y = x (y None, or y is x) each pair of mirrored tiles
    is computed once: the tiles above the diagonal by hpcml, those below by transposing them.

    Args:
        x: (n_samples, n): a NumPy array (or anything np.asarray takes) or a dask array; taken
            as float32, as hpcml.similarity does.
        y: (n_samples, m), as x; None (or x itself) for y = x.
        threshold: as hpcml.similarity's.
        mode: "count" or "all", as hpcml.similarity's.
        dtype: as hpcml.similarity's: None (the mode's default), int32, uint16 or uint8 in
            count mode, bool or "bitmask" in mode all (an (n, ceil(m / 8)) uint8 array, bits
            packed along the columns little-endian).
        method: as hpcml.similarity's.
        backend: "auto" (each worker uses its GPU where it has a usable one, else its CPU),
            "cpu" or "cuda".
        chunks: the output tiles: an int tile edge (default 4096); a tuple of block lengths
            along the features (x's, and y's too); a pair of such tuples (x's feature blocks,
            y's); or None to keep the dask inputs' own feature blocks. In bitmask, column
            blocks must be multiples of 8 but the last, so an int edge is rounded up to one.

    Returns:
        A dask array of hpcml.similarity's shape and dtype, chunked by output tile (in bitmask,
        by packed bytes: a tile of c columns is ceil(c / 8) wide).

    Raises:
        ValueError: x or y not 2-D, not real, or with different sample counts; chunks < 1,
            blocks that do not cover the features, different row and column blocks with y = x,
            bitmask column blocks that are not multiples of 8, None for a NumPy input; an option
            hpcml.similarity rejects (threshold, mode, dtype, method, backend), checked before
            anything runs. Errors on the workers (hpcml's, as hpcml.similarity raises them)
            come back when the result is computed.
    """
    dtype_name = "default" if dtype is None else _arrays.dtype_name(dtype)
    output, _, element, _ = _hpcml._similarity_layout(mode, dtype_name, 1, 1)
    xd, yd, plan = _operands(x, y, chunks, mode, dtype_name)  # bitmask: column blocks of whole bytes
    options: Dict[str, Any] = dict(threshold=_arrays.real(threshold, "threshold"), mode=mode, method=method,
                                   backend=backend, dtype=None if dtype is None else dtype_name)
    check_backend(backend)
    _similarity(np.zeros((xd.shape[0], 1), np.float32), **{**options, "backend": "cpu"})  # hpcml checks the options
    name = f"hpcml-similarity-{tokenize(xd.name, None if yd is None else yd.name, options)}"
    graph = _tile_graph(name, xd, yd, plan, functools.partial(_similarity_tile, options=options),
                        functools.partial(_transpose, mode=mode, output=output))
    return da.Array(graph, name, chunks=(plan.rows, plan.widths), dtype=element, meta=np.empty((0, 0), element))


def similarity_pairs(x: DaskArrayIn, y: Optional[DaskArrayIn] = None, *, threshold: float = 1.0, mode: Mode = "all",
                     min_count: Optional[int] = None, method: Method = "auto", backend: Backend = "auto",
                     chunks: Chunks = DEFAULT_TILE) -> DaskDataFrame:
    """hpcml.similarity_pairs(x, y) as a lazy dask DataFrame, one partition per output tile.

    Each partition holds the pairs of one tile (``hpcml.similarity_pairs`` on the tile's blocks,
    offset by the tile's first row and column), in row-major order within the tile; the
    partitions come in row-major tile order, so the frame is row-major within each tile row
    (rows of tile row a before those of a + 1) but not across the tiles of one row: sort by
    (i, j) for ``np.nonzero``'s order. With y = x, each tile below the diagonal is its mirrored
    tile's pairs swapped and sorted, not computed again.

    Args:
        x: (n_samples, n), NumPy or dask, as similarity's.
        y: (n_samples, m), as x; None (or x itself) for y = x.
        threshold: as hpcml.similarity_pairs'.
        mode: "all" (the pairs with every sample within the threshold) or "count" (those with
            S[i, j] >= min_count).
        min_count: count mode only: the least count kept (default 1).
        method: as hpcml.similarity's.
        backend: "auto", "cpu" or "cuda", as similarity's.
        chunks: the output tiles, as similarity's (no multiple-of-8 rule here).

    Returns:
        A dask DataFrame with columns i and j (int64, as hpcml.similarity_pairs returns them)
        and, in count mode, count (int32); its divisions are unknown (each partition's index
        starts at 0). Its meta is given: nothing is computed to infer it.

    Raises:
        ValueError: as similarity's, and min_count given in mode "all" or < 0.
    """
    dd, pd = importlib.import_module("dask.dataframe"), importlib.import_module("pandas")
    xd, yd, plan = _operands(x, y, chunks, mode, "default")
    # The inputs' tasks as an array computation sends them (fused), so that computing the frame
    # beside arrays of the same inputs never gives the scheduler two tasks under one key.
    xd, yd = dask.optimize(xd)[0], None if yd is None else dask.optimize(yd)[0]
    options: Dict[str, Any] = dict(threshold=_arrays.real(threshold, "threshold"), mode=mode, min_count=min_count,
                                   method=method, backend=backend)
    check_backend(backend)
    _similarity_pairs(np.zeros((xd.shape[0], 1), np.float32), **{**options, "backend": "cpu"})  # checks the options
    name = f"hpcml-similarity-pairs-{tokenize(xd.name, None if yd is None else yd.name, options)}"
    graph = _tile_graph(name, xd, yd, plan, functools.partial(_pairs_tile, options=options), _swap_pairs)
    meta = pd.DataFrame({"i": np.empty(0, np.int64), "j": np.empty(0, np.int64),
                         **({"count": np.empty(0, np.int32)} if mode == "count" else {})})
    partitions = [Delayed((name, a, b), graph, layer=name) for a, b, *_ in plan.tiles]  # row-major
    return dd.from_delayed(partitions, meta=meta, verify_meta=False)


# --- Zarr ---------------------------------------------------------------------------------------

def _regular_chunks(result: Any) -> Tuple[int, ...]:
    """The Zarr chunk shape that matches `result`'s blocks: Zarr's chunks are all the same but at
    the array's edge, so the blocks must be too."""
    shape = []
    for axis, lengths in enumerate(result.chunks):
        if any(b != lengths[0] for b in lengths[:-1]) or lengths[-1] > lengths[0]:
            raise ValueError(f"result: its blocks along axis {axis} are {lengths}; Zarr needs them all equal but "
                             "the last (pass an int chunks to similarity)")
        shape.append(max(lengths[0], 1))
    return tuple(shape)


_RESULT_ATTRIBUTE = "hpcml_dask_result"  # the result's dask name: its inputs and options, hashed


def _open_or_create(store: Any, result: Any, chunks: Tuple[int, ...], create_options: Dict[str, Any]) -> Any:
    """The Zarr array at `store`, checked to be this result's, or a new one for it. write_empty_chunks,
    which Zarr does not store with the array: a tile of zeros is written too, so that it counts
    as done."""
    import zarr

    if "shards" in create_options:
        raise ValueError("create_options: shards are refused: a chunk written is a tile done, and tiles that "
                         "share a shard would be written by different workers at once")
    config: Any = {"write_empty_chunks": True}
    try:
        array = zarr.open_array(store, mode="r+")
    except FileNotFoundError:
        attributes = {**create_options.pop("attributes", {}), _RESULT_ATTRIBUTE: result.name}
        return zarr.create_array(store, shape=result.shape, dtype=result.dtype, chunks=chunks, config=config,
                                 attributes=attributes, **create_options)
    found = (tuple(array.shape), np.dtype(array.dtype), tuple(array.chunks))
    wanted = (tuple(result.shape), np.dtype(result.dtype), chunks)
    if found != wanted or array.shards is not None:
        raise ValueError(f"store: holds an array of shape {found[0]}, dtype {found[1]}, chunks {found[2]} and "
                         f"shards {array.shards}, but result needs {wanted[0]}, {wanted[1]}, {wanted[2]} and no "
                         "shards; pass a new store or the one this result was written to")
    if array.attrs.get(_RESULT_ATTRIBUTE) != result.name:
        raise ValueError(f"store: holds the tiles of another result ({array.attrs.get(_RESULT_ATTRIBUTE)}: other "
                         f"inputs or options than this one's, {result.name}); resuming would mix the two: pass a "
                         "new store")
    return array.with_config(config)


def _stored_blocks(array: Any) -> Set[Tuple[int, ...]]:
    """The chunks of a Zarr array that are in its store."""
    from zarr.core.sync import sync  # Zarr's own loop, which its stores run on

    prefix = f"{array.store_path.path}/" if array.store_path.path else ""

    async def listing() -> Set[str]:
        return {key async for key in array.store_path.store.list_prefix(array.store_path.path)}

    keys = sync(listing())
    coordinates = itertools.product(*(range(n) for n in array.cdata_shape))
    return {c for c in coordinates if prefix + array.metadata.encode_chunk_key(c) in keys}


def _region(result: Any, block: Tuple[int, ...]) -> Tuple[slice, ...]:
    starts = (np.cumsum((0,) + lengths) for lengths in result.chunks)
    return tuple(slice(int(s[i]), int(s[i + 1])) for s, i in zip(starts, block))


def _store_block(array: Any, tile: Any, *, region: Tuple[slice, ...]) -> int:
    array[region] = tile
    return 1


def _load_block(array: Any, *, region: Tuple[slice, ...]) -> Any:
    return array[region]


def to_zarr(result: DaskArray, store: Any, **create_options: Any) -> int:
    """Writes a result of similarity to a Zarr array tile by tile, computing only the tiles that
    are not already stored: a rerun with the same store resumes an interrupted write.

    The Zarr array has the result's shape and dtype and one chunk per tile. A tile is stored
    once computed (a tile of zeros too: the array is written with write_empty_chunks), and a
    chunk in the store is a tile done. A rerun opens the array, finds which chunks are present,
    and computes and stores the others only; a missing tile that would be derived from a stored
    one (the mirrored tiles of y = x) reads it back rather than computing it again.

    The array's attributes record the result's dask name (a hash of its inputs and options), and
    a rerun refuses a store written for another result, whose tiles it would mix in.

    Args:
        result: a 2-D dask array returned by similarity (or any whose blocks are all the same
            size but the last along each axis, as Zarr's chunks are).
        store: where the Zarr array is: a path, or a Zarr store or StoreLike that every worker
            reaches (on a cluster of processes or machines, shared storage: an in-memory store
            would be written in each worker's copy and the call would store nothing).
        **create_options: passed to ``zarr.create_array`` when the store is new (compressors,
            attributes, ...; not shards).

    Returns:
        The number of tiles this call computed and stored (0 when the store was complete).

    Raises:
        ValueError: result not a 2-D dask array or with irregular blocks; an existing store
            whose array's shape, dtype or chunks are not the result's, that is sharded, or that
            was written for another result; shards in create_options.
    """
    if not is_dask(result) or result.ndim != 2:
        raise ValueError(f"result: expected a 2-D dask array from hpcml.dask.similarity, got {type(result).__name__}")
    array = _open_or_create(store, result, _regular_chunks(result), create_options)
    stored = _stored_blocks(array)
    (optimized,) = dask.optimize(result)  # the tasks an array computation sends: see similarity_pairs
    tiles = dict(optimized.__dask_graph__())
    name = f"hpcml-to-zarr-{tokenize(result.name, str(array.store_path), sorted(stored))}"
    # Stored tiles are read back, never recomputed, where a missing one needs them (a mirror), under
    # the tile's own key: were it already held by the cluster (a persisted result), the same values.
    for block in stored:
        tiles[(result.name,) + block] = (functools.partial(_load_block, region=_region(result, block)), array)
    missing = [b for b in itertools.product(*(range(len(c)) for c in result.chunks)) if b not in stored]
    for block in missing:
        tiles[(name,) + block] = (functools.partial(_store_block, region=_region(result, block)), array,
                                  (result.name,) + block)
    tiles[name] = (sum, [(name,) + block for block in missing])
    return int(dask.compute(Delayed(name, tiles))[0])
