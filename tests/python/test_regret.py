import numpy as np
import pytest
from scipy.optimize import linprog

import hpcml
from hpcml.reference import seed_regret_matching as numpy_seed

RPS_CRASH = np.array([[0, -1, 2], [1, 0, -1], [-2, 1, 0]], dtype=np.float32)


def lp_value(A):
    """The row player's maximin value: max v s.t. x^T A >= v, sum x = 1, x >= 0."""
    n1, n2 = A.shape
    c = np.zeros(n1 + 1)
    c[-1] = -1
    A_ub = np.hstack([-A.T, np.ones((n2, 1))])
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(n2), A_eq=[[1] * n1 + [0]], b_eq=[1],
                  bounds=[(0, None)] * n1 + [(None, None)])
    assert res.success
    return res.x[-1]


@pytest.mark.parametrize("iterations", [1, 2, 3, 10, 500])
def test_seed_matches_numpy_transcription(iterations):
    x, y, eps = numpy_seed(RPS_CRASH, iterations)
    s = hpcml.solve_matrix_game(RPS_CRASH, variant="seed", iterations=iterations, backend="cpu")
    np.testing.assert_allclose(s.row_strategy, x, rtol=0, atol=1e-12)
    np.testing.assert_allclose(s.col_strategy, y, rtol=0, atol=1e-12)
    assert s.eps_bound == pytest.approx(eps, abs=1e-12)


def test_seed_on_random_game_matches_transcription():
    A = np.random.default_rng(0).standard_normal((5, 7)).astype(np.float32)
    x, y, eps = numpy_seed(A, 200)
    s = hpcml.solve_matrix_game(A, variant="seed", iterations=200, backend="cpu")
    np.testing.assert_allclose(s.row_strategy, x, atol=1e-10)
    np.testing.assert_allclose(s.col_strategy, y, atol=1e-10)


@pytest.mark.parametrize("variant", ["seed", "rm", "rm+", "dcfr", "prm+"])
@pytest.mark.parametrize("shape", [(8, 8), (20, 5), (3, 30)])
def test_values_agree_with_linear_programming(variant, shape):
    A = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
    s = hpcml.solve_matrix_game(A, variant=variant, iterations=2000, backend="cpu")
    v = lp_value(A.astype(np.float64))
    # x-bar^T A y-bar lies within the gap of the game's value.
    assert abs(s.value - v) <= s.gap + 1e-9
    gap = (A @ s.col_strategy).max() - (s.row_strategy @ A).min()
    assert s.gap == pytest.approx(gap, abs=1e-9)


def test_rps_with_crash_default_and_curve():
    s = hpcml.solve_matrix_game(RPS_CRASH, backend="cpu", record_every=50)
    np.testing.assert_allclose(s.row_strategy, [0.25, 0.5, 0.25], atol=1e-3)
    assert s.curve.shape == (10, 2)
    assert s.curve[-1, 0] == 500 and s.curve[-1, 1] == pytest.approx(s.gap)


def test_batch_equals_one_by_one():
    A = np.random.default_rng(1).standard_normal((6, 4, 5)).astype(np.float32)
    batch = hpcml.solve_matrix_games(A, backend="cpu", iterations=300)
    assert batch.row_strategy.shape == (6, 4) and batch.gap.shape == (6,)
    for b in range(6):
        one = hpcml.solve_matrix_game(A[b], backend="cpu", iterations=300)
        np.testing.assert_array_equal(one.row_strategy, batch.row_strategy[b])
        assert one.gap == batch.gap[b]


def test_sampled_is_reproducible():
    a = hpcml.solve_matrix_game(RPS_CRASH, variant="seed", sampled=True, seed=7, backend="cpu")
    b = hpcml.solve_matrix_game(RPS_CRASH, variant="seed", sampled=True, seed=7, backend="cpu")
    c = hpcml.solve_matrix_game(RPS_CRASH, variant="seed", sampled=True, seed=8, backend="cpu")
    np.testing.assert_array_equal(a.row_strategy, b.row_strategy)
    assert not np.array_equal(a.row_strategy, c.row_strategy)


@pytest.mark.parametrize(
    "A,kwargs,match",
    [
        (np.zeros((0, 3)), {}, "A:"),
        (np.array([[1.0, np.nan]]), {}, "A: payoff at"),
        (np.ones((2, 2)), dict(iterations=0), "iterations"),
        (np.ones((2, 2)), dict(variant="cfr"), "variant"),
        (np.ones((2, 2)), dict(averaging="cubic"), "averaging"),
        (np.ones((2, 2)), dict(record_every=-2), "record_every"),
        (np.ones(3), {}, "A: expected a 2-D"),
    ],
)
def test_bad_inputs(A, kwargs, match):
    with pytest.raises(ValueError, match=match):
        hpcml.solve_matrix_game(A, backend="cpu", **kwargs)
