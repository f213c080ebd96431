import csv
import math
import pathlib

import mpmath as mp
import numpy as np
import pytest
from scipy import stats

import hpcml
from hpcml import invgauss as ig

mp.mp.dps = 40

REFERENCE = pathlib.Path(__file__).parents[1] / "data" / "invgauss_reference.csv"
FUNCTIONS = ["pdf", "logpdf", "cdf", "sf", "logcdf", "logsf"]
# The largest error, in ulps of the reference, allowed per region and precision (measured worst
# cases are in the README). Double errors grow with the exponent -z1^2/2 far from the mean,
# whose rounding exp amplifies; float results are computed in double and rounded once.
BOUND_ULPS = {("bulk", "float64"): 100, ("tail", "float64"): 2000, ("bulk", "float32"): 1, ("tail", "float32"): 1}


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


def accuracy_table():
    """{(function, region, dtype): (max ulps, rows counted)} over the reference table."""
    rows = list(csv.DictReader(REFERENCE.open()))
    table = {}
    for dtype in (np.float64, np.float32):
        x = np.array([float(r["x"]) for r in rows], dtype=dtype)
        mu = np.array([float(r["mu"]) for r in rows], dtype=dtype)
        lam = np.array([float(r["lam"]) for r in rows], dtype=dtype)
        for name in FUNCTIONS:
            got = getattr(ig, name)(x, mu, lam, backend="cpu")
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


def test_accuracy_against_mpmath_reference():
    table = accuracy_table()
    for (name, region, dtype), (worst, count) in table.items():
        assert count > 0
        assert worst <= BOUND_ULPS[(region, dtype)], f"{name} {dtype} {region}: {worst:.1f} ulps"


def test_matches_scipy_in_its_range():
    rng = np.random.default_rng(0)
    mu = 10 ** rng.uniform(-1, 1, 500)
    lam = mu * 10 ** rng.uniform(-1, 2, 500)
    d = stats.invgauss(mu / lam, scale=lam)
    p = rng.uniform(0.01, 0.99, 500)
    x = d.ppf(p)
    for name, expected in [("pdf", d.pdf(x)), ("cdf", d.cdf(x)), ("sf", d.sf(x)), ("logpdf", d.logpdf(x))]:
        np.testing.assert_allclose(getattr(ig, name)(x, mu, lam, backend="cpu"), expected, rtol=1e-9, err_msg=name)
    np.testing.assert_allclose(ig.ppf(p, mu, lam, backend="cpu"), x, rtol=1e-7)


def test_cdf_at_mean_closed_form_and_no_overflow():
    ratio = np.logspace(-3, 7, 41)
    mu = np.full_like(ratio, 2.0)
    F = ig.cdf(mu, mu, mu * ratio, backend="cpu")
    expected = [0.5 + 0.5 * mp.erfc(mp.sqrt(2 * r)) * mp.exp(2 * r) for r in ratio]
    np.testing.assert_allclose(F, np.array(expected, dtype=float), rtol=1e-15)
    for name in FUNCTIONS + ["standardized_pdf"]:
        for dtype in (np.float32, np.float64):
            v = getattr(ig, name)(np.array([1e-6, 0.5, 2.0, 1e6], dtype), np.float32(1) if dtype == np.float32 else 1.0,
                                  (ratio[:, None]).astype(dtype), backend="cpu")
            assert not np.isnan(v).any(), name


def test_ppf_inverts_cdf_and_broadcasts():
    p = np.array([1e-200, 1e-8, 0.1, 0.5, 0.9, 1 - 1e-9])[:, None]
    mu = np.array([0.01, 1.0, 100.0])[None, :]
    lam = mu * 50
    x = ig.ppf(p, mu, lam, backend="cpu")
    assert x.shape == (6, 3)
    lower = p <= 0.5
    back = np.where(lower, ig.cdf(x, mu, lam, backend="cpu"), ig.sf(x, mu, lam, backend="cpu"))
    np.testing.assert_allclose(back, np.broadcast_to(np.where(lower, p, 1 - p), back.shape), rtol=1e-10)


def test_dtypes_invalid_parameters_and_edges():
    assert ig.pdf(np.float32(1), np.float32(1), np.float32(2)).dtype == np.float32
    assert ig.pdf(np.float32(1), 1.0, 2.0).dtype == np.float64
    assert np.isnan(ig.cdf(1.0, -1.0, 1.0)) and np.isnan(ig.pdf(1.0, 1.0, np.nan))
    assert ig.pdf(0.0, 1.0, 1.0) == 0 and ig.cdf(-1.0, 1.0, 1.0) == 0 and ig.sf(0.0, 1.0, 1.0) == 1
    y = np.linspace(-3, 3, 13)
    sd = np.sqrt(0.7**3 / 5.0)
    np.testing.assert_allclose(ig.standardized_pdf(y, 0.7, 5.0), sd * ig.pdf(0.7 + y * sd, 0.7, 5.0), rtol=1e-12)
    np.testing.assert_allclose(ig.standardize(0.7 + y * sd, 0.7, 5.0), y, atol=1e-12)


def test_samples_follow_the_law_and_repeat():
    for mu, lam in [(1.0, 0.05), (2.0, 3.0), (0.5, 5000.0)]:
        s = ig.sample(100000, mu, lam, seed=3, backend="cpu")
        assert (s > 0).all()
        assert np.array_equal(s, ig.sample(100000, mu, lam, seed=3, backend="cpu"))
        assert not np.array_equal(s, ig.sample(100000, mu, lam, seed=4, backend="cpu"))
        assert stats.kstest(s, stats.invgauss(mu / lam, scale=lam).cdf).pvalue > 1e-3
    per_element = ig.sample(5, [1, 2, 3, 4, 5], 2.0, seed=1, backend="cpu")
    assert per_element.shape == (5,)
    with pytest.raises(ValueError, match="mu"):
        ig.sample(3, -1.0, 1.0)


def test_distances_fused_equal_naive_and_decay():
    ratio = np.logspace(1, 6, 6)
    mu = np.full_like(ratio, 0.2)
    fused = ig.distance_to_normal(mu, mu * ratio, metric="both", backend="cpu")
    naive = ig.distance_to_normal(mu, mu * ratio, metric="both", method="naive", backend="cpu")
    for m in ("tv", "ks"):
        np.testing.assert_allclose(fused[m], naive[m], rtol=1e-9)
        slope = np.polyfit(np.log(ratio[1:]), np.log(fused[m][1:]), 1)[0]
        assert abs(slope + 0.5) < 0.02, (m, slope)
    tv = ig.distance_to_normal(mu, mu * ratio, grid=(-12, 12, 4001), backend="cpu")
    np.testing.assert_allclose(tv, fused["tv"], rtol=1e-3)
    with pytest.raises(ValueError, match="grid"):
        ig.distance_to_normal(mu, mu * ratio, grid=(1, 0, 10))
    with pytest.raises(ValueError, match="metric"):
        ig.distance_to_normal(mu, mu * ratio, metric="l2")
    with pytest.raises(ValueError, match="lambda"):
        ig.distance_to_normal([1.0], [-1.0])


if __name__ == "__main__":
    # The README's accuracy table.
    table = accuracy_table()
    print("| function | float64 bulk | float64 tails | float32 bulk | float32 tails |")
    print("|---|---|---|---|---|")
    for name in FUNCTIONS:
        cells = []
        for dtype in ("float64", "float32"):
            for region in ("bulk", "tail"):
                worst, count = table.get((name, region, dtype), (float("nan"), 0))
                cells.append(f"{worst:.1f}")
        print(f"| {name} | " + " | ".join(cells) + " |")


def test_size_one_parameters_broadcast_like_numpy():
    # A size-1 mu or lam can still add leading axes: the result has NumPy's broadcast shape.
    x = np.array([0.5, 1.0, 2.0])
    got = ig.pdf(x, np.array([[1.0]]), 2.0)
    assert got.shape == (1, 3)
    np.testing.assert_array_equal(got[0], ig.pdf(x, 1.0, 2.0))
