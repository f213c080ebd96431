"""Property-based tests (hypothesis): similarity against NumPy's broadcast on random shapes,
thresholds, NaN/inf placements, strides, dtypes and tiles; the inverse Gaussian's identities and
its agreement with SciPy across parameters from 1e-300 to 1e300."""

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy import stats

import hpcml
from hpcml import invgauss

# Deterministic in CI (derandomize) and bounded in time; a failure prints the smallest example.
# HPCML_HYPOTHESIS_PROFILE=explore searches wider, with fresh examples each run.
settings.register_profile("hpcml", max_examples=150, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("explore", max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HPCML_HYPOTHESIS_PROFILE", "hpcml"))

SPECIAL = st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1e-45, 3.4e38])
FLOATS = st.one_of(st.floats(-4, 4, width=32), SPECIAL)


@st.composite
def similarity_case(draw):
    samples = draw(st.integers(0, 24))
    n, m = draw(st.integers(0, 21)), draw(st.integers(0, 21))
    x = draw(hnp.arrays(np.float32, (samples, n), elements=FLOATS))
    y = draw(st.one_of(st.none(), hnp.arrays(np.float32, (samples, m), elements=FLOATS)))
    threshold = draw(st.one_of(st.sampled_from([0.0, 1e-45, 0.5, 1.0, 2.0, 3.4e38]), st.floats(0, 8, width=32)))
    tile = draw(st.one_of(st.none(), st.integers(1, 25)))
    layout = draw(st.sampled_from(["c", "fortran", "strided", "float64", "int16"]))
    return x, y, threshold, tile, layout


def as_layout(a, layout):
    """The same values as another kind of array a user might pass."""
    if a is None:
        return None
    if layout == "fortran":
        return np.asfortranarray(a)
    if layout == "strided":  # every other column of a wider array
        wide = np.zeros((a.shape[0], 2 * a.shape[1]), np.float32)
        wide[:, ::2] = a
        return wide[:, ::2]
    if layout == "float64":
        return a.astype(np.float64)
    if layout == "int16":
        return np.nan_to_num(np.clip(a, -4, 4)).astype(np.int16)
    return a


@given(similarity_case(), st.sampled_from(["count", "all"]))
def test_similarity_equals_numpy(case, mode):
    x, y, threshold, tile, layout = case
    xs, ys = as_layout(x, layout), as_layout(y, layout)
    x32 = np.asarray(xs, dtype=np.float32)
    y32 = x32 if ys is None else np.asarray(ys, dtype=np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        within = np.abs(x32[:, :, None] - y32[:, None, :]) < np.float32(threshold)
    expected = within.sum(0, dtype=np.int32) if mode == "count" else within.all(0)
    got = hpcml.similarity(xs, ys, threshold=threshold, mode=mode, tile=tile, backend="cpu")
    np.testing.assert_array_equal(got, expected)
    if mode == "all":
        packed = hpcml.similarity(xs, ys, threshold=threshold, mode="all", dtype="bitmask", tile=tile, backend="cpu")
        np.testing.assert_array_equal(packed, np.packbits(expected, axis=1, bitorder="little"))


POSITIVE = st.floats(1e-300, 1e300)


@given(mu=POSITIVE, lam=POSITIVE, q=st.floats(1e-12, 1 - 1e-12))
def test_invgauss_identities(mu, lam, q):
    """cdf + sf = 1, cdf(ppf(q)) = q and ppf(cdf(x)) = x, wherever the parameters are. A quantile is
    right to a few doubles when q lies between the cdfs of the doubles four away on either side
    (a law narrower than the doubles' spacing near its mean jumps from ~0 to ~1 between two)."""
    cpu = {"backend": "cpu"}
    x = float(invgauss.ppf(q, mu, lam, **cpu))
    assume(np.isfinite(x) and x > 0)
    cdf, sf = float(invgauss.cdf(x, mu, lam, **cpu)), float(invgauss.sf(x, mu, lam, **cpu))
    assert abs(cdf + sf - 1) < 1e-12
    below = float(invgauss.cdf(x * (1 - 8e-16), mu, lam, **cpu))  # about 4 doubles either side
    above = float(invgauss.cdf(x * (1 + 8e-16), mu, lam, **cpu))
    slack = 1e-9 * min(q, 1 - q) + 1e-15
    assert below - slack <= q <= above + slack
    assert np.isfinite(invgauss.logpdf(x, mu, lam, **cpu))
    if below < cdf < above:  # F resolves x: the quantile of F(x) is x again
        assert float(invgauss.ppf(cdf, mu, lam, **cpu)) == pytest.approx(x, rel=1e-8)


@given(mu=st.floats(1e-3, 1e3), ratio=st.floats(1e-3, 1e7), q=st.floats(1e-6, 1 - 1e-6))
def test_invgauss_matches_scipy(mu, ratio, q):
    """SciPy's invgauss(mu / lam, scale=lam) where SciPy itself is accurate (lam / mu up to 1e7)."""
    lam = mu * ratio
    ref = stats.invgauss(mu / lam, scale=lam)
    x = float(ref.ppf(q))
    assume(np.isfinite(x) and x > 0)
    assert float(invgauss.cdf(x, mu, lam, backend="cpu")) == pytest.approx(float(ref.cdf(x)), rel=1e-6, abs=1e-12)
    assert float(invgauss.logpdf(x, mu, lam, backend="cpu")) == pytest.approx(float(ref.logpdf(x)), rel=1e-6, abs=1e-9)


@given(x=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.just(0.0), st.floats(-1e300, 0)),
       mu=st.one_of(POSITIVE, st.sampled_from([0.0, -1.0, np.nan, np.inf])),
       lam=st.one_of(POSITIVE, st.sampled_from([0.0, -1.0, np.nan, np.inf])))
def test_invgauss_edges_never_crash_and_follow_scipy_conventions(x, mu, lam):
    valid = np.isfinite(mu) and mu > 0 and np.isfinite(lam) and lam > 0
    pdf = float(invgauss.pdf(x, mu, lam, backend="cpu"))
    cdf = float(invgauss.cdf(x, mu, lam, backend="cpu"))
    if not valid or np.isnan(x):
        assert np.isnan(pdf) and np.isnan(cdf)
    elif x <= 0:
        assert pdf == 0 and cdf == 0
    else:
        assert 0 <= cdf <= 1 and pdf >= 0
