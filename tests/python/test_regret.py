import numpy as np
import pytest
from scipy.optimize import linprog

import hpcml
from hpcml.reference import nash_gap
from hpcml.reference import seed_regret_matching as numpy_seed

import philox
from backends import BACKENDS, needs_cuda

RPS_CRASH = np.array([[0, -1, 2], [1, 0, -1], [-2, 1, 0]], dtype=np.float32)

# Tests run on BACKENDS (backends.py) with games of at most 64 actions a player, unless they
# say otherwise: the GPU solves those in its batched kernel, equal to the CPU to the bit
# (README, "How close the backends are"), so the CPU's tolerances hold there unchanged.


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


def random_game(shape, seed=0, integer=False):
    rng = np.random.default_rng(seed)
    A = rng.integers(-3, 4, shape) if integer else rng.standard_normal(shape)
    return A.astype(np.float32)


SEED_GAMES = [("rps-crash", RPS_CRASH), ("normal 5x7", random_game((5, 7))),
              ("normal 20x20", random_game((20, 20), 1)), ("normal 64x3", random_game((64, 3), 2)),
              ("integer 6x6", random_game((6, 6), 3, integer=True))]


def seed_curve(A, iterations):
    """The float64 transcription's gap after every iteration, its averages and eps."""
    x, y, eps, xs, ys = numpy_seed(A, iterations, dtype=np.float64, history=True)
    return x, y, eps, np.array([nash_gap(A, a, b) for a, b in zip(xs, ys)])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("iterations", [500, 5000])
@pytest.mark.parametrize("name,A", SEED_GAMES, ids=[g[0] for g in SEED_GAMES])
def test_seed_is_the_seed_program_iteration_for_iteration(backend, name, A, iterations):
    # Against the op-for-op transcription in float64 (hpcml's state is double): the gap of the
    # running average after every iteration, the final averages and eps. A one-iteration shift
    # in the schedule moves these by 1e-3 and more.
    x, y, eps, gaps = seed_curve(A, iterations)
    s = hpcml.solve_matrix_game(A, variant="seed", iterations=iterations, record_every=1, backend=backend)
    np.testing.assert_array_equal(s.curve[:, 0], np.arange(1, iterations + 1))
    np.testing.assert_allclose(s.curve[:, 1], gaps, rtol=0, atol=1e-9)
    np.testing.assert_allclose(s.row_strategy, x, rtol=0, atol=1e-10)
    np.testing.assert_allclose(s.col_strategy, y, rtol=0, atol=1e-10)
    assert s.eps_bound == pytest.approx(eps, abs=1e-10)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("iterations", [500, 5000])
@pytest.mark.parametrize("name,A", SEED_GAMES, ids=[g[0] for g in SEED_GAMES])
def test_seed_matches_the_float32_program_to_its_rounding(backend, name, A, iterations):
    # The seed itself runs in float32. hpcml (double) must be as close to its output as exact
    # arithmetic is: within twice the float32 program's own distance from the float64 one.
    x32, y32, eps32 = numpy_seed(A, iterations)
    x64, y64, eps64 = numpy_seed(A, iterations, dtype=np.float64)
    s = hpcml.solve_matrix_game(A, variant="seed", iterations=iterations, backend=backend)
    rounding = max(np.abs(x32 - x64).max(), np.abs(y32 - y64).max())
    assert max(np.abs(s.row_strategy - x32).max(), np.abs(s.col_strategy - y32).max()) <= 2 * rounding + 1e-6
    assert abs(s.eps_bound - eps32) <= 2 * abs(eps64 - eps32) + 1e-6


@pytest.mark.parametrize("backend", BACKENDS)
def test_seed_numbers_on_rps_with_crash(backend):
    # The seed's own float32 program after 500 iterations: eps 0.1071, exact gap 0.1043.
    x, y, eps = numpy_seed(RPS_CRASH, 500)
    assert eps == pytest.approx(0.10711, abs=1e-5)
    assert nash_gap(RPS_CRASH, x, y) == pytest.approx(0.10429, abs=1e-5)
    s = hpcml.solve_matrix_game(RPS_CRASH, variant="seed", backend=backend)
    assert s.eps_bound == pytest.approx(eps, abs=1e-6) and s.gap == pytest.approx(0.10429, abs=1e-5)
    assert not s.eps_bound_valid


def test_philox_known_answers():
    for counter, key, expected in philox.KNOWN_ANSWERS:
        assert philox.philox4x32_10(counter, key) == expected


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name,A", SEED_GAMES[:3], ids=[g[0] for g in SEED_GAMES[:3]])
def test_sampled_seed_is_the_seed_programs_stochastic_variant(backend, name, A):
    # The same draws (Philox, game 0, key = player) through the transcription's multinomial.
    def multinomial(strategy, iteration, player):
        return philox.sample(strategy, philox.uniform_draw(11, 0, iteration, player))

    x, y, eps = numpy_seed(A, 1000, stochastic_advantage=True, dtype=np.float64, multinomial=multinomial)
    s = hpcml.solve_matrix_game(A, variant="seed", sampled=True, seed=11, iterations=1000, backend=backend)
    np.testing.assert_allclose(s.row_strategy, x, rtol=0, atol=1e-12)
    np.testing.assert_allclose(s.col_strategy, y, rtol=0, atol=1e-12)
    assert s.eps_bound == pytest.approx(eps, abs=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("variant", ["seed", "rm", "rm+", "dcfr", "prm+"])
@pytest.mark.parametrize("shape", [(8, 8), (20, 5), (3, 30)])
def test_values_agree_with_linear_programming(backend, variant, shape):
    A = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
    s = hpcml.solve_matrix_game(A, variant=variant, iterations=2000, backend=backend)
    v = lp_value(A.astype(np.float64))
    # x-bar^T A y-bar lies within the gap of the game's value.
    assert abs(s.value - v) <= s.gap + 1e-9
    gap = (A @ s.col_strategy).max() - (s.row_strategy @ A).min()
    assert s.gap == pytest.approx(gap, abs=1e-9)


@pytest.mark.parametrize("backend", BACKENDS)
def test_rps_with_crash_default_and_curve(backend):
    s = hpcml.solve_matrix_game(RPS_CRASH, backend=backend, record_every=50)
    np.testing.assert_allclose(s.row_strategy, [0.25, 0.5, 0.25], atol=1e-3)
    assert s.curve.shape == (10, 2)
    assert s.curve[-1, 0] == 500 and s.curve[-1, 1] == pytest.approx(s.gap)


@pytest.mark.parametrize("backend", BACKENDS)
def test_batch_equals_one_by_one(backend):
    # Bit for bit on both: 4 x 5 games take the GPU's batched kernel, whose result does not
    # depend on the other games of the launch.
    A = np.random.default_rng(1).standard_normal((6, 4, 5)).astype(np.float32)
    batch = hpcml.solve_matrix_games(A, backend=backend, iterations=300)
    assert batch.row_strategy.shape == (6, 4) and batch.gap.shape == (6,)
    for b in range(6):
        one = hpcml.solve_matrix_game(A[b], backend=backend, iterations=300)
        np.testing.assert_array_equal(one.row_strategy, batch.row_strategy[b])
        assert one.gap == batch.gap[b]


@pytest.mark.parametrize("backend", BACKENDS)
def test_sampled_is_reproducible(backend):
    a = hpcml.solve_matrix_game(RPS_CRASH, variant="seed", sampled=True, seed=7, backend=backend)
    b = hpcml.solve_matrix_game(RPS_CRASH, variant="seed", sampled=True, seed=7, backend=backend)
    c = hpcml.solve_matrix_game(RPS_CRASH, variant="seed", sampled=True, seed=8, backend=backend)
    np.testing.assert_array_equal(a.row_strategy, b.row_strategy)
    assert not np.array_equal(a.row_strategy, c.row_strategy)


@pytest.mark.parametrize("backend", BACKENDS)
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
def test_bad_inputs(backend, A, kwargs, match):
    with pytest.raises(ValueError, match=match):
        hpcml.solve_matrix_game(A, backend=backend, **kwargs)


# How far the GPU may be from the CPU (README, "How close the backends are"): games up to 64 x 64
# actions (the batched kernel, every sum in the CPU's order, no FMA) equal to the bit; larger
# games (the large-game path, sums in another order) within 1e-9.
def cuda_tolerance(A):
    return 0.0 if max(A.shape[-2:]) <= 64 else 1e-9


@needs_cuda
@pytest.mark.parametrize("shape,integer", [((40, 3, 3), False), ((20, 3, 3), True), ((5, 32, 33), False),
                                           ((3, 64, 64), True), ((3, 65, 64), False), ((1, 300, 200), False)])
def test_cuda_agrees_with_the_cpu(shape, integer):
    # Both paths of the GPU and the edge between them (integer payoffs: exact ties in the
    # regrets), every variant, simultaneous and alternating, full-information and sampled,
    # through the Python binding.
    A = random_game(shape, seed=5, integer=integer)
    tolerance = cuda_tolerance(A)
    for variant in ("seed", "rm", "rm+", "dcfr", "prm+"):
        for alternating in (False, True):
            for sampled in (False, True):
                options = dict(variant=variant, iterations=61, alternating=alternating, sampled=sampled, seed=3,
                               record_every=25)
                cpu = hpcml.solve_matrix_games(A, backend="cpu", **options)
                cuda = hpcml.solve_matrix_games(A, backend="cuda", **options)
                assert cuda.stats["backend"] == "cuda"
                for field in ("row_strategy", "col_strategy", "value", "gap", "eps_bound", "curve"):
                    np.testing.assert_allclose(getattr(cuda, field), getattr(cpu, field), rtol=0, atol=tolerance,
                                               err_msg=f"{field}: {options}")
                assert cuda.eps_bound_valid == cpu.eps_bound_valid


def test_transcription_is_the_seed_program_in_torch():
    # CPU only, and no hpcml backend at all: this checks the NumPy transcription the tests above
    # use against the seed's PyTorch code, bit for bit, which holds for torch's CPU kernels.
    # The seed's getEquilibrium verbatim (on the CPU: .cuda() and the torch.compile decorator
    # left out), against the NumPy transcription the tests above use: equal to the last bit.
    torch = pytest.importorskip("torch")

    def getStrategy(cfr):
        weights = torch.clip(cfr, 0, torch.inf)
        weights = weights / torch.sum(weights)
        N_ACTIONS = weights.shape[0]
        weights = torch.nan_to_num(weights, nan=1 / N_ACTIONS)
        return weights

    def getEquilibrium(PAYOFF, N_ITER: int = 500, stochastic_advantage: bool = False):
        N_ACTIONS = PAYOFF.shape[0]
        cumCFR1 = torch.zeros(N_ACTIONS,)
        cumCFR2 = torch.zeros(N_ACTIONS,)
        cumStrategy1 = torch.zeros(N_ACTIONS,)
        cumStrategy2 = torch.zeros(N_ACTIONS,)
        strategy1 = torch.ones(N_ACTIONS,) / N_ACTIONS
        strategy2 = torch.ones(N_ACTIONS,) / N_ACTIONS
        for _ in range(N_ITER):
            PAYOFF_avg = strategy1.view(1, -1).mm(PAYOFF).mm(strategy2.view(-1, 1))
            cfr1 = (PAYOFF.mm(strategy2.view(-1, 1)) - PAYOFF_avg).squeeze()
            cfr2 = (strategy1.view(1, -1).mm(PAYOFF) - PAYOFF_avg).squeeze() * (-1)
            strategy1 = getStrategy(cumCFR1)
            strategy2 = getStrategy(cumCFR2)
            cumCFR1 += cfr1
            cumCFR2 += cfr2
            cumStrategy1 += strategy1
            cumStrategy2 += strategy2
        avgStrategy1 = cumStrategy1 / cumStrategy1.sum()
        avgStrategy2 = cumStrategy2 / cumStrategy2.sum()
        eps = 2 * torch.max(cumCFR1.max(), cumCFR2.max()) / N_ITER
        return (avgStrategy1, avgStrategy2, eps)

    PAYOFF = torch.tensor([[0, -1, 2], [1, 0, -1], [-2, 1, 0]], dtype=torch.float)
    for iterations in (500, 5000):
        x, y, eps = getEquilibrium(PAYOFF, iterations)
        rx, ry, reps = numpy_seed(PAYOFF.numpy(), iterations)
        np.testing.assert_array_equal(x.numpy(), rx)
        np.testing.assert_array_equal(y.numpy(), ry)
        assert float(eps) == float(reps)
