import subprocess
import sys

import numpy as np
import pytest

import hpcml
from backends import BACKENDS, needs_cuda



def numpy_counts(x, y, t=1.0):
    x = np.asarray(x, dtype=np.float32)
    y = np.asarray(y, dtype=np.float32)
    with np.errstate(invalid="ignore"):
        return (np.abs(x[:, :, None] - y[:, None, :]) < np.float32(t)).sum(0)


def data(rng, shape, specials=True):
    a = rng.standard_normal(shape).astype(np.float32)
    q = rng.integers(-8, 9, size=shape).astype(np.float32) * 0.25
    a = np.where(rng.random(shape) < 0.4, q, a)
    if specials:
        r = rng.random(shape)
        a[r < 0.02] = np.nan
        a[(r >= 0.02) & (r < 0.03)] = np.inf
        a[(r >= 0.03) & (r < 0.04)] = -np.inf
    return a


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("method", ["fused", "sorted", "naive"])
@pytest.mark.parametrize("tile", [None, 1, 7, 64])
@pytest.mark.parametrize("samples,n,m", [(1, 1, 1), (37, 19, 23), (100, 5, 41)])
def test_counts_equal_numpy(backend, method, tile, samples, n, m):
    rng = np.random.default_rng(samples * 1000 + n)
    x, y = data(rng, (samples, n)), data(rng, (samples, m))
    expected = numpy_counts(x, y)
    got = hpcml.similarity(x, y, tile=tile, backend=backend, method=method)
    assert got.dtype == np.int32 and got.shape == (n, m)
    np.testing.assert_array_equal(got, expected)
    for dtype in (np.uint16, np.uint8):
        np.testing.assert_array_equal(hpcml.similarity(x, y, dtype=dtype, tile=tile, backend=backend, method=method),
                                      expected.astype(dtype))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("method", ["fused", "sorted", "naive"])
def test_all_mode_bool_and_bitmask(backend, method):
    rng = np.random.default_rng(7)
    x, y = data(rng, (6, 30), specials=False) * 0.4, data(rng, (6, 21), specials=False) * 0.4
    expected = numpy_counts(x, y) == 6
    assert expected.any() and not expected.all()
    got = hpcml.similarity(x, y, mode="all", backend=backend, method=method, tile=9)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, expected)
    bits = hpcml.similarity(x, y, mode="all", dtype="bitmask", backend=backend, method=method, tile=9)
    np.testing.assert_array_equal(bits, np.packbits(expected, axis=1, bitorder="little"))


def test_cpu_kernel_is_named_and_every_kernel_agrees(monkeypatch):
    levels = hpcml.cpu_kernel_names()
    assert levels[-1] == "baseline" and hpcml.cpu_kernel() in levels
    # The lesser kernels on this CPU too (the variable is read at each call).
    rng = np.random.default_rng(15)
    x = data(rng, (70, 90))
    for kernel, allowed in (("avx2", ("avx2", "baseline")), ("baseline", ("baseline",))):
        monkeypatch.setenv("HPCML_CPU_KERNEL", kernel)
        assert hpcml.cpu_kernel() in allowed
        assert hpcml.cpu_kernel_pair_samples_per_cycle() == {"avx2": 8, "baseline": 4}[hpcml.cpu_kernel()]
        np.testing.assert_array_equal(hpcml.similarity(x, backend="cpu"), numpy_counts(x, x))
    monkeypatch.setenv("HPCML_CPU_KERNEL", "sse")
    expected = ", ".join(levels[:-1]) + " or " + levels[-1]  # "avx512, avx2 or baseline"
    with pytest.raises(ValueError, match=f"HPCML_CPU_KERNEL: expected {expected}, got 'sse'"):
        hpcml.similarity(x, backend="cpu")


def test_y_defaults_to_x_and_threshold():
    rng = np.random.default_rng(3)
    x = data(rng, (50, 33))
    for t in (0.0, 0.1, 1.0, 2.5):
        np.testing.assert_array_equal(hpcml.similarity(x, threshold=t), numpy_counts(x, x, t))


def test_float64_and_fortran_inputs_are_taken_as_float32():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((20, 9))
    np.testing.assert_array_equal(hpcml.similarity(np.asfortranarray(x)), numpy_counts(x, x))


def test_empty_samples():
    x = np.zeros((0, 4), np.float32)
    assert (hpcml.similarity(x) == 0).all()
    assert hpcml.similarity(x, mode="all").all()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ["count", "all"])
def test_sorted_equals_numpy_across_its_tiles(backend, mode):
    # More than one of the sorted method's tiles and bands (CPU 512, GPU 256), groups of samples
    # (CPU 16, GPU 8) and a tail.
    rng = np.random.default_rng(11)
    x, y = data(rng, (21, 530)), data(rng, (21, 1030))
    counts = numpy_counts(x, y)
    expected = counts if mode == "count" else counts == 21
    got, stats = hpcml.similarity(x, y, mode=mode, backend=backend, method="sorted", return_stats=True)
    assert stats["method"] == "sorted"
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(hpcml.similarity(x, mode=mode, backend=backend, method="sorted", tile=300),
                                  numpy_counts(x, x) if mode == "count" else numpy_counts(x, x) == 21)


@needs_cuda
def test_sorted_on_the_gpu_says_how_many_samples_it_counts():
    with pytest.raises(ValueError, match="method: the sorted method on the GPU counts at most 1023 samples"):
        hpcml.similarity(np.ones((1024, 3), np.float32), backend="cuda", method="sorted")
    assert hpcml.similarity(np.ones((1024, 3), np.float32), mode="all", backend="cuda", method="sorted").all()


def test_stats():
    x = np.random.default_rng(5).standard_normal((64, 40)).astype(np.float32)
    _, fused = hpcml.similarity(x, backend="cpu", return_stats=True)
    _, naive = hpcml.similarity(x, backend="cpu", method="naive", return_stats=True)
    assert set(fused) == {"backend", "method", "seconds", "peak_device_bytes", "peak_host_bytes", "cpu_energy_j",
                          "cpu_energy"}
    assert fused["backend"] == "cpu" and naive["method"] == "naive"
    assert fused["method"] in ("fused", "sorted")  # the default, auto, says which it ran
    assert naive["peak_host_bytes"] >= 64 * 40 * 40 * 5 > 10 * fused["peak_host_bytes"]


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(threshold=-1.0), "threshold"),
        (dict(threshold=float("nan")), "threshold"),
        (dict(tile=0), "tile"),
        (dict(mode="any"), "mode"),
        (dict(dtype=np.float32), "dtype"),
        (dict(mode="all", dtype=np.int32), "^dtype: int32 is an output of mode count"),
        (dict(backend="gpu"), "backend"),
        (dict(method="fast"), "method"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs, match):
    x = np.zeros((4, 3), np.float32)
    with pytest.raises(ValueError, match=match):
        hpcml.similarity(x, **kwargs)


def test_shape_errors():
    with pytest.raises(ValueError, match="y: has 3 samples"):
        hpcml.similarity(np.zeros((4, 3)), np.zeros((3, 3)))
    with pytest.raises(ValueError, match="x: expected a 2-D"):
        hpcml.similarity(np.zeros(5))
    with pytest.raises(ValueError, match="^dtype: uint8 holds counts up to 255, but there are 256 samples"):
        hpcml.similarity(np.zeros((256, 2)), dtype=np.uint8)


def test_naive_that_would_not_fit_raises_memory_error():
    x = np.zeros((1000, 20000), np.float32)
    with pytest.raises(MemoryError, match="needs 2.00 TB"):
        hpcml.similarity(x, backend="cpu", method="naive")


@pytest.mark.parametrize("backend", BACKENDS)
def test_out_is_written_in_place_and_reused(backend):
    rng = np.random.default_rng(12)
    x, y = data(rng, (40, 37)), data(rng, (40, 29))
    out = np.full((37, 29), -5, np.int32)
    assert hpcml.similarity(x, y, out=out, backend=backend, tile=16) is out
    np.testing.assert_array_equal(out, numpy_counts(x, y))
    x2 = data(rng, (40, 37))
    assert hpcml.similarity(x2, y, out=out, backend=backend) is out  # every element rewritten
    np.testing.assert_array_equal(out, numpy_counts(x2, y))
    small = np.zeros((37, 29), np.uint8)
    s, stats = hpcml.similarity(x, y, out=small, dtype="uint8", backend=backend, return_stats=True)
    assert s is small and stats["backend"] == backend
    np.testing.assert_array_equal(small, numpy_counts(x, y))
    bits = np.zeros((37, 4), np.uint8)
    hpcml.similarity(x, y, mode="all", dtype="bitmask", out=bits, backend=backend)
    all_ = numpy_counts(x, y) == 40
    np.testing.assert_array_equal(bits, np.packbits(all_, axis=1, bitorder="little"))
    flags = np.zeros((37, 37), bool)
    hpcml.similarity(x, mode="all", out=flags, backend=backend)  # y = x, symmetric
    np.testing.assert_array_equal(flags, numpy_counts(x, x) == 40)


def test_bad_out_raises_naming_it():
    rng = np.random.default_rng(13)
    x = data(rng, (10, 6))
    bad = [
        (np.zeros((6, 6), np.int64), ValueError, "out: has shape \\(6, 6\\) and dtype int64, needs \\(6, 6\\) and int32"),
        (np.zeros((6, 5), np.int32), ValueError, "needs \\(6, 6\\)"),
        (np.zeros((6, 12), np.int32)[:, ::2], ValueError, "out: must be C-contiguous"),
        (np.asfortranarray(np.zeros((6, 6), np.int32)), ValueError, "out: must be C-contiguous"),
        ([[0] * 6] * 6, TypeError, "out: must be a NumPy array"),
    ]
    ro = np.zeros((6, 6), np.int32)
    ro.flags.writeable = False
    bad.append((ro, ValueError, "out: is read-only"))
    for out, error, match in bad:
        with pytest.raises(error, match=match):
            hpcml.similarity(x, out=out)
    # Sharing memory with an input the kernels read while writing out.
    buf = np.zeros(10 * 6 + 36, np.float32)
    xs = buf[:60].reshape(10, 6)
    with pytest.raises(ValueError, match="out: shares memory with x"):
        hpcml.similarity(xs, out=buf[24:60].view(np.int32).reshape(6, 6))
    with pytest.raises(ValueError, match="out: shares memory with y"):
        hpcml.similarity(x, xs, out=buf[24:60].view(np.int32).reshape(6, 6))
    ok = buf[60:].view(np.int32).reshape(6, 6)  # right after x: no overlap
    hpcml.similarity(xs, out=ok)
    np.testing.assert_array_equal(ok, numpy_counts(xs, xs))


@needs_cuda
def test_cuda_out():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(14)
    x = data(rng, (30, 70))
    xd = torch.from_numpy(x).cuda()
    out = torch.full((70, 70), -1, dtype=torch.int32, device="cuda")
    assert hpcml.similarity(xd, out=out) is out
    np.testing.assert_array_equal(out.cpu().numpy(), numpy_counts(x, x))
    with pytest.raises(TypeError, match="out: must be a CUDA array .* or a host array"):
        hpcml.similarity(xd, out=[[0] * 70] * 70)
    with pytest.raises(TypeError, match="out: must be a NumPy array"):
        hpcml.similarity(x, out=out)
    with pytest.raises(ValueError, match="out: must be C-contiguous"):
        hpcml.similarity(xd, out=torch.zeros((70, 140), dtype=torch.int32, device="cuda")[:, ::2])
    with pytest.raises(ValueError, match="out: must be C-contiguous"):
        hpcml.similarity(xd, out=np.zeros((70, 140), np.int32)[:, ::2])
    with pytest.raises(ValueError, match="out: has shape \\(70, 69\\)"):
        hpcml.similarity(xd, out=np.zeros((70, 69), np.int32))


@needs_cuda
def test_cuda_inputs_into_a_host_out():
    # The GPU's result copied into host memory: NumPy (pageable), a torch CPU tensor pinned and
    # not, after x is written on torch's current stream; every output type's bytes; refused
    # during CUDA graph capture, naming out.
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(15)
    x, y = data(rng, (48, 700)), data(rng, (48, 530))
    xd, yd = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
    for other, yh in [(None, x), (yd, y)]:
        m = yh.shape[1]
        counts = numpy_counts(x, yh)
        for dtype, mode, expected in [("int32", "count", counts), ("bool", "all", counts == 48),
                                      ("bitmask", "all", np.packbits(counts == 48, axis=1, bitorder="little"))]:
            for kind in ["numpy", "torch", "pinned"]:
                shape, np_dtype = expected.shape, expected.dtype
                if kind == "numpy":
                    out = np.full(shape, 7, np_dtype)
                else:
                    out = torch.full(shape, 7, dtype=getattr(torch, np_dtype.name), pin_memory=kind == "pinned")
                got = hpcml.similarity(xd, other, mode=mode, dtype=dtype, tile=256, out=out)
                assert got is out
                np.testing.assert_array_equal(np.asarray(out), expected, err_msg=f"{dtype} {kind} y={m}")
    # x written on a side stream that is busy first, and consumed there without a
    # synchronisation: the copy into the host out must follow torch's current stream.
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        late = torch.empty(x.shape, dtype=torch.float32, device="cuda")
        torch.cuda._sleep(50_000_000)
        late.copy_(torch.from_numpy(x).pin_memory(), non_blocking=True)
        got = hpcml.similarity(late, mode="all", dtype="bitmask", out=np.zeros((700, 88), np.uint8))
    np.testing.assert_array_equal(got, np.packbits(numpy_counts(x, x) == 48, axis=1, bitorder="little"))
    host = np.zeros((700, 700), np.int32)
    stream = torch.cuda.Stream()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream):
        hpcml.similarity(xd, out=torch.empty((700, 700), dtype=torch.int32, device="cuda"))  # warm up
    with pytest.raises(ValueError, match="out: host memory cannot take a result while the stream is being captured"):
        with torch.cuda.graph(graph, stream=stream, capture_error_mode="thread_local"):
            hpcml.similarity(xd, out=host)


@needs_cuda
def test_cuda_arrays_stay_on_device():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(8)
    x, y = data(rng, (64, 300)), data(rng, (64, 200))
    got = hpcml.similarity(torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda(), tile=128)
    assert got.is_cuda
    np.testing.assert_array_equal(got.cpu().numpy(), numpy_counts(x, y))


@needs_cuda
def test_torch_side_stream_is_followed():
    # x is written on a side stream and consumed there without a synchronisation: hpcml must
    # queue its work on torch's current stream, or it may read x before it is written.
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(9)
    host = data(rng, (256, 1500))
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        x = torch.empty(host.shape, dtype=torch.float32, device="cuda")
        torch.cuda._sleep(50_000_000)  # keep the stream busy so that a wrong stream would race
        x.copy_(torch.from_numpy(host).pin_memory(), non_blocking=True)
        got = hpcml.similarity(x, mode="all", dtype="bitmask")
        expected = hpcml.similarity(host, mode="all", dtype="bitmask", backend="cpu")
        np.testing.assert_array_equal(got.cpu().numpy(), expected)


@needs_cuda
def test_cupy_arrays_and_cupy_streams():
    cupy = pytest.importorskip("cupy")
    rng = np.random.default_rng(10)
    x, y = data(rng, (40, 333)), data(rng, (40, 77))
    with cupy.cuda.Stream(non_blocking=True):
        got = hpcml.similarity(cupy.asarray(x), cupy.asarray(y), dtype=np.uint16)
        assert isinstance(got, cupy.ndarray) and got.dtype == np.uint16
        np.testing.assert_array_equal(cupy.asnumpy(got), numpy_counts(x, y))


@pytest.mark.cuda
@pytest.mark.skipif(len(hpcml.devices()) < 2, reason="fewer than two usable CUDA devices")
def test_arrays_on_a_second_device():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    x = data(rng, (32, 100))
    first, second = (d["index"] for d in hpcml.devices()[:2])
    got = hpcml.similarity(torch.from_numpy(x).to(f"cuda:{second}"))
    assert got.device == torch.device(f"cuda:{second}")
    np.testing.assert_array_equal(got.cpu().numpy(), numpy_counts(x, x))
    with pytest.raises(ValueError, match="device"):
        hpcml.similarity(torch.from_numpy(x).to(f"cuda:{second}"), device=first)


def _dense_pairs(x, y, t, mode, min_count=1):
    y = x if y is None else y
    with np.errstate(invalid="ignore"):
        within = np.abs(x[:, :, None] - y[:, None, :]) < np.float32(t)
    if mode == "all":
        return np.nonzero(within.all(0))
    counts = within.sum(0)
    i, j = np.nonzero(counts >= min_count)
    return i, j, counts[i, j]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("self_pairs", [True, False])
@pytest.mark.parametrize("tile", [None, 1, 7, 64])
# 9 samples: every tile computed; 20 (with y = x): tiles above the diagonal, each pair added
# with its mirror, over rows of several 64-column words.
@pytest.mark.parametrize("samples,n,scale", [(9, 45, 0.6), (20, 150, 0.3)])
def test_pairs_equal_numpy(self_pairs, tile, backend, samples, n, scale):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((samples, n)).astype(np.float32) * scale
    y = None if self_pairs else rng.standard_normal((samples, n - 7)).astype(np.float32) * scale
    x[0, 3] = np.nan
    x[:, 5] = x[:, 4] + 1.0  # differences of exactly t: not within (strict <)
    for mode, min_count in [("all", None), ("count", 1), ("count", 6)]:
        got = hpcml.similarity_pairs(x, y, threshold=1.0, mode=mode, min_count=min_count, tile=tile, backend=backend)
        expected = _dense_pairs(x, y, 1.0, mode, min_count or 1)
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(g, e)
        assert got[0].dtype == np.int64 and got[1].dtype == np.int64


@needs_cuda
def test_pairs_of_cuda_arrays():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(16)
    x = rng.standard_normal((9, 300)).astype(np.float32) * 0.4
    y = rng.standard_normal((9, 170)).astype(np.float32) * 0.4
    for mode, min_count in [("all", None), ("count", 5)]:
        got = hpcml.similarity_pairs(torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda(), mode=mode, min_count=min_count,
                                     tile=64)
        expected = _dense_pairs(x, y, 1.0, mode, min_count or 1)
        assert isinstance(got[0], np.ndarray) and len(got) == len(expected)
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(g, e)


def test_pairs_edge_cases():
    empty = hpcml.similarity_pairs(np.zeros((3, 0), np.float32), backend="cpu")
    assert empty[0].shape == (0,) and empty[1].shape == (0,)
    no_samples = hpcml.similarity_pairs(np.zeros((0, 4), np.float32), mode="all", backend="cpu")
    np.testing.assert_array_equal(no_samples[0], np.repeat(np.arange(4), 4))  # empty all() is true
    with pytest.raises(ValueError, match="min_count"):
        hpcml.similarity_pairs(np.zeros((2, 3), np.float32), mode="all", min_count=2)
    with pytest.raises(ValueError, match="min_count"):
        hpcml.similarity_pairs(np.zeros((2, 3), np.float32), mode="count", min_count=0, backend="cpu")
    with pytest.raises(ValueError, match="mode"):
        hpcml.similarity_pairs(np.zeros((2, 3), np.float32), mode="any", backend="cpu")
    (i, j, c), stats = hpcml.similarity_pairs(np.zeros((2, 3), np.float32), mode="count", return_stats=True, backend="cpu")
    assert len(i) == 9 and (c == 2).all() and stats["backend"] == "cpu"


@pytest.mark.parametrize("backend", BACKENDS)
def test_pairs_memory_grows_with_the_pairs_not_with_n_times_m(backend):
    # 20000 x 20000 pairs, whose dense bool output would be 400 MB (int32 counts 1.6 GB): the
    # process's peak resident memory stays near that of Python with NumPy. In a fresh process,
    # so that no earlier test's peak counts.
    code = (
        "import resource, numpy as np, hpcml\n"
        "x = np.random.default_rng(0).standard_normal((16, 20000)).astype(np.float32)\n"
        f"hpcml.similarity_pairs(x[:, :100], backend='{backend}')\n"  # the backend's own start-up (a CUDA context) first
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        f"i, j = hpcml.similarity_pairs(x, mode='all', backend='{backend}')\n"
        f"i, j, c = hpcml.similarity_pairs(x, mode='count', min_count=15, backend='{backend}')\n"
        "assert (i == j).sum() == 20000 and len(i) < 1000000, len(i)\n"
        "print(before, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()
    before_mb, peak_mb = int(out[0]) / 1024, int(out[1]) / 1024
    assert peak_mb - before_mb < 100, (before_mb, peak_mb)
