"""hpcml.dask on a local cluster of worker processes: the similarity's tiles, its pair list and
its Zarr resume equal one hpcml call and NumPy's broadcast bit for bit however the inputs are cut;
each input block travels to a worker once; a worker killed mid-computation changes nothing; the
other families equal hpcml's own calls."""

import collections
import hashlib
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import hpcml

REASON = "{} is not installed (pip install 'hpcml[dask]')"
da = pytest.importorskip("dask.array", reason=REASON.format("dask"))
distributed = pytest.importorskip("distributed", reason=REASON.format("distributed"))
zarr = pytest.importorskip("zarr", reason=REASON.format("zarr"))
pytest.importorskip("dask.dataframe", reason=REASON.format("dask[dataframe] (pandas, pyarrow)"))
import cloudpickle  # noqa: E402  (dask's own dependency)
import dask  # noqa: E402

import hpcml.dask as hd  # noqa: E402
import hpcml.dask.invgauss as hig  # noqa: E402

MODES = [("count", None), ("count", "uint16"), ("count", "uint8"), ("all", "bool"), ("all", "bitmask")]


@pytest.fixture(scope="module", autouse=True)
def client():
    # The Active Memory Manager drops replicas that no task waiting on a worker needs now; off,
    # so that an input block fetched by a worker stays there and the transfer count is exact.
    with dask.config.set({"distributed.scheduler.active-memory-manager.start": False}):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None)
    with cluster, distributed.Client(cluster) as c:
        yield c


def test_import_hpcml_does_not_import_dask():
    code = "import sys, hpcml; assert 'dask' not in sys.modules, 'import hpcml imported dask'"
    subprocess.run([sys.executable, "-c", code], check=True)


def features(samples, n, seed):
    """Features with their own offsets: in mode "all" some pairs pass and most do not."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((samples, n)) * 0.3 + rng.standard_normal(n) * 2.0).astype(np.float32)


def numpy_similarity(x, y, mode, dtype, t=1.0):
    within = np.abs(x[:, :, None] - y[:, None, :]) < np.float32(t)
    if mode == "count":
        return within.sum(0).astype(dtype or np.int32)
    s = within.all(0)
    return np.packbits(s, axis=1, bitorder="little") if dtype == "bitmask" else s


def blocks_of(lengths):
    starts = np.cumsum((0,) + tuple(lengths))
    return [slice(a, b) for a, b in zip(starts[:-1], starts[1:])]


@pytest.mark.parametrize("mode,dtype", MODES)
@pytest.mark.parametrize("which_y", ["none", "is_x", "given"])
@pytest.mark.parametrize("as_dask", [False, True])
def test_similarity_equals_hpcml_and_numpy(mode, dtype, which_y, as_dask):
    x, other = features(37, 333, seed=1), features(37, 517, seed=2)
    y = {"none": None, "is_x": x, "given": other}[which_y]
    xin = da.from_array(x, chunks=(10, 77)) if as_dask else x  # rechunked: all samples in one chunk
    yin = xin if which_y == "is_x" else (da.from_array(y, chunks=(13, 91)) if as_dask and y is not None else y)
    chunks = 128 if as_dask else 100  # neither divides the features
    S = hd.similarity(xin, yin, mode=mode, dtype=dtype, chunks=chunks)
    want = hpcml.similarity(x, y, mode=mode, dtype=dtype)
    assert S.shape == want.shape and S.dtype == want.dtype
    if dtype == "bitmask":  # the columns' tile edge rounded up to whole bytes (the rows' too where y is x)
        assert S.chunks[1][0] == -(-chunks // 8)
        assert S.chunks[0][0] == (chunks if which_y == "given" else -(-chunks // 8) * 8)
    got = S.compute()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, numpy_similarity(x, x if y is None else y, mode, dtype))


@pytest.mark.parametrize("mode,dtype", [("count", None), ("all", "bitmask")])
def test_similarity_keeps_dask_chunking_and_takes_block_tuples(mode, dtype):
    x, y = features(37, 300, seed=3), features(37, 213, seed=4)
    want = hpcml.similarity(x, y, mode=mode, dtype=dtype)
    own = hd.similarity(da.from_array(x, chunks=(37, 88)), da.from_array(y, chunks=(5, 64)), mode=mode, dtype=dtype,
                        chunks=None)
    assert own.chunks[0] == (88, 88, 88, 36)
    np.testing.assert_array_equal(own.compute(), want)
    pair = hd.similarity(x, y, mode=mode, dtype=dtype, chunks=((160, 140), (72, 72, 69)))
    assert pair.chunks[0] == (160, 140)
    np.testing.assert_array_equal(pair.compute(), want)
    mirrored = hd.similarity(x, mode=mode, dtype=dtype, chunks=(16, 200, 84))
    np.testing.assert_array_equal(mirrored.compute(), hpcml.similarity(x, mode=mode, dtype=dtype))


def test_mirrored_tiles_computed_once_and_inputs_are_keys():
    x = features(37, 333, seed=5)
    S = hd.similarity(x, chunks=100)
    layer = dict(S.dask.layers[S.name])
    calls = [task for task in layer.values() if task[0].func.__name__ == "_similarity_tile"]
    assert len(layer) == 16 and len(calls) == 4 * 5 // 2  # the upper triangle and the diagonal
    # Each task names its input blocks by key: none carries the array (49 KB) with it.
    assert max(len(cloudpickle.dumps(task)) for task in layer.values()) < 4096
    inputs = S.dask.dependencies[S.name]
    assert all(isinstance(arg, tuple) and arg[0] in inputs | {S.name} for task in layer.values() for arg in task[1:])


def test_each_input_block_travels_to_a_worker_once(client):
    x, y = features(37, 700, seed=6), features(37, 650, seed=7)
    S = hd.similarity(da.from_array(x, chunks=(37, 100)), da.from_array(y, chunks=(37, 100)), chunks=100)
    inputs = S.dask.dependencies[S.name]
    n_blocks = len(S.chunks[0]) + len(S.chunks[1])
    client.run(lambda dask_worker: dask_worker.transfer_incoming_log.clear())
    np.testing.assert_array_equal(S.compute(), hpcml.similarity(x, y))
    logs = client.run(lambda dask_worker: [k for entry in dask_worker.transfer_incoming_log for k in entry["keys"]])
    arrivals = {worker: collections.Counter(k for k in keys if isinstance(k, tuple) and k[0] in inputs)
                for worker, keys in logs.items()}
    assert all(count == 1 for counter in arrivals.values() for count in counter.values()), arrivals
    total = sum(sum(counter.values()) for counter in arrivals.values())
    assert 0 < total <= n_blocks * len(logs) < 2 * S.npartitions  # each of the 49 tiles reads two blocks


def test_worker_killed_mid_computation(client):
    x = features(64, 3000, seed=8)
    S = client.persist(hd.similarity(x, chunks=100))  # 900 tiles, 465 of them by hpcml
    futures = distributed.futures_of(S)
    deadline = time.monotonic() + 60
    while sum(f.done() for f in futures) < 5 and time.monotonic() < deadline:
        time.sleep(0.002)
    holders = collections.Counter(w for ws in client.who_has(futures).values() for w in ws)
    victim = holders.most_common(1)[0][0]
    pid = client.run(os.getpid, workers=[victim])[victim]
    done_at_kill = sum(f.done() for f in futures)
    os.kill(pid, signal.SIGKILL)  # the worker process, not its nanny
    assert done_at_kill < len(futures), "the computation ended before the kill: make it longer"
    np.testing.assert_array_equal(S.compute(), hpcml.similarity(x))
    client.wait_for_workers(2, timeout=60)  # the nanny restarted it
    assert victim not in client.scheduler_info()["workers"]


@pytest.mark.parametrize("mode", ["all", "count"])
@pytest.mark.parametrize("which_y", ["none", "given"])
def test_pairs_equal_nonzero_in_row_major_tile_order(mode, which_y):
    x = features(37, 333, seed=9)
    y = None if which_y == "none" else features(37, 290, seed=10)
    min_count = 20 if mode == "count" else None
    P = hd.similarity_pairs(da.from_array(x, chunks=(37, 50)), y, threshold=1.0, mode=mode, min_count=min_count,
                            chunks=100)
    columns = {"i": np.int64, "j": np.int64, **({"count": np.int32} if mode == "count" else {})}
    assert dict(P.dtypes) == {k: np.dtype(v) for k, v in columns.items()}  # from meta: nothing computed
    got = P.compute()
    assert dict(got.dtypes) == {k: np.dtype(v) for k, v in columns.items()}  # the computed frame's too
    S = hpcml.similarity(x, y, threshold=1.0, mode=mode)
    passed = S >= min_count if mode == "count" else S
    i, j = np.nonzero(passed)
    # Row-major by tile, and row-major within each tile.
    order = [np.flatnonzero((i >= r.start) & (i < r.stop) & (j >= c.start) & (j < c.stop))
             for r in blocks_of((100, 100, 100, 33)) for c in blocks_of((100, 100, 100, 33) if y is None else (100, 100, 90))]
    order = np.concatenate(order)
    assert len(i) > 0 and P.npartitions == (16 if y is None else 12)
    np.testing.assert_array_equal(got["i"].to_numpy(), i[order])
    np.testing.assert_array_equal(got["j"].to_numpy(), j[order])
    if mode == "count":
        np.testing.assert_array_equal(got["count"].to_numpy(), S[i, j][order])


def test_to_zarr_computes_only_the_missing_tiles(tmp_path):
    x = features(37, 333, seed=11)
    S = hd.similarity(x, mode="all", dtype="bitmask", chunks=64)  # y = x: mirrored tiles
    want = hpcml.similarity(x, mode="all", dtype="bitmask")
    store = str(tmp_path / "S.zarr")
    tiles = len(S.chunks[0]) * len(S.chunks[1])
    assert hd.to_zarr(S, store) == tiles
    z = zarr.open_array(store, mode="r")
    assert z.chunks == (64, 8) and z.nchunks_initialized == tiles  # zero tiles stored too: they are done
    np.testing.assert_array_equal(z[:], want)
    # Both of a mirrored pair, an upper tile whose lower one stays, and a lower one whose upper stays.
    lost = [(0, 3), (3, 0), (1, 2), (4, 1)]
    for block in lost:
        os.remove(os.path.join(store, z.metadata.encode_chunk_key(block)))
    assert hd.to_zarr(S, store) == len(lost)
    np.testing.assert_array_equal(zarr.open_array(store, mode="r")[:], want)
    assert hd.to_zarr(S, store) == 0
    # A stored tile is trusted, never computed again: one overwritten stays so, and the lost
    # mirror of another overwritten one is derived from what is stored.
    z = zarr.open_array(store, mode="r+")
    z[0:64, 0:8] = 0xFF  # tile (0, 0)
    z[64:128, 32:40] = 0xFF  # tile (1, 4): rows 64 to 127, columns 256 to 319, all set
    os.remove(os.path.join(store, z.metadata.encode_chunk_key((4, 1))))
    assert hd.to_zarr(S, store) == 1
    z = zarr.open_array(store, mode="r")
    assert (z[0:64, 0:8] == 0xFF).all() and (z[256:320, 8:16] == 0xFF).all()
    with pytest.raises(ValueError, match="^store: "):
        hd.to_zarr(hd.similarity(x, chunks=64), store)
    # The same shape, dtype and tiles, but another threshold: another result's tiles.
    with pytest.raises(ValueError, match="^store: holds the tiles of another result"):
        hd.to_zarr(hd.similarity(x, mode="all", dtype="bitmask", chunks=64, threshold=0.5), store)
    with pytest.raises(ValueError, match="^create_options: shards"):
        hd.to_zarr(S, str(tmp_path / "sharded.zarr"), shards=(128, 16))
    with pytest.raises(ValueError, match="^result: "):
        hd.to_zarr(hd.similarity(x, chunks=(100, 50, 183)), str(tmp_path / "other.zarr"))


def test_plans_are_those_stores_written_before_the_library_planned_them():
    # The graphs over a grid of shapes, chunks, output types and y = x, hashed: their names, chunks
    # and tiles (each tile's key, task, tile and inputs) equal those of the release before the
    # tiles came from the C++ plan (similarity_tile_plan, 3792365). to_zarr resumes a store whose
    # recorded name, shape and chunks are the result's: equal graphs mean a store written then
    # resumes now. A change of plan must change this digest on purpose, and say that such stores
    # start over. (The names hash NumPy's bytes with dask's tokenize: dask as pinned in
    # constraints.txt.)
    digest = hashlib.sha256()
    rng = np.random.default_rng(0)
    for n, m in ((1, 1), (13, 13), (40, 40), (40, 27), (100, 9)):
        x, y = rng.standard_normal((5, n)).astype(np.float32), rng.standard_normal((5, m)).astype(np.float32)
        for same in (True, False):
            for dtype in (None, "uint8", "bool", "bitmask"):
                for chunks in (1, 7, 8, 13, 4096, (8, 5) if n == 13 else None):
                    if (same and n != m) or chunks is None:
                        continue
                    mode = "all" if dtype in ("bool", "bitmask") else "count"
                    r = hd.similarity(x, None if same else y, mode=mode, dtype=dtype, chunks=chunks)
                    layer = dict(r.__dask_graph__().layers[r.name])
                    tasks = [(key[1:], layer[key][0].func.__name__, (("tile", layer[key][0].keywords["tile"]),),
                              tuple(a[1:] for a in layer[key][1:])) for key in sorted(layer)]
                    digest.update(repr((n, m, same, dtype, chunks, r.name, r.chunks, tasks)).encode())
    assert digest.hexdigest() == "ecbd012b0655162d5deb3ed6e3c56fd1a467554b1142a0f5f6790b3a5ed30cc3"


def test_to_zarr_count_with_y(tmp_path):
    x, y = features(37, 300, seed=12), features(37, 250, seed=13)
    S = hd.similarity(x, y, dtype=np.uint8, chunks=100)
    assert hd.to_zarr(S, str(tmp_path / "S.zarr")) == 9
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "S.zarr"), mode="r")[:],
                                  numpy_similarity(x, y, "count", np.uint8))


def test_errors_name_the_argument():
    x = features(37, 300, seed=14)
    for chunks in (0, (100, 100), ((100, 200), (150, 150)), (100, -100, 300)):
        with pytest.raises(ValueError, match="^chunks: "):
            hd.similarity(x, chunks=chunks)
    with pytest.raises(ValueError, match="^chunks: .*not a dask array"):
        hd.similarity(x, chunks=None)
    with pytest.raises(ValueError, match="^y: has 36 samples"):
        hd.similarity(x, features(36, 300, seed=15))
    with pytest.raises(ValueError, match="^x: "):
        hd.similarity(np.zeros((2, 3, 4)))
    with pytest.raises(ValueError, match="^mode: "):
        hd.similarity(x, mode="most")
    with pytest.raises(ValueError, match="^threshold: "):
        hd.similarity_pairs(x, threshold=-1.0)
    with pytest.raises(ValueError, match="^backend: "):
        hd.similarity(x, backend="tpu")
    # Bitmask: a block tuple that covers x does not cover a y of another length, and column
    # blocks that are not whole bytes are refused, not rounded.
    y = features(37, 250, seed=16)
    with pytest.raises(ValueError, match="^chunks: .* y has 250"):
        hd.similarity(x, y, mode="all", dtype="bitmask", chunks=(96, 96, 108))
    with pytest.raises(ValueError, match="^chunks: .*multiple of 8"):
        hd.similarity(x, da.from_array(y, chunks=(37, 100)), mode="all", dtype="bitmask",
                      chunks=((96, 96, 108), (100, 100, 50)))
    with pytest.raises(ValueError, match="^chunks: .*multiple of 8"):
        hd.similarity(da.from_array(x, chunks=(37, 96)), da.from_array(y, chunks=(37, 100)), mode="all",
                      dtype="bitmask", chunks=None)
    with pytest.raises(ValueError, match="^function: "):
        hig.evaluate("mean", 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="^n: "):
        hig.sample(-1, 1.0, 1.0)
    with pytest.raises(ValueError, match="^mu: "):
        hig.sample(10, np.ones(9), 1.0)
    with pytest.raises(ValueError, match="^dtype: "):
        hig.sample(10, 1.0, 1.0, dtype=np.int32)
    with pytest.raises(ValueError, match="^A: "):
        hd.solve_matrix_games(np.zeros((3, 3)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_invgauss_functions_equal_hpcml(dtype):
    rng = np.random.default_rng(17)
    x, mu = rng.uniform(0.05, 3.0, (13, 47)).astype(dtype), rng.uniform(0.5, 2.0, 47).astype(dtype)
    p = rng.uniform(0.0, 1.0, 4096).astype(dtype)
    for name in hpcml.invgauss.functions():
        values = p if name == "ppf" else x
        got = hig.evaluate(name, da.from_array(values, chunks=(5, 9) if values.ndim == 2 else 1000),
                           da.from_array(mu, chunks=13) if values.ndim == 2 else mu[0], dtype(2.0))
        want = hpcml.invgauss.evaluate(name, values, mu if values.ndim == 2 else mu[0], dtype(2.0))
        assert got.dtype == want.dtype == dtype and got.shape == want.shape
        # hpcml computes every element in a full vector lane: the bits do not depend on the blocks.
        np.testing.assert_array_equal(got.compute(), want)
    assert hig.pdf(1.0, 1.0, 2.0).compute() == hpcml.invgauss.pdf(1.0, 1.0, 2.0)
    for function, name in ((hig.pdf, "pdf"), (hig.logpdf, "logpdf"), (hig.cdf, "cdf"), (hig.sf, "sf"),
                           (hig.logcdf, "logcdf"), (hig.logsf, "logsf"), (hig.ppf, "ppf"),
                           (hig.standardize, "standardize"), (hig.standardized_pdf, "standardized_pdf")):
        np.testing.assert_array_equal(function(p[:64], 1.5, 2.0).compute(),
                                      hpcml.invgauss.evaluate(name, p[:64], 1.5, 2.0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sample_does_not_depend_on_the_chunking(dtype):
    mu = np.random.default_rng(18).uniform(0.5, 2.0, 100)
    np.testing.assert_array_equal(hig.sample(100, 1.5, 2.0, seed=7, chunks=7, dtype=dtype).compute(),
                                  hpcml.invgauss.sample(100, 1.5, 2.0, seed=7, dtype=dtype))
    got = hig.sample(100, da.from_array(mu, chunks=11), np.full(100, 3.0), seed=7, chunks=(30, 1, 69), dtype=dtype)
    assert got.chunks == ((30, 1, 69),) and got.dtype == dtype
    np.testing.assert_array_equal(got.compute(), hpcml.invgauss.sample(100, mu, np.full(100, 3.0), seed=7, dtype=dtype))


def test_distance_to_normal_equals_hpcml():
    rng = np.random.default_rng(19)
    mu, lam = rng.uniform(0.5, 2.0, 30), rng.uniform(1.0, 50.0, 30)
    got = hig.distance_to_normal(da.from_array(mu, chunks=7), lam, metric="both", grid=(-8.0, 8.0, 401))
    tv, ks = dask.compute(got["tv"], got["ks"])
    want = hpcml.invgauss.distance_to_normal(mu, lam, metric="both", grid=(-8.0, 8.0, 401))
    np.testing.assert_allclose(tv, want["tv"], rtol=1e-13)
    np.testing.assert_allclose(ks, want["ks"], rtol=1e-13)
    np.testing.assert_allclose(hig.distance_to_normal(mu, 3.0, metric="ks").compute(),
                               hpcml.invgauss.distance_to_normal(mu, 3.0, metric="ks"), rtol=1e-13)


def test_solve_matrix_games_equals_one_call():
    A = np.random.default_rng(20).standard_normal((23, 3, 4))
    got = hd.solve_matrix_games(da.from_array(A, chunks=(5, 2, 4)), iterations=50, record_every=10)
    want = hpcml.solve_matrix_games(A, iterations=50, record_every=10)
    fields = ("row_strategy", "col_strategy", "value", "gap", "eps_bound", "curve")
    computed = dask.compute(*(getattr(got, f) for f in fields))
    for field, value in zip(fields, computed):
        np.testing.assert_array_equal(value, getattr(want, field), err_msg=field)
    assert got.row_strategy.chunks[0] == (5, 5, 5, 5, 3) and got.eps_bound_valid == want.eps_bound_valid
    assert [s["method"] for s in got.stats["blocks"].compute()] == ["fused"] * 5
    options = dict(iterations=50, variant="rm", alternating=False, averaging="uniform")  # eps_bound is a bound
    uniform = hd.solve_matrix_games(A, chunks=10, **options)
    assert uniform.eps_bound_valid and uniform.gap.chunks[0] == (10, 10, 3)
    np.testing.assert_array_equal(uniform.gap.compute(), hpcml.solve_matrix_games(A, **options).gap)
    # Sampled draws are keyed by the game's number in the whole batch (each block's first_game).
    sampled = dict(iterations=30, sampled=True, seed=5)
    np.testing.assert_array_equal(hd.solve_matrix_games(A, chunks=(4, 19), **sampled).row_strategy.compute(),
                                  hpcml.solve_matrix_games(A, **sampled).row_strategy)
