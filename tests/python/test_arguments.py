"""Every public parameter checked by name (docs/python.md, "Every argument checked"): one row per
rule of that table, each a call that breaks it and the start of the message it must give. No
nanobind signature dump ("incompatible function arguments") may reach a user."""

import numpy as np
import pytest

import hpcml
from hpcml import invgauss as ig

X = np.ones((3, 10), np.float32)
A = np.array([[0, -1, 2], [1, 0, -1], [-2, 1, 0]], np.float32)
V = np.array([0.5, 1.0, 2.0])

# (what the row checks, the call, the message's start)
ROWS = [
    # hpcml.similarity and hpcml.similarity_pairs
    ("threshold: a string", lambda: hpcml.similarity(X, threshold="1"), "threshold: expected a real number"),
    ("threshold: a bool", lambda: hpcml.similarity(X, threshold=True), "threshold: expected a real number"),
    ("threshold: negative", lambda: hpcml.similarity(X, threshold=-1.0), "threshold: must be finite and >= 0"),
    ("mode: not a string", lambda: hpcml.similarity(X, mode=1), "mode: expected a string"),
    ("mode: unknown", lambda: hpcml.similarity(X, mode="any"), "mode: expected count or all"),
    ("dtype: of the other mode", lambda: hpcml.similarity(X, mode="all", dtype="int32"),
     "dtype: int32 is an output of mode count"),
    ("tile: 0", lambda: hpcml.similarity(X, tile=0), "tile: expected an integer from 1 to 2**64 - 1, got 0"),
    ("tile: negative", lambda: hpcml.similarity(X, tile=-1), "tile: expected an integer from 1 to 2**64 - 1, got -1"),
    ("tile: 2**64", lambda: hpcml.similarity(X, tile=2**64), "tile: expected an integer from 1 to 2**64 - 1"),
    ("tile: 1.5", lambda: hpcml.similarity(X, tile=1.5), "tile: expected an integer"),
    ("backend: unknown", lambda: hpcml.similarity(X, backend="gpu"), "backend: expected auto, cpu or cuda"),
    ("method: unknown", lambda: hpcml.similarity(X, method="fast"), "method: expected auto, fused, sorted or naive"),
    ("device: a string", lambda: hpcml.similarity(X, device="0"), "device: expected an integer from 0 to 2**31 - 1"),
    ("device: 2**40", lambda: hpcml.similarity(X, device=2**40), "device: expected an integer from 0 to 2**31 - 1"),
    ("device: with backend cpu", lambda: hpcml.similarity(X, backend="cpu", device=1),
     "device: 1 names a CUDA device, but backend is 'cpu'"),
    ("return_stats: a string", lambda: hpcml.similarity(X, return_stats="no"), "return_stats: expected True or False"),
    ("progress_interval: a string", lambda: hpcml.similarity(X, progress_interval="1"),
     "progress_interval: expected a real number"),
    ("min_count: 2**64", lambda: hpcml.similarity_pairs(X, mode="count", min_count=2**64),
     "min_count: expected an integer from 0 to 2**64 - 1"),
    ("min_count: a bool", lambda: hpcml.similarity_pairs(X, mode="count", min_count=True),
     "min_count: expected an integer"),
    ("min_count: 0 in mode count", lambda: hpcml.similarity_pairs(X, mode="count", min_count=0),
     "min_count: must be >= 1 in mode count"),
    ("min_count: in mode all", lambda: hpcml.similarity_pairs(X, min_count=2), "min_count: applies to mode 'count' only"),
    ("pairs' device with backend cpu", lambda: hpcml.similarity_pairs(X, backend="cpu", device=0),
     "device: 0 names a CUDA device"),
    # hpcml.solve_matrix_game and solve_matrix_games
    ("iterations: 2**40", lambda: hpcml.solve_matrix_game(A, iterations=2**40),
     "iterations: expected an integer from 1 to 2**31 - 1"),
    ("iterations: 0", lambda: hpcml.solve_matrix_game(A, iterations=0), "iterations: expected an integer from 1"),
    ("seed: -1", lambda: hpcml.solve_matrix_game(A, seed=-1), "seed: expected an integer from 0 to 2**64 - 1"),
    ("seed: 2**64", lambda: hpcml.solve_matrix_game(A, seed=2**64), "seed: expected an integer from 0 to 2**64 - 1"),
    ("seed: 1.5", lambda: hpcml.solve_matrix_game(A, seed=1.5), "seed: expected an integer"),
    ("seed: a bool", lambda: hpcml.solve_matrix_game(A, seed=True), "seed: expected an integer"),
    ("seed: a string", lambda: hpcml.solve_matrix_game(A, seed="3"), "seed: expected an integer"),
    ("alternating: a string", lambda: hpcml.solve_matrix_game(A, alternating="false"),
     "alternating: expected True or False"),
    ("sampled: a string", lambda: hpcml.solve_matrix_game(A, sampled="no"), "sampled: expected True or False"),
    ("record_every: negative", lambda: hpcml.solve_matrix_game(A, record_every=-1),
     "record_every: expected an integer from 0"),
    ("first_game: 2**64", lambda: hpcml.solve_matrix_games(A[None], first_game=2**64),
     "first_game: expected an integer from 0 to 2**64 - 1"),
    ("variant: unknown", lambda: hpcml.solve_matrix_game(A, variant="rm++"), "variant: expected"),
    ("variant: not a string", lambda: hpcml.solve_matrix_game(A, variant=1), "variant: expected a string"),
    ("regret's method: sorted is not one", lambda: hpcml.solve_matrix_game(A, method="sorted"),
     "method: expected auto, fused or naive, got 'sorted'"),
    ("regret's device with backend cpu", lambda: hpcml.solve_matrix_game(A, backend="cpu", device=1),
     "device: 1 names a CUDA device"),
    # hpcml.invgauss
    ("x: complex", lambda: ig.cdf(V.astype(complex), 1.0, 1.0), "x: expected real numbers, got complex128"),
    ("mu: strings", lambda: ig.cdf(V, np.array(["a", "b", "c"]), 1.0), "mu: expected real numbers"),
    ("x and mu: shapes that do not broadcast", lambda: ig.cdf(V, np.ones(2), 1.0),
     "mu: shapes do not broadcast together (x (3,), mu (2,), lam ())"),
    ("function: not a string", lambda: ig.evaluate(3, V, 1.0, 1.0), "function: expected a string"),
    ("elementwise device with backend cpu", lambda: ig.pdf(V, 1.0, 1.0, backend="cpu", device=0),
     "device: 0 names a CUDA device"),
    ("sample's n: 2**64", lambda: ig.sample(2**64, 1.0, 1.0), "n: expected an integer from 0 to 2**64 - 1"),
    ("sample's seed: -1", lambda: ig.sample(3, 1.0, 1.0, seed=-1), "seed: expected an integer from 0 to 2**64 - 1"),
    ("sample's first: a float", lambda: ig.sample(3, 1.0, 1.0, first=1.0), "first: expected an integer"),
    ("sample's dtype", lambda: ig.sample(3, 1.0, 1.0, dtype=np.int32), "dtype: expected float32 or float64"),
    ("sample's device: 2**40", lambda: ig.sample(3, 1.0, 1.0, device=2**40), "device: expected an integer"),
    ("distance method: sorted is not one", lambda: ig.distance_to_normal(1.0, 10.0, method="fast"),
     "method: expected auto, fused or naive, got 'fast'"),
    ("distance grid: a string bound", lambda: ig.distance_to_normal(1.0, 10.0, grid=("-1", 1.0, 11)),
     "grid: expected a real number"),
    ("distance grid: points 1.5", lambda: ig.distance_to_normal(1.0, 10.0, grid=(-1.0, 1.0, 1.5)),
     "grid: expected an integer"),
    ("distance metric: unknown", lambda: ig.distance_to_normal(1.0, 10.0, metric="l2"), "metric: expected"),
    ("distance device: a string", lambda: ig.distance_to_normal(1.0, 10.0, device="0"), "device: expected an integer"),
    # hpcml.telemetry
    ("trace's interval_ms: 0", lambda: hpcml.telemetry.trace(interval_ms=0), "interval_ms: expected an integer >= 1"),
    ("trace's device: negative", lambda: hpcml.telemetry.trace(device=-1), "device: expected an integer"),
    ("trace's strict: a string", lambda: hpcml.telemetry.trace(strict="yes"), "strict: expected True or False"),
]


@pytest.mark.parametrize("what,call,message", ROWS, ids=[r[0] for r in ROWS])
def test_each_argument_is_refused_by_name(what, call, message):
    with pytest.raises(ValueError) as caught:
        call()
    assert str(caught.value).startswith(message), str(caught.value)
    assert "incompatible function arguments" not in str(caught.value)


def test_python_scalars_keep_a_float32_array_float32():
    # NumPy 2's rule: Python scalars are weak, so float32 data stays float32; a float64 array or
    # a NumPy float64 scalar promotes.
    x = np.array([0.5, 1.0, 2.0], np.float32)
    assert ig.cdf(x, 1.0, 1.0).dtype == np.float32
    assert ig.pdf(x, 1, 2.5).dtype == np.float32
    assert ig.cdf(x, np.float64(1.0), 1.0).dtype == np.float64
    assert ig.cdf(x, np.ones(3), 1.0).dtype == np.float64
    assert ig.cdf([0.5, 1.0], 1.0, 1.0).dtype == np.float64
    np.testing.assert_allclose(ig.cdf(x, 1.0, 1.0), ig.cdf(x.astype(np.float64), 1.0, 1.0), rtol=1e-5)


def test_the_torch_operators_wrappers_check_their_arguments_too():
    torch = pytest.importorskip("torch")
    import hpcml.torch as ht
    x = torch.ones(3, 10)
    for call, message in [(lambda: ht.similarity(x, threshold="1"), "threshold: expected a real number"),
                          (lambda: ht.similarity(x, tile=1.5), "tile: expected an integer"),
                          (lambda: ht.similarity_pairs(x, mode="count", min_count=-1), "min_count: expected an integer"),
                          (lambda: ht.invgauss_sample(3, 1.0, 1.0, seed=2**63), "seed: expected an integer"),
                          (lambda: ht.solve_matrix_games(torch.ones(1, 3, 3), alternating="no"),
                           "alternating: expected True or False")]:
        with pytest.raises(ValueError) as caught:
            call()
        assert str(caught.value).startswith(message), str(caught.value)
