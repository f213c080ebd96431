import csv
import math
import pathlib

import mpmath as mp
import numpy as np
import pytest
from scipy import stats

from backends import BACKENDS, CPU_KERNELS, needs_cuda
import hpcml
from hpcml import invgauss as ig

mp.mp.dps = 40

REFERENCE = pathlib.Path(__file__).parents[1] / "data" / "invgauss_reference.csv"
FUNCTIONS = ["pdf", "logpdf", "cdf", "sf", "logcdf", "logsf"]
# The largest error, in ulps of the reference, allowed per region and precision (measured worst
# cases are in the README). Double errors grow with the exponent -z1^2/2 far from the mean,
# whose rounding exp amplifies; float results are computed in double and rounded once.
BOUND_ULPS = {("bulk", "float64"): 100, ("tail", "float64"): 2000, ("bulk", "float32"): 1, ("tail", "float32"): 1}

# How far the GPU's elementwise functions may be from the CPU's, relative (for logpdf and
# standardize relative to max(|v|, 1): they cross 0, where an ulp of the log is absolute): the
# GPU's exp, log and sqrt differ from libm's by an ulp or two, amplified in the far tails and by
# ppf's Newton steps. README ("The inverse Gaussian", stable formulas): 1e-12 in double,
# 8 x 2^-24 in float, as the C++ tests InvGaussCuda.PerElementParameters* check.
CUDA_RTOL = {np.dtype(np.float32): 8 * 2.0**-24, np.dtype(np.float64): 1e-12}


def ulps(got, ref, dtype, is_log=False):
    """|got - ref| in units in the last place of ref (ref an mpmath number); for logarithms in
    ulps of max(|ref|, 1), since near a zero of the log only its absolute error is meaningful."""
    info = np.finfo(dtype)
    if ref == 0 or abs(ref) < info.tiny:
        return None  # outside the normal range: not counted
    if abs(ref) > info.max:
        return None
    exponent = math.floor(mp.log(max(abs(ref), 1) if is_log else abs(ref), 2))
    ulp = mp.mpf(2) ** (exponent - info.nmant)
    return float(abs(mp.mpf(float(got)) - ref) / ulp)


def accuracy_table(backend="cpu"):
    """{(function, region, dtype): (max ulps, rows counted)} over the reference table."""
    rows = list(csv.DictReader(REFERENCE.open()))
    table = {}
    for dtype in (np.float64, np.float32):
        x = np.array([float(r["x"]) for r in rows], dtype=dtype)
        mu = np.array([float(r["mu"]) for r in rows], dtype=dtype)
        lam = np.array([float(r["lam"]) for r in rows], dtype=dtype)
        for name in FUNCTIONS:
            got = getattr(ig, name)(x, mu, lam, backend=backend)
            assert got.dtype == dtype
            for r, g in zip(rows, got):
                assert not math.isnan(g), f"{name} is NaN at {r}"
                u = ulps(g, mp.mpf(r[name]), dtype, is_log=name.startswith("log"))
                if u is None:
                    continue
                key = (name, r["region"], np.dtype(dtype).name)
                worst, count = table.get(key, (0.0, 0))
                table[key] = (max(worst, u), count + 1)
    return table


@pytest.mark.parametrize("backend", BACKENDS)
def test_accuracy_against_mpmath_reference(backend):
    table = accuracy_table(backend)
    for (name, region, dtype), (worst, count) in table.items():
        assert count > 0
        bound = BOUND_ULPS[(region, dtype)]
        if backend == "cuda":  # the CPU's bound and the GPU's distance from the CPU, in ulps of the type
            bound += 2 * CUDA_RTOL[np.dtype(dtype)] / np.finfo(dtype).eps
        assert worst <= bound, f"{name} {dtype} {region}: {worst:.1f} ulps"


@pytest.mark.parametrize("kernel", CPU_KERNELS)
def test_accuracy_holds_in_long_arrays_of_mixed_elements(kernel, monkeypatch):
    # The CPU evaluates the cdf family in blocks of 32768 elements, vectorised: 50 shuffled copies
    # of the reference table (41 400 elements, ~10 000 of them in the far upper tail, where the
    # GPU takes a second pass; per-element parameters) cross every block boundary and every
    # vector's lanes, at the same bounds, on each instruction set this CPU has.
    monkeypatch.setenv("HPCML_CPU_KERNEL", kernel)
    assert hpcml.cpu_kernel() == kernel
    rows = list(csv.DictReader(REFERENCE.open()))
    order = np.random.default_rng(0).permutation(np.tile(np.arange(len(rows)), 50))
    column = lambda key: np.array([float(r[key]) for r in rows])[order]  # noqa: E731
    tail = np.array([r["region"] == "tail" for r in rows])[order]
    for dtype in (np.float64, np.float32):
        x, mu, lam = (column(key).astype(dtype) for key in ("x", "mu", "lam"))
        info = np.finfo(dtype)
        for name in FUNCTIONS:
            got = getattr(ig, name)(x, mu, lam, backend="cpu")
            ref = column(name)  # the 40-digit reference rounded to double: far below these bounds
            scale = np.maximum(np.abs(ref), 1) if name.startswith("log") else np.abs(ref)
            counted = (np.abs(ref) >= info.tiny) & (np.abs(ref) <= info.max)
            ulp = 2.0 ** (np.floor(np.log2(np.where(counted, scale, 1.0))) - info.nmant)
            error = np.abs(got.astype(np.float64) - ref) / ulp
            for region, mask in (("bulk", ~tail), ("tail", tail)):
                worst = error[mask & counted].max()
                bound = BOUND_ULPS[(region, np.dtype(dtype).name)] + 0.5  # + the reference's rounding
                assert worst <= bound, f"{name} {np.dtype(dtype).name} {region}: {worst:.1f} ulps"


@pytest.mark.parametrize("backend", BACKENDS)
def test_matches_scipy_in_its_range(backend):
    rng = np.random.default_rng(0)
    mu = 10 ** rng.uniform(-1, 1, 500)
    lam = mu * 10 ** rng.uniform(-1, 2, 500)
    d = stats.invgauss(mu / lam, scale=lam)
    p = rng.uniform(0.01, 0.99, 500)
    x = d.ppf(p)
    for name, expected in [("pdf", d.pdf(x)), ("cdf", d.cdf(x)), ("sf", d.sf(x)), ("logpdf", d.logpdf(x))]:
        np.testing.assert_allclose(getattr(ig, name)(x, mu, lam, backend=backend), expected, rtol=1e-9, err_msg=name)
    np.testing.assert_allclose(ig.ppf(p, mu, lam, backend=backend), x, rtol=1e-7)


@pytest.mark.parametrize("backend", BACKENDS)
def test_cdf_at_mean_closed_form_and_no_overflow(backend):
    ratio = np.logspace(-3, 7, 41)
    mu = np.full_like(ratio, 2.0)
    F = ig.cdf(mu, mu, mu * ratio, backend=backend)
    expected = [0.5 + 0.5 * mp.erfc(mp.sqrt(2 * r)) * mp.exp(2 * r) for r in ratio]
    rtol = 1e-15 if backend == "cpu" else 1e-15 + CUDA_RTOL[np.dtype(np.float64)]  # the README's 1e-15 is the CPU's
    np.testing.assert_allclose(F, np.array(expected, dtype=float), rtol=rtol)
    for name in FUNCTIONS + ["standardized_pdf"]:
        for dtype in (np.float32, np.float64):
            v = getattr(ig, name)(np.array([1e-6, 0.5, 2.0, 1e6], dtype), np.float32(1) if dtype == np.float32 else 1.0,
                                  (ratio[:, None]).astype(dtype), backend=backend)
            assert not np.isnan(v).any(), name


@pytest.mark.parametrize("backend", BACKENDS)
def test_ppf_inverts_cdf_and_broadcasts(backend):
    p = np.array([1e-200, 1e-8, 0.1, 0.5, 0.9, 1 - 1e-9])[:, None]
    mu = np.array([0.01, 1.0, 100.0])[None, :]
    lam = mu * 50
    x = ig.ppf(p, mu, lam, backend=backend)
    assert x.shape == (6, 3)
    lower = p <= 0.5
    back = np.where(lower, ig.cdf(x, mu, lam, backend=backend), ig.sf(x, mu, lam, backend=backend))
    np.testing.assert_allclose(back, np.broadcast_to(np.where(lower, p, 1 - p), back.shape), rtol=1e-10)


@pytest.mark.parametrize("backend", BACKENDS)
def test_dtypes_invalid_parameters_and_edges(backend):
    b = dict(backend=backend)
    assert ig.pdf(np.float32(1), np.float32(1), np.float32(2), **b).dtype == np.float32
    assert ig.pdf(np.float32(1), 1.0, 2.0, **b).dtype == np.float32  # Python scalars are weak (NumPy 2)
    assert ig.pdf(np.float32(1), np.float64(1.0), 2.0, **b).dtype == np.float64
    assert np.isnan(ig.cdf(1.0, -1.0, 1.0, **b)) and np.isnan(ig.pdf(1.0, 1.0, np.nan, **b))
    assert ig.pdf(0.0, 1.0, 1.0, **b) == 0 and ig.cdf(-1.0, 1.0, 1.0, **b) == 0 and ig.sf(0.0, 1.0, 1.0, **b) == 1
    y = np.linspace(-3, 3, 13)
    sd = np.sqrt(0.7**3 / 5.0)
    np.testing.assert_allclose(ig.standardized_pdf(y, 0.7, 5.0, **b), sd * ig.pdf(0.7 + y * sd, 0.7, 5.0, **b), rtol=1e-12)
    np.testing.assert_allclose(ig.standardize(0.7 + y * sd, 0.7, 5.0, **b), y, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_samples_follow_the_law_and_repeat(backend):
    for mu, lam in [(1.0, 0.05), (2.0, 3.0), (0.5, 5000.0)]:
        s = ig.sample(100000, mu, lam, seed=3, backend=backend)
        assert (s > 0).all()
        assert np.array_equal(s, ig.sample(100000, mu, lam, seed=3, backend=backend))
        assert not np.array_equal(s, ig.sample(100000, mu, lam, seed=4, backend=backend))
        assert stats.kstest(s, stats.invgauss(mu / lam, scale=lam).cdf).pvalue > 1e-3
        if backend == "cuda":
            # The same draws as the CPU's, through the GPU's exp, log and sqrt: 1e-13 relative
            # (README, "The inverse Gaussian"; InvGaussCuda.AgreesWithCpu).
            np.testing.assert_allclose(s, ig.sample(100000, mu, lam, seed=3, backend="cpu"), rtol=1e-13)
    per_element = ig.sample(5, [1, 2, 3, 4, 5], 2.0, seed=1, backend=backend)
    assert per_element.shape == (5,)
    with pytest.raises(ValueError, match="mu"):
        ig.sample(3, -1.0, 1.0, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_samples_drawn_in_pieces_equal_one_call(backend):
    mu = np.linspace(0.5, 3.0, 1001)
    whole = ig.sample(1001, mu, 2.0, seed=9, backend=backend)
    cuts = [0, 1, 64, 500, 1001]
    pieces = [ig.sample(b - a, mu[a:b], 2.0, seed=9, first=a, backend=backend) for a, b in zip(cuts, cuts[1:])]
    assert np.array_equal(np.concatenate(pieces), whole)
    last = ig.sample(2, 1.0, 1.0, seed=9, first=2**64 - 2, backend=backend)  # the stream's last draws
    assert (last > 0).all()
    for bad in (-1, 2**64, 1.5):
        with pytest.raises(ValueError, match="^first: "):
            ig.sample(1, 1.0, 1.0, first=bad, backend=backend)
    with pytest.raises(ValueError, match="^first: "):
        ig.sample(3, 1.0, 1.0, first=2**64 - 2, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_distances_fused_equal_naive_and_decay(backend):
    ratio = np.logspace(1, 6, 6)
    mu = np.full_like(ratio, 0.2)
    fused = ig.distance_to_normal(mu, mu * ratio, metric="both", backend=backend)
    naive = ig.distance_to_normal(mu, mu * ratio, metric="both", method="naive", backend=backend)
    # The CPU's paths agree to 1e-9 (README); on the GPU, fused is within 1e-10 of the CPU and
    # naive's total variation within 1e-8 (InvGaussCuda.AgreesWithCpu, taken here for the
    # Kolmogorov distance too; the README states no GPU bound for the distances).
    rtol = 1e-9 if backend == "cpu" else 1e-8 + 1e-10
    for m in ("tv", "ks"):
        np.testing.assert_allclose(fused[m], naive[m], rtol=rtol)
        slope = np.polyfit(np.log(ratio[1:]), np.log(fused[m][1:]), 1)[0]
        assert abs(slope + 0.5) < 0.02, (m, slope)
    tv = ig.distance_to_normal(mu, mu * ratio, grid=(-12, 12, 4001), backend=backend)
    np.testing.assert_allclose(tv, fused["tv"], rtol=1e-3)
    with pytest.raises(ValueError, match="grid"):
        ig.distance_to_normal(mu, mu * ratio, grid=(1, 0, 10), backend=backend)
    with pytest.raises(ValueError, match="metric"):
        ig.distance_to_normal(mu, mu * ratio, metric="l2", backend=backend)
    with pytest.raises(ValueError, match="lambda"):
        ig.distance_to_normal([1.0], [-1.0], backend=backend)


ELEMENTWISE = FUNCTIONS + ["ppf", "standardize", "standardized_pdf"]


def cuda_test_inputs(shape, dtype, per_element, seed=21):
    """x across each law (with 0, negatives, inf and NaN), probabilities p for ppf (with 0, 1 and
    invalid ones), and mu, lam over lambda / mu from 1e-3 to 1e7 (some invalid when per element):
    as the C++ InvGaussCuda.PerElementParameters* tests."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    m = 10 ** rng.uniform(-3, 3, n)
    mu, lam = m, m * 10 ** rng.uniform(-3, 7, n)
    x, p = m * 10 ** rng.uniform(-3, 3, n), rng.uniform(0, 1, n)
    x[:6] = [0, -1, np.inf, -np.inf, np.nan, np.finfo(dtype).max]
    p[:6] = [0, 1, 1e-30, np.nan, -0.5, 2]
    if per_element:
        mu[100], lam[101], mu[102], lam[103] = 0, -1, np.nan, np.inf
    else:
        mu, lam = mu[:1], lam[:1]
    x, p = (a.astype(dtype).reshape(shape) for a in (x, p))
    return x, p, mu.astype(dtype), lam.astype(dtype)


def assert_close_to_the_cpu(name, got, x, mu, lam):
    """A GPU result against the CPU's, as the C++ tests compare them: NaN where the CPU has NaN, the
    same infinities and zeros, the rest above 1e-290 within CUDA_RTOL."""
    mu, lam = (a.reshape(x.shape) if a.size > 1 else a for a in (mu, lam))  # per element: x's size, any shape
    expected = getattr(ig, name)(x, mu, lam, backend="cpu")
    assert got.dtype == expected.dtype and got.shape == expected.shape, name
    got, expected = got.astype(np.float64).ravel(), expected.astype(np.float64).ravel()
    nan = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(got), nan, err_msg=f"{name}: NaN where the CPU has NaN")
    exact = ~nan & (np.isinf(expected) | (expected == 0))
    np.testing.assert_array_equal(got[exact], expected[exact], err_msg=f"{name}: infinities and zeros")
    close = ~nan & ~exact & (np.abs(expected) > 1e-290)
    scale = np.abs(expected[close])
    if name in ("logpdf", "standardize"):  # they cross 0: an ulp of the log is absolute there
        scale = np.maximum(scale, 1.0)
    error = np.abs(got[close] - expected[close]) / scale
    if error.max(initial=0) >= CUDA_RTOL[x.dtype]:
        k = np.flatnonzero(close)[np.argmax(error)]
        pytest.fail(f"{name} {x.dtype}: {error.max():.3g} relative at element {k}: x {x.ravel()[k]}, "
                    f"mu {mu.ravel()[k % mu.size]}, lam {lam.ravel()[k % lam.size]}: CPU {expected[k]!r}, GPU {got[k]!r}")


@needs_cuda
def test_cuda_arrays_stay_on_device():
    torch = pytest.importorskip("torch")
    for dtype in (np.float32, np.float64):
        for shape, per_element in [((5000,), True), ((50, 90), True), ((50, 90), False)]:
            x, p, mu, lam = cuda_test_inputs(shape, dtype, per_element)
            for name in ELEMENTWISE:
                arg = p if name == "ppf" else x
                got = getattr(ig, name)(*(torch.from_numpy(a).cuda() for a in (arg, mu, lam)))
                assert got.is_cuda and got.dtype == getattr(torch, np.dtype(dtype).name) and tuple(got.shape) == shape
                assert_close_to_the_cpu(name, got.cpu().numpy(), arg, mu, lam)
    # A non-contiguous x is taken (as a contiguous copy); the result has x's shape.
    x, _, mu, lam = cuda_test_inputs((90, 50), np.float64, per_element=False)
    got = ig.cdf(torch.from_numpy(x).cuda().T, torch.from_numpy(mu).cuda(), torch.from_numpy(lam).cuda())
    assert got.is_cuda and tuple(got.shape) == (50, 90)
    assert_close_to_the_cpu("cdf", got.cpu().numpy(), np.ascontiguousarray(x.T), mu, lam)
    # Used in place, never converted: host and CUDA arrays do not mix, parameters have x's dtype
    # and x's size or one element, and the CPU backend cannot take device memory.
    xd = torch.ones(3, dtype=torch.float64, device="cuda")
    with pytest.raises(ValueError, match="pass host arrays only or CUDA arrays only"):
        ig.pdf(xd, 1.0, 1.0)
    with pytest.raises(ValueError, match="lam: CUDA arrays must be float64"):
        ig.pdf(xd, xd, xd.float())
    with pytest.raises(ValueError, match="mu: has 2 values; expected 1 or n = 3"):
        ig.pdf(xd, xd[:2], xd)
    with pytest.raises(ValueError, match="backend"):
        ig.pdf(xd, xd, xd, backend="cpu")


@needs_cuda
def test_torch_side_stream_is_followed():
    # x is written on a side stream and consumed there without a synchronisation: hpcml must
    # queue its work on torch's current stream, or it may read x before it is written.
    torch = pytest.importorskip("torch")
    host, _, mu, lam = cuda_test_inputs((1 << 20,), np.float64, per_element=False)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        x = torch.empty(host.shape, dtype=torch.float64, device="cuda")
        torch.cuda._sleep(50_000_000)  # keep the stream busy so that a wrong stream would race
        x.copy_(torch.from_numpy(host).pin_memory(), non_blocking=True)
        got = ig.logcdf(x, torch.from_numpy(mu).cuda(), torch.from_numpy(lam).cuda())
        assert_close_to_the_cpu("logcdf", got.cpu().numpy(), host, mu, lam)


@needs_cuda
def test_cupy_arrays_and_cupy_streams():
    cupy = pytest.importorskip("cupy")
    for dtype in (np.float32, np.float64):
        x, p, mu, lam = cuda_test_inputs((40, 125), dtype, per_element=True)
        with cupy.cuda.Stream(non_blocking=True):
            for name in ELEMENTWISE:
                arg = p if name == "ppf" else x
                got = getattr(ig, name)(*(cupy.asarray(a) for a in (arg, mu.reshape(arg.shape), lam)), device=0)
                assert isinstance(got, cupy.ndarray) and got.dtype == dtype and got.shape == arg.shape
                assert_close_to_the_cpu(name, cupy.asnumpy(got), arg, mu, lam)


if __name__ == "__main__":
    # The README's accuracy table: measured on the CPU (with glibc's libmvec where it is present).
    table = accuracy_table("cpu")
    print("| function | float64 bulk | float64 tails | float32 bulk | float32 tails |")
    print("|---|---|---|---|---|")
    for name in FUNCTIONS:
        cells = []
        for dtype in ("float64", "float32"):
            for region in ("bulk", "tail"):
                worst, count = table.get((name, region, dtype), (float("nan"), 0))
                cells.append(f"{worst:.1f}")
        print(f"| {name} | " + " | ".join(cells) + " |")


@pytest.mark.parametrize("backend", BACKENDS)
def test_size_one_parameters_broadcast_like_numpy(backend):
    # A size-1 mu or lam can still add leading axes: the result has NumPy's broadcast shape.
    x = np.array([0.5, 1.0, 2.0])
    got = ig.pdf(x, np.array([[1.0]]), 2.0, backend=backend)
    assert got.shape == (1, 3)
    np.testing.assert_array_equal(got[0], ig.pdf(x, 1.0, 2.0, backend=backend))


def test_evaluate_reads_the_library_table():
    """Every function of the library's table by name, the same as its own Python function."""
    x = np.array([0.3, 1.0, 2.5])
    assert ig.functions() == ["pdf", "logpdf", "cdf", "sf", "logcdf", "logsf", "ppf", "standardize",
                              "standardized_pdf"]
    for name in ig.functions():
        args = (np.array([0.1, 0.5, 0.9]) if name == "ppf" else x, 1.0, 3.0)
        np.testing.assert_array_equal(ig.evaluate(name, *args, backend="cpu"),
                                      getattr(ig, name)(*args, backend="cpu"))
    with pytest.raises(ValueError, match="function: expected pdf"):
        ig.evaluate("hazard", x, 1.0, 3.0)


def test_the_cpu_erfcx_table_is_the_fit():
    # kernels/invgauss/erfcx_cpu.hpp's kErfcxG is what bench/fit_erfcx.py computes from mpmath.
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).parents[2] / "bench"))
    import fit_erfcx
    assert fit_erfcx.table_in_header() == fit_erfcx.fit()
