"""hpcml on Dask: lazy arrays whose blocks hpcml computes, across processes, GPUs and machines.

``pip install hpcml[dask]`` (dask, distributed, zarr). ``import hpcml`` alone never imports dask.

    import dask.array as da, distributed, hpcml.dask
    client = distributed.Client()                                 # or a dask-cuda LocalCUDACluster
    x = da.random.standard_normal((256, 100_000), chunks=(256, 8192))
    S = hpcml.dask.similarity(x, mode="all", dtype="bitmask", chunks=8192)
    hpcml.dask.to_zarr(S, "S.zarr")                               # resumable: rerun to finish

- similarity(x, y): a dask array of hpcml.similarity's result, one block per output tile, each
  computed by hpcml.similarity on a worker from x's and y's feature blocks (each travels to a
  worker once); with y = x, mirrored tiles are computed once and transposed.
- similarity_pairs(x, y): hpcml.similarity_pairs as a dask DataFrame, one partition per tile.
- to_zarr(S, store): S written to a Zarr array tile by tile; a rerun computes only the tiles
  not yet stored.
- invgauss: hpcml.invgauss's functions over dask arrays, and a sampler whose draws do not depend
  on the chunking.
- solve_matrix_games(A): a dask array of games solved block by block.

Every task calls hpcml with the given backend: "auto" uses the worker's GPU where it has a
usable one, else its CPU. With dask-cuda's LocalCUDACluster each worker's CUDA_VISIBLE_DEVICES
lists its own GPU first, so device 0, the one hpcml uses, is that worker's GPU.
"""

from __future__ import annotations

from hpcml import _optional

try:
    import dask.array  # noqa: F401
except ModuleNotFoundError as _error:  # pragma: no cover  (no name bound: stubtest reads the module's names)
    raise _optional.missing(_error, "hpcml.dask") from None

from . import invgauss
from ._common import DaskArray, DaskDataFrame
from ._regret import solve_matrix_games
from ._similarity import DEFAULT_TILE, similarity, similarity_pairs, to_zarr

__all__ = ["similarity", "similarity_pairs", "to_zarr", "solve_matrix_games", "invgauss", "DEFAULT_TILE",
           "DaskArray", "DaskDataFrame"]
